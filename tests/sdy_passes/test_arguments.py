"""Every public function of `sdy_passes` validates its arguments (issue 37 item 9).

One table names each public callable (the package's `__all__` and the functions the README
documents in submodules) with arguments it accepts; the sweep replaces one argument at a time by
values of the wrong type or size and requires either success or an `SdyError` that is not
chained onto an internal exception, within seconds (never a hang, a foreign exception such as
TypeError/KeyError/AttributeError, or Python's own ValueError from printing a huge int). A
second test fails when a name of `sdy_passes.__all__` is missing from the table.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import sdy_passes as s
from sdy_passes import SdyError
from sdy_passes.dialects import lookup
from sdy_passes.op_sharding_rules import create_op_sharding_rule
from tests.argument_sweep import findings

BAD = [None, "x", "", b"x", 1.5, -1, 2**63, 10**5000, True, [], [[1, [2]]], object(), "\u0662", "\U0001d7d9",
       np.float64(2.0), np.int64(3), np.True_, {"a": 1}]

TEXT = '''sdy.mesh @m = <["x"=2]>
func.func @main(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) -> tensor<4xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}'''
SHORT = [None, "", b"x", 1.5, 10**5000, True, [[1, [2]]], object(), np.int64(3)]
"""For the functions that run a pipeline per call (a tenth of a second each): one value per kind."""
X = np.arange(4.0, dtype=np.float32)


def _table():
    m = s.parse_module(TEXT)
    func = m.ops[1]
    add = func.regions[0].blocks[0].ops[0]
    return [
        ("parse_module", s.parse_module, (TEXT,), {"filename": "-", "verify": True}),
        ("print_module", s.print_module, (m,), {"generic": False, "print_locations": False, "mlir_names": True}),
        ("print_op", s.print_op, (add,), {"generic": True}),
        ("run_passes", s.run_passes, (m.clone(), ["sdy-add-data-flow-edges"]), {"verify": True}),
        ("parse_attribute", s.parse_attribute, ("1 : i32",), {}),
        ("parse_type", s.parse_type, ("tensor<4xf32>",), {}),
        ("split_input", s.split_input, (TEXT,), {}),
        ("verify_module", s.verify_module, (m,), {}),
        ("explain", s.explain, (TEXT, "%0"), {"func": None, "pipeline": "sdy-propagation-pipeline"}),
        ("cost_report", s.cost_report, (TEXT,), {"mesh": None, "links": None}),
        ("interpret", s.interpret, (TEXT, X), {"func": "main", "numerics": "fast", "mesh": None}),
        ("partition", s.partition, (TEXT,), {}),
        ("execute", s.execute, (TEXT, X), {"mesh": None, "func": "main", "numerics": "fast", "backend": None,
                                          "dry": False, "fill": "poison", "links": None, "algorithm": "ring",
                                          "device": None}),
        ("IntegerType", s.IntegerType, (8, ""), {}),
        ("FloatType", s.FloatType, ("f32",), {}),
        ("ComplexType", s.ComplexType, (s.F32,), {}),
        ("RankedTensorType", s.RankedTensorType, ((4,), s.F32, None), {}),
        ("UnrankedTensorType", s.UnrankedTensorType, (s.F32,), {}),
        ("TupleType", s.TupleType, ((s.F32,),), {}),
        ("FunctionType", s.FunctionType, ((s.F32,), (s.F32,)), {}),
        ("OpaqueType", s.OpaqueType, ("!a.b",), {}),
        ("IntegerAttr", s.IntegerAttr, (1, s.I32), {}),
        ("BoolAttr", s.BoolAttr, (True,), {}),
        ("FloatAttr", s.FloatAttr, (1.0, s.F32), {}),
        ("StringAttr", s.StringAttr, ("a",), {}),
        ("ArrayAttr", s.ArrayAttr, ((s.StringAttr("a"),),), {}),
        ("DictionaryAttr", s.DictionaryAttr, ((("a", s.StringAttr("a")),),), {}),
        ("TypeAttr", s.TypeAttr, (s.F32,), {}),
        ("SymbolRefAttr", s.SymbolRefAttr, ("a", ("b",)), {}),
        ("DenseArrayAttr", s.DenseArrayAttr, (s.I32, (1, 2)), {}),
        ("DenseElementsAttr", s.DenseElementsAttr, ("1.0", s.RankedTensorType((4,), s.F32)), {}),
        ("OpaqueAttr", s.OpaqueAttr, ("#a.b",), {}),
        ("OpShardingRule", s.OpShardingRule, ((((0,),),), (((0,),),), (4,), ()), {}),
        ("FileLineColLoc", s.FileLineColLoc, ("a.py", 1, 2), {}),
        ("NameLoc", s.NameLoc, ("a", s.UnknownLoc()), {}),
        ("CallSiteLoc", s.CallSiteLoc, (s.UnknownLoc(), s.UnknownLoc()), {}),
        ("FusedLoc", s.FusedLoc, ((s.UnknownLoc(),), None), {}),
        ("fused_loc", s.fused_loc, ((s.UnknownLoc(),), None), {}),
        ("loc_children", s.loc_children, (s.UnknownLoc(),), {}),
        ("escape_string", s.escape_string, ("a",), {}),
        ("print_symbol_name", s.print_symbol_name, ("a",), {}),
        ("print_attr_name", s.print_attr_name, ("a",), {}),
        ("format_float", s.format_float, (1.0, s.F32), {}),
        ("lookup", lookup, ("stablehlo.add",), {}),  # README: op sharding rules without the pass
        ("create_op_sharding_rule", create_op_sharding_rule, (add,), {"conservative": False}),
    ]


def _label(value) -> str:
    return "10**5000" if value is BAD[7] else repr(value)[:40]


ROWS = _table()


@pytest.mark.parametrize("name, fn, args, kwargs", ROWS, ids=[r[0] for r in ROWS])
def test_every_public_function_refuses_bad_arguments_with_its_own_error(name, fn, args, kwargs):
    values = SHORT if name in ("execute", "cost_report") else BAD
    bad = findings(name, fn, args, kwargs, values, SdyError, 10, _label)
    assert not bad, f"{len(bad)}:\n" + "\n".join(bad)


@pytest.mark.parametrize("call, message", [
    (lambda: s.print_module(TEXT), "print_module: expected a Module, found str"),
    (lambda: s.run_passes(s.parse_module(TEXT), 3), "pipeline: expected a pipeline string or a list of pass names"),
    (lambda: s.run_passes(s.parse_module(TEXT), [b"sdy-add-data-flow-edges"]), "pipeline: expected pass names (str)"),
    (lambda: s.interpret(TEXT, X, func=["main"]), "func: expected a function name (str)"),
    (lambda: s.interpret(TEXT, X, numerics=10**5000), "found an int of 16610 bits"),
    (lambda: s.execute(TEXT, None), "argument #0: expected an array of type 'tensor<4xf32>', found NoneType"),
    (lambda: s.execute(TEXT, X, fill="x"), "argument #0: fill 'x' does not fit dtype float32"),
    (lambda: s.RankedTensorType(4, s.F32), "RankedTensorType: expected a tuple of dimensions"),
    (lambda: s.FloatType("f31"), "FloatType: expected an MLIR float type name"),
    (lambda: s.format_float(10**400, s.F32), "beyond every float type"),
    (lambda: lookup(["stablehlo.add"]), "lookup: expected an op name (str), found list"),
])
def test_issue_instances_are_refused_by_name(call, message):
    with pytest.raises(SdyError) as caught:
        call()
    assert message in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__ or caught.value.__context__ is None


def test_the_sweep_covers_every_public_name():
    listed = {name for name, *_ in ROWS}
    # Graph nodes mutate (the IR builder: its methods take what the parser builds), exceptions,
    # the Pass base class to subclass, values the package makes, and constants.
    graph = {"Module", "Operation", "Block", "Region", "Value", "OpResult", "BlockArgument", "Use", "SymbolTable"}
    made = {"Pass", "CostReport", "Execution", "Location", "UnknownLoc", "Type", "Attribute", "IndexType", "NoneType",
            "UnitAttr"}
    missing = [n for n in s.__all__ if callable(getattr(s, n)) and n not in listed | graph | made
               and not (inspect.isclass(getattr(s, n)) and issubclass(getattr(s, n), (Exception, Warning)))]
    assert not missing, f"public names without a row in the sweep: {missing}"
