"""Packed word groups: T(a, tc)(p, 1) with p * bits == 32, where each little-endian uint32
word holds p consecutive rows of one column, row r % p at bit (r % p) * bits (spec §5.2): bf16
(8,128)(2,1), s8 (8,128)(4,1), s4 (8,128)(8,1)E(4), pred (32,128)(32,1)E(1); a % p == 0. Equals
`tiling._reference.encode_into` / `decode_into` for those layouts; `tiling._fast_plans` picks it.

`encode_packed(src, boffs, rs, cs, R, C, a, tc, p, bits, out, step, stream)` takes the arguments
of `tiled.encode_tiled` (without `carry`) plus p and bits; `out` / `buf` are uint32 views.
Tile rows of whole 64-column groups move through the word-group shuffles of `llvm` (streamed when
`stream` is set); the rest, and the 1-bit format (`_pack_pred`), with shifts and masks.

Compile time (a cold compile is a format's first call on a machine): the kernels are compiled
for each p (`_for_each("p")`: p is a constant in their code, and LLVM drops the branches of the
other p's before its costly passes), and their row functions and the 1-bit packers
(`_pack_pred`, `_unpack_pred_128`) are inlined, because numba compiles every callee on its own
and links and optimises its code again within each caller (together about half the bf16
kernel's compile: asv `timeraw_compile_one_packed_kernel`; inlined, the loops ran no slower).
"""

from __future__ import annotations

import numba
import numpy as np

from tiling._kernels.jit import _ONE, _for_each, _helper, _inline, _kernel, _u
from tiling._kernels.llvm import (
    _COLUMNS, _STREAM_COLUMNS, _stream_end, _stream_fence, _unzip2, _unzip2_stream, _unzip4,
    _unzip4_stream, _unzip8, _unzip8_stream, _zip2, _zip2_stream, _zip4, _zip4_stream, _zip8,
    _zip8_stream,
)
from tiling._kernels.tiled import _rows_block, _run_rows, _unit_start
from tiling._tuning import PRED_COLUMNS

_S8, _S16, _S24 = np.uint32(8), np.uint32(16), np.uint32(24)  # uint32 shifts stay uint32


@_inline
def _rows8(src, s, rs, bits, mask, c):
    """8 rows of column c, the low `bits` of row k at bit k*bits."""
    w = np.uint32(src[_u(s + c)]) & np.uint32(mask)
    for k in range(1, 8):
        w |= (np.uint32(src[_u(s + k * rs + c)]) & np.uint32(mask)) << np.uint32(k * bits)
    return w


@_inline
def _scratch(p, a):
    """The 1-bit packers' byte scratch (`_pack_pred`, `_unpack_pred_128`); for the others the
    carry slots of streaming stores (`_store_block`), one per row of a tile (decoding)."""
    return np.empty(4 * PRED_COLUMNS if p == 32 else 64 * a, np.uint8)


@_helper
def _pack_tiles(src, s, rs, p, ng, nt, tc, ts, out, o, tmp, stream):
    """nt whole tiles of ng groups of p rows (stride rs) and tc contiguous columns, from src[s]
    (`ts` apart) into words from out[o], in buffer order; p * bits == 32 fixes the shifts.
    `stream`: word groups go out as one run of streaming stores (`_store_block`)."""
    if p == 32 and ng == 1:  # 1-bit, one group per tile
        if ts == tc:  # tiles side by side: their words are consecutive
            for c0 in range(0, nt * tc, PRED_COLUMNS):
                _pack_pred(src, s + c0, rs, min(PRED_COLUMNS, nt * tc - c0), out, o + c0, tmp)
        else:
            for t in range(nt):
                _pack_pred(src, s + t * ts, rs, tc, out, o + t * tc, tmp)
        return None
    # Streamed and plain word groups have a loop each: in one shared loop, the plain stores ran
    # 1.2-1.5x slower in the cache (LLVM reloaded the shuffle constants for every block).
    if tc % _COLUMNS == 0 and p in (2, 4, 8) and stream:
        first = 1
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            for c in range(0, tc, _COLUMNS):
                if p == 2:
                    _zip2_stream(src, sg + c, rs, out, og + c, tmp, first)
                elif p == 4:
                    _zip4_stream(src, sg + c, rs, out, og + c, tmp, first)
                else:
                    _zip8_stream(src, sg + c, rs, out, og + c, tmp, first)
                first = 0
        if nt > 0:
            _stream_end(out, o + nt * ng * tc, tmp, 0)
            _stream_fence()
        return None
    if tc % _COLUMNS == 0 and p in (2, 4, 8):
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            for c in range(0, tc, _COLUMNS):
                if p == 2:
                    _zip2(src, sg + c, rs, out, og + c)
                elif p == 4:
                    _zip4(src, sg + c, rs, out, og + c)
                else:
                    _zip8(src, sg + c, rs, out, og + c)
        return None
    if p == 2:  # 16-bit
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            for c in range(tc):
                out[_u(og + c)] = (np.uint32(src[_u(sg + c)])
                                   | (np.uint32(src[_u(sg + rs + c)]) << _S16))
    elif p == 4:  # 8-bit
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            for c in range(tc):
                out[_u(og + c)] = (np.uint32(src[_u(sg + c)])
                                   | (np.uint32(src[_u(sg + rs + c)]) << _S8)
                                   | (np.uint32(src[_u(sg + 2 * rs + c)]) << _S16)
                                   | (np.uint32(src[_u(sg + 3 * rs + c)]) << _S24))
    elif p == 8:  # 4-bit
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            for c in range(tc):
                out[_u(og + c)] = _rows8(src, sg, rs, 4, 0xF, c)
    else:
        for t in range(nt * ng):
            # (rows `p * _ONE`, an int64 as the row function's: not p's literal type)
            _pack_groups(src, _unit_start(t, ng, s, ts, p, rs), rs, _ONE, p * _ONE, _ONE, p, tc,
                         32 // p, tc, out, o + t * tc)
    return None


@_helper
def _pack_groups(src, s, rs, cs, rows, ng, p, n, bits, tc, out, o):
    """One tile's ng groups of p rows, of which the first `rows` exist (fewer at the bottom
    edge), and n columns at any column stride; group g's words at out[o + g*tc:]."""
    mask = np.uint32((1 << bits) - 1)
    if cs != 1:  # column by column, all of a column's rows at once (see `_encode_tiled_row`)
        for c in range(n):
            sc = s + c * cs
            for g in range(ng):
                w = np.uint32(0)
                for k in range(max(0, min(p, rows - g * p))):
                    w |= (np.uint32(src[_u(sc + (g * p + k) * rs)]) & mask) << np.uint32(k * bits)
                out[_u(o + g * tc + c)] = w
        return None
    for g in range(ng):
        og, sg = o + g * tc, s + g * p * rs
        for c in range(n):
            out[_u(og + c)] = 0
        for k in range(max(0, min(p, rows - g * p))):
            shift = np.uint32(k * bits)
            sk = sg + k * rs
            for c in range(n):
                out[_u(og + c)] |= (np.uint32(src[_u(sk + c)]) & mask) << shift
    return None


@_inline
def _pack_pred(src, s, rs, n, out, o, tmp):
    """1-bit `(32,p)(32,1)`: 32 whole rows of n contiguous columns into n consecutive words.
    Rows are first packed 8 to a byte in uint8 lanes (`tmp`, 4n bytes; 4x denser than building
    uint32 words row by row), then 4 bytes per word. With n a whole row of tiles, each row is
    read in one sequential sweep: 128 columns at a time kept 32 rows in flight, which the
    prefetchers could not follow (1.7x slower)."""
    one = np.uint8(1)
    for g in range(4):
        sg, tg = s + 8 * g * rs, g * n
        for c in range(n):
            tmp[_u(tg + c)] = src[_u(sg + c)] & one
        for k in range(1, 8):
            sk = sg + k * rs
            shift = np.uint8(k)
            for c in range(n):
                tmp[_u(tg + c)] |= (src[_u(sk + c)] & one) << shift
    for c in range(n):
        out[_u(o + c)] = (np.uint32(tmp[_u(c)]) | (np.uint32(tmp[_u(n + c)]) << _S8)
                          | (np.uint32(tmp[_u(2 * n + c)]) << _S16)
                          | (np.uint32(tmp[_u(3 * n + c)]) << _S24))
    return None


@_inline
def _encode_packed_row(src, sb, i, n, rs, cs, R, C, a, tc, p, bits, out, o, step, tmp, stream):
    """Tile rows i..i+n-1 of one batch, `step` apart in out (n > 1: see `_run_rows`)."""
    ng = a // p
    if n > 1 and (i + n) * a <= R:
        _pack_tiles(src, sb + i * a * rs, rs, p, ng, n, tc, a * rs, out, o, tmp, stream)
        return None
    nc = (C + tc - 1) // tc
    for i in range(i, i + n):
        full = C // tc if cs == 1 and (i + 1) * a <= R else 0
        _pack_tiles(src, sb + i * a * rs, rs, p, ng, full, tc, tc, out, o, tmp, stream)
        o += full * ng * tc
        rows = max(0, min(a, R - i * a))
        for j in range(full, nc):
            c0 = j * tc
            w = min(tc, C - c0)
            _pack_groups(src, sb + i * a * rs + c0 * cs, rs, cs, rows, ng, p, w, bits, tc, out,
                         o)
            for g in range(ng):
                for c in range(w, tc):
                    out[_u(o + g * tc + c)] = 0
            o += ng * tc
        o += step - nc * ng * tc
    return None


@_for_each("p")
@_kernel
def encode_packed(src, boffs, rs, cs, R, C, a, tc, p, bits, out, step, stream):
    numba.literally(p)
    nr = (R + a - 1) // a
    nb = _run_rows(C, tc, cs, step, a // p * tc)
    tmp = _scratch(p, a)
    for t in range(boffs.size * -(-nr // nb)):
        sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
        _encode_packed_row(src, sb, i, n, rs, cs, R, C, a, tc, p, bits, out, o, step, tmp,
                           stream)
    return None


@_inline
def _unzip_group(buf, o, dst, s, rs, p, tc):
    """One word group's p rows of tc (a multiple of _COLUMNS) columns, with plain stores."""
    for c in range(0, tc, _COLUMNS):
        if p == 2:
            _unzip2(buf, o + c, dst, s + c, rs)
        elif p == 4:
            _unzip4(buf, o + c, dst, s + c, rs)
        else:
            _unzip8(buf, o + c, dst, s + c, rs)


@_helper
def _unpack_tiles(buf, o, ng, nt, tc, ts, p, dst, s, rs, tmp, stream):
    """Inverse of `_pack_tiles`; `stream` (tiles side by side only, ts == tc): each of the tile
    rows' rows goes out as one run of streaming stores (a loop of its own, as in `_pack_tiles`)."""
    if p == 32 and tc == 128:  # 1-bit
        for t in range(nt * ng):
            _unpack_pred_128(buf, o + t * tc, dst, _unit_start(t, ng, s, ts, p, rs), rs, tmp)
        return None
    if tc % _STREAM_COLUMNS == 0 and p in (2, 4, 8) and stream and ts == tc:
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            slot = (t % ng) * p
            for c in range(0, tc, _STREAM_COLUMNS):
                first = 1 if t < ng and c == 0 else 0
                if p == 2:
                    _unzip2_stream(buf, og + c, dst, sg + c, rs, tmp, slot, first)
                elif p == 4:
                    _unzip4_stream(buf, og + c, dst, sg + c, rs, tmp, slot, first)
                else:
                    _unzip8_stream(buf, og + c, dst, sg + c, rs, tmp, slot, first)
        if nt > 0:
            for r in range(ng * p):
                _stream_end(dst, s + r * rs + nt * tc, tmp, r)
            _stream_fence()
        return None
    if tc % _COLUMNS == 0 and p in (2, 4, 8):
        for t in range(nt * ng):
            _unzip_group(buf, o + t * tc, dst, _unit_start(t, ng, s, ts, p, rs), rs, p, tc)
        return None
    if p == 2:  # 16-bit
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            for c in range(tc):
                w = buf[_u(og + c)]
                dst[_u(sg + c)] = w & np.uint32(0xFFFF)
                dst[_u(sg + rs + c)] = w >> _S16
    elif p == 4:  # 8-bit
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            for c in range(tc):
                w = buf[_u(og + c)]
                dst[_u(sg + c)] = w & np.uint32(0xFF)
                dst[_u(sg + rs + c)] = (w >> _S8) & np.uint32(0xFF)
                dst[_u(sg + 2 * rs + c)] = (w >> _S16) & np.uint32(0xFF)
                dst[_u(sg + 3 * rs + c)] = w >> _S24
    elif p == 8:  # 4-bit
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            for c in range(tc):
                w = buf[_u(og + c)]
                for k in range(8):
                    dst[_u(sg + k * rs + c)] = (w >> np.uint32(4 * k)) & np.uint32(0xF)
    else:
        for t in range(nt * ng):
            _unpack_groups(buf, o + t * tc, p * _ONE, _ONE, p, 32 // p, tc, tc, dst,
                           _unit_start(t, ng, s, ts, p, rs), rs, _ONE)
    return None


@_helper
def _unpack_groups(buf, o, rows, ng, p, bits, n, tc, dst, s, rs, cs):
    """Inverse of `_pack_groups`."""
    mask = np.uint32((1 << bits) - 1)
    if cs != 1:  # column by column (see `_encode_tiled_row`)
        for c in range(n):
            sc = s + c * cs
            for g in range(ng):
                w = buf[_u(o + g * tc + c)]
                for k in range(max(0, min(p, rows - g * p))):
                    dst[_u(sc + (g * p + k) * rs)] = (w >> np.uint32(k * bits)) & mask
        return None
    for g in range(ng):
        og, sg = o + g * tc, s + g * p * rs
        for k in range(max(0, min(p, rows - g * p))):
            shift = np.uint32(k * bits)
            sk = sg + k * rs
            for c in range(n):
                dst[_u(sk + c)] = (buf[_u(og + c)] >> shift) & mask
    return None


@_inline
def _unpack_pred_128(buf, o, dst, s, rs, tmp):
    """Inverse of `_pack_pred` over 128 columns: bytes first, then 8 rows from each."""
    for g in range(4):
        shift = np.uint32(8 * g)
        for c in range(128):
            tmp[_u(128 * g + c)] = (buf[_u(o + c)] >> shift) & np.uint32(0xFF)
    one = np.uint8(1)
    for g in range(4):
        for k in range(8):
            sk = s + (8 * g + k) * rs
            shift = np.uint8(k)
            for c in range(128):
                dst[_u(sk + c)] = (tmp[_u(128 * g + c)] >> shift) & one
    return None


@_inline
def _decode_packed_row(buf, sb, i, n, rs, cs, R, C, a, tc, p, bits, dst, o, step, tmp, stream):
    """Inverse of `_encode_packed_row`."""
    ng = a // p
    if n > 1 and (i + n) * a <= R:
        _unpack_tiles(buf, o, ng, n, tc, a * rs, p, dst, sb + i * a * rs, rs, tmp, stream)
        return None
    nc = (C + tc - 1) // tc
    for i in range(i, i + n):
        full = C // tc if cs == 1 and (i + 1) * a <= R else 0
        _unpack_tiles(buf, o, ng, full, tc, tc, p, dst, sb + i * a * rs, rs, tmp, stream)
        o += full * ng * tc
        rows = max(0, min(a, R - i * a))
        for j in range(full, nc):
            c0 = j * tc
            _unpack_groups(buf, o, rows, ng, p, bits, min(tc, C - c0), tc, dst,
                           sb + i * a * rs + c0 * cs, rs, cs)
            o += ng * tc
        o += step - nc * ng * tc
    return None


@_for_each("p")
@_kernel
def decode_packed(buf, boffs, rs, cs, R, C, a, tc, p, bits, dst, step, stream):
    numba.literally(p)
    nr = (R + a - 1) // a
    nb = _run_rows(C, tc, cs, step, a // p * tc)
    tmp = _scratch(p, a)
    for t in range(boffs.size * -(-nr // nb)):
        sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
        _decode_packed_row(buf, sb, i, n, rs, cs, R, C, a, tc, p, bits, dst, o, step, tmp,
                           stream)
    return None
