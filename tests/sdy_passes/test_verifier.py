"""The verifier: one test per message, and the same messages and locations as jaxlib."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdy_passes import FileLineColLoc, SdyError, VerificationError, parse_module, run_passes, verify_module
from tests.conftest import SDY_CASES, needs_shared
from tests.sdy_passes.pass_oracle import jaxlib_parse
from tests.sdy_passes.module_gen import modules as module_texts
from tests.sdy_passes.strategies import ir_examples, modules

MESH = 'sdy.mesh @mesh = <["a"=2, "b"=2]>\n'


def _func(body: str, args: str = "%arg0: tensor<8x8xf32>", results: str = "tensor<8x8xf32>") -> str:
    return MESH + f"func.func @f({args}) -> {results} {{\n{body}\n}}\n"


# (module text, expected message, line, col): every message is jaxlib's.
CASES = [
    (MESH + 'func.func @f(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"c"}, {}]>}) -> tensor<8x8xf32> {\n  return %arg0 : tensor<8x8xf32>\n}\n',
     "'func.func' op arg 0 - unknown axis name: \"c\"", 2, 1),
    (MESH + 'func.func @f(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@other, [{}, {}]>}) {\n  return %arg0 : tensor<8x8xf32>\n}\n',
     "'func.func' op result 0 - unknown mesh: @other", 2, 1),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"a"}]>]>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'stablehlo.add' op result - duplicate axis ref: \"a\"", 3, 8),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}]>, <@mesh, [{}, {}]>]>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'stablehlo.add' op result shardings don't match number of values: 2 shardings vs 1 values", 3, 8),
    (_func('  %0:2 = stablehlo.optimization_barrier {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {}]>, <@mesh, [{"b"}]>]>} %arg0, %arg0 : tensor<8x8xf32>, tensor<8x8xf32>\n  return %0#0 : tensor<8x8xf32>'),
     "'stablehlo.optimization_barrier' op result 1 - sharding doesn't match tensor rank: 1 != 2", 3, 10),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'stablehlo.add' op should have a sharding attribute of type TensorShardingPerValueAttr", 3, 8),
    (_func('  %0 = sdy.sharding_constraint %arg0 <@mesh, [{}, {}p1]> : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'sdy.sharding_constraint' op dim 1 is empty and closed but has a priority", 3, 8),
    (_func('  %0 = sdy.reshard %arg0 <@mesh, [{"b"}, {}], replicated={"b"}> : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'sdy.reshard' op duplicate axis ref: \"b\"", 3, 8),
    (_func('  %0 = stablehlo.abs %arg0 : tensor<8x8xf32>\n  %1 = sdy.data_flow_edge %0 : tensor<8x8xf32>\n  %2 = stablehlo.add %0, %1 : tensor<8x8xf32>\n  return %2 : tensor<8x8xf32>'),
     "'sdy.data_flow_edge' op expected input of sdy.data_flow_edge to have a single user", 4, 8),
    (_func('  %0 = sdy.reshard %arg0 <@mesh, [{}, {}]> : tensor<8x8xf32>\n  %1 = sdy.data_flow_edge %0 : tensor<8x8xf32>\n  return %1 : tensor<8x8xf32>'),
     "'sdy.data_flow_edge' op expected input of sdy.data_flow_edge to not be defined by an SdyDialect op (other than an sdy.named_computation).", 4, 8),
    (_func('  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"b", "a"}, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>) {\n    sdy.return %arg1 : tensor<4x8xf32>\n  } : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'sdy.manual_computation' op operand sharding at index 0 must have all manual axes come before free axes in its dimension sharding at index 0. Saw manual axis \"a\" after free axis \"b\"", 3, 8),
    (_func('  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<8x8xf32>) {\n    sdy.return %arg1 : tensor<8x8xf32>\n  } : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'sdy.manual_computation' op operand shape, corresponding sharding, and region operand shape at index 0 must match. Expected local shape 'tensor<4x8xf32>', actual local shape 'tensor<8x8xf32>'", 3, 8),
    (_func('  %0 = sdy.manual_computation(%arg0) in_shardings=[] out_shardings=[<@mesh, [{}, {}]>] manual_axes={} (%arg1: tensor<8x8xf32>) {\n    sdy.return %arg1 : tensor<8x8xf32>\n  } : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'sdy.manual_computation' op operand shardings don't match number of values: 0 shardings vs 1 values", 3, 8),
    (_func('  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>) {\n    %1 = sdy.sharding_constraint %arg1 <@mesh, [{"a"}, {}]> : tensor<4x8xf32>\n    sdy.return %1 : tensor<4x8xf32>\n  } : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'sdy.sharding_constraint' op operates on axis \"a\" which is already bound by a parent sdy.manual_computation op", 4, 10),
    (_func('  %0 = sdy.named_computation<"x">(%arg0) in_shardings=[<@mesh, [{"c"}, {}]>] (%arg1: tensor<8x8xf32>) {\n    sdy.return %arg1 : tensor<8x8xf32>\n  } : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'sdy.named_computation' op in_shardings - unknown axis name: \"c\"", 3, 8),
    (_func('  %0 = sdy.named_computation<"x">(%arg0) (%arg1: tensor<4x8xf32>) {\n    sdy.return %arg1 : tensor<4x8xf32>\n  } : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'sdy.named_computation' op inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<8x8xf32>'", 3, 8),
    (_func('  %0 = sdy.named_computation<"x">(%arg0) (%arg1: tensor<4x8xf32>) {\n    %c = stablehlo.constant dense<0.0> : tensor<8x8xf32>\n    sdy.return %c : tensor<8x8xf32>\n  } : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "expected the type of the 0'th block argument to match the type of the corresponding operand: 'tensor<4x8xf32>' vs 'tensor<8x8xf32>'", 3, 8),
    (_func('  %0 = sdy.propagation_barrier %arg0 allowed_direction=BOTH : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'sdy.propagation_barrier' op cannot specify `BOTH` as the direction. Not blocking propagation direction makes the op redundant.", 3, 8),
    ('sdy.mesh @mesh = <["a"=2]>\nsdy.mesh @mesh = <["a"=4]>\n', "redefinition of symbol named 'mesh'", 2, 1),
    # A result-less op's single sharding is verified against a null type: rank 0 only.
    (_func('  "stablehlo.custom_call"(%arg0) <{call_target_name = "foo"}> {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}]>]>} : (tensor<8x8xf32>) -> ()\n  return %arg0 : tensor<8x8xf32>'),
     "'stablehlo.custom_call' op result 0 - a maximal sharding can only have a sharding with rank 0 and no replicated or unreduced axes.", 3, 3),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=8}>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'stablehlo.add' op number of operands and mappings must match: 2 != 1", 3, 8),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding_rule = #sdy.op_sharding_rule<([i], [i, j])->([i, j]) {i=8, j=8}>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'stablehlo.add' op operand 0 - mapping rank must match: 1 != 2", 3, 8),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, i]) {i=8, j=8}>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'stablehlo.add' op result - cannot reuse factors for the same tensor value", 3, 8),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=8, j=8, k=2}>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'stablehlo.add' op has factor k=2 that isn't used in operand and result mappings", 3, 8),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=8, j=8} reduction={j} need_replication={j}>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'stablehlo.add' op a factor can only be in one of the reduction, need replication, or permutation factor sets", 3, 8),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [i, j])->([i, j]) {i=8, j=8} reduction={j, i}>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>'),
     "'stablehlo.add' op indices of special factors must be sorted", 3, 8),
    (_func('  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding_rule = #sdy.op_sharding_rule<([ij, k], [ij, k])->([ij, k]) {i=1, j=8, k=8}>} : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>',
           "%arg0: tensor<8x8xf32>"),
     "'stablehlo.add' op operand 0 - dim mapping can't have a factor of size 1 if there are multiple factors", 3, 8),
]


@pytest.mark.parametrize("text, message, line, col", CASES, ids=range(len(CASES)))
def test_messages(text, message, line, col):
    module = parse_module(text, verify=False)
    with pytest.raises(VerificationError) as info:
        verify_module(module)
    assert info.value.message == message
    assert info.value.location == FileLineColLoc("-", line, col)
    assert str(info.value) == f'loc("-":{line}:{col}): {message}'


def test_valid_module_passes():
    verify_module(parse_module(_func('  %0 = sdy.sharding_constraint %arg0 <@mesh, [{"a", ?}, {}]> : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>')))


@needs_shared(SDY_CASES)
def test_every_golden_input_and_output_verifies():
    for path in sorted(SDY_CASES.glob("*/*.mlir")):
        if path.name.endswith(".in.mlir"):
            continue
        verify_module(parse_module(path.read_text()))


@pytest.mark.jaxlib
def test_messages_match_jaxlib():
    expected = [r["error"] for r in jaxlib_parse(text for text, *_ in CASES)]
    for (text, message, line, col), got in zip(CASES, expected):
        assert got == f'loc("-":{line}:{col}): {message}'


@settings(max_examples=ir_examples(15))
@given(modules())
def test_random_modules_verify_or_raise_verification_error(module):
    try:
        verify_module(module)
    except VerificationError:
        pass


@pytest.mark.parametrize("text, where, message", [
    # jaxlib 0.10.2's first diagnostic for each
    ('func.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n  %1 = stablehlo.add %0, %arg0 : tensor<2xf32>\n'
     '  %0 = stablehlo.negate %arg0 : tensor<2xf32>\n  return %1 : tensor<2xf32>\n}', (2, 8),
     "operand #0 does not dominate this use"),
    ('func.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = stablehlo.add %1, %arg0 : tensor<2xf32>\n'
     '  %1 = stablehlo.add %0, %arg0 : tensor<2xf32>\n  return %1 : tensor<2xf32>\n}', (2, 8),
     "operand #0 does not dominate this use"),
    ('func.func @f(%arg0: tensor<i32>) -> tensor<i32> {\n  %1 = stablehlo.while(%it = %arg0) : tensor<i32>\n'
     '   cond {\n    %c = stablehlo.compare LT, %it, %it : (tensor<i32>, tensor<i32>) -> tensor<i1>\n'
     '    stablehlo.return %c : tensor<i1>\n  } do {\n    stablehlo.return %5 : tensor<i32>\n  }\n'
     '  %5 = stablehlo.constant dense<1> : tensor<i32>\n  return %1 : tensor<i32>\n}', (7, 5),
     "operand #0 does not dominate this use"),  # a nested region's forward reference resolves outside
    ('sdy.mesh @mesh = <["a"=2]>\nfunc.func @f(%arg0: tensor<16x32xf32>) -> tensor<16x32xf32> {\n'
     '  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{}, {}]>] out_shardings=[<@mesh, [{}, {}]>] '
     'manual_axes={} (%arg1: tensor<16x32xf32>) {\n    %1 = stablehlo.add %arg0, %arg1 : tensor<16x32xf32>\n'
     '    sdy.return %1 : tensor<16x32xf32>\n  } : (tensor<16x32xf32>) -> tensor<16x32xf32>\n'
     '  return %0 : tensor<16x32xf32>\n}', (4, 10), "'stablehlo.add' op using value defined outside the region"),
])
def test_dominance_and_isolation(text, where, message):
    with pytest.raises(VerificationError) as e:
        parse_module(text)
    assert e.value.message == message
    assert (e.value.location.line, e.value.location.col) == where


# Issue 37 item 14: with several broken ops, the one jaxlib's verifier reports.
def _bad_edges(k, ind):
    return (f"{ind}%x{k} = stablehlo.negate %arg0 : tensor<8xf32>\n{ind}%y{k} = sdy.data_flow_edge %x{k} : tensor<8xf32>\n"
            f"{ind}%z{k} = sdy.data_flow_edge %y{k} : tensor<8xf32>\n")


def _while(k, body="", cond=""):
    return (f"    %w{k}:1 = stablehlo.while(%i{k} = %arg0) : tensor<8xf32>\n    cond {{\n{cond}"
            f"      %c{k} = stablehlo.constant dense<true> : tensor<i1>\n      stablehlo.return %c{k} : tensor<i1>\n"
            f"    }} do {{\n{body}      stablehlo.return %i{k} : tensor<8xf32>\n    }}\n")


def _manual(k, ind):
    return (f"{ind}%m{k} = sdy.manual_computation(%arg0) in_shardings=[<@m, [{{}}]>] out_shardings=[<@m, [{{}}]>] "
            f"manual_axes={{}} (%a{k}: tensor<8xf32>) {{\n" + _bad_edges(k, ind + "  ").replace("%arg0", f"%a{k}")
            + f"{ind}  sdy.return %a{k} : tensor<8xf32>\n{ind}}} : (tensor<8xf32>) -> tensor<8xf32>\n")


def _func_text(name, body):
    return (f"  func.func @{name}(%arg0: tensor<8xf32>) -> tensor<8xf32> {{\n{body}"
            "    return %arg0 : tensor<8xf32>\n  }\n")


def _order_cases():
    w, o = "      ", "    "
    bodies = [
        _while(1, _bad_edges(1, w)) + _bad_edges(2, o), _bad_edges(2, o) + _while(1, _bad_edges(1, w)),
        _while(1, _bad_edges("B", w), _bad_edges("A", w)), _while(1, _while(2, _bad_edges("A", w)) + _bad_edges("B", w)),
        _while(1, _bad_edges("A", w)) + _while(2, _while(3, _bad_edges("B", w))),
        _while(1, _bad_edges("A", w) + _while(3, _bad_edges("B", w))), _bad_edges(1, o) + _bad_edges(2, o),
        _while(1, _manual(1, w)) + _bad_edges(2, o), _while(1, _manual(1, w)) + _manual(2, o),
        _manual(2, o) + _while(1, _manual(1, w)) + _manual(3, o), _manual(1, o) + _manual(2, o) + _bad_edges(3, o),
    ]
    texts = ['module {\n  sdy.mesh @m = <["x"=2]>\n' + _func_text("f", b) + "}" for b in bodies]
    texts.append('module {\n  sdy.mesh @m = <["x"=2]>\n' + _func_text("f", _bad_edges(1, "    ")) + _func_text("g", _manual(2, "    "))
                 + _func_text("h", "") + "}")
    texts.append('module {\n  sdy.mesh @m = <["x"=2]>\n' + _func_text("f", _bad_edges(1, "    "))
                 + "  module @inner {\n" + _func_text("g", _bad_edges(2, "    ")) + _func_text("h", _bad_edges(3, "    ")) + "  }\n}")
    return texts


@pytest.mark.jaxlib
def test_the_reported_error_is_the_one_jaxlib_reports():
    from tests.sdy_passes.pass_oracle import jaxlib_parse

    texts = _order_cases()
    for text, result in zip(texts, jaxlib_parse(texts)):
        with pytest.raises(VerificationError) as info:
            parse_module(text)
        assert str(info.value.location) == result["error"].split(": ")[0], text


@pytest.mark.jaxlib
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(module_texts(), min_size=60, max_size=60))
def test_import_pipeline_over_manual_computations_with_edges_fails_where_jaxlib_does(texts):
    """The issue's instance: modules whose computations already carry edges fail after
    sdy-import-pipeline in both, at the op jaxlib names."""
    from tests.sdy_passes.pass_oracle import run_jaxlib_passes

    passes = ["sdy-add-data-flow-edges", "sdy-import-pipeline"]
    for text, verdict in zip(texts, run_jaxlib_passes([(t, passes) for t in texts])):
        if verdict.crashed:
            continue
        try:
            run_passes(parse_module(text), passes)
        except SdyError as e:
            assert not verdict.ok and str(e.location) == verdict.errors[0].split(": ")[0], (text, verdict.errors)
        else:
            assert verdict.ok, (text, verdict.errors)
