"""Public encode/decode: round trips, placement, the spec's byte-level examples, validation."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tiling
from tiling import Layout, LayoutError, Shape, UnsupportedLayoutError, _engine, decode, encode

from .strategies import bits_of, random_array, shapes


def seeded(seed):
    return np.random.default_rng(seed)


# ------------------------------------------------------------------ properties


@given(shapes(), st.integers(0, 2**32 - 1), st.sampled_from(["C", "F", "strided", "reversed"]))
def test_round_trip_bit_exact(shape, seed, order):
    x = random_array(seeded(seed), shape)
    if order == "F" and x.ndim:  # (asfortranarray makes 0-d arrays 1-d)
        x = np.asfortranarray(x)
    elif order == "strided" and x.ndim:
        big = np.zeros(tuple(2 * d for d in x.shape), x.dtype)
        big[tuple(slice(None, None, 2) for _ in x.shape)] = x
        x = big[tuple(slice(None, None, 2) for _ in x.shape)]
    elif order == "reversed" and x.ndim:
        x = x[::-1].copy()[::-1]
    buf = encode(x, shape, allow_nested_padding=True)
    assert buf.dtype == np.uint8 and buf.ndim == 1
    assert buf.size == tiling.byte_size(shape, allow_nested_padding=True)
    y = decode(buf, shape, allow_nested_padding=True)
    assert y.dtype == x.dtype and y.shape == x.shape and y.flags.c_contiguous
    assert np.array_equal(bits_of(y), bits_of(x))


@given(shapes(types=("s32",)), st.integers(0, 2**32 - 1))
def test_linear_index_is_where_encode_puts_each_element(shape, seed):
    n = int(np.prod(shape.dimensions))
    x = (np.arange(n, dtype=np.int32) + 1).reshape(shape.dimensions)  # 0 marks padding
    if shape.layout.element_size_in_bits:  # s32 widened to 64 bits: same placement rule
        shape = Shape("s32", shape.dimensions, Layout(shape.layout.minor_to_major,
                                                       shape.layout.tiles))
    flat = encode(x, shape, allow_nested_padding=True).view(np.int32)
    if n:
        idx = np.array(list(np.ndindex(*shape.dimensions))).reshape(n, shape.rank)
        lin = np.asarray(tiling.linear_index(idx, shape)).reshape(-1)
        assert np.array_equal(flat[lin], x.reshape(-1))
    # every other slot is padding, written as zero
    assert np.count_nonzero(flat) == n


def test_padding_is_zero_and_decode_never_reads_it():
    shape = Shape.parse("f32[3,5]{1,0:T(2,2)}")
    x = np.arange(1, 16, dtype=np.float32).reshape(3, 5)
    buf = encode(x, shape)
    words = buf.view(np.float32)
    pad = np.ones(24, bool)
    pad[tiling.linear_index(np.indices((3, 5)).reshape(2, -1).T, shape)] = False
    assert (words[pad] == 0).all() and pad.sum() == 9
    buf.view(np.float32)[pad] = np.nan  # garbage in padding does not change the result
    assert np.array_equal(decode(buf, shape), x)


# ------------------------------------------------------------------ bytes (spec §5)


def test_bf16_words():
    x = seeded(7).standard_normal((16, 256)).astype(ml_dtypes.bfloat16)
    w = encode(x, "{1,0:T(8,128)(2,1)}").view(np.uint32)
    b = x.view(np.uint16).astype(np.uint32)
    assert w[0] == b[0, 0] | b[1, 0] << 16
    assert w[1] == b[0, 1] | b[1, 1] << 16
    assert w[128] == b[2, 0] | b[3, 0] << 16
    assert w[512] == b[0, 128] | b[1, 128] << 16


def test_s8_words():
    x = seeded(1).integers(-128, 128, size=(8, 128)).astype(np.int8)
    w = encode(x, "s8[8,128]{1,0:T(8,128)(4,1)}").view(np.uint32)
    u = x.view(np.uint8).astype(np.uint32)
    assert w[0] == u[0, 0] | u[1, 0] << 8 | u[2, 0] << 16 | u[3, 0] << 24
    assert w[128] == u[4, 0] | u[5, 0] << 8 | u[6, 0] << 16 | u[7, 0] << 24


def test_s4_nibbles():
    x = seeded(2).integers(-8, 8, size=(8, 256)).astype(ml_dtypes.int4)
    b = encode(x, "{1,0:T(8,128)(8,1)E(4)}")
    assert b.size == 1024
    w = b.view(np.uint32)
    nib = x.view(np.uint8).astype(np.uint32) & 0xF
    for c in (0, 3, 200):
        assert w[c] == sum(int(nib[r, c]) << (4 * r) for r in range(8))


def test_s4_vector_matches_xla_cpu_bytes():
    # jax.device_put of this int4 vector on CPU gives the bytes 21 f3 65 78 (spec §5.1)
    x = np.array([1, 2, 3, -1, 5, 6, -8, 7], dtype=ml_dtypes.int4)
    assert encode(x, "s4[8]{0:E(4)}").tobytes() == bytes.fromhex("21f36578")


def test_pred_bits():
    x = seeded(3).random((64, 256)) < 0.5
    b = encode(x, "pred[64,256]{1,0:T(32,128)(32,1)E(1)}")
    assert b.size == 2048
    w = b.view(np.uint32)
    bit = 1 << np.arange(32, dtype=np.uint64)
    assert int(w[5]) == int((x[0:32, 5].astype(np.uint64) * bit).sum())
    assert int(w[128]) == int((x[0:32, 128].astype(np.uint64) * bit).sum())
    assert encode(x[:8, :128], "{1,0:T(8,128)(4,1)}").size == 1024  # 1 byte without E(n)


@pytest.mark.parametrize("text, values, expected", [
    ("s4[3]{0:E(16)}", [-3, 7, -8], [-3, 7, -8]),      # sign-extended
    ("s8[2]{0:E(32)}", [-1, 5], [-1, 5]),
    ("u4[2]{0:E(16)}", [15, 1], [15, 1]),               # zero-extended
    ("pred[2]{0:E(32)}", [True, False], [1, 0]),
])
def test_widened_storage(text, values, expected):
    shape = Shape.parse(text)
    buf = encode(np.array(values, dtype=shape.dtype), shape)
    wide = np.dtype(f"i{shape.layout.element_size_in_bits // 8}")
    assert buf.view(wide).tolist() == expected
    assert decode(buf, shape).tolist() == np.array(values, dtype=shape.dtype).tolist()


def test_little_endian_f32():
    buf = encode(np.array([1.0], np.float32), "{0}")
    assert buf.tobytes() == np.float32(1.0).tobytes() == b"\x00\x00\x80\x3f"


def test_big_endian_input_is_converted():
    x = np.arange(6, dtype=">f4").reshape(2, 3)
    assert np.array_equal(encode(x, "{1,0}"), encode(x.astype("<f4"), "{1,0}"))


def test_nan_payload_survives():
    x = np.array([0x7FC00001, 0xFFF00002], np.uint32).view(np.float32)
    y = decode(encode(x, "{0:T(4)}"), "f32[2]{0:T(4)}")
    assert np.array_equal(x.view(np.uint32), y.view(np.uint32))


def test_l_alignment_pads_the_tail():
    buf = encode(np.ones((3, 5), np.float32), "{1,0:T(2,2)L(7)}")
    assert buf.size == 112 and (buf[96:] == 0).all()


# ------------------------------------------------------------------ out=


def test_out_is_filled_and_returned():
    x = seeded(4).standard_normal((5, 300)).astype(ml_dtypes.bfloat16)
    shape = Shape.parse("bf16[5,300]{1,0:T(8,128)(2,1)}")
    out = np.full(tiling.byte_size(shape), 0xAB, np.uint8)
    assert encode(x, shape, out=out) is out
    assert np.array_equal(out, encode(x, shape))
    y = np.empty((5, 300), ml_dtypes.bfloat16)
    assert decode(out, shape, out=y) is y
    assert np.array_equal(y.view(np.uint16), x.view(np.uint16))


def test_decode_accepts_bytes():
    x = np.arange(4, dtype=np.int16)
    assert decode(encode(x, "{0}").tobytes(), "s16[4]{0}").tolist() == [0, 1, 2, 3]


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize("array, layout, message", [
    (np.zeros((3, 5), np.float32), "bf16[3,5]{1,0}", r"dtype float32 but .* expects bfloat16"),
    (np.zeros((3, 4), np.float32), "f32[3,5]{1,0}", r"shape \(3, 4\) but .* expects \(3, 5\)"),
    (np.zeros((3, 5), np.float32), "{0}", r"rank 2 .* has rank 1"),
    (np.zeros((3, 5), object), "{1,0}", "no XLA element type"),
    (np.zeros((3, 5), np.float32), 42, "expected a Layout, a Shape"),
    (np.zeros((3,), np.float32), "f32[<=3]{0}", "dynamic"),
    (np.zeros((3,), np.float32), "{0:M(4)}", r"M\(n\)"),
    (np.zeros((4, 4), np.float32), "{1,0:T(4,4)(3)}", "allow_nested_padding"),
    (np.zeros((4,), np.int8), "{0:E(4)}", "narrower"),
    (np.zeros((4,), np.float32), "{0:T(2,-1)}", r"write '\*'"),
])
def test_encode_rejects(array, layout, message):
    with pytest.raises(LayoutError, match=message):
        encode(array, layout)


def test_encode_out_checks():
    x = np.zeros((3, 5), np.float32)
    for out, message in [(np.zeros(95, np.uint8), "exactly 96 bytes, found 95"),
                         (np.zeros(97, np.uint8), "exactly 96 bytes, found 97"),
                         (np.zeros(24, np.float32), "uint8 array, found dtype float32"),
                         (np.zeros(192, np.uint8)[::2], "C-contiguous"),
                         ([0] * 96, "uint8 array, found list")]:
        with pytest.raises(LayoutError, match=message):
            encode(x, "{1,0:T(2,2)}", out=out)
    ro = np.zeros(96, np.uint8)
    ro.flags.writeable = False
    with pytest.raises(LayoutError, match="writeable"):
        encode(x, "{1,0:T(2,2)}", out=ro)
    shared = np.zeros(96, np.uint8)
    with pytest.raises(LayoutError, match="overlap"):
        encode(shared[:60].view(np.float32).reshape(3, 5), "{1,0:T(2,2)}", out=shared)


def test_decode_checks():
    s = "f32[3,5]{1,0:T(2,2)}"
    good = np.zeros(96, np.uint8)
    for buf, message in [(np.zeros(95, np.uint8), "exactly 96 bytes, found 95"),
                         (np.zeros(100, np.uint8), "exactly 96 bytes, found 100"),
                         (np.zeros(24, np.float32), "uint8 array"),
                         (b"\x00" * 12, "exactly 96 bytes, found 12")]:
        with pytest.raises(LayoutError, match=message):
            decode(buf, s)
    with pytest.raises(LayoutError, match="needs a Shape"):
        decode(good, Layout.parse("{1,0:T(2,2)}"))
    with pytest.raises(LayoutError, match="dynamic"):
        decode(good, "f32[<=3,5]{1,0:T(2,2)}")
    for out, message in [(np.zeros((3, 5), np.float64), r"float32 with shape \(3, 5\)"),
                         (np.zeros((5, 3), np.float32), r"found float32 \(5, 3\)"),
                         (np.zeros((3, 5), np.float32, order="F"), "C-contiguous"),
                         ("nope", "found str")]:
        with pytest.raises(LayoutError, match=message):
            decode(good, s, out=out)
    with pytest.raises(LayoutError, match="overlap"):
        decode(good, s, out=good[:60].view(np.float32).reshape(3, 5))


@pytest.mark.parametrize("text", ["f32[3,5]{1,0:T(2,2)}", "f32[3,5]{1,0}"])
def test_repeated_calls_check_what_can_change(text):
    # A successful call keeps its work for later calls with the same layout object and array
    # geometry; those still check the outputs and buffers they are given.
    _engine.load_kernels()  # (while the numpy engine serves first calls, nothing is kept)
    shape = Shape.parse(text)
    nbytes = tiling.byte_size(shape)
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    buf = encode(x, shape)
    assert np.array_equal(encode(x, shape), buf)
    read_only = np.zeros(nbytes, np.uint8)
    read_only.flags.writeable = False
    for out in [np.zeros(nbytes - 1, np.uint8), np.zeros(nbytes // 4, np.float32),
                np.zeros(2 * nbytes, np.uint8)[::2], read_only]:
        with pytest.raises(LayoutError):
            encode(x, shape, out=out)
    shared = np.zeros(nbytes, np.uint8)
    with pytest.raises(LayoutError, match="overlap"):
        encode(shared[:60].view(np.float32).reshape(3, 5), shape, out=shared)
    assert np.array_equal(decode(buf, shape), x)
    for out in [np.zeros((5, 3), np.float32), np.zeros((3, 5), np.float64),
                np.zeros((3, 5), np.float32, order="F"), buf[:60].view(np.float32).reshape(3, 5)]:
        with pytest.raises(LayoutError):
            decode(buf, shape, out=out)
    with pytest.raises(LayoutError):
        decode(buf[:-1], shape)
    assert np.array_equal(decode(buf, shape, out=np.empty((3, 5), np.float32)), x)


def test_decode_nested_padding_needs_flag():
    with pytest.raises(UnsupportedLayoutError, match="allow_nested_padding"):
        decode(np.zeros(96, np.uint8), "f32[4,4]{1,0:T(4,4)(3)}")
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    buf = encode(x, "{1,0:T(4,4)(3)}", allow_nested_padding=True)
    assert buf.size == 96
    assert np.array_equal(decode(buf, "f32[4,4]{1,0:T(4,4)(3)}", allow_nested_padding=True), x)


@pytest.mark.parametrize("text", ["s8[5]{0:L(3)}", "f32[2,3]{1,0:L(4)}"])
def test_tail_padding_is_never_a_byte_copy(text):
    """`L(n)` pads the buffer past the array's bytes: repeated calls (which take the per-call
    plan) give the same buffer, padding zeroed (a byte-copy plan raised ValueError)."""
    shape = Shape.parse(text)
    x = np.arange(np.prod(shape.dimensions)).astype(shape.dtype).reshape(shape.dimensions)
    first = encode(x, shape)
    for _ in range(2):
        buf = encode(x, shape)
        assert np.array_equal(buf, first) and not buf[x.nbytes:].any()
        assert np.array_equal(decode(buf, shape), x)


@pytest.mark.parametrize("name", ["f8e5m2", "f8e4m3fn", "bf16"])
def test_strided_ml_dtypes_take_the_fast_kernels(name):
    """A strided ml_dtypes array in a fast-path layout, first and repeated calls (numpy's
    as_strided refused the float8 types: TypeError)."""
    _engine.load_kernels()
    shape = Shape.parse(f"{name}[16,256]{{1,0:T(8,128)}}")
    wide = random_array(np.random.default_rng(3), Shape(name, (32, 256)))
    x = wide[::2]
    for _ in range(2):
        buf = encode(x, shape)
        assert np.array_equal(bits_of(decode(buf, shape)), bits_of(x))
