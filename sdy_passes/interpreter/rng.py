"""`stablehlo.rng_bit_generator` as XLA:CPU runs it (spec execute.md §4.10): XLA's
`RngBitGeneratorExpander` over `prng.cc`'s Philox4x32-10 and ThreeFry2x32-20 bit generators,
bit for bit; `DEFAULT` is Philox (XLA:CPU's choice). Vectorised over all counters."""

from __future__ import annotations

import numpy as np

from sdy_passes.interpreter._core import dtype_of, fail
from sdy_passes.interpreter.movement import result_shape

_U32 = np.uint32
_U64 = np.uint64
_MASK32 = _U64(0xFFFFFFFF)


def _lo_hi(x):
    x = np.asarray(x, _U64)
    return (x & _MASK32).astype(_U32), (x >> _U64(32)).astype(_U32)


def _u64(lo, hi):
    return lo.astype(_U64) | (hi.astype(_U64) << _U64(32))


# -- Philox4x32-10 -------------------------------------------------------------------------------

def _philox(state, key):
    x0, x1, x2, x3 = state
    k0, k1 = key
    for _ in range(10):
        p0 = x0.astype(_U64) * _U64(0xD2511F53)
        p1 = x2.astype(_U64) * _U64(0xCD9E8D57)
        hi0, lo0 = (p0 >> _U64(32)).astype(_U32), (p0 & _MASK32).astype(_U32)
        hi1, lo1 = (p1 >> _U64(32)).astype(_U32), (p1 & _MASK32).astype(_U32)
        x0, x1, x2, x3 = hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0
        k0 = k0 + _U32(0x9E3779B9)
        k1 = k1 + _U32(0xBB67AE85)
    return x0, x1, x2, x3


def _u128_add(low, high, n):
    new_low = low + n
    return new_low, np.where(new_low < low, high + _U64(1), high)


def _philox_words(key, counter, count):
    """`count` blocks of four 32-bit words from the 128-bit counter (low, high)."""
    low, high = _u128_add(_U64(counter[0]), _U64(counter[1]), np.arange(count, dtype=_U64))
    l0, l1 = _lo_hi(low)
    h0, h1 = _lo_hi(high)
    out = _philox((l0, l1, h0, h1), _lo_hi(key))
    return out, _u128_add(_U64(counter[0]), _U64(counter[1]), _U64(count))


def _philox_bits(key, counter, shape, bits):
    n = int(np.prod(shape, dtype=np.int64))
    if bits == 64:
        (w0, w1, w2, w3), new = _philox_words(key, counter, -(-2 * n // 4))
        out = np.stack([_u64(w0, w1), _u64(w2, w3)], axis=1).reshape(-1)[:n]
    else:
        words, new = _philox_words(key, counter, -(-n // 4))
        out = np.stack(words, axis=1).reshape(-1)[:n]
    return out.reshape(shape), new


# -- ThreeFry2x32-20 -----------------------------------------------------------------------------

def _rotl(v, d):
    return (v << _U32(d)) | (v >> _U32(32 - d))


def _threefry(x, key):
    ks = [key[0], key[1], _U32(0x1BD11BDA) ^ key[0] ^ key[1]]
    x0, x1 = x[0] + ks[0], x[1] + ks[1]
    rot = ((13, 15, 26, 6), (17, 29, 16, 24))
    for i in range(5):
        for r in rot[i % 2]:
            x0 = x0 + x1
            x1 = _rotl(x1, r) ^ x0
        x0 = x0 + ks[(i + 1) % 3]
        x1 = x1 + ks[(i + 2) % 3] + _U32(i + 1)
    return x0, x1


def _threefry_bits(key, counter, shape, bits):
    key32 = _lo_hi(key)
    if bits == 64:
        n = int(np.prod(shape, dtype=np.int64))
        x0, x1 = _threefry(_lo_hi(_U64(counter) + np.arange(n, dtype=_U64)), key32)
        return _u64(x0, x1).reshape(shape), _U64(counter) + _U64(n)
    if not shape:  # a scalar: one pair, its first word
        x0, _ = _threefry(_lo_hi(np.array([counter], _U64)), key32)
        return x0.reshape(()), _U64(counter) + _U64(1)
    split = next((i for i, d in enumerate(shape) if d % 2 == 0), None)
    if split is None:
        split = int(np.argmax(shape))
    half = list(shape)
    half[split] = -(-shape[split] // 2)
    n = int(np.prod(half, dtype=np.int64))
    x0, x1 = _threefry(_lo_hi(_U64(counter) + np.arange(n, dtype=_U64)), key32)
    pair = np.stack([x0.reshape(half), x1.reshape(half)], axis=split + 1)
    full = list(shape)
    full[split] = 2 * half[split]
    out = pair.reshape(full)[tuple(np.s_[:d] for d in shape)]
    return out, _U64(counter) + _U64(n)


def rng_bit_generator(op, args, ctx):
    (state,) = args
    algorithm = op.properties["rng_algorithm"].value
    shape = result_shape(op, 1)
    dt = dtype_of(op.results[1].type, op)
    bits = 8 * dt.itemsize
    s = np.asarray(state).view(_U64).reshape(-1)
    if s.size < 2:
        fail(op, f"the state needs at least 2 ui64 words, found {s.size}")
    key = s[0]
    gen_bits = 64 if bits == 64 else 32
    if algorithm == "THREE_FRY":
        out, new = _threefry_bits(key, s[1], shape, gen_bits)
        new_state = np.array([key, new], _U64)
    elif algorithm in ("PHILOX", "DEFAULT"):
        counter = (s[1], s[2]) if s.size >= 3 else (s[1], s[0])  # XLA reverses a 2-word state
        out, (low, high) = _philox_bits(key, counter, shape, gen_bits)
        new_state = np.array([key, low, high] if s.size >= 3 else [key, low], _U64)
    else:
        fail(op, f"unknown rng algorithm {algorithm}")
    if bits < 32:
        out = out.astype(f"u{dt.itemsize}")
    return new_state.view(state.dtype).reshape(state.shape), out.view(dt).reshape(shape)
