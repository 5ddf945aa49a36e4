"""The Numba engine (`tiling._engine` + `tiling._kernels`) is bit-identical to `_reference.py`.

Kernels compile once per container-dtype pair (and are cached on disk), so the tests reuse a few
container types rather than every element type for the fast paths.
"""

import ast
import math
import os
import pathlib

import ml_dtypes
import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiling.child import run_python
from tests.tiling.strategies import (
    bits_of, kernel_of, kernels_called, plan_of, random_array, shapes,
)
from tiling import ELEMENT_TYPES, Layout, Shape, byte_size
from tiling import _engine, _reference, _runtime
from tiling._tuning import PARALLEL_BYTES

_engine.load_kernels()  # small arrays would otherwise take the reference engine


def _python(script, *args, timeout=300, **env):
    """Runs `script` in a fresh interpreter and returns its stdout, once it has exited 0."""
    status, out, err = run_python(script, *args, timeout=timeout, **env)
    assert status == 0, (status, err[-3000:])
    return out


# The formats of FAST_PATHS, each with an element type whose storage has that many bits.
FAST_TYPES = {32: ["f32"], 16: ["bf16"], 8: ["s8", "pred"], 4: ["s4"], 1: ["pred"]}


def _views(x):
    """The same logical array in several memory orders, none of them copied into C order."""
    yield "C", x
    if x.ndim:
        yield "F", np.asfortranarray(x)
        rev = np.ascontiguousarray(x[(slice(None, None, -1),) * x.ndim])
        yield "reversed", rev[(slice(None, None, -1),) * x.ndim]
        big = np.zeros(tuple(2 * d for d in x.shape), x.dtype)
        big[(slice(None, None, 2),) * x.ndim] = x
        yield "strided", big[(slice(None, None, 2),) * x.ndim]
        yield "transposed", np.ascontiguousarray(x.T).T


def _reference_bytes(x, shape):
    et = ELEMENT_TYPES[shape.element_type]
    out = np.empty(byte_size(shape, allow_nested_padding=True), np.uint8)
    _reference.encode_into(x.view(et.container), shape.layout, et, out)
    return out


def _engine_bytes(x, shape, garbage=0xA5):
    et = ELEMENT_TYPES[shape.element_type]
    out = np.full(byte_size(shape, allow_nested_padding=True), garbage, np.uint8)
    _engine.encode_into(x.view(et.container), shape.layout, et, out)
    return out


def _engine_decode(buf, shape, order="C"):
    et = ELEMENT_TYPES[shape.element_type]
    out = np.zeros(shape.dimensions, et.dtype, order=order)
    _engine.decode_into(buf, shape.layout, et, out.view(et.container))
    return out

KERNELS_DIR = pathlib.Path(__file__).resolve().parents[2] / "tiling" / "_kernels"


def _check(x, shape):
    """Encode in every memory order equals the reference; decode inverts it exactly."""
    x = np.array(x)  # a C-ordered copy that stays 0-d for rank 0
    expected = _reference_bytes(x, shape)
    for name, view in _views(x):
        got = _engine_bytes(view, shape)
        assert np.array_equal(got, expected), f"{shape} encode from a {name} array"
    for order in ("C", "F"):
        back = _engine_decode(expected, shape, order)
        assert np.array_equal(bits_of(back), bits_of(x)), f"{shape} decode into {order} order"


def _round_trip_kernels(shape, seed):
    """Encodes and decodes a random C-order array of `shape`, each equal to the reference;
    returns the kernels of the two plans (`kernel_of`)."""
    x = random_array(np.random.default_rng(seed), shape)
    expected = _reference_bytes(x, shape)
    assert np.array_equal(_engine_bytes(x, shape), expected)
    assert np.array_equal(bits_of(_engine_decode(expected, shape)), bits_of(x))
    return [kernel_of(plan_of(x, shape)), kernel_of(plan_of(x, shape, False))]


@pytest.fixture
def disk_cache(monkeypatch):
    """The `_par` kernels run only with the disk cache on (`_runtime.parallel_allowed`),
    whatever TILING_NUMBA_CACHE says for this test run."""
    monkeypatch.setattr(_engine.load_kernels(), "CACHE_ENABLED", True)


# ---------------------------------------------------------------------------------------------
# Dispatch


@pytest.mark.parametrize("key", list(_engine.FAST_PATHS))
def test_fast_path_table_dispatches_as_listed(key):
    bits, tiles = key
    container = 8 if bits < 8 else bits
    assert _engine.choose_kernel(bits, container, tiles) == _engine.FAST_PATHS[key]


@pytest.mark.parametrize("bits, container, tiles", [
    (32, 32, ((4, 8), (2, 1))),          # packing that is not 32 bits per word
    (32, 32, ((2, -(2**63), 128),)),      # '*'
    (32, 32, ((1, 8, 128),)),             # a 3-d tile
    (16, 16, ((8, 128), (2, 1, 1, 1))),   # second tile reaching the tile-count dims
    (16, 16, ((1024,), (128,), (2, 1))),  # 1-d TPU packing
    (8, 8, ((2, 128), (4, 1))),           # packing tile does not divide the first
    (32, 8, ((8, 128),)),                 # widened storage
    (128, 128, ((8, 128),)),              # c128 moves as two words
])
def test_other_layouts_take_the_generic_path(bits, container, tiles):
    assert _engine.choose_kernel(bits, container, tiles) == "generic"


# ---------------------------------------------------------------------------------------------
# Fast paths: uneven shapes, batch dims, dims smaller than a tile, size 0, memory orders


FAST_DIMS = [(37, 300), (8, 128), (3, 2, 33, 129), (1, 5), (5,), (), (0, 130), (2, 0, 7)]


@pytest.mark.parametrize("dims", FAST_DIMS, ids=str)
@pytest.mark.parametrize("key", list(_engine.FAST_PATHS), ids=str)
def test_fast_paths_match_reference(key, dims):
    bits, tiles = key
    rng = np.random.default_rng(len(dims) * 1000 + bits)
    for name in FAST_TYPES[bits]:
        e = bits if bits < 8 and ELEMENT_TYPES[name].bit_width < 8 else 0
        m2m = tuple(range(len(dims) - 1, -1, -1))
        shape = Shape(name, dims, Layout(m2m, tiles, e))
        x = random_array(rng, shape)
        _check(x, shape)


def test_no_kernel_is_called_with_an_int_literal():
    """Numba compiles a function again for each int literal it is called with (`_pack_groups`
    and `_unpack_groups`, called with 1 where other callers pass int64 values, compiled twice in
    the packed family's first call; `_decode_square_rows` with 0 and 1): every call of a kernel
    or helper (`_kernel`, `_parallel_kernel`, `_helper`) in `tiling._kernels` passes `_ONE`,
    `_ZERO` or a variable instead."""
    trees = {path: ast.parse(path.read_text()) for path in sorted(KERNELS_DIR.glob("*.py"))}
    compiled = {node.name for tree in trees.values() for node in tree.body
                if isinstance(node, ast.FunctionDef) and any(
                    ast.unparse(d) in ("_kernel", "_parallel_kernel", "_helper") for d in node.decorator_list)}
    assert len(compiled) > 20
    literal = [(path.name, node.lineno, node.func.id) for path, tree in trees.items() for node in ast.walk(tree)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in compiled
               and any(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in node.args)]
    assert not literal, literal


@pytest.mark.parametrize("text", [
    "f32[3,37,300]{1,2,0:T(2,128)}",          # minor_to_major that transposes
    "bf16[3,20,300]{1,2,0:T(8,128)(2,1)}",
    "s8[5,37,260]{0,2,1:T(32,128)(4,1)}",
    "s4[70,300]{1,0:T(64,128)(8,1)E(4)}",
    "u4[9,130]{0,1:T(8,128)(8,1)E(4)}",
    "s2[40,300]{1,0:T(16,128)(16,1)E(2)}",
    "pred[33,129]{1,0:T(32,128)(32,1)E(1)}",
    "pred[70,300]{1,0:T(64,64)(32,1)E(1)}",   # two 1-bit groups per tile, narrow tiles
    "pred[40,9000]{1,0:T(32,128)(32,1)E(1)}",  # rows wider than one 4096-column sweep
    "bf16[3,17,600]{2,1,0:T(4,256)(2,1)}",
    "pred[40,300]{1,0:T(8,128)(4,1)}",
    "f8e4m3fn[17,130]{1,0:T(8,128)(4,1)}",
    "f16[9,129]{1,0:T(8,128)(2,1)}",
    "f32[7,3,129]{2,1,0:T(4,128)}",
    "f32[200]{0:T(8,128)}",                   # a tile longer than the rank
    "s32[]{:T(128)}",
    "f64[5,130]{1,0:T(8,128)}",
    "f32[5,7]{0,1}",                          # untiled, transposing
    "f32[3,5]{1,0:T(2,2)L(7)}",               # tail padding after a fast path
])
def test_tpu_strings_match_reference(text):
    shape = Shape.parse(text)
    _check(random_array(np.random.default_rng(1), shape), shape)


# ---------------------------------------------------------------------------------------------
# Generic path


@pytest.mark.parametrize("text", [
    "bf16[2,3,1004]{2,1,0:T(2,*,128)(2,1)}",
    "bf16[3000]{0:T(1024)(128)(2,1)}",
    "f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",
    "f32[8,8]{1,0:T(2,4)(2,1,1,1)}",
    "f32[64,64,64]{0,2,1:T(4,8)(2,1)}",
    "f32[]{:T(256)}",
    "pred[8,8,8]{0,2,1:T(8,128)E(32)}",       # widened storage
    "s4[5,7]{0,1:T(4,2)E(16)}",               # sign-extended sub-byte type
    "u4[17,5]{0,1:E(4)}",                     # packing without tiles
    "f4e2m1fn[5]{0:E(4)}",
    "c128[3,5]{0,1:T(2,2)}",
    "c64[3,5,4]{0,2,1:T(2,*,3)L(5)}",
    "f32[4,4]{1,0:T(4,4)(3)}",                # nested padding (behind allow_nested_padding)
    "s8[6,5,4]{2,0,1:T(2,*,3)(2,*,2)}",       # '*' in a later tile: merges tile dims
])
def test_generic_layouts_match_reference(text):
    shape = Shape.parse(text)
    _check(random_array(np.random.default_rng(2), shape), shape)


@pytest.mark.parametrize("text, kernel", [
    ("bf16[4,6,300]{2,1,0:T(2,*,128)(2,1)}", "encode_packed"),    # `*` merges dims 1 and 2
    ("s8[2,3,40,260]{3,2,1,0:T(*,*,8,128)(4,1)}", "encode_packed"),
    ("f32[3,5,7,300]{3,2,1,0:T(*,8,*,128)}", "encode_tiled"),
    ("f32[5,7,300]{2,1,0:T(*,*,128)}", "encode_tiled"),           # one entry left after merging
    ("bf16[3072]{0:T(1024)(128)(2,1)}", "encode_packed"),         # (k)(m) chain on 1-D
    ("s8[3,2560]{1,0:T(512)(128)(4,1)}", "encode_packed"),
    ("bf16[3000]{0:T(1024)(128)(2,1)}", "move"),                  # 128 does not divide 3000
    ("bf16[3072]{0:T(1024)(128)(2,1,1)}", "move"),                # a later tile reaches further
    ("f32[6,40,300]{1,2,0:T(2,*,128)}", "move"),                  # merged dims not adjacent
])
def test_equivalent_fast_forms(text, kernel):
    """`*` runs and 1-D tile chains take the fast kernels when the merged or split dims are a
    plain reshape of the array (C order here); any other memory order falls back, same bytes."""
    shape = Shape.parse(text)
    x = random_array(np.random.default_rng(4), shape)
    assert np.array_equal(_engine_bytes(x, shape), _reference_bytes(x, shape))
    assert plan_of(x, shape).kernel == kernel
    _check(x, shape)


@pytest.mark.parametrize("text", [
    "f32[20,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}",   # the doc's example: T(2,3) on [1120, 110]
    "f32[37,301]{1,0:T(2,3)}",                      # a short last tile row and a short last tile
    "bf16[3,9,14]{2,1,0:T(4,4)}",
    "s8[5,6]{1,0:T(3,1)}",
    "f64[4,9]{1,0:T(8,2)}",                         # tiles taller than the array
    "u16[40,70]{1,0:T(32,2)}",                      # too many rows for one shuffle
])
def test_tiny_tiles_move_with_constant_tile_kernels(text):
    shape = Shape.parse(text)
    assert _round_trip_kernels(shape, 9) == ["encode_tiny_tiles", "decode_tiny_tiles"]
    _check(random_array(np.random.default_rng(9), shape), shape)


@pytest.mark.parametrize("text, kernel", [
    ("f32[16,16,64]{0,2,1:T(4,8)(2,1)}", "encode_square"),     # pairs of f32 as 64-bit words
    ("bf16[40,300]{0,1:T(8,128)(2,1)}", "encode_square"),      # pairs of bf16 as 32-bit words
    ("s8[3,300,40]{1,2,0:T(8,128)(4,1)}", "encode_square"),    # batch dim
    ("s8[300,40]{0,1:T(8,128)(2,1)}", "encode_tiled"),        # pairs of s8 as 16-bit words
    ("bf16[40,301]{0,1:T(8,128)(2,1)}", "encode_packed"),     # an odd row count: no pairs
    ("bf16[40,300]{0,1:T(8,128)(2,1)L(5000)}", "encode_square"),  # tail padding after pairs
    ("f32[7,2]{0,1:T(4,2)(2,1)}", "encode_tiny_tiles"),       # pairs into tiles of 2 columns
])
def test_row_pairs_side_by_side_move_as_words(text, kernel):
    """`(p,1)` over rows adjacent in memory (a transposed array) moves each group of p as one
    word through the tiled kernel."""
    shape = Shape.parse(text)
    x = random_array(np.random.default_rng(10), shape)
    assert np.array_equal(_engine_bytes(x, shape), _reference_bytes(x, shape))
    assert plan_of(x, shape).kernel == kernel
    _check(x, shape)


# Long fuzz runs: TILING_FUZZ_EXAMPLES=5000 python -m pytest tests/tiling -k random
FUZZ = settings(max_examples=int(os.environ["TILING_FUZZ_EXAMPLES"])) \
    if os.environ.get("TILING_FUZZ_EXAMPLES") else settings()


@FUZZ
@given(shapes(), st.integers(0, 2**32 - 1))
def test_random_layouts_match_reference(shape, seed):
    _check(random_array(np.random.default_rng(seed), shape), shape)


@st.composite
def tpu_like_shapes(draw):
    """Fast-path formats on uneven dims with a random minor_to_major and batch dims."""
    bits, tiles = draw(st.sampled_from(list(_engine.FAST_PATHS)))
    name = draw(st.sampled_from(FAST_TYPES[bits]))
    e = bits if bits < 8 and ELEMENT_TYPES[name].bit_width < 8 else 0
    rank = draw(st.integers(1, 4))
    dims = tuple(draw(st.lists(st.integers(0, 40), min_size=rank - 1, max_size=rank - 1))) \
        + (draw(st.integers(0, 300)),)
    m2m = tuple(draw(st.permutations(range(rank))))
    return Shape(name, dims, Layout(m2m, tiles, e))


@given(tpu_like_shapes(), st.integers(0, 2**32 - 1))
def test_fast_paths_on_random_shapes(shape, seed):
    _check(random_array(np.random.default_rng(seed), shape), shape)


# ---------------------------------------------------------------------------------------------
# Words and bits (spec §5.2), through the engine


def test_bf16_words():
    x = np.random.default_rng(7).standard_normal((16, 256)).astype(ml_dtypes.bfloat16)
    w = _engine_bytes(x, Shape.parse("bf16[16,256]{1,0:T(8,128)(2,1)}")).view(np.uint32)
    bits = x.view(np.uint16).astype(np.uint32)
    assert w[0] == bits[0, 0] | bits[1, 0] << 16
    assert w[128] == bits[2, 0] | bits[3, 0] << 16
    assert w[512] == bits[0, 128] | bits[1, 128] << 16


def test_s4_and_pred_words():
    rng = np.random.default_rng(8)
    x4 = rng.integers(-8, 8, size=(8, 256)).astype(ml_dtypes.int4)
    w = _engine_bytes(x4, Shape.parse("s4[8,256]{1,0:T(8,128)(8,1)E(4)}")).view(np.uint32)
    nib = x4.view(np.uint8).astype(np.uint32) & 0xF
    assert w.size == 256 and w[3] == sum(int(nib[r, 3]) << (4 * r) for r in range(8))
    xp = rng.random((64, 256)) < 0.5
    w = _engine_bytes(xp, Shape.parse("pred[64,256]{1,0:T(32,128)(32,1)E(1)}")).view(np.uint32)
    assert w.size == 512
    assert int(w[5]) == sum(int(xp[r, 5]) << r for r in range(32))
    assert int(w[128]) == sum(int(xp[r, 128]) << r for r in range(32))


def test_nan_payloads_and_every_bit_pattern_survive():
    raw = np.arange(2**16, dtype=np.uint16).reshape(256, 256)
    x = raw.view(ml_dtypes.bfloat16)
    _check(x, Shape.parse("bf16[256,256]{1,0:T(8,128)(2,1)}"))


def test_padding_is_zero_whatever_out_held():
    shape = Shape.parse("f32[9,130]{1,0:T(8,128)}")
    x = np.full((9, 130), -1.0, np.float32)
    buf = _engine_bytes(x, shape, garbage=0xFF).view(np.uint32)
    tiles = buf.reshape(2, 2, 8, 128)
    assert (tiles[1, :, 1:, :] == 0).all() and (tiles[:, 1, :, 2:] == 0).all()


def test_plans_are_reused_across_calls():
    shape = Shape.parse("f32[8,128]{1,0:T(8,128)}")
    x = np.arange(1024, dtype=np.float32).reshape(8, 128)
    first = _engine_bytes(x, shape)
    et = ELEMENT_TYPES[shape.element_type]
    plan = _engine.encoder(x.view(et.container), shape.layout, et, first.size)
    assert np.array_equal(_engine_bytes(x + 1, shape).view(np.float32), (x + 1).reshape(-1))
    assert _engine.encoder(x.view(et.container), shape.layout, et, first.size) is plan
    assert np.array_equal(first.view(np.float32), x.reshape(-1))


def test_readonly_and_unaligned_inputs():
    shape = Shape.parse("f32[9,130]{1,0:T(8,128)}")
    x = np.random.default_rng(3).standard_normal((9, 130)).astype(np.float32)
    expected = _reference_bytes(x, shape)
    ro = x.copy()
    ro.flags.writeable = False
    assert np.array_equal(_engine_bytes(ro, shape), expected)
    raw = np.zeros(x.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(np.float32).reshape(9, 130)
    unaligned[...] = x
    assert np.array_equal(_engine_bytes(unaligned, shape), expected)
    record = np.zeros((9, 130), dtype=[("a", np.uint8), ("x", np.float32)])
    record["x"] = x  # strides of 5 bytes: not whole elements, the engine copies
    assert np.array_equal(_engine_bytes(record["x"], shape), expected)


# ---------------------------------------------------------------------------------------------
# Bounds: every kernel index stays in range (numba's boundscheck on, in a child process)

_BOUNDS_CHILD = """
import numpy as np
from tests.tiling.strategies import random_array
from tests.tiling.test_kernels import _check
from tiling import Shape
texts = {texts!r}
for i, text in enumerate(texts):
    shape = Shape.parse(text)
    _check(random_array(np.random.default_rng(i), shape), shape)
print("checked", len(texts))
"""


# One shape per kernel family (tiled, word groups, 1-bit words, square blocks, tiny tiles, the
# generic `move` with sub-byte packing and two-word elements, the permutation kernels), in few
# container types: each family compiles once under boundscheck. TILING_LONG_FUZZ=1 adds the
# rest (batch dims, `*` merges, repeated tiles, rank 0, empty arrays).
BOUNDS_TEXTS = ["f32[37,300]{1,0:T(8,128)}", "bf16[3,20,300]{1,2,0:T(8,128)(2,1)}",
                "pred[33,129]{1,0:T(32,128)(32,1)E(1)}", "f32[300,37]{0,1:T(8,128)}",
                "f32[37,301]{1,0:T(2,3)}", "f32[4,4]{1,0:T(4,4)(3)}", "u4[17,5]{0,1:E(4)}",
                "c128[3,5]{0,1:T(2,2)}"]
LONG_BOUNDS_TEXTS = ["f32[3,37,300]{1,2,0:T(2,128)}", "s4[70,300]{1,0:T(64,128)(8,1)E(4)}",
                     "bf16[2,3,1004]{2,1,0:T(2,*,128)(2,1)}", "f32[]{:T(256)}",
                     "f32[0,130]{1,0:T(8,128)}"]


def test_kernels_stay_in_bounds():
    texts = BOUNDS_TEXTS + (LONG_BOUNDS_TEXTS if os.environ.get("TILING_LONG_FUZZ") else [])
    out = _python(_BOUNDS_CHILD.format(texts=texts), timeout=600, NUMBA_BOUNDSCHECK="1",
                  TILING_NUMBA_CACHE="1")
    assert f"checked {len(texts)}" in out


@pytest.mark.parametrize("text", [
    "f32[300,37]{0,1:T(8,128)}",               # T(8,128) over a transposed f32 array: k = 2
    "f32[3,300,70]{1,2,0:T(2,128)}",           # a batch dim; k = 8, a short last block
    "u64[200,30]{0,1:T(4,128)}",               # 64-bit elements: k = 2
    "f32[136,6,44]{0,2,1:T(4,8)(2,1)}",        # pairs of f32 as 64-bit words: k = 4
])
def test_square_kernels_move_transposed_tiles(text):
    names = _round_trip_kernels(Shape.parse(text), 14)
    assert names == ["encode_square", "decode_square"]


@pytest.mark.parametrize("text, kind", [
    ("f32[333,128]{1,0:T(8,128)}", "tiled"),               # a short last tile row
    ("bf16[3,264,128]{2,1,0:T(8,128)(2,1)}", "packed"),    # batches merged into rows
    ("s8[4,100,128]{2,1,0:T(8,128)(4,1)}", "packed"),      # batches of their own
    ("s4[520,128]{1,0:T(8,128)(8,1)E(4)}", "packed"),
    ("pred[1000,128]{1,0:T(32,128)(32,1)E(1)}", "packed"),
    ("bf16[262144]{0:T(1024)(128)(2,1)}", "packed"),       # the 1-D TPU chain
    ("f32[2050,128]{1,0:T(8,128)}", "tiled_par"),
    ("bf16[4100,128]{1,0:T(8,128)(2,1)}", "packed_par"),
])
def test_tile_rows_of_one_tile_move_in_runs(text, kind, disk_cache):
    # (each kernel call moves up to TILE_ROWS_PER_CALL such tile rows as one run of tiles)
    names = _round_trip_kernels(Shape.parse(text), 16)
    assert names == [f"encode_{kind}", f"decode_{kind}"]


def _placed(like, offset):
    """An array of `like`'s dtype and shape whose data starts `offset` bytes past a 64-byte
    boundary."""
    raw = np.empty(like.nbytes + 128, np.uint8)
    start = -raw.ctypes.data % 64 + offset
    return raw[start:start + like.nbytes].view(like.dtype).reshape(like.shape)


_SERIAL_SQUARE = {"encode_square", "decode_square"}


@pytest.mark.parametrize("text, kernels", [
    ("f32[136,6,44]{0,2,1:T(4,8)(2,1)}", _SERIAL_SQUARE),  # u64 pairs, batch merged: k = 4
    ("f32[300,37]{0,1:T(8,128)}", _SERIAL_SQUARE),         # k = 2, rows not whole tile rows
    ("f32[3,300,70]{1,2,0:T(2,128)}", _SERIAL_SQUARE),     # k = 8, batches of their own
    # tile rows under 1 KiB: encoding sweeps as many as fit in 256 KiB
    ("f32[50,64,64]{0,2,1:T(4,8)(2,1)}", _SERIAL_SQUARE),  # 4 sweeps, the last one short
    ("f32[64,64,64]{0,2,1:T(4,8)(2,1)}", {"encode_square_par", "decode_square_par"}),
])
def test_square_kernels_align_blocks_to_cache_lines(text, kernels, disk_cache):
    # The square kernels start their blocks where the transposed side's lines start on a 64-byte
    # boundary, so every distance from one gives other first tile rows (itemsize 4: elements
    # that straddle a boundary too).
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    x = random_array(np.random.default_rng(15), shape)
    expected = _reference_bytes(x, shape)
    for offset in range(0, 64, 4):
        placed = _placed(x, offset)
        placed[...] = x
        assert np.array_equal(_engine_bytes(placed, shape), expected), offset
        out = _placed(x, offset)
        _engine.decode_into(expected, shape.layout, et, out.view(et.container))
        assert np.array_equal(bits_of(out), bits_of(x)), offset
    assert {kernel_of(plan_of(x, shape)), kernel_of(plan_of(x, shape, False))} == kernels


@pytest.mark.parametrize("text", [
    "f32[1030,300]{0,1:T(8,128)}",             # 5 sweeps + head: 8 parts, edge tiles
    "f32[64,64,64]{0,2,1:T(4,8)(2,1)}",        # u64 pairs, one long sweep: 8 parts of one tile
    "f32[2,3300,40]{1,2,0:T(2,128)}",          # 2 batches of one sweep + head: 8 parts
])
def test_parallel_square_decode_splits_columns(text, disk_cache):
    # With fewer sweeps than threads could share, decode_square_par cuts each sweep's whole
    # tiles into parts (the last part also takes the edge tiles); at every distance of the
    # output from a line, so that the head sweep's rows differ.
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    x = random_array(np.random.default_rng(18), shape)
    expected = _reference_bytes(x, shape)
    for offset in range(0, 64, 4):
        out = _placed(x, offset)
        _engine.decode_into(expected, shape.layout, et, out.view(et.container))
        assert np.array_equal(bits_of(out), bits_of(x)), offset
    assert kernel_of(plan_of(x, shape, False)) == "decode_square_par"


@pytest.mark.parametrize("at_cache", [False, True])  # only the decoders stream at the cache size
@pytest.mark.parametrize("text", [
    "s8[64,1024]{1,0:T(8,128)(4,1)}",              # whole tiles: one run per tile row
    "bf16[2,44,300]{2,1,0:T(8,128)(2,1)}",         # edge tiles and rows after each run
    "s4[24,128]{1,0:T(8,128)(8,1)E(4)}",           # runs of one-tile rows
    "s8[16,192]{1,0:T(8,64)(4,1)}",                # tiles narrower than a streaming unzip
    "f32[2,20,300]{2,1,0:T(8,128)}",               # tiled: edge tiles, a last partial tile row
    "u16[16,512]{1,0:T(8,128)}",                   # tiled: one 256-byte block per tile row
    "f32[28,128]{1,0:T(8,128)}",                   # tiled: tile rows of one tile, padded
])
def test_streaming_stores_write_exactly_the_output(text, at_cache):
    # Streaming stores write whole 64-byte lines: at every distance of the output from a line,
    # it must equal the reference and the bytes around it must stay as they were.
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    x = random_array(np.random.default_rng(17), shape).view(et.container)
    expected = _reference_bytes(x, shape)
    cache = x.nbytes + expected.size if at_cache else 0  # (the cache size, as the plans see it)
    plans = {True: plan_of(x, shape, True, cache_bytes=cache),
             False: plan_of(x, shape, False, cache_bytes=cache)}
    for name, nbytes in (("encode", expected.size), ("decode", x.nbytes)):
        raw = np.empty(nbytes + 192, np.uint8)
        for offset in range(0, 64, et.container.itemsize):
            start = -raw.ctypes.data % 64 + 64 + offset
            raw[...] = 0x5A
            out = raw[start:start + nbytes]
            if name == "encode":
                plans[True].run(x, out)
                assert np.array_equal(out, expected), offset
            else:
                plans[False].run(expected, out.view(x.dtype).reshape(x.shape))
                assert np.array_equal(out, x.reshape(-1).view(np.uint8)), offset
            assert not np.any(np.delete(raw, np.s_[start:start + nbytes]) != 0x5A), offset
    encoded, decoded = (0, 1) if at_cache else (1, 1)
    assert (plans[True].stream, plans[False].stream) == (encoded, decoded)


@pytest.mark.parametrize("text", ["s8[64,512]{1,0:T(8,128)(4,1)}", "f32[16,512]{1,0:T(8,128)}"])
def test_stream_modes_by_size_against_the_cache(text):
    # array + buffer against the cache size (see `_runtime.stream_mode`): encodes stream above
    # it, decodes from it
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    x = random_array(np.random.default_rng(18), shape).view(et.container)
    expected = _reference_bytes(x, shape)
    total = x.nbytes + expected.size
    limits = ((total // 2, [1, 1]), (total - 1, [1, 1]), (total, [0, 1]), (total + 1, [0, 0]))
    for limit, streamed in limits:
        encoder = plan_of(x, shape, True, cache_bytes=limit)
        decoder = plan_of(x, shape, False, cache_bytes=limit)
        out, back = np.empty_like(expected), np.empty_like(x)
        encoder.run(x, out)
        decoder.run(expected, back)
        assert [encoder.stream, decoder.stream] == streamed, limit
        assert np.array_equal(out, expected) and np.array_equal(back, x)


# The shuffle intrinsics load and store whole vectors that numba's boundscheck does not see:
# the child puts every array and buffer against a PROT_NONE page, before or after it, so a
# vector reaching one byte past either end kills the child.
_FENCED_CHILD = """
import ctypes, mmap
import numpy as np
from tests.tiling.strategies import plan_of, random_array
from tests.tiling.test_kernels import _reference_bytes
from tiling import ELEMENT_TYPES, Shape, _engine
_engine.load_kernels()
mprotect = ctypes.CDLL(None).mprotect
mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
page = mmap.PAGESIZE

def fenced(nbytes, after):
    pages = -(-nbytes // page)
    memory = np.frombuffer(mmap.mmap(-1, (pages + 1) * page), np.uint8)
    fence = pages * page if after else 0
    assert mprotect(memory.ctypes.data + fence, page, 0) == 0
    return memory[pages * page - nbytes:pages * page] if after else memory[page:page + nbytes]

texts = {texts!r}
for i, text in enumerate(texts * 2):
    cache = None if i < len(texts) else 0  # then again with streaming stores (`_store_block`)
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    x = random_array(np.random.default_rng(i), shape)
    expected = _reference_bytes(x, shape)
    for after in (False, True):
        src = fenced(x.nbytes, after).view(x.dtype).reshape(x.shape)
        src[...] = x
        buf = fenced(expected.size, after)
        plan_of(src, shape, cache_bytes=cache).run(src.view(et.container), buf)
        assert np.array_equal(buf, expected), text
        back = fenced(x.nbytes, after).view(x.dtype).reshape(x.shape)
        plan_of(x, shape, False, cache_bytes=cache).run(buf, back.view(et.container))
        assert np.array_equal(back.view(et.container), x.view(et.container)), text
print("checked", i + 1)
"""


def test_vector_paths_stay_in_bounds():
    texts = ["bf16[16,256]{1,0:T(8,128)(2,1)}", "s8[16,320]{1,0:T(8,128)(4,1)}",
             "s4[16,256]{1,0:T(8,128)(8,1)E(4)}",                         # word-group shuffles
             "f32[4,96]{1,0:T(2,3)}", "f64[8,32]{1,0:T(8,2)}",            # tiny tiles
             "f32[256,16]{0,1:T(8,128)}", "f32[128,32]{0,1:T(2,128)}",    # square blocks
             "u64[128,16]{0,1:T(4,128)}", "f32[64,16,64]{0,2,1:T(4,8)(2,1)}",
             "f32[256,13]{0,1:T(8,128)}", "f32[136,6,44]{0,2,1:T(4,8)(2,1)}",  # short ends
             "f32[20,300]{1,0:T(8,128)}", "u16[8,256]{1,0:T(8,128)}"]     # tiled (streaming)
    out = _python(_FENCED_CHILD.format(texts=texts), timeout=600)
    assert f"checked {2 * len(texts)}" in out


# ---------------------------------------------------------------------------------------------
# python -m tiling encode / decode


def test_cli_encode_decode_round_trip(tmp_path, capsys):
    from tiling.__main__ import main

    x = np.random.default_rng(4).standard_normal((9, 130)).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "x.npy", x)  # .npy keeps bf16 as raw 2-byte values
    text = "bf16[9,130]{1,0:T(8,128)(2,1)}"
    assert main(["encode", str(tmp_path / "x.npy"), text, str(tmp_path / "x.bin"),
                 "--progress"]) == 0
    raw = np.fromfile(tmp_path / "x.bin", np.uint8)
    assert np.array_equal(raw, _reference_bytes(x, Shape.parse(text)))
    assert main(["decode", str(tmp_path / "x.bin"), text, str(tmp_path / "y.npy")]) == 0
    y = np.load(tmp_path / "y.npy")
    assert np.array_equal(y.view(np.uint16), x.view(np.uint16))
    assert "100.0%" in capsys.readouterr().err


def test_cli_errors_exit_1(tmp_path, capsys):
    from tiling.__main__ import main

    np.save(tmp_path / "b.npy", np.zeros((3, 4), ml_dtypes.bfloat16))
    assert main(["encode", str(tmp_path / "b.npy"), "{1,0}", str(tmp_path / "b.bin")]) == 1
    assert "give the full shape" in capsys.readouterr().err
    np.save(tmp_path / "f.npy", np.zeros((3, 4), np.float32))
    assert main(["encode", str(tmp_path / "f.npy"), "{0}", str(tmp_path / "f.bin")]) == 1
    assert "rank" in capsys.readouterr().err
    (tmp_path / "short.bin").write_bytes(b"\0" * 10)
    assert main(["decode", str(tmp_path / "short.bin"), "f32[3,4]{1,0}",
                 str(tmp_path / "o.npy")]) == 1
    assert "holds only 10 bytes but f32[3,4]{1,0} takes 48" in capsys.readouterr().err


_LAZY_CHILD = """
import sys
import numpy as np
import tiling
assert "numba" not in sys.modules, "import tiling must not import numba"
x = np.arange(256 * 256, dtype=np.float32).reshape(256, 256)
small = tiling.encode(x, "{1,0:T(8,128)}")
assert "numba" not in sys.modules, "a small first encode runs on the numpy reference"
big = np.arange(1024 * 1024, dtype=np.float32).reshape(1024, 1024)
buf = tiling.encode(big, "{1,0:T(8,128)}")
assert "numba" not in sys.modules, "a first large fast-path encode runs on the reference"
generic = tiling.encode(big, "{0,1:T(4,8)(2,1)}")
assert "numba" in sys.modules, "a large generic-layout encode loads the kernels"
assert np.array_equal(tiling.decode(generic, "f32[1024,1024]{0,1:T(4,8)(2,1)}"), big)
assert np.array_equal(tiling.decode(buf, "f32[1024,1024]{1,0:T(8,128)}"), big)
assert np.array_equal(tiling.encode(x, "{1,0:T(8,128)}"), small)
print("lazy ok")
"""


def test_numba_loads_only_when_an_array_needs_it():
    assert "lazy ok" in _python(_LAZY_CHILD)


_BUDGET_CHILD = """
import sys
import numpy as np
import tiling
from tiling import _runtime
big = np.arange(1024 * 1024, dtype=np.float32).reshape(1024, 1024)
first = tiling.encode(big, "{1,0:T(8,128)}")
assert "numba" not in sys.modules
_runtime.REFERENCE_BUDGET_SECONDS = 0.0  # as if the reference had spent its budget
assert np.array_equal(tiling.encode(big, "{1,0:T(8,128)}"), first)
assert "numba" in sys.modules, "once the budget is spent, the kernels load"
print("budget ok")
"""


def test_reference_budget_hands_over_to_the_kernels():
    assert "budget ok" in _python(_BUDGET_CHILD)


_BROKEN_CACHE_CHILD = """
import numpy as np
import tiling
from tiling import _engine
kernels = _engine.load_kernels()

def broken(*args, **kwargs):
    raise EOFError("truncated cache file")

kernels.encode_tiled._cache.load_overload = broken  # as if another process left a torn file
x = np.arange(256 * 512, dtype=np.float32).reshape(256, 512)  # below PARALLEL_BYTES: serial
buf = tiling.encode(x, "{1,0:T(8,128)}")
assert np.array_equal(tiling.decode(buf, "f32[256,512]{1,0:T(8,128)}"), x)
print("recovered", type(kernels.encode_tiled._cache).__name__)
"""


def test_a_broken_cache_entry_costs_a_compile_not_the_call():
    assert "recovered NullCache" in _python(_BROKEN_CACHE_CHILD, TILING_NUMBA_CACHE="1")


# ---------------------------------------------------------------------------------------------
# Copy-equivalent layouts: the engine's "copy" plan


@pytest.mark.parametrize("text, expected", [
    ("f32[8,128]{1,0:T(8,128)}", True),
    ("f32[3,8,128]{2,1,0:T(8,128)}", True),
    ("bf16[16,128]{1,0:T(8,128)}", True),
    ("f32[8,128]{0,1:T(8,128)}", False),
    ("f32[4,128]{1,0:T(8,128)}", False),      # padded rows
    ("f32[16,256]{1,0:T(8,128)}", False),     # two tiles across
    ("bf16[8,128]{1,0:T(8,128)(2,1)}", False),
    ("pred[8,128]{1,0:T(8,128)}", False),     # 1-bit values in bytes are not copied verbatim
    ("s8[5]{0:L(3)}", False),                 # tail padding
])
def test_is_row_major(text, expected):
    shape = Shape.parse(text)
    assert _engine.is_row_major(shape.dimensions, shape.layout,
                                ELEMENT_TYPES[shape.element_type]) is expected
    x = np.zeros(shape.dimensions, shape.dtype)
    assert (plan_of(x, shape).kernel == "copy") is expected


def _public_round_trip(x, shape, out, back):
    """The public encode into `out` equals the reference; the public decode into `back` gives x."""
    import tiling
    assert tiling.encode(x, shape, out=out) is out
    assert np.array_equal(out, _reference_bytes(np.ascontiguousarray(x), shape))
    assert tiling.decode(out, shape, out=back) is back
    assert np.array_equal(bits_of(back), bits_of(x))


@pytest.mark.parametrize("text", ["f32[8,128]{1,0:T(8,128)}", "f32[8,128]{0,1:T(8,128)}",
                                  "s8[2,4,128]{2,1,0:T(4,128)}",
                                  "bf16[16,128]{1,0:T(8,128)}",  # no buffer protocol: numpy copy
                                  "s4[3,5]{1,0}", "f16[2,3,4]{2,1,0}"])
def test_repeated_small_calls_match_reference(text):
    import tiling
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    out = np.empty(byte_size(shape), np.uint8)
    back = np.empty(shape.dimensions, et.dtype)
    for seed in range(3):  # the first call validates, the later ones take the cached path
        x = random_array(np.random.default_rng(seed), shape)
        _public_round_trip(x, shape, out, back)
        # what the shortcut must still reject
        with pytest.raises(tiling.LayoutError):
            tiling.encode(x, shape, out=out[:-1])
        with pytest.raises(tiling.LayoutError):
            tiling.encode(x, shape, out=out.reshape(-1)[::-1])
        with pytest.raises(tiling.LayoutError):
            tiling.decode(out, shape, out=back.T if back.ndim == 2 else back[..., ::-1])
        with pytest.raises(tiling.LayoutError):
            tiling.decode(out[:-1], shape, out=back)
        overlap = x.reshape(-1).view(np.uint8)
        if overlap.size == out.size:
            with pytest.raises(tiling.LayoutError):
                tiling.encode(x, shape, out=overlap)


@pytest.mark.parametrize("text", ["bf16[16,256]{1,0:T(8,128)(2,1)}", "s8[8,384]{1,0:T(8,128)(4,1)}",
                                  "s4[16,128]{1,0:T(8,128)(8,1)E(4)}",
                                  "pred[64,128]{1,0:T(32,128)(32,1)E(1)}",
                                  "f32[16,256]{1,0:T(8,128)}", "f32[16,16,16]{0,2,1:T(4,8)(2,1)}"])
@pytest.mark.parametrize("strided", [False, True])
def test_repeated_fast_path_calls_take_the_logical_array(text, strided):
    # `codec` hands the fast plans the user's array itself (`Plan.logical`): each plan must
    # view it as its own word type, for every element type and for strided arrays too
    _engine.load_kernels()
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    out = np.empty(byte_size(shape), np.uint8)
    back = np.empty(shape.dimensions, et.dtype)
    for seed in range(3):  # the first call validates, the later ones take the cached path
        x = random_array(np.random.default_rng(seed), shape)
        if strided:  # the same values, every other entry of a longer first dim
            wide = np.zeros((2 * x.shape[0],) + x.shape[1:], x.dtype)
            wide[::2] = x
            x = wide[::2]
        _public_round_trip(x, shape, out, back)
    assert plan_of(x, shape).logical


@pytest.mark.parametrize("text", [
    "f32[16,16,63]{0,2,1:T(4,8)(2,1)}",          # runs of 2 (an odd row count: no pairs)
    "f32[5,7,8,11,10]{3,4,2,1,0:T(*,*,2,*,3)}",  # runs of 1-3, padding
    "s8[9,13]{0,1:T(2,2)(1,1)}",
    "u16[6,7]{1,0:T(2,3)(1,1)}",
])
def test_permutation_path_matches_reference(text):
    import tiling
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    x = random_array(np.random.default_rng(7), shape)
    expected = np.empty(byte_size(shape), np.uint8)
    _reference.encode_into(x.view(et.container), shape.layout, et, expected)
    out = np.full(expected.size, 0xAB, np.uint8)  # padding must come back zero
    assert np.array_equal(tiling.encode(x, shape, out=out), expected)
    assert np.array_equal(bits_of(tiling.decode(expected, shape)), bits_of(x))
    for _, view in _views(x):  # strided sources take `move`, same bytes
        assert np.array_equal(tiling.encode(view, shape), expected)
    assert (plan_of(x, shape).kernel, plan_of(x, shape, False).kernel) == ("scatter", "gather")


# ---------------------------------------------------------------------------------------------
# Parallel drivers: arrays of at least `PARALLEL_BYTES` run the `_par` kernels


# Just above the threshold, uneven in every tiled dim; one with a batch dim in the middle.
PARALLEL_TEXTS = ["f32[1030,2100]{1,0:T(8,128)}", "f32[1030,3,700]{0,2,1:T(8,128)}",
                  "bf16[1030,4100]{1,0:T(8,128)(2,1)}", "s8[2100,4100]{1,0:T(8,128)(4,1)}",
                  "s4[2100,4100]{1,0:T(8,128)(8,1)E(4)}",
                  "pred[2100,4100]{1,0:T(32,128)(32,1)E(1)}"]


@pytest.mark.parametrize("text", PARALLEL_TEXTS)
def test_parallel_path_matches_reference(text, monkeypatch):
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    x = random_array(np.random.default_rng(11), shape)
    names = kernels_called(monkeypatch)
    monkeypatch.setattr(_engine.load_kernels(), "CACHE_ENABLED", True)
    expected = _reference_bytes(x, shape)
    assert np.array_equal(_engine_bytes(x, shape), expected)
    assert np.array_equal(_engine_bytes(np.asfortranarray(x), shape), expected)
    back = _engine_decode(expected, shape)
    assert np.array_equal(back.view(et.container), x.view(et.container))
    assert names and all(n.endswith("_par") for n in names), names


@pytest.mark.parametrize("text, kernels", [
    ("f32[20,7,8,110,20]{4,3,2,1,0:T(*,*,2,*,3)}", ["encode_tiny_tiles_par",
                                                    "decode_tiny_tiles_par"]),
    ("f32[700,410]{0,1:T(8,128)}", ["encode_square_par", "decode_square_par"]),
    ("bf16[500,1000]{1,0:T(8,128)(2,1)}", ["encode_packed", "decode_packed"]),  # below: serial
])
def test_parallel_threshold_for_each_kernel_family(text, kernels, disk_cache):
    shape = Shape.parse(text)
    big = math.prod(shape.dimensions) * shape.dtype.itemsize >= PARALLEL_BYTES
    assert big == kernels[0].endswith("_par")
    assert _round_trip_kernels(shape, 13) == kernels


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.integers(1, 5), st.lists(st.integers(0, 4), max_size=120))
def test_work_stealing_hands_out_every_unit_once(units, threads, order):
    """The `_par` drivers' claims (`_kernels.parallel._claimed`), under any interleaving of the threads'
    atomic claims: each unit goes to exactly one thread, a thread first takes its own range in
    order, and a thread stops only once no unit is left."""
    from tiling._kernels import parallel as _kernels

    T = min(threads, units)
    claims = np.zeros(T * _kernels._LINE_WORDS, np.int64)
    victim = [0] * T  # each thread's v
    taken = [[] for _ in range(T)]
    turns = iter(order)
    while any(v < T for v in victim):
        live = [th for th in range(T) if victim[th] < T]
        th = live[next(turns, 0) % len(live)]
        u = _kernels._claimed(claims, th, victim[th], units)
        if u < 0:
            victim[th] += 1
        else:
            taken[th].append((victim[th], u))
    assert sorted(u for t in taken for _, u in t) == list(range(units))
    for th, t in enumerate(taken):
        own = [u for v, u in t if v == 0]
        assert own == list(range(th * units // T, th * units // T + len(own)))


_MANY_THREADS_SCRIPT = """
import numpy as np
from tests.tiling.strategies import random_array
from tests.tiling.test_kernels import (PARALLEL_TEXTS, _engine_bytes, _engine_decode,
                                       _reference_bytes)
from tiling import ELEMENT_TYPES, Shape, _runtime
for text in PARALLEL_TEXTS:
    shape = Shape.parse(text)
    x = random_array(np.random.default_rng(15), shape)
    expected = _reference_bytes(x, shape)
    container = ELEMENT_TYPES[shape.element_type].container
    for _ in range(3):
        assert np.array_equal(_engine_bytes(x, shape), expected), text
        back = _engine_decode(expected, shape).view(container)
        assert np.array_equal(back, x.view(container)), text
assert _runtime._PARALLEL_PID is not None
print("ok")
"""


def test_parallel_kernels_share_out_rows_over_more_threads_than_cores():
    # five threads on this machine's few cores: they finish their own rows at different
    # times and take the rest from each other (`_kernels.parallel._claimed`)
    assert _python(_MANY_THREADS_SCRIPT, NUMBA_NUM_THREADS="5").strip() == "ok"


@pytest.mark.parametrize("text", PARALLEL_TEXTS[2:4])  # bf16 and s8 word groups, edge tiles
def test_parallel_decoders_stream(text, disk_cache):
    # array + buffer at the cache size: the parallel decoders stream every row
    shape = Shape.parse(text)
    et = ELEMENT_TYPES[shape.element_type]
    x = random_array(np.random.default_rng(19), shape)
    expected = _reference_bytes(x, shape)
    plan = plan_of(x, shape, False, cache_bytes=x.nbytes + expected.size)
    back = np.empty_like(x)
    plan.run(expected, back.view(et.container))
    assert np.array_equal(back.view(et.container), x.view(et.container))
    assert (kernel_of(plan), plan.stream) == ("decode_packed_par", 1)


def test_concurrent_threads_share_the_parallel_kernels_safely(monkeypatch):
    """Only one Python thread at a time runs a `_par` kernel (numba's workqueue layer aborts
    the process otherwise); the others run the serial kernel, with the same bytes."""
    from concurrent.futures import ThreadPoolExecutor

    shape = Shape.parse(PARALLEL_TEXTS[0])
    x = random_array(np.random.default_rng(13), shape)
    expected = _reference_bytes(x, shape)
    names = kernels_called(monkeypatch)
    monkeypatch.setattr(_engine.load_kernels(), "CACHE_ENABLED", True)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: _engine_bytes(x, shape), range(16)))
    assert all(np.array_equal(r, expected) for r in results)
    assert "encode_tiled_par" in names and len(names) == 16


def test_without_the_disk_cache_large_arrays_stay_serial(monkeypatch):
    shape = Shape.parse(PARALLEL_TEXTS[2])
    x = random_array(np.random.default_rng(14), shape)
    monkeypatch.setattr(_engine.load_kernels(), "CACHE_ENABLED", False)
    assert kernel_of(plan_of(x, shape)) == "encode_packed"


_FORK_SCRIPT = """
import os, sys
import numpy as np
import tiling
from tiling import _engine, _runtime
shape = tiling.Shape.parse("f32[1030,2100]{1,0:T(8,128)}")
x = np.arange(1030 * 2100, dtype=np.float32).reshape(1030, 2100)
_engine.load_kernels()
if sys.argv[1] == "parent-first":
    expected = tiling.encode(x, shape)
    assert _runtime._PARALLEL_PID == os.getpid()
pid = os.fork()
if pid == 0:
    ok = np.array_equal(tiling.decode(tiling.encode(x, shape), shape), x)
    parallel = _runtime._PARALLEL_PID == os.getpid()
    os._exit(0 if ok and parallel == (sys.argv[1] == "child-first") else 3)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("who", ["parent-first", "child-first"])
def test_forked_children_go_parallel_only_when_the_parent_never_did(who):
    """GNU OpenMP aborts a forked child that runs a parallel region after its parent did: such
    a child stays serial; the child of a process that never launched one (asv's forkserver,
    multiprocessing workers) may use the threads."""
    _python(_FORK_SCRIPT, who, TILING_NUMBA_CACHE="1", NUMBA_NUM_THREADS="2")


_PACKED_TEXTS = {2: "bf16[64,256]{1,0:T(8,128)(2,1)}", 4: "s8[64,256]{1,0:T(8,128)(4,1)}",
                 8: "s4[64,256]{1,0:T(8,128)(8,1)E(4)}", 32: "pred[64,256]{1,0:T(32,128)(32,1)E(1)}"}


class _CompileCounter(numba.core.event.Listener):
    def __init__(self, seen):
        self.seen = seen

    def on_start(self, event):
        self.seen.append(event.data["dispatcher"])

    def on_end(self, event):
        pass


def test_packed_kernels_are_compiled_for_their_p_and_called_past_numba_dispatch():
    """The packed kernels are compiled once per p (`_kernels.jit._for_each`), so a format's first
    call compiles its own branches alone (asv `timeraw_compile_one_packed_kernel`): each
    format's plans run code compiled for the literal p of its tiles, and a warm call goes to
    that code's entry point, never through numba's dispatcher (which, not knowing p, would take
    its ~20 ms compile path on every call)."""
    from_layouts = {p: Shape.parse(text) for p, text in _PACKED_TEXTS.items()}
    assert {t[1][0] for (_, t), kind in _engine.FAST_PATHS.items() if kind == "packed"} \
        == set(from_layouts)
    compiles = []
    listener = _CompileCounter(compiles)
    for p, shape in from_layouts.items():
        x = random_array(np.random.default_rng(p), shape)
        for plan in (plan_of(x, shape), plan_of(x, shape, encode=False)):
            (kernel,) = plan.dispatchers
            assert kernel.dispatcher.literal_args == (8,) and p in kernel.facts, kernel
            buf = np.zeros(byte_size(shape), np.uint8)
            et = ELEMENT_TYPES[shape.element_type]
            src, dst = ((x.view(et.container), buf) if plan.kernel.startswith("encode")
                        else (buf, np.empty(shape.dimensions, et.container)))
            plan.run(src, dst)  # (the first call: compiled or loaded from the disk cache)
            assert kernel in _runtime._WARM and kernel.run is not kernel.dispatcher
            literal = [sig[8] for sig in kernel.dispatcher.overloads]
            assert numba.types.literal(p) in literal and numba.types.int64 not in literal
            with numba.core.event.install_listener("numba:compile", listener):
                for _ in range(3):
                    plan.run(src, dst)
    assert compiles == []


def test_kernels_compiled_for_values_name_them_to_numba():
    """`_for_each(names)` and the kernel's own `numba.literally` calls name the same arguments:
    the runtime types a call's arguments from `literal_args` (`_runtime.signature`), and an
    argument numba is not told to specialise on would leave every warm call on numba's compile
    path."""
    trees = {path: ast.parse(path.read_text()) for path in sorted(KERNELS_DIR.glob("*.py"))}
    found = 0
    for path, tree in trees.items():
        for node in tree.body:
            if not isinstance(node, ast.FunctionDef):
                continue
            marked = [tuple(a.value for a in d.args) for d in node.decorator_list
                      if isinstance(d, ast.Call) and ast.unparse(d.func) == "_for_each"]
            literally = tuple(ast.unparse(c.args[0]) for c in ast.walk(node)
                              if isinstance(c, ast.Call) and ast.unparse(c.func) == "numba.literally")
            assert (marked[0] if marked else ()) == literally, (path.name, node.name)
            found += bool(marked)
    assert found == 4  # the packed kernels and their `_par` twins
