"""Where each element goes: the spec's worked numbers (§4), closed forms (§5.2) and sizes (§6)."""

import itertools

import numpy as np
import pytest
from hypothesis import given

from tiling import (
    LayoutError, Shape, UnsupportedLayoutError, byte_size, check_encodable, linear_index,
    logical_index, tiled_dimensions,
)

from .strategies import shapes


def grid(shape):
    """linear_index of every element, as an array of the logical shape."""
    shape = Shape.parse(shape) if isinstance(shape, str) else shape
    idx = np.indices(shape.dimensions).reshape(shape.rank, -1).T
    return np.asarray(linear_index(idx, shape)).reshape(shape.dimensions)


def test_doc_17():
    assert linear_index((2, 3), "f32[3,5]{1,0:T(2,2)}") == 17
    assert linear_index(np.array([2, 3], np.uint8), "F32[3,5]{1,0:T(2,2)}") == 17


def test_figure_1():
    expected = [[0, 1, 4, 5, 8],
                [2, 3, 6, 7, 10],
                [12, 13, 16, 17, 20]]
    assert grid("f32[3,5]{1,0:T(2,2)}").tolist() == expected
    # memory order: 24 slots, 9 of them padding
    slots = ["--"] * 24
    for (r, c), lin in np.ndenumerate(grid("f32[3,5]{1,0:T(2,2)}")):
        slots[lin] = f"{r},{c}"
    assert " ".join(slots) == ("0,0 0,1 1,0 1,1 0,2 0,3 1,2 1,3 0,4 -- 1,4 -- "
                               "2,0 2,1 -- -- 2,2 2,3 -- -- 2,4 -- -- --")
    assert byte_size("f32[3,5]{1,0:T(2,2)}") == 96


def test_figure_2():
    expected = [[0, 2, 4, 6, 8, 10, 12, 14],
                [1, 3, 5, 7, 9, 11, 13, 15],
                [16, 18, 20, 22, 24, 26, 28, 30],
                [17, 19, 21, 23, 25, 27, 29, 31]]
    assert grid("bf16[4,8]{1,0:T(2,4)(2,1)}").tolist() == expected
    assert tiled_dimensions("bf16[4,8]{1,0:T(2,4)}") == (2, 2, 2, 4)
    assert tiled_dimensions("bf16[4,8]{1,0:T(2,4)(2,1)}") == (2, 2, 1, 4, 2, 1)


def test_8x8_example_51():
    s = "f32[8,8]{1,0:T(2,4)(2,1,1,1)}"
    assert linear_index((6, 5), s) == 51
    assert tiled_dimensions(s) == (2, 2, 2, 4, 2, 1, 1, 1)
    assert grid(s).tolist() == [
        [0, 2, 4, 6, 16, 18, 20, 22],
        [8, 10, 12, 14, 24, 26, 28, 30],
        [1, 3, 5, 7, 17, 19, 21, 23],
        [9, 11, 13, 15, 25, 27, 29, 31],
        [32, 34, 36, 38, 48, 50, 52, 54],
        [40, 42, 44, 46, 56, 58, 60, 62],
        [33, 35, 37, 39, 49, 51, 53, 55],
        [41, 43, 45, 47, 57, 59, 61, 63]]
    assert grid("f32[8,8]{1,0:T(2,4)(2,1)}").tolist() == [
        [0, 2, 4, 6, 8, 10, 12, 14],
        [1, 3, 5, 7, 9, 11, 13, 15],
        [16, 18, 20, 22, 24, 26, 28, 30],
        [17, 19, 21, 23, 25, 27, 29, 31],
        [32, 34, 36, 38, 40, 42, 44, 46],
        [33, 35, 37, 39, 41, 43, 45, 47],
        [48, 50, 52, 54, 56, 58, 60, 62],
        [49, 51, 53, 55, 57, 59, 61, 63]]


def test_combined_dimensions():
    s = "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}"
    assert tiled_dimensions(s) == (56, 37, 2, 3)
    merged = grid("f32[112,110]{1,0:T(2,3)}")
    assert np.array_equal(grid(s), merged.reshape(2, 7, 8, 11, 10))  # all 12,320 elements
    assert byte_size(s) == byte_size("f32[112,110]{1,0:T(2,3)}") == 56 * 37 * 6 * 4
    assert tiled_dimensions("bf16[2,3,1004]{2,1,0:T(2,*,128)}") == (1, 24, 2, 128)


def test_minor_to_major_composes_with_tiles():
    assert linear_index((5, 1), "f32[8,2]{0,1:T(2,128)}") == 133
    # no tiles: {0,1} is column-major
    assert grid("f32[3,4]{0,1}").tolist() == np.arange(12).reshape(4, 3).T.tolist()


def test_tile_longer_than_rank():
    assert tiled_dimensions("f32[200]{0:T(8,128)}") == (1, 2, 8, 128)
    assert linear_index((130,), "f32[200]{0:T(8,128)}") == 1026
    assert byte_size("f32[]{:T(256)}") == 1024
    assert linear_index((), "f32[]{:T(256)}") == 0
    assert byte_size("f32[5]{0:T(8,128)}") == 4096


def test_repeated_tile_pads_again():
    s = "f32[4,4]{1,0:T(4,4)(3)}"
    assert tiled_dimensions(s) == (1, 1, 4, 2, 3)
    assert grid(s).tolist() == [[0, 1, 2, 3], [6, 7, 8, 9], [12, 13, 14, 15], [18, 19, 20, 21]]
    with pytest.raises(UnsupportedLayoutError, match="allow_nested_padding"):
        byte_size(s)
    assert byte_size(s, allow_nested_padding=True) == 96
    check_encodable(Shape.parse("bf16[5,300]{1,0:T(8,128)(2,1)}"))  # later tile divides


@pytest.mark.parametrize("a, p, rows, cols", [
    (8, 2, 37, 300), (8, 4, 20, 260), (32, 4, 70, 130), (64, 8, 70, 300), (32, 32, 40, 200),
    (16, 16, 33, 129)])
def test_tpu_closed_form(a, p, rows, cols):
    # spec §5.2: every 32-bit word holds p consecutive rows of one column
    r, c = np.indices((rows, cols))
    nc = -(-cols // 128)
    expected = (((r // a) * nc + c // 128) * (a * 128) + ((r % a) // p) * (128 * p)
                + (c % 128) * p + r % p)
    assert np.array_equal(grid(f"f32[{rows},{cols}]{{1,0:T({a},128)({p},1)}}"), expected)


def test_1d_closed_form():
    i = np.arange(3000)
    j = i % 1024
    expected = (i // 1024) * 1024 + ((j // 128) // 2) * 256 + (j % 128) * 2 + (j // 128) % 2
    assert np.array_equal(grid("bf16[3000]{0:T(1024)(128)(2,1)}"), expected)


@pytest.mark.parametrize("shape, nbytes", [
    ("f32[3,5]{1,0:T(2,2)}", 96),
    ("bf16[5,300]{1,0:T(8,128)(2,1)}", 6144),
    ("s4[9216,6144]{1,0:T(64,128)(8,1)E(4)}", 28311552),
    ("f32[]{:T(256)}", 1024),
    ("f32[5]{0:T(8,128)}", 4096),
    ("f32[3,5]{1,0:T(2,2)L(7)}", 112),
    ("bf16[3,20,300]{2,1,0:T(8,128)(2,1)}", 55296),
    ("s8[5,37,260]{0,2,1:T(32,128)(4,1)}", 1363968),
    ("pred[33,129]{1,0:T(32,128)(32,1)E(1)}", 2048),
    ("bf16[3000]{0:T(1024)(128)(2,1)}", 6144),
    ("bf16[2,3,1004]{2,1,0:T(2,*,128)(2,1)}", 12288),
    ("pred[8,128]{1,0:T(8,128)(4,1)}", 1024),        # PRED without E(n): one byte each
    ("s4[8]{0}", 8),                                  # s4 without E(n): one byte each
    ("s4[9]{0:E(4)}", 5),                             # packed, rounded up to whole bytes
    ("f32[0,5]{1,0:T(2,2)}", 0),
    ("f32[3]{0:S(1)}", 12),                           # memory space: no effect on bytes
])
def test_byte_sizes(shape, nbytes):
    assert byte_size(shape) == nbytes


def test_vectorized_shapes():
    s = Shape.parse("f32[3,5]{1,0:T(2,2)}")
    idx = np.array(list(itertools.product(range(3), range(5)))).reshape(5, 3, 2)
    out = linear_index(idx, s)
    assert out.shape == (5, 3) and out.dtype == np.int64
    assert np.array_equal(out.reshape(-1), grid(s).reshape(-1))
    assert linear_index(np.zeros((0, 2), np.int32), s).shape == (0,)


@pytest.mark.parametrize("index, message", [
    ((3, 0), r"index \(3, 0\) is out of bounds .* \(dimension 0\)"),
    ((0, -1), r"index \(0, -1\) is out of bounds .* \(dimension 1\)"),
    ((1, 2, 3), r"shape \(\.\.\., 2\)"),
    (5, r"shape \(\.\.\., 2\)"),
    ((1.0, 2.0), "integers"),
])
def test_index_errors(index, message):
    with pytest.raises(LayoutError, match=message):
        linear_index(index, "f32[3,5]{1,0:T(2,2)}")


def test_dynamic_shapes_have_no_index():
    with pytest.raises(UnsupportedLayoutError, match="dynamic"):
        linear_index((0,), "f32[<=4]")
    with pytest.raises(UnsupportedLayoutError, match="dynamic"):
        byte_size("f32[?]")
    with pytest.raises(UnsupportedLayoutError, match="M\\(n\\)"):
        byte_size("f32[3]{0:M(8)}")


@given(shapes(max_rank=4, max_dim=6))
def test_logical_index_inverts_linear_index(shape):
    """Every slot holds at most one element, each element exactly one slot; the rest is padding."""
    from tiling.indexing import num_elements
    slots = np.arange(num_elements(shape) + 3)  # a few past the end, too
    held, is_element = logical_index(slots, shape)
    count = int(np.prod(shape.dimensions))
    assert int(is_element.sum()) == count
    assert (held[~is_element] == -1).all()
    assert np.array_equal(linear_index(held[is_element], shape), slots[is_element])


def test_logical_index_examples():
    held, is_element = logical_index(np.arange(24), "f32[3,5]{1,0:T(2,2)}")
    names = [",".join(map(str, e)) if ok else "--" for e, ok in zip(held.tolist(), is_element)]
    assert " ".join(names) == ("0,0 0,1 1,0 1,1 0,2 0,3 1,2 1,3 0,4 -- 1,4 -- "
                               "2,0 2,1 -- -- 2,2 2,3 -- -- 2,4 -- -- --")
    held, is_element = logical_index(51, "f32[8,8]{1,0:T(2,4)(2,1,1,1)}")
    assert (held, is_element) == ((6, 5), True)  # one slot: plain ints and a bool (issue 22)
    assert type(held[0]) is int and type(is_element) is bool
    assert logical_index(9, "f32[3,5]{1,0:T(2,2)}") == ((-1, -1), False)
    with pytest.raises(LayoutError, match="integers"):
        logical_index([0.5], "f32[3]")
