"""Tiled rows: one 2-D tile T(a, tc) over physical dims (batch..., R, C), for a contiguous or
strided (any element strides) logical array. Equals `tiling._reference.encode_into` /
`decode_into` for the T(8,128), T(4,128), T(2,128), T(1,128) formats, any single tile of one or
two entries, and untiled layouts (a=1, tc=C); `tiling._fast_plans` picks it.

`encode_tiled(src, boffs, rs, cs, R, C, a, tc, out, step, stream, carry)`: `src` the flat span of
the array's memory, `boffs` each batch's first element, `rs`/`cs` the element strides of the two
tiled dims; tile row i of batch b (NR tile rows per batch) starts at (b*NR + i) * step in `out`:
`step` is one tile row's size, or more when `out` is a band of tile columns of a wider buffer
(`tiling.relayout`'s transposing plan). `stream` asks for streaming stores (see `llvm`), `carry`
their 64-byte slots. `decode_tiled` is the inverse, with the same arguments.

The work is split by tile row (one batch's row of tiles, which owns a contiguous span of the
buffer): the serial kernels loop over tile rows, the `_par` drivers (`parallel`) split them over
numba's threads; both call the same row functions. A row function moves the tiles whose rows and
columns are all present (with contiguous columns) in one flat loop that writes the buffer in
order, and the edge tiles one by one: the flat loop is what lets LLVM keep the 128-wide inner
loops vectorised (a nested loop over a runtime group count ran 10x slower), and writing the
buffer in order beats reading the source in order once the arrays leave the cache.
"""

from __future__ import annotations

from tiling._kernels.jit import _helper, _inline, _kernel, _u
from tiling._kernels.llvm import (
    _STREAM_BLOCK, _copy_stream, _stream_end, _stream_fence,
)
from tiling._tuning import STRIDED_DECODE_ROWS, TILE_ROWS_PER_CALL


@_inline
def _unit_start(t, per_tile, s, ts, rows, rs):
    """Source offset of the t-th buffer unit (`rows` rows of a tile) of a run of whole tiles
    `ts` apart in the source, `per_tile` units per tile: tile t // per_tile, rows
    (t % per_tile) * rows onwards."""
    j = t // per_tile
    return s + j * ts + (t - j * per_tile) * rows * rs


@_helper
def _gather_tiles(src, s, rs, a, nt, tc, ts, out, o):
    """nt whole tiles from src[s], `ts` apart (a rows of stride rs, tc contiguous columns each),
    in buffer order from out[o]."""
    for t in range(nt * a):
        st, ot = _unit_start(t, a, s, ts, 1, rs), o + t * tc
        for c in range(tc):
            out[_u(ot + c)] = src[_u(st + c)]
    return None


@_helper
def _scatter_tiles(buf, o, a, nt, tc, ts, dst, s, rs):
    """Inverse of `_gather_tiles`."""
    for t in range(nt * a):
        st, ot = _unit_start(t, a, s, ts, 1, rs), o + t * tc
        for c in range(tc):
            dst[_u(st + c)] = buf[_u(ot + c)]
    return None


@_helper
def _encode_tiled_row(src, sb, i, n, rs, cs, R, C, a, tc, out, o, step):
    """Tile rows i..i+n-1 of one batch (first element at sb) into out[o:], `step` apart; see
    `encode_tiled`. n > 1 only for tile rows of one whole tile each (`_run_rows`)."""
    if n > 1 and (i + n) * a <= R:
        _gather_tiles(src, sb + i * a * rs, rs, a, n, tc, a * rs, out, o)
        return None
    nc = (C + tc - 1) // tc
    for i in range(i, i + n):
        full = C // tc if cs == 1 and (i + 1) * a <= R else 0
        _gather_tiles(src, sb + i * a * rs, rs, a, full, tc, tc, out, o)
        o += full * a * tc
        rows = max(0, min(a, R - i * a))
        for j in range(full, nc):
            c0 = j * tc
            w = min(tc, C - c0)
            s = sb + i * a * rs + c0 * cs
            if cs == 1:
                for r in range(rows):
                    for c in range(w):
                        out[_u(o + r * tc + c)] = src[_u(s + r * rs + c)]
            else:  # column by column: each column's rows are read together (a transposed
                # source has them side by side), not one row's columns 4 KiB+ apart (3-6x
                # faster, measured)
                for c in range(w):
                    for r in range(rows):
                        out[_u(o + r * tc + c)] = src[_u(s + c * cs + r * rs)]
            for r in range(a):
                for c in range(w if r < rows else 0, tc):
                    out[_u(o + r * tc + c)] = 0
            o += a * tc
        o += step - nc * a * tc
    return None


@_helper
def _decode_tiled_row(buf, sb, i, nb, rs, cs, R, C, a, tc, dst, o, step):
    """Tile rows i..i+nb (`step` apart in buf) of one batch. Strided columns go column by
    column, as in `_encode_tiled_row`, over nb tile rows at once: each column's page is then
    visited once per nb tile rows (decoding a 4096^2 f32 transposed array: 1.4x faster with 8;
    encoding got slower, its writes then spread over nb tile rows of the buffer). Contiguous
    columns: nb > 1 only for tile rows of one whole tile each (see `_run_rows`)."""
    nc = (C + tc - 1) // tc
    if cs != 1:
        for j in range(nc):
            c0 = j * tc
            for c in range(min(tc, C - c0)):
                sc = sb + (c0 + c) * cs
                for ib in range(nb):
                    ot = o + ib * step + j * a * tc + c
                    s = sc + (i + ib) * a * rs
                    for r in range(max(0, min(a, R - (i + ib) * a))):
                        dst[_u(s + r * rs)] = buf[_u(ot + r * tc)]
        return None
    if nb > 1 and (i + nb) * a <= R:
        _scatter_tiles(buf, o, a, nb, tc, a * rs, dst, sb + i * a * rs, rs)
        return None
    for i in range(i, i + nb):
        full = C // tc if (i + 1) * a <= R else 0
        _scatter_tiles(buf, o, a, full, tc, tc, dst, sb + i * a * rs, rs)
        o += full * a * tc
        rows = max(0, min(a, R - i * a))
        for j in range(full, nc):
            c0 = j * tc
            s = sb + i * a * rs + c0
            for r in range(rows):
                for c in range(min(tc, C - c0)):
                    dst[_u(s + r * rs + c)] = buf[_u(o + r * tc + c)]
            o += a * tc
        o += step - nc * a * tc
    return None


@_inline
def _rows_block(boffs, t, nb, nr, step):
    """(batch start, first tile row, tile rows, buffer offset) of the t-th call of a driver that
    hands nb tile rows of each batch's nr to each row-function call."""
    blocks = (nr + nb - 1) // nb
    b = t // blocks
    i = (t - b * blocks) * nb
    return boffs[_u(b)], i, min(nb, nr - i), (b * nr + i) * step


@_inline
def _run_rows(C, tc, cs, step, tile):
    """Tile rows per row-function call: TILE_ROWS_PER_CALL when every tile row is one whole tile of
    contiguous columns, the tile rows `tile` apart in the buffer (they then move as one run of
    tiles, a * rs apart in the source; bf16[32768,128]{1,0:T(8,128)(2,1)} one tile row per call
    was 1.5x slower, measured), else 1."""
    return TILE_ROWS_PER_CALL if C == tc and cs == 1 and step == tile else 1


# Streaming stores for the tiled kernels (`stream`, set by `tiling._fast_plans` once the array and
# its buffer outgrow the last-level cache): a tile row's whole tiles are copied in 256-byte
# blocks through `_store_block`, encoding as one run into the buffer, decoding as one run per
# row of the tiles; the edge tiles go through the plain row functions. Only for contiguous
# columns and tile rows of whole 256-byte blocks (f32 T(8,128): 512 bytes), else plain stores.


@_inline
def _streams(stream, cs, tc, itemsize, carried):
    """Whether a tiled kernel streams: asked to, contiguous columns, tile rows of whole blocks,
    and `carry` (64 bytes per tile row, encoding; per row of a tile, decoding) large enough."""
    return stream != 0 and cs == 1 and tc * itemsize % _STREAM_BLOCK == 0 and carried


@_helper
def _encode_tiles_stream(src, sb, i, rs, R, C, a, tc, out, o, carry, slot):
    """The whole tiles of tile row i (when it has all its rows) as one streamed run through
    carry slot `slot`; the columns done, for `_encode_tiled_row` to finish the row. A leaf with
    its carry passed in: calling the plain row function from here made numba compile that
    again into it (0.5 s more for a cold kernel), and np.empty here cost 0.12 s more."""
    full = C // tc if (i + 1) * a <= R else 0
    if full:
        n = _STREAM_BLOCK // out.itemsize
        s = sb + i * a * rs
        for t in range(full * a):
            st, ot = _unit_start(t, a, s, tc, 1, rs), o + t * tc
            for c in range(0, tc, n):
                _copy_stream(src, st + c, out, ot + c, carry, slot, t + c == 0)
        _stream_end(out, o + full * a * tc, carry, slot)
        _stream_fence()
    return full * tc


@_helper
def _decode_tiles_stream(buf, sb, i, rs, R, C, a, tc, dst, o, carry, slot):
    """Inverse of `_encode_tiles_stream`: row r of the tiles as a run through slot slot + r."""
    full = C // tc if (i + 1) * a <= R else 0
    if full:
        n = _STREAM_BLOCK // dst.itemsize
        s = sb + i * a * rs
        for t in range(full * a):  # the buffer in order
            j = t // a
            r = t - j * a
            for c in range(0, tc, n):
                _copy_stream(buf, o + t * tc + c, dst, s + r * rs + j * tc + c, carry,
                             slot + r, j + c == 0)
        for r in range(a):
            _stream_end(dst, s + r * rs + full * tc, carry, slot + r)
        _stream_fence()
    return full * tc


@_kernel
def encode_tiled(src, boffs, rs, cs, R, C, a, tc, out, step, stream, carry):
    nr = (R + a - 1) // a
    stream = _streams(stream, cs, tc, out.itemsize, carry.size >= boffs.size * nr * 64)
    nb = 1 if stream else _run_rows(C, tc, cs, step, a * tc)
    for t in range(boffs.size * -(-nr // nb)):
        sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
        done = (_encode_tiles_stream(src, sb, i, rs, R, C, a, tc, out, o, carry, t)
                if stream else 0)
        _encode_tiled_row(src, sb + done, i, n, rs, cs, R, C - done, a, tc, out, o + done * a,
                          step)
    return None


@_kernel
def decode_tiled(buf, boffs, rs, cs, R, C, a, tc, dst, step, stream, carry):
    nr = (R + a - 1) // a
    stream = _streams(stream, cs, tc, dst.itemsize, carry.size >= boffs.size * nr * a * 64)
    nb = 1 if stream else _run_rows(C, tc, cs, step, a * tc) if cs == 1 else STRIDED_DECODE_ROWS
    for t in range(boffs.size * -(-nr // nb)):
        sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
        done = (_decode_tiles_stream(buf, sb, i, rs, R, C, a, tc, dst, o, carry, t * a)
                if stream else 0)
        _decode_tiled_row(buf, sb + done, i, n, rs, cs, R, C - done, a, tc, dst, o + done * a,
                          step)
    return None
