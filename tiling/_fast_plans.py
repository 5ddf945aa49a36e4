"""Fast plans: the hand-written kernels for one 2-D tile and its packed forms.

`fast_plan` serves a layout whose tiles, after `_geometry._fast_form` rewrites `*` runs and 1-D
tile chains where the array's strides allow, are one 2-D tile T(a, tc) or T(a, tc)(p, 1) with p
rows to a 32-bit word (`choose_kernel`). It picks, from `tiling._kernels`:

- `tiny_tiles` for T(a, tc) with tc <= 4 and (a, tc) in `TINY_TILES`;
- `encode_square`/`decode_square` for a transposed source of 32/64-bit elements;
- `encode_tiled`/`decode_tiled` for any other single tile;
- `encode_packed`/`decode_packed` for the packed forms;

each with its `_par` twin for arrays of PARALLEL_BYTES or more, and streaming stores past the
last-level cache (`_runtime.stream_mode`). Anything else is a generic plan
(`tiling._generic_plans`).
"""

from __future__ import annotations

import numpy as np

from tiling import _runtime
from tiling._geometry import (
    _batch_offsets, _fast_form, _geometry, _num_final, _paired_rows, _span, _square_rows,
    _storage_bits,
)
from tiling._runtime import (
    NO_CARRY, Plan, call_fast, parallel_allowed, specialised, stream_mode,
)
from tiling._tuning import PERM_MAX, PERM_RUN
from tiling.dtypes import ElementType
from tiling.layout import COMBINE_DIMENSION, Layout

FAST_PATHS: dict[tuple[int, tuple[tuple[int, ...], ...]], str] = {
    # (bits per stored element, tiles) -> kernel family. Any other single tile of one or two
    # entries also takes "tiled", and any other (a,tc)(p,1) with p*bits == 32, a % p == 0 takes
    # "packed"; these rows are the formats the benchmarks and tests pin down.
    (32, ((8, 128),)): "tiled",
    (32, ((4, 128),)): "tiled",
    (32, ((2, 128),)): "tiled",
    (32, ((1, 128),)): "tiled",
    (16, ((8, 128), (2, 1))): "packed",
    (8, ((8, 128), (4, 1))): "packed",
    (4, ((8, 128), (8, 1))): "packed",
    (1, ((32, 128), (32, 1))): "packed",
}


def choose_kernel(bits: int, container_bits: int, tiles: tuple[tuple[int, ...], ...]) -> str:
    """"tiled", "packed" or "generic" for a layout's tiles and storage bits.

    >>> choose_kernel(16, 16, ((8, 128), (2, 1))), choose_kernel(32, 32, ((4, 8), (2, 1)))
    ('packed', 'generic')
    """
    if any(COMBINE_DIMENSION in t for t in tiles) or container_bits > 64:
        return "generic"
    if bits == container_bits and (not tiles or (len(tiles) == 1 and len(tiles[0]) <= 2)):
        return "tiled"
    if (len(tiles) == 2 and len(tiles[0]) == 2 and len(tiles[1]) == 2 and tiles[1][1] == 1
            and bits <= container_bits and tiles[1][0] * bits == 32
            and tiles[0][0] % tiles[1][0] == 0 and (bits >= 8 or container_bits == 8)):
        return "packed"
    return "generic"


def fast_plan(a: np.ndarray, layout: Layout, element: ElementType, encode: bool,
              row_step: int | None = None, cache_bytes: int | None = None) -> Plan | None:
    """Plan for the "tiled"/"packed" kernels, or None. `a` is the logical container array.

    `row_step` (encode only): bytes between tile rows in `out` when `out` is a band of tile
    columns of a wider buffer (`_transposed_relayout`); `out` then starts at the band's first
    tile and nothing past its tiles is written. `cache_bytes`: the last-level cache size the
    stores are chosen for (default: this machine's, `_runtime.STREAM_BYTES`).
    """
    _kernels = _runtime.load_kernels()
    nbits = _storage_bits(layout, element)
    geometry = _geometry(a)
    if a.size == 0 or geometry is None:
        return None
    base, strides = geometry
    m2m = layout.major_to_minor
    physical = tuple(a.shape[d] for d in m2m)
    used = -(-_num_final(physical, layout) * nbits // 8)
    dims, pstrides, tiles = _fast_form(physical, tuple(strides[d] for d in m2m),
                                       tuple(t.dimensions for t in layout.tiles))
    unit = None
    paired = _paired_rows(dims, pstrides, base, tiles, nbits, a.itemsize * 8)
    if paired is not None:
        dims, pstrides, base, tiles, unit = paired
        nbits = unit.itemsize * 8
    kind = choose_kernel(nbits, (unit or a.dtype).itemsize * 8, tiles)
    if kind == "generic":
        return None
    phys, pstrides = (1, 1) + dims, (0, 0) + pstrides
    R, C = phys[-2], phys[-1]
    if not tiles:
        tr, tc = 1, C
    elif len(tiles[0]) == 2:
        tr, tc = tiles[0]
    else:
        tr, tc = 1, tiles[0][0]
    while len(phys) > 2 and R % tr == 0 and pstrides[-3] == R * pstrides[-2]:
        # a batch dim that walks on from the last row is more rows of whole tile rows: longer
        # runs per kernel call (the square kernels align their blocks once per batch)
        R *= phys[-3]
        phys, pstrides = phys[:-3] + (R, C), pstrides[:-3] + pstrides[-2:]
    boffs = _batch_offsets(phys[:-2], pstrides[:-2], base)
    rs, cs = pstrides[-2], pstrides[-1]

    short = kind == "tiled" and tr > 1 and tc <= PERM_RUN and row_step is None
    if short and cs == 1 and (tr, tc) in _kernels.TINY_TILES:
        word = unit or a.dtype
        kernel, par = _kernels.tiny_tiles(tr, tc)[0 if encode else 1::2]
        args = (boffs, rs, R, C)
        step = -(-C // tc) * tr * tc
    elif short and a.flags.c_contiguous and a.size <= PERM_MAX:
        return None  # runs this short: the permutation path is faster
    elif kind == "tiled":
        word = unit or a.dtype
        square = _square_rows(tr, tc, rs, cs, word.itemsize)
        if square and encode:
            kernel, par = _kernels.encode_square, _kernels.encode_square_par
        elif square:
            kernel, par = _kernels.decode_square, _kernels.decode_square_par
        elif encode:
            kernel, par = _kernels.encode_tiled, _kernels.encode_tiled_par
        else:
            kernel, par = _kernels.decode_tiled, _kernels.decode_tiled_par
        args = (boffs, rs, cs, R, C, tr, tc) + ((square,) if square else ())
        step = -(-C // tc) * tr * tc
    else:
        word = np.dtype(np.uint32)
        kernel, par = ((_kernels.encode_packed, _kernels.encode_packed_par) if encode
                       else (_kernels.decode_packed, _kernels.decode_packed_par))
        args = (boffs, rs, cs, R, C, tr, tc, tiles[1][0], nbits)
        step = -(-C // tc) * (tr // tiles[1][0]) * tc
    nbytes = a.nbytes
    # the packed and tiled kernels' last argument: streaming stores (`_kernels.llvm._store_block`);
    # the tiled ones then take a carry slot per tile row (and row of a tile, decoding) after it
    stream = stream_mode(nbytes + used, encode,
                         _runtime.STREAM_BYTES if cache_bytes is None else cache_bytes)
    tiled = kernel in (_kernels.encode_tiled, _kernels.decode_tiled)
    last = (stream,) if kind == "packed" else (stream, NO_CARRY) if tiled else ()
    carry = boffs.size * -(-R // tr) * (1 if encode else tr) * 64 if tiled and stream else 0
    if not parallel_allowed(nbytes):
        par = None
    if row_step is not None:  # the band's tile rows: all but the last one row_step apart
        rows = boffs.size * -(-R // tr)
        used = (rows - 1) * row_step + step * word.itemsize
        step = row_step // word.itemsize
    # The closures below run on every call: each step they skip counts against a few
    # microseconds of Python per call.
    contiguous = a.flags.c_contiguous  # (every array a plan serves has a's strides)
    target, container = unit or a.dtype, a.dtype
    name = kernel.__name__
    # the argument types the kernels get (array dtypes and contiguity), and the packed kernels'
    # p, which they are compiled for (`_kernels.jit._for_each`): `_runtime.Kernel`
    facts = (target.str, word.str, contiguous, bool(carry), encode,
             tiles[1][0] if kind == "packed" else None)
    kernel = specialised(kernel, *facts)
    par = None if par is None else specialised(par, *facts)

    def span(x):  # x: `a`'s kind of container view, or the logical array (same item size;
        # as `a` first: numpy's as_strided, under `_span`, refuses ml_dtypes' float8 types)
        return (x.ravel() if contiguous else _span(x.view(container))).view(target)
    # (a carry per call: calls from several Python threads may run at once)
    if encode:
        def run(x, out):
            whole = used == out.size
            tail = (stream, np.empty(carry, np.uint8)) if carry else last
            call_fast(kernel, par, nbytes, span(x), *args,
                      (out if whole else out[:used]).view(word), step, *tail)
            if not whole:
                out[used:] = 0
    else:
        def run(buf, out):
            tail = (stream, np.empty(carry, np.uint8)) if carry else last
            call_fast(kernel, par, nbytes, (buf if used == buf.size else buf[:used]).view(word),
                      *args, span(out), step, *tail)
    # (`logical`: `tiling.codec` may skip the container view, see `span`)
    return Plan(name, run, args, par is not None, stream if last else 0, True, (kernel,), par)

