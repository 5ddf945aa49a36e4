"""The reference engine against an independent, one-element-at-a-time model of spec §5.1.

The model: element `e` with linear index `L = linear_index(e)` occupies bits
`[L*bits, (L+1)*bits)` of the little-endian buffer; values narrower than `bits` are zero- or
sign-extended; every other bit is zero. Without `E(n)` a sub-byte type takes one byte holding
its ml_dtypes container byte (`int4(-3)` is `0x0D`), as the executable spec does.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tiling import ELEMENT_TYPES, byte_size, decode, encode, linear_index
from tiling._reference import tile_backward, tile_forward
from tiling.indexing import tile_steps

from .strategies import bits_of, random_array, shapes


def element_patterns(x, et):
    """Each element's bit pattern as a Python int, as its numpy/ml_dtypes container holds it."""
    raw = bits_of(x).reshape(-1)
    if et.dtype.itemsize > 8:  # c128: two little-endian uint64 words per element
        return [int(raw[2 * i]) | int(raw[2 * i + 1]) << 64 for i in range(raw.size // 2)]
    return [int(v) for v in raw]


def model_bytes(x, shape):
    et = ELEMENT_TYPES[shape.element_type]
    bits = shape.element_size_in_bits
    acc = 0
    count = int(np.prod(shape.dimensions))
    idx = np.array(list(np.ndindex(*shape.dimensions)), np.int64).reshape(count, shape.rank)
    lins = np.asarray(linear_index(idx, shape)).reshape(-1)
    for lin, value in zip(lins, element_patterns(x, et)):
        if bits > et.storage_bits:  # widened: the bit_width value, sign-extended if signed
            value &= (1 << et.bit_width) - 1
            if et.is_signed_integer and value >> (et.bit_width - 1):
                value -= 1 << et.bit_width
        acc |= (value & ((1 << bits) - 1)) << (int(lin) * bits)
    nbytes = byte_size(shape, allow_nested_padding=True)
    return np.frombuffer(acc.to_bytes(nbytes, "little"), np.uint8)


@given(shapes(max_rank=3, max_dim=6), st.integers(0, 2**32 - 1))
def test_encode_matches_per_element_model(shape, seed):
    x = random_array(np.random.default_rng(seed), shape)
    assert np.array_equal(encode(x, shape, allow_nested_padding=True), model_bytes(x, shape))


@given(shapes(max_rank=3, max_dim=6), st.integers(0, 2**32 - 1))
def test_decode_reads_the_model_buffer(shape, seed):
    x = random_array(np.random.default_rng(seed), shape)
    y = decode(model_bytes(x, shape), shape, allow_nested_padding=True)
    assert np.array_equal(bits_of(y), bits_of(x))


@given(shapes(max_rank=4, max_dim=6, types=("u16",)), st.integers(0, 2**32 - 1))
def test_tile_steps_invert(shape, seed):
    """tile_backward undoes tile_forward at every level, padding included."""
    x = random_array(np.random.default_rng(seed), shape).transpose(shape.layout.major_to_minor)
    a = x
    for step in tile_steps(x.shape, shape.layout.tiles):
        b = tile_forward(a, step)
        assert b.shape == step.after
        assert np.array_equal(tile_backward(b, step), a)
        a = b
