"""The parser: one test per grammar rule, error messages with line:col and caret, fuzzing."""

import math
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sharding import Mesh, TensorSharding, TensorShardingPerValue

from sdy_passes import (
    ArrayAttr, BoolAttr, DenseArrayAttr, DenseElementsAttr, DictionaryAttr, FileLineColLoc,
    FloatAttr, FunctionType, IntegerAttr, IntegerType, IRParseError, OpaqueAttr, NameLoc, CallSiteLoc,
    FusedLoc,
    OpaqueType, RankedTensorType, StringAttr, SymbolRefAttr, TupleType, TypeAttr, UnitAttr,
    UnknownLoc, UnrankedTensorType, parse_attribute, parse_module, parse_type, print_module,
    split_input,
)
from sdy_passes.attributes import F32, F64, I1, I32, I64, TOKEN, ComplexType, FloatType, OpShardingRule
from sdy_passes.dialects.stablehlo_attributes import (
    ConvDimensionNumbers, DotDimensionNumbers, EnumAttr, GatherDimensionNumbers,
    ScatterDimensionNumbers,
)
from sdy_passes.dialects import COMPLETE_DIALECTS
from tests.conftest import SDY_CASES, needs_shared
from tests.sdy_passes.strategies import sharding_rules


@pytest.mark.parametrize("text, expected", [
    ("tensor<8x?xf32>", RankedTensorType((8, None), F32)),
    ("tensor<f32>", RankedTensorType((), F32)),
    ("tensor<*xbf16>", UnrankedTensorType(FloatType("bf16"))),
    ("tensor<4xi32, #foo.enc>", RankedTensorType((4,), I32, OpaqueAttr("#foo.enc"))),
    ("!stablehlo.token", TOKEN),
    ("!foo.bar<1, \"x>\">", OpaqueType('!foo.bar<1, "x>">')),
    ("tuple<tensor<f32>, !stablehlo.token>", TupleType((RankedTensorType((), F32), TOKEN))),
    ("complex<f32>", ComplexType(F32)),
    ("ui8", IntegerType(8, "u")),
    ("si4", IntegerType(4, "s")),
    ("f8E4M3FN", FloatType("f8E4M3FN")),
    ("(tensor<f32>, i1) -> (i32, i64)", FunctionType((RankedTensorType((), F32), I1), (I32, I64))),
    ("() -> ((i32) -> i64)", FunctionType((), (FunctionType((I32,), (I64,)),))),
    ("vector<4xf32>", OpaqueType("vector<4xf32>")),
])
def test_types(text, expected):
    assert parse_type(text) == expected
    assert str(expected) == text


def test_propagation_edges_are_verified_when_parsed():
    # jaxlib 0.10.2's message, at the `<` of the attribute
    with pytest.raises(IRParseError, match="propagation edges have duplicate step index: 1") as e:
        parse_attribute('#sdy.propagation_edges<[{step-1 = [{"c" = operand-0 -> [result-0]}]}, '
                        '{step-1 = [{"d" = operand-1 -> [result-0]}]}]>')
    assert e.value.col == 23


@pytest.mark.parametrize("text, expected, printed", [
    ("3", IntegerAttr(3, I64), "3 : i64"),
    ("-3 : i32", IntegerAttr(-3, I32), None),
    ("-007 : i32", IntegerAttr(-7, I32), "-7 : i32"),
    ("0x1F : i32", IntegerAttr(31, I32), "31 : i32"),
    ("true", BoolAttr(True), None),
    ("1 : i1", BoolAttr(True), "true"),
    ("1.5", FloatAttr(1.5, F64), "1.500000e+00 : f64"),
    ("0x7FC00000 : f32", None, "0x7FC00000 : f32"),
    ('"a\\"b\\\\c\\0A"', StringAttr('a"b\\c\n'), '"a\\22b\\\\c\\0A"'),  # MLIR prints '"' as \22
    ("unit", UnitAttr(), None),
    ("[1, \"x\", 2 : i32, 1.5]", ArrayAttr((IntegerAttr(1), StringAttr("x"), IntegerAttr(2, I32), FloatAttr(1.5))), "[1, \"x\", 2 : i32, 1.500000e+00]"),
    ("{b = 1, a, \"c d\" = @f}", DictionaryAttr((("b", IntegerAttr(1)), ("a", UnitAttr()), ("c d", SymbolRefAttr("f")))),
     '{a, b = 1 : i64, "c d" = @f}'),
    ("@a::@b", SymbolRefAttr("a", ("b",)), None),
    ('@"x y"', SymbolRefAttr("x y"), None),
    ("array<i64: 1, 2>", DenseArrayAttr(I64, (1, 2)), None),
    ("array<i64>", DenseArrayAttr(I64, ()), None),
    ("array<i1: true, false>", DenseArrayAttr(I1, (True, False)), None),
    ("tensor<2xf32>", TypeAttr(RankedTensorType((2,), F32)), None),
    ("dense<[1, 1]> : tensor<2xi32>", DenseElementsAttr("1", RankedTensorType((2,), I32)), "dense<1> : tensor<2xi32>"),
    ("dense<0.0> : tensor<f32>", None, "dense<0.000000e+00> : tensor<f32>"),
    ("dense<[[1.5, 2.0]]> : tensor<1x2xf32>", None, "dense<[[1.500000e+00, 2.000000e+00]]> : tensor<1x2xf32>"),
    ('dense<"0xDEADBEEF"> : tensor<1xi32>', None, "dense<-272716322> : tensor<1xi32>"),  # jaxlib prints a blob's elements
    ("dense<[true, false]> : tensor<2xi1>", None, None),
    ("#stablehlo<comparison_direction LT>", EnumAttr("comparison_direction", "LT"), None),
        ("#stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>",
         DotDimensionNumbers((), (), (1,), (0,)), None),
        ("#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>",
         ConvDimensionNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2)), None),
        ("#stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>",
         GatherDimensionNumbers((1,), (0,), (), (), (0,), 1), None),
        ("#stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>",
         ScatterDimensionNumbers((), (0,), (), (), (0,), 1), None),
        ('#sdy.propagation_edges<[{step-2 = [{"y" = operand-1 -> [operand-0, result-0]}]}, '
         '{step-5 = [{"x":(1)2 = result-0 -> [operand-0]}]}]>', None, None),
    ("#foo.bar<\"->>\", (a) -> [b]>", None, None),
    ('#sdy.sharding<@mesh, [{"x"}, {?}]>', TensorSharding.parse('#sdy.sharding<@mesh, [{"x"}, {?}]>'), None),
    ('#sdy.sharding_per_value<[<@mesh, []>]>', TensorShardingPerValue.parse('#sdy.sharding_per_value<[<@mesh, []>]>'), None),
    ('#sdy.mesh<["x"=2]>', Mesh.parse('<["x"=2]>'), None),
    ('#sdy<manual_axes{"a"}>', None, None),
    ("#sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=4, k=2} reduction={j}>", None, None),
    ("#sdy.op_sharding_rule<([ij])->([i, j]) {i=2, j=4} need_replication={i}, custom>", None, None),
    ("loc(\"f.mlir\":3:4)", FileLineColLoc("f.mlir", 3, 4), None),
    ("loc(unknown)", UnknownLoc(), None),
    ("loc(callsite(\"a\" at \"b\":1:2))", CallSiteLoc(NameLoc("a"), FileLineColLoc("b", 1, 2)), None),
    ("loc(\"f\":1:2 to :7)", FileLineColLoc("f", 1, 2, None, 7), None),
    ("loc(\"f\":1:2 to 3:4)", FileLineColLoc("f", 1, 2, 3, 4), None),
    ("loc(\"f\":1:2 to 1:2)", FileLineColLoc("f", 1, 2, 1, 2), "loc(\"f\":1:2)"),
    ("loc(\"f\":1:2 to 1:7)", FileLineColLoc("f", 1, 2, 1, 7), "loc(\"f\":1:2 to :7)"),
    ("loc(\"n\\22\"(\"f\":1:2))", NameLoc('n"', FileLineColLoc("f", 1, 2)), None),
    ("loc(\"n\"(unknown))", NameLoc("n"), "loc(\"n\")"),
    ("loc(fused[\"a\", \"b\"])", FusedLoc((NameLoc("a"), NameLoc("b"))), None),
    # MLIR's FusedLoc::get simplifies
    ("loc(fused[\"a\", unknown, \"a\"])", NameLoc("a"), "loc(\"a\")"),
    ("loc(fused[])", UnknownLoc(), "loc(unknown)"),
    ("loc(fused<\"m\">[])", FusedLoc((UnknownLoc(),), StringAttr("m")), "loc(fused<\"m\">[unknown])"),
    ("loc(fused[\"a\", fused[\"b\", \"c\"]])", FusedLoc((NameLoc("a"), NameLoc("b"), NameLoc("c"))),
     "loc(fused[\"a\", \"b\", \"c\"])"),
    ("loc(\"f\":1)", FileLineColLoc("f", 1, 0, line_only=True), "loc(\"f\":1:0)"),
    ("loc(fused<\"m\">[\"a\"])", FusedLoc((NameLoc("a"),), StringAttr("m")), None),
])
def test_attributes(text, expected, printed):
    attr = parse_attribute(text)
    if expected is not None:
        assert attr == expected
    assert str(attr) == (printed or text)


@settings(max_examples=100)
@given(sharding_rules())
def test_sharding_rule_round_trip(rule):
    assert parse_attribute(str(rule)) == rule


def test_sharding_rule_identity():
    assert str(OpShardingRule.identity((8, 8))) == "#sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=8}>"


@pytest.mark.parametrize("value, t, text", [
    (1.0, F32, "1.000000e+00"),
    (0.10009765625, FloatType("bf16"), "1.000980e-01"),  # 6 significant digits, zero-padded
    (-2.5e-10, F64, "-2.500000e-10"),
    (3.14159265358979, F64, "3.14159265358979"),
    (0.1234567, F64, "0.1234567"),
    (math.nan, F32, "0x7FC00000"),
    (math.inf, F64, "0x7FF0000000000000"),
    (-math.inf, FloatType("bf16"), "0xFF80"),
])
def test_float_printing(value, t, text):
    from sdy_passes.attributes import format_float
    assert format_float(value, t) == text


def test_generic_op_with_everything():
    m = parse_module("""
    "t.op"() ({
      ^bb0(%a: i32 loc("x":1:1)):
        "t.br"()[^bb1] : () -> ()
      ^bb1:
        %0:2 = "t.two"() : () -> (i32, f32)
        "t.use"(%0#1, %a, %0) {t.flag} : (f32, i32, i32) -> ()
    }, {
    }) {t.x = 1} : () -> () loc("file":9:9)
    """)
    op = m.ops[0]
    assert op.location == FileLineColLoc("file", 9, 9)
    r0, r1 = op.regions
    b0, b1 = r0.blocks
    assert r1.blocks == [] and b0.ops[0].successors == [b1]
    two, use = b1.ops
    assert use.operands == (two.results[1], b0.arguments[0], two.results[0])
    assert b0.arguments[0].location == FileLineColLoc("x", 1, 1)
    assert use.attributes == {"t.flag": UnitAttr()}


def test_forward_references_resolve():
    m = parse_module("""
    "t.graph"() ({
      "t.use"(%late) : (i32) -> ()
      %late = "t.def"() : () -> i32
    }) : () -> ()""")
    use, late = m.ops[0].regions[0].block.ops
    assert use.operands == (late.result,) and late.result.users == [use]


def test_inherent_attributes_written_as_discardable_become_properties():
    m = parse_module("""
    func.func @f(%arg0: tensor<4xf32>) -> tensor<8xf32> {
      %0 = "stablehlo.all_gather"(%arg0) {all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, t.other = 1} : (tensor<4xf32>) -> tensor<8xf32>
      return %0 : tensor<8xf32>
    }""")
    op = m.funcs()[0].regions[0].block.ops[0]
    assert list(op.properties) == ["all_gather_dim", "replica_groups"] and list(op.attributes) == ["t.other"]


def test_top_level_ops_are_wrapped_in_a_module_and_aliases_resolve():
    m = parse_module("""
    #loc = loc("a.py":4:2)
    !tok = !stablehlo.token
    %0 = "t.op"() : () -> !tok loc(#loc)
    """)
    op = m.ops[0]
    assert m.op.name == "builtin.module" and op.result.type == TOKEN
    assert op.location == FileLineColLoc("a.py", 4, 2)


def test_location_aliases_may_come_after_the_module():
    m = parse_module("""module {
      "t.op"() ({
      ^bb0(%a: i32 loc(#loc1)):
        "t.end"() : () -> () loc(#loc2)
      }) : () -> () loc(#loc2)
    } loc(#loc)
    #loc = loc(unknown)
    #loc1 = loc("a.py":1:2)
    #loc2 = loc("f"(#loc1))""")
    op = m.ops[0]
    assert op.location == NameLoc("f", FileLineColLoc("a.py", 1, 2)) == op.regions[0].block.ops[0].location
    assert op.regions[0].block.arguments[0].location == FileLineColLoc("a.py", 1, 2)
    assert m.op.location == UnknownLoc()


@pytest.mark.parametrize("text, message", [
    ('"t.op"() : () -> () loc(#nope)', "1:25: error: operation location alias was never defined"),
    ('"t.op"() : () -> () loc(#x)\n#x = 1 : i32', "1:25: error: expected location, but found '1 : i32'"),
    ('"t.op"() : () -> () loc(callsite(#x at unknown))', "undefined symbol alias id 'x'"),
    ('"t.op"() : () -> () loc(bogus)', "expected location instance"),
    ('"t.op"() : () -> () loc(' + '"a"(' * 200 + "unknown" + ")" * 201, "nested more than 100 levels"),
    ('"t.op"() : () -> () loc(1)', "expected location instance"),
])
def test_bad_locations(text, message):
    with pytest.raises(IRParseError, match=message):
        parse_module(text)


def test_named_module_with_attributes():
    m = parse_module('module @m attributes {mhlo.x = 1 : i32} {\n}')
    assert m.op.properties["sym_name"] == StringAttr("m")
    assert m.op.attributes == {"mhlo.x": IntegerAttr(1, I32)}
    assert print_module(m) == 'module @m attributes {mhlo.x = 1 : i32} {\n}\n'


def test_default_op_location_is_the_op_name():
    m = parse_module("func.func @f(%arg0: tensor<f32>) -> tensor<f32> {\n  %0 = stablehlo.abs %arg0 : tensor<f32>\n  return %0 : tensor<f32>\n}", filename="in.mlir")
    assert m.funcs()[0].regions[0].block.ops[0].location == FileLineColLoc("in.mlir", 2, 8)


def test_split_input():
    chunks = split_input("a\n// -----\nb\n// ----- trailing\nc")
    assert chunks == ["a\n", "\nb\n", "\nc"]


def _error(text):
    with pytest.raises(IRParseError) as info:
        parse_module(text, filename="t.mlir")
    return info.value


@pytest.mark.parametrize("text, line, col, message", [
    ('"t.a"() : () -> (', 1, 16, "expected non-function type"),  # as jaxlib ("func.return" probed)
    ("func.func @f() {\n  %0 = stablehlo.frobnicate : tensor<f32>\n}", 2, 8,
     "custom op 'stablehlo.frobnicate' is unknown"),
    ("func.func @f() {\n  %0 = arith.addi : tensor<f32>\n}", 2, 8,
     "custom assembly form of 'arith.addi' is not supported; write it in the generic form"),
    ('"t.a"(%x) : (i32) -> ()', 1, 7, "use of undeclared SSA value name"),  # as jaxlib (found '%x')
    ('%0 = "t.a"() : () -> i32\n%0 = "t.b"() : () -> i32', 2, 1, "redefinition of SSA value '%0'"),
    # Nested regions see their parents' names and may not redefine them (as jaxlib, checked on
    # stablehlo.while bodies: 'redefinition', and 'already in use' for a pretty op's entry args).
    ('%0 = "t.a"() : () -> i32\n"t.b"() ({\n^bb0(%0: i32):\n  "t.r"() : () -> ()\n}) : () -> ()', 3, 6,
     "redefinition of SSA value '%0'"),
    ('%0 = "t.a"() : () -> i32\n"t.b"() ({\n  %0 = "t.c"() : () -> i32\n}) : () -> ()', 3, 3,
     "redefinition of SSA value '%0'"),
    ('%it = "t.a"() : () -> tensor<i32>\n%1 = stablehlo.while(%it = %it) : tensor<i32>\n cond {\n'
     '  "stablehlo.return"(%it) : (tensor<i32>) -> ()\n } do {\n  "stablehlo.return"(%it) : (tensor<i32>) -> ()\n }',
     2, 22, "region entry argument '%it' is already in use"),
    ('%0 = "t.a"() : () -> i32\n"t.b"(%0) : (f32) -> ()', 2, 7,
     "use of value '%0' expects different type than prior uses: 'f32' vs 'i32'"),
    ('%0:2 = "t.a"() : () -> i32', 1, 1, "operation defines 1 results but was provided 2 to bind"),
    ('"t.a"() {x = dense<1> : i32} : () -> ()', 1, 25, "elements literal type must be a shaped type, got 'i32'"),
    ('"t.a"() {x = #sdy.sharding<@m, [{"a"}, {?, "b"}]>} : () -> ()', 1, 42, "expected '}'"),
    ('sdy.mesh @m = <["x"=2, "y"=0]>', 1, 24, "custom op 'sdy.mesh' axis size must be at least 1, got: 0"),  # as jaxlib
    ('"t.a"() {x = 300 : i8} : () -> ()', 1, 14, "integer constant out of range for attribute"),
    ('"t.a"() {x = 1, x = 2} : () -> ()', 1, 17, "duplicate key 'x' in dictionary attribute"),
    ('"t.a"() : () -> () loc(', 1, 24, "expected location instance"),
    ('"t.a"()[^bb9] : () -> ()', 1, 9, "reference to an undefined block '^bb9'"),
    ('"t.a"() {x = "abc} : () -> ()', 1, 30, "expected '\"' in string literal"),  # as jaxlib
])
def test_errors_have_line_col_source_and_caret(text, line, col, message):
    err = _error(text)
    assert (err.line, err.col) == (line, col)
    assert err.message.startswith(message)
    source = text.splitlines()[line - 1]
    found = f" (found {err.found})" if err.found else ""
    assert str(err) == f"t.mlir:{line}:{col}: error: {err.message}{found}\n{source}\n{' ' * (col - 1)}^"
    assert isinstance(err, ValueError)


# SDY_PASSES_FUZZ=N runs N examples (long fuzzing); the default keeps the suite quick.
FUZZ_EXAMPLES = int(os.environ.get("SDY_PASSES_FUZZ", "200"))


@needs_shared(SDY_CASES)
@settings(max_examples=FUZZ_EXAMPLES)
@given(st.data())
def test_malformed_text_only_raises_ir_parse_error(data):
    texts = [p.read_text() for p in sorted(SDY_CASES.glob("sdy-lift-inlined-meshes/*.mlir"))[:12]]
    text = data.draw(st.sampled_from(texts))[:2500]
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(text)))
        op = data.draw(st.sampled_from(["delete", "insert", "duplicate"]))
        if op == "delete":
            text = text[:i] + text[i + data.draw(st.integers(1, 6)):]
        elif op == "insert":
            text = text[:i] + data.draw(st.text(alphabet='%#@^"<>{}[](),:=-!?*x0123456789 \n.ab/\\', max_size=4)) + text[i:]
        else:
            j = data.draw(st.integers(0, len(text)))
            text = text[:i] + text[j:j + 30] + text[i:]
    try:
        parse_module(text, verify=False)
    except IRParseError:
        pass


@settings(max_examples=FUZZ_EXAMPLES // 2)
@given(st.text(max_size=60))
def test_random_text_only_raises_ir_parse_error(text):
    try:
        parse_module(text, verify=False)
    except IRParseError:
        pass


LEXER_CASES = [
    '"t.a"() {x = "abc} : () -> ()',
    '"t.a"() {x = "a\\qb"} : () -> ()',
    '"t.a"() {x = "a\\41b\\n\\t\\"\\\\"} : () -> ()',
    '"t.a"() {"k\\41" = 1 : i32} : () -> ()',
    '"t.a"() {x = "abc\n"} : () -> ()',
    '"t.a"() {x = "\\ff\\fe"} : () -> ()',
    '"t.a"() {"" = 1} : () -> ()',
    '"t.a"() {x = #foo<"a>b">} : () -> ()',
    '"t.a"() {x = #foo<(]>} : () -> ()',
    '"t.a"() {x = #foo<a <b (c]>>} : () -> ()',
    '"t.a"() {x = #foo<a} : () -> ()',
    '"t.a"() {x = #foo<a -> b>} : () -> ()',
    '"t.a"() {x = #foo<"a\\q">} : () -> ()',
    '"t.a"() {x = #foo<a\x00b>} : () -> ()',
    '"t.a"() {x = #foo<a>, y = !foo<(>} : () -> ()',
    '"t.a"() : () -> !foo<a)>',
    'sdy.mesh @m = <["a"=2]>\n"t.a"() {x = #sdy.sharding<@m, [{"a"]>} : () -> ()',
    '"t.a"() {x = dense<[1, 2> : tensor<2xi32>} : () -> ()',
    '"t.a"() {x = dense<[[1, 2], [3, 4)]> : tensor<2x2xi32>} : () -> ()',
    '"t.a"() {x = dense<[1, 2]]> : tensor<2xi32>} : () -> ()',
    '"t.a"() {x = dense<"ab> : tensor<2xi32>} : () -> ()',
]
"""Strings, escapes and dialect bodies: the shared lexical core (`sharding._mlir_lexer`)."""

_CONSTANT = "func.func @f() {{\n  %0 = {} : {}\n  func.return\n}}"
CONSTANT_CASES = [
    _CONSTANT.format("stablehlo.constant() {value = dense<[1, 2, 4]> : tensor<3xi8>}", "() -> tensor<3xi8>"),
    _CONSTANT.format("stablehlo.constant() <{value = dense<[1, 2, 4]> : tensor<3xi8>}> {foo}", "() -> tensor<3xi8>"),
    _CONSTANT.format("stablehlo.constant() {value = dense<[1, 2, 4]> : tensor<3xi8>}", "() -> tensor<3xi16>"),
    _CONSTANT.format("stablehlo.constant() {value = dense<[1, 2, 4]> : tensor<3xi8>}",
                     "() -> tensor<3x!quant.uniform<i8:f32, 2.000000e+00:15>>"),
    _CONSTANT.format("sdy.constant() {value = dense<[1, 2, 4]> : tensor<3xi8>}",
                     "() -> tensor<3x!quant.uniform<i8:f32, 2.000000e+00:15>>"),
    _CONSTANT.format("stablehlo.constant()", "() -> tensor<3xi16>"),
]
"""StableHLO's `parseConstantOp` `()` form, and the constants' verifiers."""


@pytest.mark.jaxlib
def test_lexer_and_constant_verdicts_are_jaxlibs():
    from tests.sdy_passes.shardy_dialect_tests import jaxlib_verdicts, project_verdict
    cases = LEXER_CASES + CONSTANT_CASES
    for text, theirs in zip(cases, jaxlib_verdicts(cases)):
        assert project_verdict(text) == theirs, text


def _unknown_op_texts(rng):
    """Op names jaxlib does not know (truncated, lengthened, other dialects, no dialect) in
    pretty form at top level, in a func, in a pretty op's region and in a generic op's region."""
    from sdy_passes.dialects import OPS, JAXLIB_DIALECTS

    real = sorted(OPS)
    contexts = ["{op} %a : tensor<f32>",
                "func.func @f() {{\n  %0 = {op} %a : tensor<f32>\n  return\n}}",
                "func.func @f(%a: tensor<i32>) {{\n  %0 = stablehlo.while(%i = %a) : tensor<i32>\n cond {{\n"
                "  {op} %i : tensor<i1>\n }} do {{\n  stablehlo.return %i : tensor<i32>\n }}\n  return\n}}",
                '"func.func"() ({{\n  {op} %a : tensor<f32>\n}}) {{function_type = () -> (), sym_name = "f"}} : () -> ()']
    texts = []
    for _ in range(60):
        name = rng.choice(real)
        dialect, short = name.split(".", 1)
        kind = rng.randrange(5)
        if kind == 0:
            name = name[:rng.randrange(len(dialect) + 2, len(name))]
        elif kind == 1:
            name += rng.choice("hsx_")
        elif kind == 2:
            name = rng.choice(["tpu", "linalg", "triton", "foo", "mosaic_gpu", *JAXLIB_DIALECTS]) + "." + short
        elif kind == 3:
            name = short
        else:
            name = rng.choice(["return", "module", "call", "func", "tanhh", "unrealized_conversion_cast"])
        texts.append(rng.choice(contexts).format(op=name))
    return texts


@pytest.mark.jaxlib
@settings(max_examples=2, deadline=None)
@given(st.integers(0, 2**32))
def test_unknown_ops_get_jaxlibs_message(seed):
    import random

    from tests.sdy_passes.pass_oracle import jaxlib_parse

    texts = _unknown_op_texts(random.Random(seed))
    for text, result in zip(texts, jaxlib_parse(texts)):
        if not re.search(r"is unknown|not found for custom op", result.get("error") or ""):
            continue  # an op jaxlib knows
        with pytest.raises(IRParseError) as info:
            parse_module(text)
        e = info.value
        if "not supported" in e.message:  # a dialect this package reads in generic form only
            assert e.message.split("'")[1].split(".")[0] not in COMPLETE_DIALECTS
        else:
            assert f'loc("-":{e.line}:{e.col}): {e.message}' == result["error"], text


@pytest.mark.jaxlib
def test_complete_dialects_hold_every_op_jaxlib_registers():
    """`COMPLETE_DIALECTS` claims that a name missing from the op table is unknown to jaxlib;
    the op classes of jaxlib's Python bindings list what it registers."""
    from sdy_passes.dialects import COMPLETE_DIALECTS, JAXLIB_DIALECTS, OPS
    from tests.jaxlib_child import run_child

    code = """
import importlib
from jax._src.interpreters import mlir as jax_mlir
ctx = jax_mlir.make_ir_context()
RESULT = {"ops": [], "dialects": []}
for d in PAYLOAD["complete"]:
    try:
        m = importlib.import_module("jaxlib.mlir.dialects." + d)
    except ImportError:
        m = importlib.import_module("jaxlib.mlir.dialects._%s_ops_gen" % d)
    RESULT["ops"] += [v.OPERATION_NAME for v in vars(m).values()
                      if isinstance(getattr(v, "OPERATION_NAME", None), str) and v.OPERATION_NAME.startswith(d + ".")]
"""
    result = run_child(code, {"complete": sorted(COMPLETE_DIALECTS - {"builtin"})})
    assert set(result["ops"]) - set(OPS) == set()
    assert COMPLETE_DIALECTS <= JAXLIB_DIALECTS


@pytest.mark.jaxlib
def test_float_type_names_are_mlirs():
    """Every builtin float type reads (f8E4M3B11FNUZ too) and near misses do not, as in jaxlib."""
    from sdy_passes.parser import FLOAT_TYPES
    from tests.sdy_passes.pass_oracle import jaxlib_parse

    words = sorted(FLOAT_TYPES) + ["f7", "f8", "f8E9M9", "f8E4M3FNx", "f8E4M3FNUZs", "f16x", "f8E4M3B12FNUZ",
                                   "bf8", "tf16", "f256", "F32", "f8e4m3fn", "f6E2M3", "f4E2M1"]
    texts = [f"func.func @f(%a: tensor<2x{w}>) -> tensor<2x{w}> {{\n  return %a : tensor<2x{w}>\n}}" for w in words]
    for word, text, result in zip(words, texts, jaxlib_parse(texts)):
        if result.get("error"):
            with pytest.raises(IRParseError):
                parse_module(text)
        else:
            assert print_module(parse_module(text), mlir_names=True) == result["pretty"], word
