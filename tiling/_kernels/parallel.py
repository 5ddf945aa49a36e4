"""Parallel drivers: the `_par` twins of the tiled, packed and square kernels, with their
arguments, over numba's threads; the same row functions as their serial twins, so the same
bytes. `tiling._runtime` calls them only for arrays of at least PARALLEL_BYTES and only from the
thread holding its parallel lock: numba's `workqueue` threading layer, the default without TBB
or OpenMP, aborts the process when two Python threads launch parallel kernels at once, and GNU
OpenMP aborts in a fork()ed child of a process that used it. Thread count: numba's
(`NUMBA_NUM_THREADS`, `numba.set_num_threads`). Each repeats its serial twin's few driver lines
with `prange`: numba names a disk-cache entry after the function and its line, so one function
jitted both ways would share (and overwrite) one entry. (`tiny` builds its own twins.)

The tile-row drivers share their units out by work stealing: thread th takes units from the
front of its own equal range, then from the back of the others' (its v-th range is
(th + v) % T). prange's static split waits for the slower thread, and a core can be slower for
seconds at a time (another tenant on its host core, a busy process).
"""

from __future__ import annotations

import numba
import numpy as np

from tiling._kernels.jit import _ONE, _for_each, _inline, _parallel_kernel
from tiling._kernels.llvm import _fetch_add, _num_threads
from tiling._kernels.packed import _decode_packed_row, _encode_packed_row, _scratch
from tiling._kernels.square import (
    _decode_square_rows, _encode_square_rows, _square_band, _square_sweep,
)
from tiling._kernels.tiled import (
    _decode_tiled_row, _decode_tiles_stream, _encode_tiled_row, _encode_tiles_stream, _rows_block,
    _run_rows, _streams,
)
from tiling._tuning import SQUARE_PARTS, STRIDED_DECODE_ROWS

_LINE_WORDS = 8  # int64 counters a cache line apart: the threads claim without sharing a line


@_inline
def _claims(units):
    """The claim counters for sharing `units` over min(numba's threads, units) threads:
    the low 32 bits of a range's counter count the units taken from its front, the high ones
    those taken from its back."""
    claims = np.empty(min(max(_num_threads(), 1), units) * _LINE_WORDS, np.int64)
    for k in range(claims.size):
        claims[k] = 0
    return claims


@_inline
def _claimed(claims, th, v, units):
    """Thread th's next unit from its v-th range, or -1 once that range is used up."""
    T = claims.size // _LINE_WORDS
    w = (th + v) % T
    lo = w * units // T
    size = (w + 1) * units // T - lo
    c = _fetch_add(claims, w * _LINE_WORDS, _ONE if v == 0 else _ONE << 32)
    front, back = c & 0xFFFFFFFF, c >> 32
    if front + back >= size:
        return -1
    return lo + front if v == 0 else lo + size - 1 - back


@_inline
def _next_unit(claims, th, v, units):
    """(unit, v): thread th's next unit and the range it came from, from its v-th range on;
    unit -1 once every range is used up."""
    while v < claims.size // _LINE_WORDS:
        t = _claimed(claims, th, v, units)
        if t >= 0:
            return t, v
        v += 1
    return -1, v


@_parallel_kernel
def encode_tiled_par(src, boffs, rs, cs, R, C, a, tc, out, step, stream, carry):
    nr = (R + a - 1) // a
    stream = _streams(stream, cs, tc, out.itemsize, carry.size >= boffs.size * nr * 64)
    nb = 1 if stream else _run_rows(C, tc, cs, step, a * tc)
    units = boffs.size * -(-nr // nb)
    claims = _claims(units)
    for th in numba.prange(claims.size // _LINE_WORDS):
        t, v = _next_unit(claims, th, 0, units)
        while t >= 0:
            sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
            done = (_encode_tiles_stream(src, sb, i, rs, R, C, a, tc, out, o, carry, t)
                    if stream else 0)
            _encode_tiled_row(src, sb + done, i, n, rs, cs, R, C - done, a, tc, out,
                              o + done * a, step)
            t, v = _next_unit(claims, th, v, units)
    return None


@_parallel_kernel
def decode_tiled_par(buf, boffs, rs, cs, R, C, a, tc, dst, step, stream, carry):
    nr = (R + a - 1) // a
    stream = _streams(stream, cs, tc, dst.itemsize, carry.size >= boffs.size * nr * a * 64)
    nb = 1 if stream else _run_rows(C, tc, cs, step, a * tc) if cs == 1 else STRIDED_DECODE_ROWS
    units = boffs.size * -(-nr // nb)
    claims = _claims(units)
    for th in numba.prange(claims.size // _LINE_WORDS):
        t, v = _next_unit(claims, th, 0, units)
        while t >= 0:
            sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
            done = (_decode_tiles_stream(buf, sb, i, rs, R, C, a, tc, dst, o, carry, t * a)
                    if stream else 0)
            _decode_tiled_row(buf, sb + done, i, n, rs, cs, R, C - done, a, tc, dst,
                              o + done * a, step)
            t, v = _next_unit(claims, th, v, units)
    return None


@_for_each("p")
@_parallel_kernel
def encode_packed_par(src, boffs, rs, cs, R, C, a, tc, p, bits, out, step, stream):
    numba.literally(p)
    nr = (R + a - 1) // a
    nb = _run_rows(C, tc, cs, step, a // p * tc)
    units = boffs.size * -(-nr // nb)
    claims = _claims(units)
    for th in numba.prange(claims.size // _LINE_WORDS):
        tmp = _scratch(p, a)  # each thread needs its own
        t, v = _next_unit(claims, th, 0, units)
        while t >= 0:
            sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
            _encode_packed_row(src, sb, i, n, rs, cs, R, C, a, tc, p, bits, out, o, step, tmp,
                               stream)
            t, v = _next_unit(claims, th, v, units)
    return None


@_for_each("p")
@_parallel_kernel
def decode_packed_par(buf, boffs, rs, cs, R, C, a, tc, p, bits, dst, step, stream):
    numba.literally(p)
    nr = (R + a - 1) // a
    nb = _run_rows(C, tc, cs, step, a // p * tc)
    units = boffs.size * -(-nr // nb)
    claims = _claims(units)
    for th in numba.prange(claims.size // _LINE_WORDS):
        tmp = _scratch(p, a)
        t, v = _next_unit(claims, th, 0, units)
        while t >= 0:
            sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
            _decode_packed_row(buf, sb, i, n, rs, cs, R, C, a, tc, p, bits, dst, o, step, tmp,
                               stream)
            t, v = _next_unit(claims, th, v, units)
    return None


@_inline
def _square_parts(C, tc, units):
    """Column parts for `decode_square_par`: with fewer than SQUARE_PARTS sweeps, the threads could
    not share them out evenly, so each sweep's whole tiles are cut in up to SQUARE_PARTS parts."""
    return 1 if units >= SQUARE_PARTS else max(1, min(SQUARE_PARTS, C // tc))


@_parallel_kernel
def encode_square_par(src, boffs, rs, cs, R, C, a, tc, k, out, step):
    # The threads split the sweeps: in column parts of longer sweeps, as decode_square_par,
    # f32[1024,1024]{0,1:T(8,128)(2,1)} encoded 1.3-1.5x slower.
    nr = (R + a - 1) // a
    band = _square_band(C, a, k, src.itemsize, True)
    for t in numba.prange(boffs.size * (1 + (nr + band - 1) // band)):
        sb, i, rows, o = _square_sweep(src, boffs, a, band, nr, t, step)
        if rows > 0:
            _encode_square_rows(src, sb, i, rows, cs, R, C, a, tc, k, out, o, step)
    return None


@_parallel_kernel
def decode_square_par(buf, boffs, rs, cs, R, C, a, tc, k, dst, step):
    nr = (R + a - 1) // a
    band = _square_band(C, a, k, dst.itemsize, False)
    units = boffs.size * (1 + (nr + band - 1) // band)
    parts = _square_parts(C, tc, units)
    for u in numba.prange(parts * units):  # (each thread gets one run of u: whole parts)
        sb, i, rows, o = _square_sweep(dst, boffs, a, band, nr, u % units, step)
        if rows > 0:
            _decode_square_rows(buf, sb, i, rows, cs, R, C, a, tc, k, dst, o, step,
                                u // units, parts)
    return None
