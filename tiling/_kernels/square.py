"""Square transposes: T(a, tc) with a in (2, 4, 8) over a transposed source (rows side by side
in memory, rs == 1, columns `cs` apart) of 32- or 64-bit elements, tc a multiple of
n = 64 // itemsize. Equals `tiling._reference.encode_into` / `decode_into` for those layouts
(a transposed f32 array in T(8,128), pairs of f32 as 64-bit words in T(4,8)(2,1), ...);
`tiling._fast_plans` picks it and checks all the above.

`encode_square(src, boffs, rs, cs, R, C, a, tc, k, out, step)` takes `tiled.encode_tiled`'s
arguments plus k = n // a, the tile rows per square block. The array moves in square blocks of
n rows by n columns: one cache line of each of n columns, which `llvm._square_shuffle` turns
into the k tile rows' rows; each column then goes down SQUARES blocks or more (a sweep,
`_square_band`) before the next n columns. Element by element, each column's line was fetched
once per tile row and evicted in between (a column's lines all share one L1 set when cs is a
multiple of 4 KiB). Sweeps start on cache lines (`_square_sweep`); the edge tiles go through the
tiled row functions.
"""

from __future__ import annotations

from tiling._kernels.jit import _ONE, _ZERO, _helper, _inline, _kernel, _u
from tiling._kernels.llvm import (
    _columns_to_rows2, _columns_to_rows4, _columns_to_rows8, _rows_to_columns2,
    _rows_to_columns4, _rows_to_columns8,
)
from tiling._kernels.tiled import _decode_tiled_row, _encode_tiled_row
from tiling._tuning import ENCODE_SWEEP_BYTES, SQUARES, SWEEP_BYTES


@_helper
def _encode_square(src, s, cs, C, a, tc, out, o, step, m):
    """The whole tiles of m square blocks stacked from tile row 0 of src[s] (see
    `_square_shuffle`), each column's m blocks one after the other."""
    n = 64 // src.itemsize
    k = n // a  # tile rows per block
    for j in range(C // tc):
        for c in range(0, tc, n):
            sc, oc = s + (j * tc + c) * cs, o + j * a * tc + c
            for q in range(m):
                if a == 2:
                    _columns_to_rows2(src, sc + q * n, cs, out, oc + q * k * step, tc, step)
                elif a == 4:
                    _columns_to_rows4(src, sc + q * n, cs, out, oc + q * k * step, tc, step)
                else:
                    _columns_to_rows8(src, sc + q * n, cs, out, oc + q * k * step, tc, step)
    return None


@_helper
def _decode_square(buf, o, step, a, tc, dst, s, cs, m, j0, j1):
    """Inverse of `_encode_square`, for the tiles j0..j1-1 of each tile row."""
    n = 64 // dst.itemsize
    k = n // a
    for j in range(j0, j1):
        for c in range(0, tc, n):
            sc, oc = s + (j * tc + c) * cs, o + j * a * tc + c
            for q in range(m):
                if a == 2:
                    _rows_to_columns2(buf, oc + q * k * step, tc, step, dst, sc + q * n, cs)
                elif a == 4:
                    _rows_to_columns4(buf, oc + q * k * step, tc, step, dst, sc + q * n, cs)
                else:
                    _rows_to_columns8(buf, oc + q * k * step, tc, step, dst, sc + q * n, cs)
    return None


@_helper
def _encode_square_rows(src, sb, i, nb, cs, R, C, a, tc, k, out, o, step):
    m = min(nb, R // a - i) // k  # whole square blocks
    if m:
        _encode_square(src, sb + i * a, cs, C, a, tc, out, o, step, m)
    done = C // tc * tc
    for ib in range(nb):
        skip = done if ib < m * k else 0
        if skip < C:
            _encode_tiled_row(src, sb + skip * cs, i + ib, _ONE, _ONE, cs, R, C - skip, a, tc,
                              out, o + ib * step + skip * a, step)
    return None


@_helper
def _decode_square_rows(buf, sb, i, nb, cs, R, C, a, tc, k, dst, o, step, part, parts):
    """Tile rows i..i+nb-1 of one batch: part `part` of `parts` of the whole tiles' columns,
    and with the last part the edge tiles."""
    m = min(nb, R // a - i) // k
    nt = C // tc
    if m:
        _decode_square(buf, o, step, a, tc, dst, sb + i * a, cs, m, part * nt // parts,
                       (part + 1) * nt // parts)
    if part < parts - 1:
        return None
    done = nt * tc
    if m and done < C:
        _decode_tiled_row(buf, sb + done * cs, i, m * k, _ONE, cs, R, C - done, a, tc, dst,
                          o + done * a, step)
    if m * k < nb:
        _decode_tiled_row(buf, sb, i + m * k, nb - m * k, _ONE, cs, R, C, a, tc, dst,
                          o + m * k * step, step)
    return None


@_inline
def _square_band(C, a, k, itemsize, encode):
    """Tile rows per sweep of the square kernels: k * SQUARES, or more while a sweep's tile rows
    stay within ENCODE_SWEEP_BYTES (encoding) or SWEEP_BYTES (decoding 64-bit elements). Further
    down columns of 32-bit elements, decoding ran 1.2x slower (16 columns' lines at a time, where 8
    fit one L1 set); encoding 64-bit ones past 256 KiB too (f32[1024,1024]{0,1:T(8,128)(2,1)}
    serial)."""
    if encode:
        return max(k * SQUARES, ENCODE_SWEEP_BYTES // (a * C * itemsize) // k * k)
    if itemsize != 8:
        return k * SQUARES
    return max(k * SQUARES, SWEEP_BYTES // (a * C * itemsize) // k * k)


@_inline
def _square_sweep(strided, boffs, a, band, nr, t, step):
    """(batch start, first tile row, tile rows, buffer offset) of sweep t of the square kernels,
    1 + ceil(nr / band) sweeps per batch; `strided` is the transposed side. A batch's sweep 0
    takes the tile rows before the first whose column lines start on a 64-byte boundary (when
    whole tile rows reach one), the others `band` tile rows each: square blocks whose lines
    straddle two cache lines ran 1.5x slower (decode)."""
    sweeps = 1 + (nr + band - 1) // band
    b = t // sweeps
    sb = boffs[_u(b)]
    n = 64 // strided.itemsize
    addr = strided.ctypes.data
    lead = (n - (addr // strided.itemsize + sb) % n) % n
    h = min(lead // a, nr) if addr % strided.itemsize == 0 and lead % a == 0 else 0
    i = 0 if t == b * sweeps else h + (t - b * sweeps - 1) * band
    rows = h if t == b * sweeps else min(band, nr - i)
    return sb, i, rows, (b * nr + i) * step


@_kernel
def encode_square(src, boffs, rs, cs, R, C, a, tc, k, out, step):
    """(rs is 1.)"""
    nr = (R + a - 1) // a
    band = _square_band(C, a, k, src.itemsize, True)
    for t in range(boffs.size * (1 + (nr + band - 1) // band)):
        sb, i, rows, o = _square_sweep(src, boffs, a, band, nr, t, step)
        if rows > 0:
            _encode_square_rows(src, sb, i, rows, cs, R, C, a, tc, k, out, o, step)
    return None


@_kernel
def decode_square(buf, boffs, rs, cs, R, C, a, tc, k, dst, step):
    """(rs is 1.)"""
    nr = (R + a - 1) // a
    band = _square_band(C, a, k, dst.itemsize, False)
    for t in range(boffs.size * (1 + (nr + band - 1) // band)):
        sb, i, rows, o = _square_sweep(dst, boffs, a, band, nr, t, step)
        if rows > 0:
            _decode_square_rows(buf, sb, i, rows, cs, R, C, a, tc, k, dst, o, step, _ZERO, _ONE)
    return None
