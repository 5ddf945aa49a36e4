"""Parsing and printing of layouts and shapes (spec §2), and every rejection (spec §8)."""

import os
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiling import (
    COMBINE_DIMENSION, Layout, LayoutError, LayoutParseError, Shape, Tile,
    UnsupportedLayoutError, byte_size,
)

from .strategies import STAR, layouts, printable_layouts, shapes

# ------------------------------------------------------------------ printing (spec §2.1 table)


@pytest.mark.parametrize("args, text", [
    (([1, 0], [(2, 2)], 0), "{1,0:T(2,2)}"),
    (([1, 0], [(2, 4), (2, 1)], 0), "{1,0:T(2,4)(2,1)}"),
    (([1, 0], [(8, 128), (2, 1)], 16), "{1,0:T(8,128)(2,1)E(16)}"),
    (([1, 0], [(8, 128), (4, 1)], 8), "{1,0:T(8,128)(4,1)E(8)}"),
    (([1, 0], [(8, 128), (8, 1)], 4), "{1,0:T(8,128)(8,1)E(4)}"),
    (([1, 0], [(64, 128), (8, 1)], 4), "{1,0:T(64,128)(8,1)E(4)}"),
    (([1, 0], [(32, 128), (32, 1)], 1), "{1,0:T(32,128)(32,1)E(1)}"),
    (([0, 1], [(2, 128)], 0), "{0,1:T(2,128)}"),
    (([4, 3, 2, 1, 0], [(STAR, STAR, 2, STAR, 3)], 0), "{4,3,2,1,0:T(*,*,2,*,3)}"),
    (([0], [(1024,), (128,), (2, 1)], 0), "{0:T(1024)(128)(2,1)}"),
    (([], [(256,)], 0), "{:T(256)}"),
    (([], [], 0), "{}"),
    (([1, 0], [], 4), "{1,0:E(4)}"),
])
def test_print_matches_xla_table(args, text):
    layout = Layout(*args)
    assert str(layout) == text
    assert Layout.parse(text) == layout


def test_attribute_order_when_printing():
    layout = Layout((1, 0), ((2, 2),), 32, 8, 1, 4)
    assert str(layout) == "{1,0:T(2,2)L(8)E(32)S(1)M(4)}"


@pytest.mark.parametrize("text", [
    "f32[3,5]{1,0:T(2,2)}", "bf16[16,256]{0,1:T(8,128)(2,1)}",
    "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}", "f32[3,5]{1,0:T(2,2)L(8)E(32)S(1)}",
    "pred[64,256]{1,0:T(32,128)(32,1)E(1)}", "f32[]{:T(256)}", "f32[]", "f32[3]{0}",
    # strings from real TPU dumps in XLA's test data (spec §2.2)
    "bf16[8,256]{1,0:T(8,128)(2,1)}", "s8[4,8,16]{2,1,0:T(8,128)(4,1)}",
    "s8[2,3,4,5]{3,1,0,2:T(32,128)(4,1)}", "f32[8,2]{0,1:T(2,128)}",
    "f32[4,4,128]{2,1,0:T(4,128)}", "f32[1,128]{1,0:T(1,128)}",
    "bf16[1,16384,4,256]{3,2,1,0:T(4,128)(2,1)}", "bf16[2,8192]{1,0:T(2,128)(2,1)}",
    "bf16[1024]{0:T(1024)(128)(2,1)}", "s32[]{:T(128)}", "pred[]{:T(512)}",
    "pred[8,1024]{1,0:T(8,128)(4,1)}", "s32[1,32,256]{2,1,0:T(8,128)S(1)}",
    "s4[9216,6144]{1,0:T(64,128)(8,1)E(4)}", "bf16[2,3,1004]{2,1,0:T(2,*,128)}",
    "pred[8,8,8]{0,2,1:T(8,128)E(32)}", "f32[<=4,?,3]{2,1,0}", "f32[3]{0:M(8)}",
])
def test_canonical_shape_round_trip(text):
    assert str(Shape.parse(text)) == text


@pytest.mark.parametrize("text, canonical", [
    ("F32[3,5]{1,0:T(2,2)}", "f32[3,5]{1,0:T(2,2)}"),          # the doc's uppercase
    ("f32[3,5]{ 1 , 0 : T( 2 , 2 ) }", "f32[3,5]{1,0:T(2,2)}"),  # whitespace between tokens
    ("f32[2,7,8,11,10]{4,3,2,1,0:T(*, *, 2, *, 3)}", "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}"),
    ("f32[3,5]{1,0:}", "f32[3,5]{1,0}"),
    ("f32[3,5]{1,0:L(1)E(0)S(0)M(0)}", "f32[3,5]{1,0}"),
    ("f32[3,5]{1,0:D(D,C+,S~,H+~)T(2,2)}", "f32[3,5]{1,0:T(2,2)}"),  # D(...) dropped
    ("f32[3]", "f32[3]{0}"),                                     # default layout filled in
    ("f32[3,5]", "f32[3,5]{1,0}"),
    ("s4[16,256]{1,0:T(8,128)(8,1)}", "s4[16,256]{1,0:T(8,128)(8,1)}"),  # no E filled in
])
def test_accepted_spellings(text, canonical):
    assert str(Shape.parse(text)) == canonical


def test_parsed_fields():
    s = Shape.parse("bf16[256,512]{1,0:T(8,128)(2,1)E(16)L(2)S(1)}".replace("E(16)L(2)",
                                                                              "L(2)E(16)"))
    assert s.element_type == "bf16"
    assert s.dimensions == (256, 512)
    assert s.layout.minor_to_major == (1, 0)
    assert s.layout.major_to_minor == (0, 1)
    assert s.layout.tiles == (Tile((8, 128)), Tile((2, 1)))
    assert s.layout.element_size_in_bits == 16
    assert s.layout.tail_padding_alignment_in_elements == 2
    assert s.layout.memory_space == 1
    assert s.physical_dimensions == (256, 512)
    assert Layout.parse("{4,3,2,1,0:T(*,*,2,*,3)}").tiles[0].dimensions[0] == COMBINE_DIMENSION


def test_dynamic_dimensions():
    s = Shape.parse("f32[<=4,?,3]")
    assert s.dynamic_dimensions == (True, True, False)
    assert s.dimensions[0] == 4


def test_from_pjrt_layout_duck_typed():
    class Fake:
        def minor_to_major(self):
            return [1, 0]

        def tiling(self):
            return [(8, 128), (2, 1)]

        def element_size_in_bits(self):
            return 0

    assert str(Layout.from_pjrt_layout(Fake())) == "{1,0:T(8,128)(2,1)}"


def test_tuples_become_tiles():
    assert Layout((1, 0), ((2, 2),)) == Layout((1, 0), (Tile((2, 2)),))
    assert Layout([1, 0], [[2, 2]]) == Layout((1, 0), (Tile((2, 2)),))


# ------------------------------------------------------------------ rejections with positions


def caret_pos(err):
    """Column of the caret in the rendered message."""
    lines = str(err).splitlines()
    return lines[-1].index("^") - 2


@pytest.mark.parametrize("text, pos, message", [
    # attribute order (XLA: "expects layout to end with kRbrace")
    ("f32[3,5]{1,0:E(16)T(2,2)}", 18, "T must come before E"),
    ("f32[3,5]{1,0:S(1)T(2,2)}", 17, "T must come before S"),
    ("f32[3,5]{1,0:T(2,2)E(32)L(4)}", 24, "L must come before E"),
    ("f32[3,5]{1,0:T(2,2)T(2,2)}", 19, "T is repeated"),
    # tiles
    ("f32[3,5]{1,0:T(2,-1)}", 17, r"negative; write '\*' \(not -1\)"),
    ("f32[3,5]{1,0:T(0,2)}", 15, "tile dimension 0"),
    ("f32[3,5]{1,0:T()}", 14, "at least one dimension"),
    ("f32[3,5]{1,0:T}", 14, "expected '\\(' starting a tile"),
    # minor_to_major
    ("f32[3,5]{1,1}", 11, "repeated"),
    ("f32[3,5]{2,0}", 9, "out of range"),
    ("f32[3,5]{0}", 8, "Dimensions size is 2, but minor to major size is 1."),
    ("f32[3,5]{1,0,2}", 8, "Dimensions size is 2, but minor to major size is 3."),
    # numbers
    ("f32[3,5]{1,0:L(0)}", 15, "L\\(n\\) must be >= 1"),
    ("f32[3,5]{1,0:E(-1)}", 15, "E\\(n\\) must be >= 0"),
    ("f32[-3]", 4, "dimension size must be >= 0"),
    ("f32[3]{0:T(9223372036854775808)}", 11, "does not fit in int64"),
    # sparse-only and unsupported attributes
    ("f32[3,5]{1,0:#(u32)}", 13, "sparse arrays only"),
    ("f32[3,5]{1,0:*(u32)}", 13, "sparse arrays only"),
    ("f32[3,5]{1,0:P(f32[3,5]{1,0})}", 13, "sparse arrays only"),
    ("s32[8]{0:T(128)S(1)SC(0:3)}", 19, "split_configs"),
    # syntax
    ("f33[3]", 0, "unknown element type 'f33'"),
    ("f32[3,5", 7, "expected ',' or ']'"),
    ("f32[]{}", 5, "a layout after ']' starts with"),  # as XLA: `{` then needs an int or ':'
    ("f32[3]{}", 6, "a layout after ']' starts with"),
    ("f32[3]{0", 8, "expected '}' closing the layout"),
    ("f32[3]{0:Q(1)}", 9, "expected a layout attribute"),
    ("f32[3]{0} x", 10, "expected end of text"),
    ("f32[3]{0:T(2)$}", 13, "unexpected character '\\$'"),
    ("f32[3,5]{1,0:D(X)}", 15, "unknown dim level type"),
    ("", 0, "expected an element type"),
])
def test_rejections_have_positions(text, pos, message):
    with pytest.raises(LayoutParseError, match=message) as info:
        Shape.parse(text)
    assert info.value.pos == pos
    assert caret_pos(info.value) == pos
    assert isinstance(info.value, LayoutError) and isinstance(info.value, ValueError)
    assert text in str(info.value)


def test_layout_parse_rejections():
    with pytest.raises(LayoutParseError, match="repeated") as info:
        Layout.parse("{1,1}")
    assert info.value.pos == 3
    with pytest.raises(LayoutParseError, match="expected '{'"):
        Layout.parse("f32[3]")


@pytest.mark.parametrize("make, message", [
    (lambda: Layout((1, 1)), "repeated"),
    (lambda: Layout((0,), ((-1,),)), r"write '\*'"),
    (lambda: Layout((0,), ((0,),)), "tile dimension 0"),
    (lambda: Layout((0,), ((),)), "at least one dimension"),
    (lambda: Layout((0,), (), -1), "element_size_in_bits must be >= 0"),
    (lambda: Layout((0,), (), 0, 0), "tail_padding_alignment_in_elements must be >= 1"),
    (lambda: Layout((0.5,)), "must be an integer"),
    (lambda: Shape("f32", (3, 5), Layout((0,))), "Dimensions size is 2"),
    (lambda: Shape("f32", (-1,)), ">= 0"),
    (lambda: Shape("x", (1,)), "unknown element type"),
    (lambda: Shape(3, (1,)), "element_type must be a name"),
])
def test_constructors_reject(make, message):
    with pytest.raises(LayoutError, match=message):
        make()


def test_unsupported_element_size_is_unsupported_error():
    with pytest.raises(UnsupportedLayoutError):
        byte_size(Shape("s8", (1,), Layout((0,), (), 4)))


@pytest.mark.parametrize("text, printed, message", [
    # E(n) XLA's parser accepts; the codec cannot store the type in it (issue 22 #15)
    ("s8[5,7]{1,0:T(2,4)E(4)}", None, "narrower than s8's 8 bits"),
    ("s8[4]{0:E(7)}", None, "narrower than s8's 8 bits"),
    ("f32[8]{0:E(16)}", None, "narrower than f32's 32 bits"),
    ("f32[3]{0:E(300)}", None, "only integer and pred elements may be widened"),
    ("f32[3]{0:E(64)}", None, "only integer and pred elements may be widened"),
    ("s4[3]{0:E(2)}", None, "narrower"),
    ("pred[3]{0:E(2)}", None, "must equal the type's bit width"),
    ("s8[3]{0:E(24)}", None, "16, 32 or 64"),
    # '*' last: XLA reads and prints it; it combines with nothing
    ("f32[3]{0:T(*)}", None, "no minor neighbour"),
    ("f32[3,5]{1,0:T(2,*)}", None, "no minor neighbour"),
    ("f32[]{:T(*)}", None, "no minor neighbour"),
    # S(n) is kept in 8 bits, as XLA prints it; negative is fine
    ("f32[3]{0:S(128)}", "f32[3]{0:S(-128)}", None),
    ("f32[3]{0:S(256)}", "f32[3]{0}", None),
    ("f32[3]{0:S(-1)}", "f32[3]{0:S(-1)}", None),
    ("f32[3]{0:S(-129)}", "f32[3]{0:S(127)}", None),
    ("f32[3]{0:S(9223372036854775807)}", "f32[3]{0:S(-1)}", None),
])
def test_text_xla_accepts(text, printed, message):
    shape = Shape.parse(text)
    assert str(shape) == (printed or text)
    if message is None:
        assert byte_size(shape) == 12
    else:
        with pytest.raises(UnsupportedLayoutError, match=message):
            byte_size(shape)
    assert Layout((0,), (), 0, 1, -2).memory_space == -2
    assert Layout((0,), (), 0, 1, 300).memory_space == 44


def test_parse_needs_text():
    with pytest.raises(LayoutError, match="expected layout or shape text"):
        Shape.parse(b"f32[3]")


# ------------------------------------------------------------------ properties


@given(st.integers(0, 5).flatmap(layouts))
def test_layout_text_round_trip(layout):
    text = str(layout)
    assert Layout.parse(text) == layout
    assert str(Layout.parse(text)) == text


@given(printable_layouts())
def test_large_values_round_trip(layout):
    assert Layout.parse(str(layout)) == layout


@given(shapes())
def test_shape_text_round_trip(shape):
    text = str(shape)
    assert Shape.parse(text) == shape
    assert str(Shape.parse(text)) == text
    assert not re.search(r"\s", text)


def _spaced(text, data):
    """Inserts whitespace between tokens (never inside a number or a name)."""
    parts = re.findall(r"<=|[A-Za-z_][A-Za-z0-9_]*|-?\d+|.", text)
    return "".join(p + data.draw(st.sampled_from(["", "", " ", "\t", "\n "])) for p in parts)


@given(shapes(), st.data())
def test_whitespace_between_tokens_is_ignored(shape, data):
    assert Shape.parse(_spaced(str(shape), data)) == shape


# ------------------------------------------------------------------ fuzz: only LayoutError

GRAMMAR = list("{}()[],:*#?+~<=- ") + ["T", "E", "L", "S", "SC", "P", "M", "D", "C", "H", "f32",
                                       "bf16", "pred", "s4", "0", "1", "2", "8", "128", "-1",
                                       "9999999999999999999999"]


def _try_parse(text):
    for parse in (Shape.parse, Layout.parse):
        try:
            str(parse(text))
        except LayoutError as e:
            assert isinstance(e, ValueError)


@given(st.lists(st.sampled_from(GRAMMAR), max_size=30).map("".join))
def test_fuzz_grammar_tokens_only_raise_layout_error(text):
    _try_parse(text)


@given(st.text(max_size=40))
def test_fuzz_any_text_only_raises_layout_error(text):
    _try_parse(text)


@given(shapes(), st.data())
def test_fuzz_mutated_shapes_only_raise_layout_error(shape, data):
    text = str(shape)
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, min(len(text), i + 3)))
    insert = data.draw(st.sampled_from(GRAMMAR + list(string.printable)))
    _try_parse(text[:i] + insert + text[j:])


LONG_FUZZ = int(os.environ.get("TILING_LONG_FUZZ", "0"))


@pytest.mark.slow
@pytest.mark.skipif(not LONG_FUZZ, reason="set TILING_LONG_FUZZ=<examples> for the long fuzz")
@settings(max_examples=max(LONG_FUZZ, 1))
@given(st.one_of(st.lists(st.sampled_from(GRAMMAR), max_size=60).map("".join),
                 st.text(max_size=80)))
def test_long_fuzz_only_raises_layout_error(text):
    _try_parse(text)


big = st.integers(-(2**64), 2**64)


@given(st.lists(big, max_size=4), st.lists(st.lists(big, max_size=4), max_size=3), big, big,
       big, big)
def test_fuzz_constructor_only_raises_layout_error(m2m, tiles, e, tail, space, meta):
    try:
        layout = Layout(m2m, tiles, e, tail, space, meta)
    except LayoutError:
        return
    assert Layout.parse(str(layout)) == layout
