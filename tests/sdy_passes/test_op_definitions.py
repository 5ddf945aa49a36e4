"""Each op's declaration (`sdy_passes.dialects`: counts, required and typed attributes) against
jaxlib 0.10.2's parser and verifier: every op of the table with wrong counts and wrong attribute
kinds, and real modules (JAX's lowered corpus, Shardy's cases) mutated one op at a time. Where
jaxlib reports a count, a missing attribute or an attribute constraint, we report the same
message at the same place, and the other way round."""

import random
import re

import pytest

from sdy_passes import IRParseError, SdyError, parse_module, print_module
from sdy_passes.attributes import I32, IntegerAttr, StringAttr
from sdy_passes.dialects import OPS
from sdy_passes.common.rewrite import Pattern
from sdy_passes.dialects._base import ATTRIBUTE_KINDS, facet
from tests.conftest import SDY_CASES, needs_shared
from tests.sdy_passes.jax_corpus import lower_all
from tests.jaxlib_child import run_child_items

_DECLARED = re.compile(
    r"requires (zero|one|a single) (operand|result|region)|expected \d+ (or more )?(operand|result|region)s"
    r"|requires attribute '|failed to satisfy constraint|in property conversion")
"""The messages the op declarations give (the op verifiers' own checks are tested elsewhere)."""

_HEAD = 'sdy.mesh @mesh = <["a"=2]>\nfunc.func @f(%a: tensor<4xf32>) -> () {\n'
_TAIL = "\n  return\n}\n"

_VALID = {"StrAttr": '"x"', "BoolAttr": "false", "I64Attr": "0 : i64", "NonNegativeI64Attr": "0 : i64",
          "PositiveI64Attr": "1 : i64", "I32Attr": "0 : i32", "NonNegativeI32Attr": "0 : i32",
          "PositiveI32Attr": "1 : i32", "F32Attr": "1.0 : f32", "DenseI64ArrayAttr": "array<i64>",
          "DenseBoolArrayAttr": "array<i1>", "ArrayAttr": "[]", "DictionaryAttr": "{}", "FlatSymbolRefAttr": "@f",
          "FunctionTypeAttr": "() -> ()", "ComparisonDirection": "#stablehlo<comparison_direction EQ>",
          "ComparisonType": "#stablehlo<comparison_type FLOAT>", "FftType": "#stablehlo<fft_type FFT>",
          "RngAlgorithm": "#stablehlo<rng_algorithm DEFAULT>",
          "RngDistribution": "#stablehlo<rng_distribution UNIFORM>", "Transpose": "#stablehlo<transpose NO_TRANSPOSE>",
          "PrecisionConfig": "[]", "DotDimensionNumbers": "#stablehlo.dot<>",
          "GatherDimensionNumbers": "#stablehlo.gather<index_vector_dim = 0>",
          "ScatterDimensionNumbers": "#stablehlo.scatter<index_vector_dim = 0>",
          "ConvDimensionNumbers": "#stablehlo.conv<[b, f]x[o, i]->[b, f]>"}
"""A value each kind accepts."""

_WRONG = ('"x"', "1 : i32", "-1 : i64", "array<i32: 1>", "#stablehlo<comparison_type FLOAT>")
"""Values some kind refuses: another class, another width, a negative number, another enum."""


def _generic_op(name: str, operands: int, results: int, regions: int, props: str = "", attrs: str = "") -> str:
    lhs = "" if results == 0 else (f"%r:{results} = " if results > 1 else "%r = ")
    region_text = "" if regions == 0 else " (" + ", ".join(["{\n  }"] * regions) + ")"
    return (_HEAD + f'  {lhs}"{name}"({", ".join(["%a"] * operands)}){props}{region_text}{attrs} : '
            f"({_types(operands)}) -> ({_types(results)})" + _TAIL)


def _types(n: int) -> str:
    return ", ".join(["tensor<4xf32>"] * n)


_PARSE_ONE = r"""
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir

def run_item(text):
    ctx = jax_mlir.make_ir_context()
    ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        try:
            ir.Module.parse(text)
        except ir.MLIRError as e:
            d = e.error_diagnostics[0]
            return f"{d.location}: {d.message}"
    return "ok"
"""
"""jaxlib's first diagnostic for a text, "ok", or None (the child died on it)."""


def _ours(text: str) -> str:
    try:
        parse_module(text)
    except IRParseError as e:  # written `-:3:3: error: ...` with the source line
        return f'loc("-":{e.line}:{e.col}): {e.message}'
    except SdyError as e:
        return str(e)
    return "ok"


def _assert_agree(texts: list[str]) -> int:
    """Our first error is jaxlib's wherever either is a declaration message, and we refuse what
    jaxlib crashes on; returns how many texts were compared."""
    compared = 0
    for text, theirs in zip(texts, run_child_items(_PARSE_ONE, texts)):
        ours = _ours(text)
        if theirs is None:
            assert ours != "ok", text
        elif _DECLARED.search(ours) or _DECLARED.search(theirs):
            compared += 1
            assert ours == theirs, text
    return compared


_NOT_HERE = ("sdy.mesh", "chlo.scan")
"""A mesh inside a function is refused first for its parent; `chlo.scan` counts its operands
and results with `operandSegmentSizes` / `resultSegmentSizes`, which we do not check."""


def _count(value: int | None, minimum: int) -> int:
    return minimum if value is None else value


@pytest.mark.jaxlib
def test_every_ops_counts_and_required_attributes_are_jaxlibs():
    """Each op with no operands, results or regions, and with nine of each in turn (the others
    as declared): the trait messages in MLIR's order (regions, results, operands), then the
    required attributes."""
    texts = []
    for opdef in OPS.values():
        if opdef.name.split(".")[0] not in ("stablehlo", "chlo", "sdy", "func") or opdef.name in _NOT_HERE:
            continue
        ops = _count(opdef.num_operands, opdef.min_operands)
        res = _count(opdef.num_results, 0)
        reg = _count(opdef.num_regions, 0)
        for counts in ((0, 0, 0), (ops, res, 9), (ops, 9, reg), (9, res, reg), (ops, res, reg)):
            texts.append(_generic_op(opdef.name, *counts))
    assert _assert_agree(texts) > 300


@pytest.mark.jaxlib
def test_every_attribute_kind_is_jaxlibs():
    """Each typed attribute of each op given wrong values, in `<{...}>` (MLIR's property
    conversion refuses another class at parse time) and in `{...}` without properties (the
    verifier's constraint message), the other required attributes valid."""
    texts = []
    for opdef in OPS.values():
        kinds = dict(opdef.attribute_kinds)
        if any(name not in kinds for name in opdef.required) or opdef.name == "sdy.mesh":
            continue
        counts = (_count(opdef.num_operands, opdef.min_operands), _count(opdef.num_results, 0),
                  _count(opdef.num_regions, 0))
        for name, kind in opdef.attribute_kinds:
            others = [f"{n} = {_VALID[kinds[n]]}" for n in opdef.required if n != name]
            for wrong in _WRONG:
                fields = ", ".join([*others, f"{name} = {wrong}"])
                texts.append(_generic_op(opdef.name, *counts, props=f" <{{{fields}}}>"))
                texts.append(_generic_op(opdef.name, *counts, attrs=f" {{{fields}}}"))
    assert _assert_agree(texts) > 200


def _real_modules() -> list[str]:
    return ([v["generic"] for v in lower_all().values() if "generic" in v]
            + [p.read_text() for p in sorted(SDY_CASES.glob("*/*.in.generic.mlir"))])


def _mutations(text: str, seen: set):
    """For the first op of each name not seen yet: its operands with the first one repeated,
    without its last one, without any, without each required attribute in turn, and with each typed
    attribute replaced by a string and by an i32."""
    for i, op in enumerate(parse_module(text).op.walk()):
        opdef = OPS.get(op.name)
        if opdef is None or op.name in seen or op.name in ("builtin.module", "func.func"):
            continue
        seen.add(op.name)
        edits = []
        if op.operands:
            edits += [lambda o: o.set_operands([*o.operands, o.operands[0]]), lambda o: o.set_operands(o.operands[:-1]),
                      lambda o: o.set_operands([])]
        edits += [lambda o, n=n: o.properties.pop(n) for n in opdef.required if n in op.properties]
        for name, kind in opdef.attribute_kinds:
            if name in op.properties:
                for wrong in (StringAttr("x"), IntegerAttr(1, I32)):
                    if not ATTRIBUTE_KINDS[kind].satisfies(wrong):
                        edits.append(lambda o, n=name, w=wrong: o.properties.__setitem__(n, w))
        for edit in edits:
            module = parse_module(text)
            edit(list(module.op.walk())[i])
            yield print_module(module, generic=True)


@pytest.mark.jaxlib
@needs_shared(SDY_CASES)
def test_real_modules_mutated_fail_as_in_jaxlib():
    seen: set = set()
    texts = [t for text in _real_modules() for t in _mutations(text, seen)]
    assert len(seen) > 30
    assert _assert_agree(texts) > 60


def test_an_op_jaxlib_does_not_know_is_unknown():
    """`stablehlo.collective_reduce` is StableHLO HEAD's, not jaxlib 0.10.2's."""
    with pytest.raises(SdyError, match="unregistered operation 'stablehlo.collective_reduce' found in dialect"):
        parse_module(_generic_op("stablehlo.collective_reduce", 1, 1, 0))


_AXES = {"a": 2, "b": 4, "c": 3}


def _tensor(shape) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def _random_manual_computation(r: random.Random) -> str:
    """A `sdy.manual_computation` over a random global shape with random in/out shardings
    (sub-axes, a dimension too many now and then) and manual axes, its body's types the local
    shapes the shardings give (sizes that do not divide kept whole), now and then one off."""
    shape = [r.choice((1, 2, 3, 4, 6, 8, 12, 16)) for _ in range(r.randint(0, 3))]
    manual = sorted(r.sample(list(_AXES), r.randint(0, 3)))
    shardings, locals_ = [], []
    for _ in range(2):
        used, dims, local = set(), [], []
        for d in range(len(shape) + (r.random() < 0.05)):
            axes, factor = [], 1
            for a in r.sample(list(_AXES), r.randint(0, 2)):
                if a in used:
                    continue
                used.add(a)
                sub = r.random() < 0.15 and _AXES[a] % 2 == 0
                axes.append(f'"{a}":(1)2' if sub else f'"{a}"')
                factor *= (2 if sub else _AXES[a]) if a in manual else 1
            dims.append("{" + ", ".join(axes) + "}")
            if d < len(shape):
                local.append(shape[d] // factor if shape[d] % factor == 0 else shape[d])
        if local and r.random() < 0.1:
            local[0] += 1
        shardings.append("<@mesh, [" + ", ".join(dims) + "]>")
        locals_.append(local)
    (ins, outs), (lin, lout), g = shardings, locals_, _tensor(shape)
    axes = "{" + ", ".join(f'"{a}"' for a in manual) + "}"
    return (f'sdy.mesh @mesh = <["a"=2, "b"=4, "c"=3]>\nfunc.func @f(%arg0: {g}) -> {g} {{\n'
            f"  %0 = sdy.manual_computation(%arg0) in_shardings=[{ins}] out_shardings=[{outs}] "
            f"manual_axes={axes} (%arg1: {_tensor(lin)}) {{\n"
            f'    %1 = "t.cast"(%arg1) : ({_tensor(lin)}) -> {_tensor(lout)}\n'
            f"    sdy.return %1 : {_tensor(lout)}\n  }} : ({g}) -> {g}\n  return %0 : {g}\n}}\n")


@pytest.mark.jaxlib
def test_random_manual_computations_verify_as_in_jaxlib():
    """Shardy's `ManualComputationOp::verify` (issue 37): sharding vs global type, manual axes
    before free ones, dimension sizes divisible by the manual axes, local shapes vs the body's."""
    r = random.Random(37)
    texts = [_random_manual_computation(r) for _ in range(200)]
    code = _PARSE_ONE.replace("ctx.enable_multithreading(False)",
                              "ctx.enable_multithreading(False)\n    ctx.allow_unregistered_dialects = True")
    verdicts = run_child_items(code, texts)
    for text, theirs in zip(texts, verdicts):
        assert _ours(text) == theirs, text
    assert sum("is not divisible by the manual axes size" in v for v in verdicts) > 10
    assert sum(v == "ok" for v in verdicts) > 50


def test_every_facet_names_a_function_or_pattern_tuple():
    """The `module:function` strings of the op table resolve (a typo would only show when the
    op is first met)."""
    resolved = 0
    for opdef in OPS.values():
        for name in (opdef.sharding_rule, opdef.evaluator):
            if name is not None:
                assert callable(facet(name)), (opdef.name, name)
                resolved += 1
        if opdef.canonicalization is not None:
            patterns = facet(opdef.canonicalization)
            assert patterns and all(isinstance(p, Pattern) for p in patterns), opdef.name
            resolved += 1
    assert resolved > 200
