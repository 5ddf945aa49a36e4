"""Tiny tiles: T(a, tc) with tc <= 4 over contiguous columns (cs == 1) (the doc's `T(*,*,2,*,3)`
is T(2,3) over merged dims). Equals `tiling._reference.encode_into` / `decode_into` for those
layouts; `tiling._fast_plans` picks it for the shapes in TINY_TILES.

One kernel pair (and its `_par` twins) per tile shape, compiled with a and tc as constants and
cached on disk under them: whole tiles move lcm(tc, 16) columns of a tile row at a time through
one shuffle between the a row vectors and the tiles (`llvm._tile_shuffle`), the rest element by
element in loops LLVM unrolls, the edge tiles through the tiled row functions. (Through the
permutation kernels of `generic` these layouts ran about 4x slower, element by element 2x.)
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from tiling._kernels.jit import _ONE, _ZERO, _helper, _kernel, _parallel_kernel, _u
from tiling._kernels.llvm import _tile_shuffle
from tiling._kernels.tiled import _decode_tiled_row, _encode_tiled_row
from tiling._tuning import TINY_ELEMENTS

TINY_TILES = frozenset((a, tc) for a in (2, 3, 4, 8, 16, 32) for tc in (1, 2, 3, 4))
"""The tile shapes with kernels of their own: each compiles four kernels, so the set is fixed
(other short tiles take the permutation or generic kernels)."""


@functools.cache
def tiny_tiles(a, tc):
    """The kernels for T(a, tc) tiles, (a, tc) in TINY_TILES: encode, decode and their `_par`
    twins."""
    if (a, tc) not in TINY_TILES:
        raise ValueError(f"no tiny-tile kernels for T({a},{tc})")
    n = 16 * tc // math.gcd(tc, 16)
    per = n // tc if a * n <= TINY_ELEMENTS else 0  # tiles per shuffle; 0: no shuffle
    zip_, unzip = _tile_shuffle(a, tc, n) if per else (None, None)
    A, TC = np.int64(a), np.int64(tc)  # (not literals, see _ONE)

    @_helper
    def encode_row(src, sb, i, rs, R, C, out, o):
        if (i + 1) * a > R:
            _encode_tiled_row(src, sb, i, _ONE, rs, _ONE, R, C, A, TC, out, o, _ZERO)
            return None
        s = sb + i * a * rs
        full = C // tc
        done = 0
        if per:  # (a constant: numba drops the branch when there is no shuffle)
            done = full - full % per
            for j in range(0, done, per):
                zip_(src, s + j * tc, rs, out, o + j * a * tc)
        for j in range(done, full):
            for r in range(a):
                for c in range(tc):
                    out[_u(o + (j * a + r) * tc + c)] = src[_u(s + r * rs + j * tc + c)]
        if full * tc < C:
            _encode_tiled_row(src, sb + full * tc, i, _ONE, rs, _ONE, R, C - full * tc, A, TC,
                              out, o + full * a * tc, _ZERO)
        return None

    @_helper
    def decode_row(buf, sb, i, rs, R, C, dst, o, step):
        if (i + 1) * a > R:
            _decode_tiled_row(buf, sb, i, _ONE, rs, _ONE, R, C, A, TC, dst, o, step)
            return None
        s = sb + i * a * rs
        full = C // tc
        done = 0
        if per:  # (a constant: numba drops the branch when there is no shuffle)
            done = full - full % per
            for j in range(0, done, per):
                unzip(buf, o + j * a * tc, dst, s + j * tc, rs)
        for j in range(done, full):
            for r in range(a):
                for c in range(tc):
                    dst[_u(s + r * rs + j * tc + c)] = buf[_u(o + (j * a + r) * tc + c)]
        if full * tc < C:
            _decode_tiled_row(buf, sb + full * tc, i, _ONE, rs, _ONE, R, C - full * tc, A, TC,
                              dst, o + full * a * tc, step)
        return None

    # four separate functions: numba names a cache entry after the function and its line
    @_kernel
    def encode_tiny_tiles(src, boffs, rs, R, C, out, step):
        nr = (R + a - 1) // a
        for t in range(boffs.size * nr):
            encode_row(src, boffs[_u(t // nr)], t % nr, rs, R, C, out, t * step)
        return None

    @_kernel
    def decode_tiny_tiles(buf, boffs, rs, R, C, dst, step):
        nr = (R + a - 1) // a
        for t in range(boffs.size * nr):
            decode_row(buf, boffs[_u(t // nr)], t % nr, rs, R, C, dst, t * step, step)
        return None

    @_parallel_kernel
    def encode_tiny_tiles_par(src, boffs, rs, R, C, out, step):
        nr = (R + a - 1) // a
        for t in numba.prange(boffs.size * nr):
            encode_row(src, boffs[_u(t // nr)], t % nr, rs, R, C, out, t * step)
        return None

    @_parallel_kernel
    def decode_tiny_tiles_par(buf, boffs, rs, R, C, dst, step):
        nr = (R + a - 1) // a
        for t in numba.prange(boffs.size * nr):
            decode_row(buf, boffs[_u(t // nr)], t % nr, rs, R, C, dst, t * step, step)
        return None

    return encode_tiny_tiles, decode_tiny_tiles, encode_tiny_tiles_par, decode_tiny_tiles_par
