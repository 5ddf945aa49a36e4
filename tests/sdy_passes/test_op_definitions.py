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
    r"|requires attribute '|failed to satisfy constraint|in property conversion|SegmentSizes|expects parent op"
    r"|expects regions to end with|region with 1 blocks|non-empty block|expect at least a terminator"
    r"|symbol declaration|visibility expected")
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
          "ConvDimensionNumbers": "#stablehlo.conv<[b, f]x[o, i]->[b, f]>", "UnitAttr": "unit",
          "I64ElementsAttr": "dense<0> : tensor<1x2xi64>", "ReplicaGroups": "dense<0> : tensor<1x1xi64>",
          "ChannelHandle": "#stablehlo.channel_handle<handle = 0, type = 0>",
          "ResultAccuracy": "#stablehlo.result_accuracy<mode = #stablehlo.result_accuracy_mode<DEFAULT>>",
          "DotAlgorithm": "#stablehlo.dot_algorithm<lhs_precision_type = f32, rhs_precision_type = f32, "
                          "accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, "
                          "num_primitive_operations = 1, allow_imprecise_accumulation = false>",
          "ElementsAttr": "dense<0.0> : tensor<4xf32>", "BackendConfig": '"x"', "CustomCallApiVersion": "4 : i32",
          "FlatSymbolRefArrayAttr": "[@f]", "LayoutArray": "[dense<0> : tensor<1xindex>]",
          "OutputOperandAliasArray": "[#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, "
                                     "operand_tuple_indices = []>]",
          "DictArrayAttr": "[{}]", "ChloComparisonDirection": "#chlo<comparison_direction EQ>",
          "ChloComparisonType": "#chlo<comparison_type FLOAT>"}
"""A value each kind accepts."""

_WRONG = ('"x"', "1 : i32", "-1 : i64", "array<i32: 1>", "#stablehlo<comparison_type FLOAT>", "5 : i32", "[1]",
          "dense<1> : tensor<2xi32>", "dense<1.0> : tensor<2xf32>", "[@f::@g]", "[dense<0> : tensor<1x1xindex>]",
          "[dense<0> : tensor<1xi64>]", "#chlo<comparison_direction EQ>", "#stablehlo.channel_handle<handle = 0, type = 0>")
"""Values some kind refuses: another class, another width, a negative number, another enum, an
unknown API version, arrays of the wrong elements, integer elements of another width, float
elements, nested symbols, layouts of another rank or type, another dialect's attribute."""


def _generic_op(name: str, operands: int, results: int, regions: int, props: str = "", attrs: str = "") -> str:
    """The op in a function, each region one block holding the op's terminator (so that the
    checks of regions do not come before those of the op's operands, which we do not type)."""
    lhs = "" if results == 0 else (f"%r:{results} = " if results > 1 else "%r = ")
    opdef = OPS.get(name)
    terminator = "func.return" if name == "func.func" else (opdef and opdef.terminator) or "stablehlo.return"
    region_text = "" if regions == 0 else " (" + ", ".join([f'{{\n  ^bb0:\n    "{terminator}"() : () -> ()\n  }}']
                                                           * regions) + ")"
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


def _assert_agree(texts: list[str]) -> list[str]:
    """Our first error is jaxlib's wherever either is a declaration message, and we refuse what
    jaxlib crashes on; returns the messages compared."""
    compared = []
    for text, theirs in zip(texts, run_child_items(_PARSE_ONE, texts)):
        ours = _ours(text)
        if theirs is None:
            assert ours != "ok", text
        elif _DECLARED.search(ours) or _DECLARED.search(theirs):
            compared.append(theirs)
            assert ours == theirs, text
    return compared


def _count_matching(messages: list[str], part: str) -> int:
    return sum(part in m for m in messages)


def _count(value: int | None, minimum: int) -> int:
    return minimum if value is None else value


@pytest.mark.jaxlib
def test_every_ops_counts_and_required_attributes_are_jaxlibs():
    """Each op with no operands, results or regions, and with nine of each in turn (the others
    as declared): the trait messages in MLIR's order (regions, results, operands), then the
    required attributes."""
    texts = []
    for opdef in OPS.values():
        if opdef.name.split(".")[0] not in ("stablehlo", "chlo", "sdy", "func"):
            continue
        ops = _count(opdef.num_operands, opdef.min_operands)
        res = _count(opdef.num_results, 0)
        reg = _count(opdef.num_regions, 0)
        for counts in ((0, 0, 0), (ops, res, 9), (ops, 9, reg), (9, res, reg), (ops, res, reg)):
            texts.append(_generic_op(opdef.name, *counts))
    compared = _assert_agree(texts)
    assert len(compared) > 300
    assert _count_matching(compared, "specified in attribute 'operandSegmentSizes'") >= 1  # chlo.scan
    assert _count_matching(compared, "'sdy.mesh' op expects parent op 'builtin.module'") >= 2
    assert _count_matching(compared, "'stablehlo.sort' op expected 1 or more results") >= 1


@pytest.mark.jaxlib
def test_every_attribute_kind_is_jaxlibs():
    """Each typed attribute of each op given wrong values (every one for the first attribute
    of each kind, two for the others), in `<{...}>` (MLIR's property conversion refuses another
    class at parse time) and in `{...}` without properties (the verifier's constraint message),
    the other required attributes valid."""
    texts, seen = [], set()
    for opdef in OPS.values():
        kinds = dict(opdef.attribute_kinds)
        if any(name not in kinds for name in opdef.required) or opdef.name == "sdy.mesh":
            continue
        counts = (_count(opdef.num_operands, opdef.min_operands), _count(opdef.num_results, 0),
                  _count(opdef.num_regions, 0))
        for name, kind in opdef.attribute_kinds:
            others = [f"{n} = {_VALID[kinds[n]]}" for n in opdef.required if n != name]
            for wrong in _WRONG if kind not in seen else _WRONG[:2]:
                fields = ", ".join([*others, f"{name} = {wrong}"])
                texts.append(_generic_op(opdef.name, *counts, props=f" <{{{fields}}}>"))
                texts.append(_generic_op(opdef.name, *counts, attrs=f" {{{fields}}}"))
            seen.add(kind)
    assert len(_assert_agree(texts)) > 200


def _scan(sizes: str, form: str) -> str:
    """A `chlo.scan` of two operands and two results with the segment sizes `sizes` in
    `<{...}>` or `{...}`."""
    props = f"dimension = 0 : i64, {sizes}"
    return (_HEAD.replace("-> ()", "-> tensor<4xf32>") + '  %r:2 = "chlo.scan"(%a, %a)'
            + (f" <{{{props}}}>" if form == "props" else "")
            + ' ({\n  ^bb0(%x: tensor<f32>, %y: tensor<f32>):\n    "stablehlo.return"(%x, %y) : (tensor<f32>, '
            "tensor<f32>) -> ()\n  })" + (f" {{{props}}}" if form == "attrs" else "")
            + " : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)\n  return %r#0 : tensor<4xf32>\n}\n")


@pytest.mark.jaxlib
def test_segment_sizes_are_jaxlibs():
    """`chlo.scan`'s `operandSegmentSizes` / `resultSegmentSizes` (ODS `AttrSizedOperandSegments`):
    sums that do not match, negative sizes, another length or element type (refused at parse
    time in `<{...}>`, taken as no sizes in `{...}`)."""
    good = "array<i32: 1, 1>"
    wrong = ("array<i32: 1, 2>", "array<i32: 2, -1>", "array<i32: 1, 0, 1>", "array<i64: 1, 1>", '"x"',
             "array<i32: 0, 2>", "array<i32>")
    texts = [_scan(f"operandSegmentSizes = {o}, resultSegmentSizes = {r}", form)
             for form in ("props", "attrs") for o, r in [(good, good), *((w, good) for w in wrong),
                                                          *((good, w) for w in wrong)]]
    compared = _assert_agree(texts)
    assert _count_matching(compared, "cannot have negative elements") >= 2
    assert _count_matching(compared, "does not match with the total size") >= 8
    assert _count_matching(compared, "size mismatch in attribute conversion") >= 2


def _real_modules() -> list[str]:
    return ([v["generic"] for v in lower_all().values() if "generic" in v]
            + [p.read_text() for p in sorted(SDY_CASES.glob("*/*.in.generic.mlir"))])


_TERMINATORS = ("stablehlo.return", "sdy.return", "func.return")


def _into_first_function(op) -> None:
    """Move `op` to the start of the module's first function."""
    func = next(o for o in op.parent_op.walk() if o.name == "func.func")
    op.detach()
    func.regions[0].blocks[0].insert(0, op)


def _empty_first_block(region) -> None:
    for op in reversed(region.blocks[0].ops):
        op.erase(drop_uses=True)


def _mutations(text: str, seen: set):
    """For the first op of each name not seen yet: its operands with the first one repeated,
    without its last one, without any, without each required attribute in turn, with each typed
    attribute replaced by a string and by an i32, its first region's terminator renamed to
    another dialect's, each region without blocks and with an empty block, and an op that needs a
    parent (`sdy.mesh`) moved into a function."""
    for i, op in enumerate(parse_module(text).op.walk()):
        opdef = OPS.get(op.name)
        if opdef is None or op.name in seen or op.name == "builtin.module":
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
        last = op.regions[0].blocks[-1].ops[-1].name if op.regions and op.regions[0].blocks[-1:] and \
            op.regions[0].blocks[-1].ops else None
        if last in _TERMINATORS:
            edits += [lambda o, t=t: setattr(o.regions[0].blocks[-1].ops[-1], "name", t)
                      for t in _TERMINATORS if t != last]
        if opdef.parent is not None:
            edits.append(_into_first_function)
        for k in range(len(op.regions)):
            edits.append(lambda o, k=k: o.regions[k].blocks.clear())
            if opdef.terminator is not None or op.name == "func.func":  # (no op verifier reads the block first)
                edits.append(lambda o, k=k: _empty_first_block(o.regions[k]))
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
    compared = _assert_agree(texts)
    assert len(compared) > 60
    assert _count_matching(compared, "op expects regions to end with") >= 6
    assert _count_matching(compared, "'func.return' op expects parent op 'func.func'") >= 8
    assert _count_matching(compared, "'sdy.mesh' op expects parent op 'builtin.module'") >= 1
    assert _count_matching(compared, "failed to verify constraint: region with 1 blocks") >= 10
    assert _count_matching(compared, "op expects a non-empty block") >= 5
    assert _count_matching(compared, "symbol declaration cannot have public visibility") >= 1


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
