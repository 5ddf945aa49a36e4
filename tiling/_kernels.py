"""Numba kernels that move bit patterns between a logical array and a tiled buffer.

Every kernel takes C-contiguous 1-D arrays and plain ints, writes into a caller-allocated output
and returns None: no Python objects, no exceptions, no float math (values are unsigned
containers: bf16 as uint16, f32 as uint32, s8/s4/pred as uint8). `tiling._engine` validates
nothing either; `tiling.codec` has checked every size before a kernel runs, and `_engine` derives
every index argument from those checked sizes.

A strided array reaches a kernel as a flat span of its memory plus element strides
(`_engine._span`), so Fortran-ordered, transposed, reversed or sliced sources are read in
place, without an extra copy. Batch dims (the physical dims before the two a tile covers) arrive
as `boffs`, the element offset of each batch's first element.

Kernels are compiled lazily on first call (no signature lists, which would compile every variant
at import) and cached on disk unless the environment sets `TILING_NUMBA_CACHE=0`, in a per-user
directory (`CACHE_DIR`), never inside the installed package, which may be read-only and whose
leftover `__pycache__` would outlive an uninstall. Numba writes each cache file to a temporary name and renames it into
place, so a reader never sees a torn file; `_engine` serialises first calls across processes with
a file lock (numba issues 4807 and 10128: two processes filling one cold cache can pair an index
entry with the other process's data file) and, should loading a cache entry still fail, drops the
cache for that kernel and compiles in memory instead of failing the user's call.

Threads: every kernel is serial and `nogil` (callers may run several encodes in their own
threads); the fast-path kernels also have `_par` twins that split the tile rows over numba's
threads (the transposed-array decoder, when its sweeps are too few to share, their columns),
which `_engine` takes from 1 MiB up (8 MiB under numba's `workqueue` layer,
whose launches cost tens of microseconds), only with the disk cache on (they compile 2.5x
slower) and only from one Python thread at a time (see "Parallel drivers" below).

Every array index is cast to unsigned (`_u`): numba then skips its negative-index wraparound
branch, which otherwise kept LLVM from vectorising the copy loops (3x slower, measured).

Where LLVM's own vectorisation fell short (word groups, tiny tiles, transposed sources), the
loops call intrinsics that load, shuffle and store whole LLVM vectors (sections below). numba's
boundscheck does not see inside them: their callers hand them whole tiles only, and a test runs
every one of them against guard pages.
"""

from __future__ import annotations

import functools
import math
import os
import platform

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.caching import (
    CompileResultCacheImpl, FunctionCache, _CacheLocator, _SourceFileBackedLocatorMixin,
)
from numba.extending import intrinsic

CACHE_ENABLED = os.environ.get("TILING_NUMBA_CACHE", "1").strip().lower() not in (
    "0", "false", "no", "off")
"""Whether kernels use numba's on-disk cache; set `TILING_NUMBA_CACHE=0` to turn it off."""


def _cache_dir() -> str:
    base = os.environ.get("TILING_NUMBA_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        home = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(home, "layout-toolkit", "numba")
    # numba's cache index does not record NUMBA_BOUNDSCHECK: checked code gets its own cache
    return os.path.join(base, "boundscheck") if numba.config.BOUNDSCHECK else base


CACHE_DIR = _cache_dir()
"""Where the kernels are cached: `TILING_NUMBA_CACHE_DIR`, else `$XDG_CACHE_HOME` (or
`~/.cache`) + `/layout-toolkit/numba`; one subdirectory per checkout (numba's naming)."""


class _Locator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Numba's cache locator for this module's functions, pointing into `CACHE_DIR`."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(CACHE_DIR, self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path


class _CacheImpl(CompileResultCacheImpl):
    _locator_classes = [_Locator]


class _Cache(FunctionCache):
    _impl_class = _CacheImpl


def _cached(dispatcher):
    """`dispatcher` with the disk cache in `CACHE_DIR` when it is on and can be written;
    otherwise it compiles in memory."""
    if CACHE_ENABLED:
        try:
            dispatcher._cache = _Cache(dispatcher.py_func)
        except RuntimeError:  # no writable directory: numba finds no locator
            pass
    return dispatcher


_u = np.uint64  # see the module docstring


def _kernel(fn, parallel=False):
    # error_model="numpy": integer division never raises (divisors are checked by the planner).
    return _cached(numba.njit(nogil=True, error_model="numpy", parallel=parallel)(fn))


def _parallel_kernel(fn):
    return _kernel(fn, parallel=True)


# ---------------------------------------------------------------------------------------------
# One 2-D tile T(a, tc) over physical dims (batch..., R, C): the T(8,128), T(4,128), T(2,128),
# T(1,128) fast path, also used for any single tile of one or two entries and for untiled
# layouts (a=1, tc=C); and T(a, tc)(p, 1) with p * bits == 32, where each little-endian uint32
# word holds p consecutive rows of one column, row r % p at bit (r % p) * bits (spec §5.2):
# bf16 (8,128)(2,1), s8 (8,128)(4,1), s4 (8,128)(8,1)E(4), pred (32,128)(32,1)E(1); a % p == 0,
# and `out` / `buf` are uint32 views. Tile row i of batch b (NR tile rows per batch) starts at
# (b*NR + i) * step buffer units: `step` is one tile row's size, or more when the buffer side is
# a band of tile columns of a wider buffer (`tiling._engine`'s transposing relayout).
#
# The work is split by tile row (one batch's row of tiles, which owns a contiguous span of the
# buffer): the serial kernels loop over tile rows, the `_par` drivers (below) split them over
# numba's threads; both call the same row functions. A row function moves the tiles whose rows
# and columns are all present (with contiguous columns) in one flat loop that writes the buffer
# in order, and the edge tiles one by one. Measured on 4096x4096: the flat loop is what lets LLVM
# keep the 128-wide inner loops vectorised (a nested loop over a runtime group count ran 10x
# slower; one call per group cost as much as the 512-byte copy); writing the buffer in order
# beats reading the source in order once the arrays leave the cache.


def _helper(fn):
    # Row functions and their helpers are separate (non-inlined) functions: inlined into one big
    # kernel, the same loops ran 2x slower (measured). Only kernels call them, so they need no
    # Python or C entry points: without those, the first f32 T(8,128) kernel compiled cold in
    # 1.45-1.57 s instead of 1.61-1.65 (alternating fresh processes).
    return _cached(numba.njit(nogil=True, error_model="numpy", no_cpython_wrapper=True,
                              no_cfunc_wrapper=True)(fn))


_S8, _S16, _S24 = np.uint32(8), np.uint32(16), np.uint32(24)  # uint32 shifts stay uint32
# Constant int arguments of the row functions, as int64 values: numba compiles a function again
# for each literal it is called with (`_encode_tiled_row` for Literal[int](1): 0.9 s more when a
# process compiled both the square and the tiled kernels, measured).
_ONE, _ZERO = np.int64(1), np.int64(0)


# 64 columns of one word group at a time: the group's p row vectors and its 64 words (256
# bytes) are the same bytes in two orders, converted by two LLVM `shufflevector`s (numba exposes
# no vector type, hence the intrinsics): one inside each 16-byte lane (4 columns), which puts
# each row's 4 columns side by side, and one that moves those 4-column pieces between lanes.
# LLVM picks the instructions for the host (on AVX-512 VBMI, two-source byte permutes). Measured
# on s8 4096x4096 decode, 2 threads, kernel alone, in one run: scalar shifts and masks
# (vectorised into narrowing moves) 0.9x np.copyto, one shuffle straight from words to rows
# 1.1x, the two shuffles 1.4x; the same runs vary by about +-20% on this machine. 16 or 32
# columns at a time ran up to 1.3x slower. Tiles whose width is a multiple of 64 use them.

_COLUMNS = 64  # per shuffle; 16 lanes of 4 columns
# Streaming unzips take two shuffles' columns at a time, so each row goes out as two lines
# per `_store_block`, halving its carry and branch work per line. Old against new kernels in one
# process, 4096x4096 decode: s8 1.3x faster serial and 1.05-1.5x on 2 threads, bf16 1.25-1.4x
# and 1.0-1.3x. Encode's blocks are 4 lines already: 8-line blocks did not gain (0.96-1.03x).
_STREAM_COLUMNS = 128
_I8 = ir.IntType(8)


def _bytes(n):
    return ir.VectorType(_I8, n)


def _shuffle(builder, a, picks, b=None):
    """The vector of a's elements at `picks` (those from len(a) on: b's)."""
    mask = ir.Constant(ir.VectorType(ir.IntType(32), len(picks)), picks)
    return builder.shuffle_vector(a, ir.Constant(a.type, None) if b is None else b, mask)


def _concat(builder, parts):
    """The equal-typed vectors `parts` end to end, padded with undefined ones to a power of
    two of them."""
    padded = 1 << (len(parts) - 1).bit_length()
    parts = parts + [ir.Constant(parts[0].type, None)] * (padded - len(parts))
    while len(parts) > 1:
        n = parts[0].type.count
        mask = ir.Constant(ir.VectorType(ir.IntType(32), 2 * n), list(range(2 * n)))
        parts = [builder.shuffle_vector(parts[i], parts[i + 1], mask)
                 for i in range(0, len(parts), 2)]
    return parts[0]


def _slices(builder, v, n):
    """v cut into n equal vectors."""
    size = v.type.count // n
    return [_shuffle(builder, v, list(range(k * size, (k + 1) * size))) for k in range(n)]


def _strided(builder, start, stride, n):
    """The n indices start + k*stride, k < n."""
    return [builder.add(start, builder.mul(stride, ir.Constant(stride.type, k)))
            for k in range(n)]


def _pointer(context, builder, aty, arr, index, vector):
    """arr[index] as a pointer to a `vector` (an int: that many bytes)."""
    data = context.make_array(aty)(context, builder, arr).data
    vector = _bytes(vector) if isinstance(vector, int) else vector
    return builder.bitcast(builder.gep(data, [index]), vector.as_pointer())


def _group_picks(m):
    """For rows of m-byte elements (4 // m rows to 4-byte words): the byte shuffle inside each
    lane and the piece shuffle that take 64 words to their rows laid end to end."""
    p = 4 // m
    # lane byte 4c + k*m + j (column c, row k, byte j) -> k*4m + c*m + j
    lane = [4 * c + k * m + j for k in range(p) for c in range(4) for j in range(m)]
    inside = [16 * t + i for t in range(_COLUMNS // 4) for i in lane]
    # piece (lane t, row k) at t*p + k -> row k's pieces in lane order
    across = [t * p + k for k in range(p) for t in range(_COLUMNS // 4)]
    return inside, across, ir.IntType(32 * m)


def _permute(builder, v, inside, across, piece, inverse=False):
    """Words to rows, or rows to words with inverse=True (same 256 bytes)."""
    def undo(picks):
        return [picks.index(i) for i in range(len(picks))]
    steps = [(inside, _I8), (across, piece)]
    for picks, element in (reversed(steps) if inverse else steps):
        n = 256 * 8 // element.width
        v = builder.bitcast(v, ir.VectorType(element, n))
        v = _shuffle(builder, v, undo(picks) if inverse else picks)
    return builder.bitcast(v, _bytes(256))


# Streaming stores. Encoding or decoding arrays larger than the last-level cache with plain
# stores reads each output line in before writing it and leaves the output where the next input
# lines should be; non-temporal stores write whole lines straight to memory. Measured on s8
# 4096x4096 encode (16 MiB each way, 2 threads, blocks of 20 calls): 1.2-2.4x np.copyto against
# 0.8-1.3x with plain stores; at 8 MiB each way they were 2x slower than plain stores, as the
# arrays then stay in the cache between calls. They need 64-byte aligned addresses, and numpy
# puts large arrays 16 bytes past a line: each block (a word group's 256 bytes, or one row of
# it when decoding) is then written as the aligned lines it covers, the line it shares with the
# previous block of its run completed from that block's last 64 bytes (`carry`). The partial
# lines at either end of a run get plain stores: a plain store into a line still in flight as a
# streaming store stalled the whole run (30% slower, measured).

_X86 = platform.machine().lower() in ("x86_64", "amd64")
_STREAM_SHIFTS = (0, 16, 32, 48)  # bytes past a line where a block can start (else plain stores)


def _carried(context, builder, carry_type, carry, slot):
    """Carry slot `slot`: the 64 bytes at carry[64 * slot:]."""
    return _pointer(context, builder, carry_type, carry,
                    builder.mul(slot, ir.Constant(slot.type, 64)), 64)


def _past_line(builder, at):
    """How many bytes the i8 pointer `at` lies past a 64-byte line."""
    return builder.and_(builder.ptrtoint(at, ir.IntType(64)), ir.IntType(64)(63))


def _store_block(context, builder, v, out_type, out, o, carry_type, carry, slot, first):
    """Stores the vector v (a whole number of 64-byte lines) at out[o] as one block of a run of
    consecutive blocks written with streaming stores, the last block's last line carried in
    carry slot `slot`; `first` (nonzero) for the run's first block. After a run,
    `_stream_end`."""
    size = v.type.count
    at = builder.bitcast(_pointer(context, builder, out_type, out, o, size), _I8.as_pointer())
    carried = _carried(context, builder, carry_type, carry, slot)
    first = builder.icmp_unsigned("!=", first, ir.Constant(first.type, 0))
    delta = _past_line(builder, at)
    line = builder.gep(at, [builder.neg(delta)])
    vs = _slices(builder, v, size // 64)
    done = builder.append_basic_block("stored")
    other = builder.append_basic_block("unaligned")
    switch = builder.switch(delta, other)
    for d in _STREAM_SHIFTS:
        case = builder.append_basic_block(f"shift{d}")
        switch.add_case(ir.IntType(64)(d), case)
        builder.position_at_end(case)
        if d:
            chain = [builder.load(carried, align=1)] + vs
            picks = ir.Constant(ir.VectorType(ir.IntType(32), 64),
                                list(range(64 - d, 128 - d)))
            lines = [builder.shuffle_vector(chain[k], chain[k + 1], picks)
                     for k in range(len(vs))]
            builder.store(vs[-1], carried, align=1)
        else:
            lines = vs
        for k in range(1, len(lines)):
            _stream_line(builder, lines[k], builder.gep(line, [ir.IntType(64)(64 * k)]))
        with builder.if_else(first) as (head, inner):
            with head:  # the run starts at `at`: only its own bytes of the first line
                part = _shuffle(builder, vs[0], list(range(64 - d)))
                builder.store(part, builder.bitcast(at, part.type.as_pointer()), align=1)
            with inner:
                _stream_line(builder, lines[0], line)
        builder.branch(done)
    builder.position_at_end(other)
    builder.store(v, builder.bitcast(at, v.type.as_pointer()), align=1)
    builder.branch(done)
    builder.position_at_end(done)


def _stream_line(builder, v, line):
    store = builder.store(v, builder.bitcast(line, v.type.as_pointer()), align=64)
    store.set_metadata("nontemporal", builder.module.add_metadata([ir.IntType(32)(1)]))


@intrinsic
def _stream_end(typingctx, out, o, carry, slot):
    """Ends a run of streamed blocks (`_store_block`) that stops before out[o]: stores the bytes
    past its last whole line (from carry slot `slot`). After the runs, `_stream_fence`."""
    def codegen(context, builder, sig, args):
        at = builder.bitcast(_pointer(context, builder, sig.args[0], args[0], args[1], 1),
                             _I8.as_pointer())
        delta = _past_line(builder, at)
        last = builder.load(_carried(context, builder, sig.args[2], args[2], args[3]), align=1)
        done = builder.append_basic_block("ended")
        switch = builder.switch(delta, done)
        for d in _STREAM_SHIFTS[1:]:
            case = builder.append_basic_block(f"tail{d}")
            switch.add_case(ir.IntType(64)(d), case)
            builder.position_at_end(case)
            part = _shuffle(builder, last, list(range(64 - d, 64)))
            start = builder.gep(at, [ir.IntType(64)(-d)])
            builder.store(part, builder.bitcast(start, part.type.as_pointer()), align=1)
            builder.branch(done)
        builder.position_at_end(done)
        return context.get_dummy_value()
    return types.void(out, o, carry, slot), codegen


@intrinsic
def _stream_fence(typingctx):
    """Orders this thread's streaming stores before its later stores (x86 `sfence`, a full
    fence elsewhere), so that the streamed lines are in memory before whoever waits for this
    thread reads them. One per tile row, after all its runs: a full fence after each of the 8
    runs of an s8 tile row made s8 4096x4096 decode 2-5% slower (old and new kernel in one
    process, 2 threads)."""
    def codegen(context, builder, sig, args):
        if _X86:
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence")
            builder.call(fn, [])
        else:
            builder.fence("seq_cst")
        return context.get_dummy_value()
    return types.void(), codegen


_STREAM_BLOCK = 256  # bytes per `_copy_stream` block


@intrinsic
def _copy_stream(typingctx, src, s, out, o, carry, slot, first):
    """Copies _STREAM_BLOCK bytes from src[s] to out[o] as one block of a run of streaming
    stores (`_store_block`, carry slot `slot`)."""
    def codegen(context, builder, sig, args):
        v = builder.load(_pointer(context, builder, sig.args[0], args[0], args[1],
                                  _STREAM_BLOCK), align=1)
        _store_block(context, builder, v, sig.args[2], args[2], args[3], sig.args[4], args[4],
                     args[5], args[6])
        return context.get_dummy_value()
    return types.void(src, s, out, o, carry, slot, first), codegen


def _zip_bytes4(builder, rows):
    """The words of 64 columns of 4 byte rows (4 vectors of 64 bytes) in two stages of 2-input
    shuffles: byte pairs of rows (0, 1) and (2, 3), each lane holding 4 columns for one output
    vector and 4 for the next, then each lane's 16-bit pairs interleaved (x86: 4 two-source
    byte permutes and 4 word unpacks, against 8 dword permutes, 4 aligns and 4 byte shuffles
    for `_permute`'s single 256-byte shuffle). s8 4096x4096 encode, 2 threads, old against new
    kernels in one process (medians of four runs): 630 -> 609, 554 -> 526, 523 -> 483 and
    540 -> 509 us; 512 KiB in the cache, serial, 16 -> 15 us. Decoding the same way did not
    gain."""
    def pairs(x, y, half):  # lane L: columns 32*half + 4L + q (q < 4), then 16 columns on
        return _shuffle(builder, x, [k * 64 + 32 * half + off + 4 * lane + q for lane in range(4)
                                     for off in (0, 16) for q in range(4) for k in (0, 1)], y)

    words = ir.VectorType(ir.IntType(16), 32)
    out = []
    for half in (0, 1):
        ab = builder.bitcast(pairs(rows[0], rows[1], half), words)
        cd = builder.bitcast(pairs(rows[2], rows[3], half), words)
        for high in (0, 1):  # vpunpck{l,h}wd: each lane's low (high) 4 pairs of ab and cd
            out.append(builder.bitcast(_shuffle(builder, ab, [k * 32 + 8 * lane + 4 * high + q
                                                              for lane in range(4)
                                                              for q in range(4)
                                                              for k in (0, 1)], cd),
                                       _bytes(64)))
    return _concat(builder, out)


def _group_shuffle(p):
    """(intrinsics) `zip(src, s, rs, out, o)` packs 64 columns of rows src[s + k*rs], k < p,
    into the words out[o:o+64]; `unzip(buf, o, dst, s, rs)` is its inverse. Their streaming
    twins take `carry, first` (zip) or `carry, slot, first` (unzip: _STREAM_COLUMNS columns,
    row k through carry slot `slot + k`) and store with `_store_block`. 32 // p bits per
    element; with 4 bits, word byte h holds rows 2h (low nibble) and 2h + 1, and they move as
    the 8-bit rows h of two word vectors; zip ignores the source bytes' high nibbles and unzip
    writes them zero (the kernels' contract, as for the scalar masks)."""
    m = max(4 // p, 1)
    inside, across, piece = _group_picks(m)
    row = _COLUMNS * m  # bytes

    def packed(context, builder, sig, args):
        rows = [builder.load(_pointer(context, builder, sig.args[0], args[0], i, row), align=1)
                for i in _strided(builder, args[1], args[2], p)]
        if p == 4:
            return _zip_bytes4(builder, rows)
        if p == 8:  # row 2h's low nibbles | row 2h + 1's in the high ones
            low = ir.Constant(_bytes(row), [15] * row)
            four = ir.Constant(_bytes(row), [4] * row)
            rows = [builder.or_(builder.and_(rows[2 * h], low),
                                builder.shl(rows[2 * h + 1], four)) for h in range(4)]
        return _permute(builder, _concat(builder, rows), inside, across, piece, inverse=True)

    def unpacked(context, builder, sig, args):
        v = builder.load(_pointer(context, builder, sig.args[0], args[0], args[1], 256), align=1)
        if p == 8:  # rows 2h, 2h + 1: the low and high nibbles of rows h
            nibbles = [builder.and_(v, ir.Constant(v.type, [15] * 256)),
                       builder.lshr(v, ir.Constant(v.type, [4] * 256))]
            halves = [_slices(builder, _permute(builder, x, inside, across, piece), 4)
                      for x in nibbles]
            rows = [halves[k % 2][k // 2] for k in range(8)]
        else:
            rows = _slices(builder, _permute(builder, v, inside, across, piece), p)
        return zip(rows, _strided(builder, args[3], args[4], p))

    @intrinsic
    def zip_(typingctx, src, s, rs, out, o):
        def codegen(context, builder, sig, args):
            builder.store(packed(context, builder, sig, args),
                          _pointer(context, builder, sig.args[3], args[3], args[4], 256), align=1)
            return context.get_dummy_value()
        return types.void(src, s, rs, out, o), codegen

    @intrinsic
    def zip_stream(typingctx, src, s, rs, out, o, carry, first):
        def codegen(context, builder, sig, args):
            _store_block(context, builder, packed(context, builder, sig, args), sig.args[3],
                         args[3], args[4], sig.args[5], args[5], ir.IntType(64)(0), args[6])
            return context.get_dummy_value()
        return types.void(src, s, rs, out, o, carry, first), codegen

    @intrinsic
    def unzip(typingctx, buf, o, dst, s, rs):
        def codegen(context, builder, sig, args):
            for r, i in unpacked(context, builder, sig, args):
                builder.store(r, _pointer(context, builder, sig.args[2], args[2], i, row),
                              align=1)
            return context.get_dummy_value()
        return types.void(buf, o, dst, s, rs), codegen

    @intrinsic
    def unzip_stream(typingctx, buf, o, dst, s, rs, carry, slot, first):
        def codegen(context, builder, sig, args):
            blocks = []
            for b in range(_STREAM_COLUMNS // _COLUMNS):
                shift = ir.Constant(args[1].type, b * _COLUMNS)
                blocks.append(list(unpacked(context, builder, sig, [
                    args[0], builder.add(args[1], shift), args[2], builder.add(args[3], shift),
                    args[4]])))
            for k, (_, i) in enumerate(blocks[0]):
                r = _concat(builder, [block[k][0] for block in blocks])
                _store_block(context, builder, r, sig.args[2], args[2], i, sig.args[5], args[5],
                             builder.add(args[6], ir.Constant(args[6].type, k)), args[7])
            return context.get_dummy_value()
        return types.void(buf, o, dst, s, rs, carry, slot, first), codegen

    return zip_, unzip, zip_stream, unzip_stream


_zip2, _unzip2, _zip2_stream, _unzip2_stream = _group_shuffle(2)
_zip4, _unzip4, _zip4_stream, _unzip4_stream = _group_shuffle(4)
_zip8, _unzip8, _zip8_stream, _unzip8_stream = _group_shuffle(8)


# Transposed sources (rows side by side in memory, columns `cs` apart) of 32- or 64-bit elements
# move in square blocks of n = 64 // itemsize rows by n columns: one cache line of each of n
# columns, which `_transposed` turns into the n // a tile rows' rows; each column then goes down
# _SQUARES blocks before the next n columns (the square kernels below). Element by element,
# each column's line was fetched once per tile row and evicted in between (a column's lines all
# share one L1 set when cs is a multiple of 4 KiB). f32[64,64,64]{0,2,1:T(4,8)(2,1)} (pairs as
# 64-bit words), 2 threads, asv: encode 0.13x -> 0.7x np.copyto, decode 0.12x -> 0.45x (one
# block at a time instead of _SQUARES: 0.35x / 0.43x), then about 0.85x / 0.75x once the blocks
# start on cache lines (`_square_sweep`). A block of 64-bit words costs 5 ns with its lines
# in L1 and 19 ns from L2 (serial, in a loop), 12-15 ns with the array and buffer in 2 MiB
# pages (64^3 encode 40 -> 30 us serial): the rest is the 4 KiB pages a block's lines span,
# which software prefetch of the next blocks' lines did not hide (no gain, measured). Decoding
# 64-bit elements, sweeps cover up to 1 MiB of tile rows, so each column goes further down
# before the next (`_square_band`), and the threads split sweeps too few to share into column
# parts (`decode_square_par`). Old against new kernels in one process, 16 bytes past a line:
# 64^3 decode 1.2x faster serial, 1.1-1.15x on 2 threads, f32[1024,1024]{0,1:T(8,128)(2,1)}
# 1.4x both; 32-bit elements and encoding as before. The 64^3 public decode went from 0.71x to
# 0.86-0.88x np.copyto (asv, two runs). Encoding, sweeps cover up to 256 KiB of tile rows:
# 64^3 (1 KiB per tile row, 16 KiB sweeps before) 1.05x faster serial and 1.05-1.2x on 2
# threads, over 8 allocations in one process (1 MiB sweeps left 2 threads one sweep to share).


def _transpose_stages(n):
    """The 2-input shuffles that transpose n vectors of n elements (one 512-bit register each)
    in log2(n) stages, each a form x86 has one instruction for: element-group unpacks inside
    128-bit lanes, then 128-bit lane picks (`vshufi64x2`). Stage by stage: (stride, low mask,
    high mask) for the pairs (i, i + stride); and which output row ends up at each place."""
    lane = n // 4

    def unpack(g, high):  # each lane's low (high) half of its g-element groups, A's, B's in turn
        half = lane // (2 * g)
        return [side + l * lane + (k + high * half) * g + e for l in range(4)
                for k in range(half) for side in (0, n) for e in range(g)]

    def lanes(odd):
        return [side + s * lane + e for side in (0, n) for s in (odd, odd + 2)
                for e in range(lane)]
    out = [(g, unpack(g, 0), unpack(g, 1)) for g in (1, 2, 4) if g < lane]
    out += [(s, lanes(0), lanes(1)) for s in (lane, 2 * lane) if s < n]
    labels = [[(c, r) for r in range(n)] for c in range(n)]  # (column, row) at each place
    for stride, low, high in out:
        for i in range(n):
            if not i & stride:
                pair = labels[i] + labels[i + stride]
                labels[i], labels[i + stride] = [pair[k] for k in low], [pair[k] for k in high]
    # each place holds one row, its columns in order
    assert all(v == [(c, v[0][1]) for c in range(n)] for v in labels)
    return out, [v[0][1] for v in labels]


_TRANSPOSE_STAGES = {n: _transpose_stages(n) for n in (8, 16)}


def _transposed(builder, vs):
    """Rows of the square whose columns are `vs` (see `_transpose_stages`). One shuffle of all
    n vectors at once left the choice of instructions to LLVM: 20 two-source permutes, 8 inserts
    and register spills per 8x8 block of 64-bit words, 10.4 ns per block in L1 (measured)."""
    n = len(vs)
    stages, rows = _TRANSPOSE_STAGES[n]
    vs = list(vs)
    for stride, low, high in stages:
        for i in range(n):
            if not i & stride:
                a, b = vs[i], vs[i + stride]
                vs[i], vs[i + stride] = (
                    builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(ir.IntType(32), n), m))
                    for m in (low, high))
    out = [None] * n
    for v, r in zip(vs, rows):
        out[r] = v
    return out


def _square_shuffle(a):
    """(intrinsics) `columns_to_rows(src, s, cs, out, o, tc, step)` moves the block
    src[s + c*cs + r], r, c < n, to its tile rows: row r at out[o + (r//a)*step + (r%a)*tc:];
    `rows_to_columns(buf, o, tc, step, dst, s, cs)` is its inverse."""
    def row_offsets(builder, o, tc, step, n):
        return [builder.add(o, builder.add(
            builder.mul(step, ir.Constant(step.type, r // a)),
            builder.mul(tc, ir.Constant(tc.type, r % a)))) for r in range(n)]

    def vector_of(sig):
        element = ir.IntType(sig.args[0].dtype.bitwidth)
        return ir.VectorType(element, 512 // element.width)

    @intrinsic
    def columns_to_rows(typingctx, src, s, cs, out, o, tc, step):
        def codegen(context, builder, sig, args):
            vector = vector_of(sig)
            n = vector.count
            vs = [builder.load(_pointer(context, builder, sig.args[0], args[0], i, vector),
                               align=1) for i in _strided(builder, args[1], args[2], n)]
            for v, i in zip(_transposed(builder, vs), row_offsets(builder, *args[4:7], n)):
                builder.store(v, _pointer(context, builder, sig.args[3], args[3], i, vector),
                              align=1)
            return context.get_dummy_value()
        return types.void(src, s, cs, out, o, tc, step), codegen

    @intrinsic
    def rows_to_columns(typingctx, buf, o, tc, step, dst, s, cs):
        def codegen(context, builder, sig, args):
            vector = vector_of(sig)
            n = vector.count
            vs = [builder.load(_pointer(context, builder, sig.args[0], args[0], i, vector),
                               align=1) for i in row_offsets(builder, *args[1:4], n)]
            for v, i in zip(_transposed(builder, vs), _strided(builder, args[5], args[6], n)):
                builder.store(v, _pointer(context, builder, sig.args[4], args[4], i, vector),
                              align=1)
            return context.get_dummy_value()
        return types.void(buf, o, tc, step, dst, s, cs), codegen

    return columns_to_rows, rows_to_columns


_columns_to_rows2, _rows_to_columns2 = _square_shuffle(2)
_columns_to_rows4, _rows_to_columns4 = _square_shuffle(4)
_columns_to_rows8, _rows_to_columns8 = _square_shuffle(8)


_SQUARES = 4  # square blocks stacked per sweep, at least
_SWEEP_BYTES = 1 << 20  # 64-bit decoding: sweeps of up to this many bytes (`_square_band`)
_ENCODE_SWEEP_BYTES = 1 << 18  # encoding: the same


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


@numba.njit(inline="always", nogil=True, error_model="numpy")
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


_BLOCK = 8  # tile rows per column sweep when decoding into strided columns


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


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _rows_block(boffs, t, nb, nr, step):
    """(batch start, first tile row, tile rows, buffer offset) of the t-th call of a driver that
    hands nb tile rows of each batch's nr to each row-function call."""
    blocks = (nr + nb - 1) // nb
    b = t // blocks
    i = (t - b * blocks) * nb
    return boffs[_u(b)], i, min(nb, nr - i), (b * nr + i) * step


_RUN = 16  # tile rows per row-function call when each is one whole tile (see `_run_rows`)


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _run_rows(C, tc, cs, step, tile):
    """Tile rows per row-function call: _RUN when every tile row is one whole tile of
    contiguous columns, the tile rows `tile` apart in the buffer (they then move as one run of
    tiles, a * rs apart in the source; bf16[32768,128]{1,0:T(8,128)(2,1)} one tile row per call
    was 1.5x slower, measured), else 1."""
    return _RUN if C == tc and cs == 1 and step == tile else 1


# Streaming stores for the tiled kernels (`stream`, set by `tiling._engine` once the array and
# its buffer outgrow the last-level cache): a tile row's whole tiles are copied in 256-byte
# blocks through `_store_block`, encoding as one run into the buffer, decoding as one run per
# row of the tiles; the edge tiles go through the plain row functions. Only for contiguous
# columns and tile rows of whole 256-byte blocks (f32 T(8,128): 512 bytes), else plain stores.
# Public calls with streaming off against on, 2 threads, one process, as np.copyto of the same
# bytes / call: f32[4096,4096]{1,0:T(8,128)} encode 1.28x -> 1.75x, decode 1.30x -> 1.88x;
# f32[8,1024,1024] 1.24x -> 1.7x, 1.24x -> 1.85x; f32[2048,2048] (32 MiB with its buffer,
# the threshold here) 1.32-1.41x -> 1.50-1.59x, 1.19-1.31x -> 1.55-1.67x.


@numba.njit(inline="always", nogil=True, error_model="numpy")
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
    nb = 1 if stream else _run_rows(C, tc, cs, step, a * tc) if cs == 1 else _BLOCK
    for t in range(boffs.size * -(-nr // nb)):
        sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
        done = (_decode_tiles_stream(buf, sb, i, rs, R, C, a, tc, dst, o, carry, t * a)
                if stream else 0)
        _decode_tiled_row(buf, sb + done, i, n, rs, cs, R, C - done, a, tc, dst, o + done * a,
                          step)
    return None


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _rows8(src, s, rs, bits, mask, c):
    """8 rows of column c, the low `bits` of row k at bit k*bits."""
    w = np.uint32(src[_u(s + c)]) & np.uint32(mask)
    for k in range(1, 8):
        w |= (np.uint32(src[_u(s + k * rs + c)]) & np.uint32(mask)) << np.uint32(k * bits)
    return w


_PRED_COLUMNS = 4096  # columns per `_pack_pred` sweep: its scratch is 4 bytes per column


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _scratch(p, a):
    """The 1-bit packers' byte scratch (`_pack_pred`, `_unpack_pred_128`); for the others the
    carry slots of streaming stores (`_store_block`), one per row of a tile (decoding)."""
    return np.empty(4 * _PRED_COLUMNS if p == 32 else 64 * a, np.uint8)


@_helper
def _pack_tiles(src, s, rs, p, ng, nt, tc, ts, out, o, tmp, stream):
    """nt whole tiles of ng groups of p rows (stride rs) and tc contiguous columns, from src[s]
    (`ts` apart) into words from out[o], in buffer order; p * bits == 32 fixes the shifts.
    `stream`: word groups go out as one run of streaming stores (`_store_block`)."""
    if p == 32 and ng == 1:  # 1-bit, one group per tile
        if ts == tc:  # tiles side by side: their words are consecutive
            for c0 in range(0, nt * tc, _PRED_COLUMNS):
                _pack_pred(src, s + c0, rs, min(_PRED_COLUMNS, nt * tc - c0), out, o + c0, tmp)
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
            _pack_groups(src, _unit_start(t, ng, s, ts, p, rs), rs, 1, p, 1, p, tc, 32 // p, tc,
                         out, o + t * tc)
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


@_helper
def _pack_pred(src, s, rs, n, out, o, tmp):
    """1-bit `(32,p)(32,1)`: 32 whole rows of n contiguous columns into n consecutive words.
    Rows are first packed 8 to a byte in uint8 lanes (`tmp`, 4n bytes; 4x denser than building
    uint32 words row by row), then 4 bytes per word. With n a whole row of tiles, each row is
    read in one sequential sweep: 128 columns at a time kept 32 rows in flight, which the
    prefetchers could not follow (4096x4096 bools, serial: 1.3 ms against 0.75 ms, measured)."""
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


@_helper
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


@_kernel
def encode_packed(src, boffs, rs, cs, R, C, a, tc, p, bits, out, step, stream):
    nr = (R + a - 1) // a
    nb = _run_rows(C, tc, cs, step, a // p * tc)
    tmp = _scratch(p, a)
    for t in range(boffs.size * -(-nr // nb)):
        sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
        _encode_packed_row(src, sb, i, n, rs, cs, R, C, a, tc, p, bits, out, o, step, tmp,
                           stream)
    return None


@numba.njit(inline="always", nogil=True, error_model="numpy")
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
    rows' rows goes out as one run of streaming stores (a loop of its own, as in `_pack_tiles`);
    `stream` 2: only the rows of each tile's first ng // 2 word groups, the others' plainly
    (see `tiling._engine._stream_mode`)."""
    if p == 32 and tc == 128:  # 1-bit
        for t in range(nt * ng):
            _unpack_pred_128(buf, o + t * tc, dst, _unit_start(t, ng, s, ts, p, rs), rs, tmp)
        return None
    if tc % _STREAM_COLUMNS == 0 and p in (2, 4, 8) and stream and ts == tc:
        streamed = ng if stream == 1 else max(ng // 2, 1)  # word groups per tile
        for t in range(nt * ng):
            sg, og = _unit_start(t, ng, s, ts, p, rs), o + t * tc
            if t % ng >= streamed:
                _unzip_group(buf, og, dst, sg, rs, p, tc)
                continue
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
            for r in range(streamed * p):
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
            _unpack_groups(buf, o + t * tc, p, 1, p, 32 // p, tc, tc, dst,
                           _unit_start(t, ng, s, ts, p, rs), rs, 1)
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


@_helper
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


@_helper
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


@_kernel
def decode_packed(buf, boffs, rs, cs, R, C, a, tc, p, bits, dst, step, stream):
    nr = (R + a - 1) // a
    nb = _run_rows(C, tc, cs, step, a // p * tc)
    tmp = _scratch(p, a)
    for t in range(boffs.size * -(-nr // nb)):
        sb, i, n, o = _rows_block(boffs, t, nb, nr, step)
        _decode_packed_row(buf, sb, i, n, rs, cs, R, C, a, tc, p, bits, dst, o, step, tmp,
                           stream)
    return None


# Square kernels: T(a, tc) with a in (2, 4, 8) over a transposed source (rs == 1) of 32- or
# 64-bit elements, tc a multiple of n = 64 // itemsize; k = n // a tile rows per square block
# (`tiling._engine` checks all that). Blocks of k * _SQUARES tile rows: their whole tiles
# through `_encode_square` / `_decode_square`, the rest through the tiled row functions.


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


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _square_band(C, a, k, itemsize, encode):
    """Tile rows per sweep of the square kernels: k * _SQUARES, or more while a sweep's tile rows
    stay within _ENCODE_SWEEP_BYTES (encoding) or _SWEEP_BYTES (decoding 64-bit elements). Further
    down columns of 32-bit elements, decoding ran 1.2x slower (16 columns' lines at a time, where 8
    fit one L1 set); encoding 64-bit ones past 256 KiB too (f32[1024,1024]{0,1:T(8,128)(2,1)}
    serial)."""
    if encode:
        return max(k * _SQUARES, _ENCODE_SWEEP_BYTES // (a * C * itemsize) // k * k)
    if itemsize != 8:
        return k * _SQUARES
    return max(k * _SQUARES, _SWEEP_BYTES // (a * C * itemsize) // k * k)


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _square_sweep(strided, boffs, a, band, nr, t, step):
    """(batch start, first tile row, tile rows, buffer offset) of sweep t of the square kernels,
    1 + ceil(nr / band) sweeps per batch; `strided` is the transposed side. A batch's sweep 0
    takes the tile rows before the first whose column lines start on a 64-byte boundary (when
    whole tile rows reach one), the others `band` tile rows each: square blocks whose lines
    straddle two cache lines ran 1.5x slower (decode, measured)."""
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
            _decode_square_rows(buf, sb, i, rows, cs, R, C, a, tc, k, dst, o, step, 0, 1)
    return None


# ---------------------------------------------------------------------------------------------
# Tiny tiles T(a, tc), tc <= 4 (the doc's `T(*,*,2,*,3)` is T(2,3) over merged dims): one kernel
# pair per (a, tc), compiled with both as constants. Whole tiles move lcm(tc, 16) columns of a
# tile row at a time through one shuffle between the a row vectors and the tiles, the rest
# element by element in loops LLVM unrolls (the edge tiles through `_encode_tiled_row` /
# `_decode_tiled_row`). Numba caches each kernel on disk under its constants. Columns are
# contiguous (cs == 1). Measured on the doc's f32 T(*,*,2,*,3) (4.7 MiB): encode 0.28x
# np.copyto through the permutation path, 0.7x element by element, 1.26x with the shuffle and
# the `_par` twins; decode 0.25x (permutation path), 0.7x serial with the shuffle, 1.26x.

_TINY_ELEMENTS = 256  # the most elements one tiny-tile shuffle moves (a * columns)


def _tile_shuffle(a, tc, n):
    """(intrinsics) `zip(src, s, rs, out, o)` moves columns [0, n) of rows src[s + r*rs], r < a,
    into their n // tc tiles at out[o:]; `unzip(buf, o, dst, s, rs)` is its inverse."""
    tiles = [r * n + t * tc + c for t in range(n // tc) for r in range(a) for c in range(tc)]
    rows = [tiles.index(i) for i in range(a * n)]

    @intrinsic
    def zip_(typingctx, src, s, rs, out, o):
        def codegen(context, builder, sig, args):
            row = ir.VectorType(ir.IntType(sig.args[0].dtype.bitwidth), n)
            vs = [builder.load(_pointer(context, builder, sig.args[0], args[0], i, row), align=1)
                  for i in _strided(builder, args[1], args[2], a)]
            v = _shuffle(builder, _concat(builder, vs), tiles)
            builder.store(v, _pointer(context, builder, sig.args[3], args[3], args[4], v.type),
                          align=1)
            return context.get_dummy_value()
        return types.void(src, s, rs, out, o), codegen

    @intrinsic
    def unzip(typingctx, buf, o, dst, s, rs):
        def codegen(context, builder, sig, args):
            whole = ir.VectorType(ir.IntType(sig.args[0].dtype.bitwidth), a * n)
            v = builder.load(_pointer(context, builder, sig.args[0], args[0], args[1], whole),
                             align=1)
            v = _shuffle(builder, v, rows)
            for r, i in enumerate(_strided(builder, args[3], args[4], a)):
                part = _shuffle(builder, v, list(range(r * n, (r + 1) * n)))
                builder.store(part, _pointer(context, builder, sig.args[2], args[2], i,
                                             part.type), align=1)
            return context.get_dummy_value()
        return types.void(buf, o, dst, s, rs), codegen

    return zip_, unzip


@functools.cache
def tiny_tiles(a, tc):
    """The kernels for T(a, tc) tiles, tc <= 4: encode, decode and their `_par` twins."""
    n = 16 * tc // math.gcd(tc, 16)
    per = n // tc if a * n <= _TINY_ELEMENTS else 0  # tiles per shuffle; 0: no shuffle
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


# ---------------------------------------------------------------------------------------------
# Parallel drivers: the fast-path kernels over numba's threads, one tile row per iteration.
# `tiling._engine` calls them only for arrays of at least PARALLEL_BYTES and only when it holds
# its parallel lock (see there): numba's `workqueue` threading layer, the default without TBB or
# OpenMP, aborts the process when two Python threads launch parallel kernels at once, and GNU
# OpenMP aborts in a fork()ed child of a process that used it. Thread count: numba's
# (`NUMBA_NUM_THREADS`, `numba.set_num_threads`). Each repeats its serial twin's few driver
# lines with `prange`: numba names a disk-cache entry after the function and its line, so one
# function jitted both ways would share (and overwrite) one entry.


# The four tile-row drivers below share their units out by work stealing: thread th takes
# units from the front of its own equal range, then from the back of the others' (its v-th
# range is (th + v) % T). prange's static split waits for the slower thread, and a core can
# be slower for seconds at a time (another tenant on its host core, or a busy process here):
# s8 4096x4096 encode, 2 threads, traced one thread done in 330-400 us and the other in
# 585-665; stolen, both ended within 3 us. Old against new kernels in one process (medians):
# s8 encode 557 -> 516 and 651 -> 605 us, decode, f32 and bf16 4096x4096 and the 1 MiB
# cases the same or faster; with a busy loop pinned to one of the 2 cores, f32 encode 3.5 ->
# 2.3 ms and s8 encode 5.2 -> 0.7 ms.
_LINE_WORDS = 8  # int64 counters a cache line apart: the threads claim without sharing a line


@intrinsic
def _fetch_add(typingctx, counters, i, amount):
    """counters[i] += amount, atomically; returns the value before."""
    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        return builder.atomic_rmw("add", builder.gep(data, [args[1]]), args[2], "monotonic")
    return types.int64(counters, i, amount), codegen


@intrinsic
def _num_threads(typingctx):
    """numba.get_num_threads() for kernels: its own jitted form reads a ctypes global, which
    keeps numba from caching the kernel; this calls the threading layer's C function (an
    `int`; declared as numba's parfors declare it) directly."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(64), []),
                                            "get_num_threads")
        return builder.sext(builder.trunc(builder.call(fn, []), ir.IntType(32)), ir.IntType(64))
    return types.int64(), codegen


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _claims(units):
    """The claim counters for sharing `units` over min(numba's threads, units) threads:
    the low 32 bits of a range's counter count the units taken from its front, the high ones
    those taken from its back."""
    claims = np.empty(min(max(_num_threads(), 1), units) * _LINE_WORDS, np.int64)
    for k in range(claims.size):
        claims[k] = 0
    return claims


@numba.njit(inline="always", nogil=True, error_model="numpy")
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


@numba.njit(inline="always", nogil=True, error_model="numpy")
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
    nb = 1 if stream else _run_rows(C, tc, cs, step, a * tc) if cs == 1 else _BLOCK
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


@_parallel_kernel
def encode_packed_par(src, boffs, rs, cs, R, C, a, tc, p, bits, out, step, stream):
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


@_parallel_kernel
def decode_packed_par(buf, boffs, rs, cs, R, C, a, tc, p, bits, dst, step, stream):
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


_PARTS = 8


@numba.njit(inline="always", nogil=True, error_model="numpy")
def _square_parts(C, tc, units):
    """Column parts for `decode_square_par`: with fewer than _PARTS sweeps, the threads could
    not share them out evenly, so each sweep's whole tiles are cut in up to _PARTS parts."""
    return 1 if units >= _PARTS else max(1, min(_PARTS, C // tc))


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


# ---------------------------------------------------------------------------------------------
# Generic path: any layout the reference accepts. The position of an element on either side is a
# sum over *groups* of logical dims of a table lookup (tiles only ever split a dim, so without `*`
# every physical dim is its own group and the position is sum_d table_d[i_d]; a `*` merge joins
# the merged dims into one group indexed row-major by `radix`). A strided array is the special
# case table_d[i] = i * stride_d. `move` copies element i of the index space from the source
# position to the destination position, looping over `sizes` (outer to inner) with an odometer.
#   side arguments: grp[d] group of loop dim d, rad[d] its radix in that group,
#                   toff[g] where group g's table starts in tab, tab the concatenated tables,
#                   run, step: the inner dim's group table is tab[start] + k*step for the k-th
#                   index of each aligned block of `run` indices (run=1 when nothing is known).


@_kernel
def move(sizes, src, s_grp, s_rad, s_toff, s_tab, s_run, s_step,
         dst, d_grp, d_rad, d_toff, d_tab, d_run, d_step):
    r = sizes.size
    for d in range(r):
        if sizes[d] == 0:
            return None
    inner = sizes[r - 1]
    s_gin = s_grp[r - 1]
    s_rin = s_rad[r - 1]
    d_gin = d_grp[r - 1]
    d_rin = d_rad[r - 1]
    idx = np.zeros(r, np.int64)
    s_gidx = np.zeros(s_toff.size, np.int64)
    d_gidx = np.zeros(d_toff.size, np.int64)
    rows = 1
    for d in range(r - 1):
        rows *= sizes[d]
    for _ in range(rows):
        s_gidx[:] = 0
        d_gidx[:] = 0
        for d in range(r - 1):
            s_gidx[s_grp[d]] += idx[d] * s_rad[d]
            d_gidx[d_grp[d]] += idx[d] * d_rad[d]
        s_base = 0
        for g in range(s_toff.size):
            if g != s_gin:
                s_base += s_tab[_u(s_toff[g] + s_gidx[g])]
        d_base = 0
        for g in range(d_toff.size):
            if g != d_gin:
                d_base += d_tab[_u(d_toff[g] + d_gidx[g])]
        # The inner dim's table is arithmetic (step) inside aligned blocks of `run` group
        # indices, so it is walked run by run: one table lookup per run, not per element.
        # (run positions are tracked by subtraction: a division per run cost more than the run)
        s_left = s_run - s_gidx[s_gin] % s_run
        d_left = d_run - d_gidx[d_gin] % d_run
        i = 0
        while i < inner:
            n = min(inner - i, s_left, d_left)
            sp = s_base + s_tab[_u(s_toff[s_gin] + s_gidx[s_gin] + i * s_rin)]
            dp = d_base + d_tab[_u(d_toff[d_gin] + d_gidx[d_gin] + i * d_rin)]
            if s_step == 1 and d_step == 1:
                for k in range(n):
                    dst[_u(dp + k)] = src[_u(sp + k)]
            else:
                for k in range(n):
                    dst[_u(dp + k * d_step)] = src[_u(sp + k * s_step)]
            i += n
            s_left -= n
            if s_left == 0:
                s_left = s_run
            d_left -= n
            if d_left == 0:
                d_left = d_run
        d = r - 2
        while d >= 0:
            idx[d] += 1
            if idx[d] < sizes[d]:
                break
            idx[d] = 0
            d -= 1
    return None


# ---------------------------------------------------------------------------------------------
# Sub-byte packing for the generic path (E(1), E(2), E(4)): element k at bit k*bits, LSB first.


@_kernel
def pack_bits(values, bits, out):
    per = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    n = values.size
    full = n // per
    for byte in range(full):
        acc = np.uint8(0)
        for k in range(per):
            acc |= (values[_u(byte * per + k)] & mask) << np.uint8(k * bits)
        out[_u(byte)] = acc
    if full * per < n:
        acc = np.uint8(0)
        for k in range(n - full * per):
            acc |= (values[_u(full * per + k)] & mask) << np.uint8(k * bits)
        out[_u(full)] = acc
    return None


@_kernel
def unpack_bits(buf, bits, values):
    per = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    for e in range(values.size):
        values[_u(e)] = (buf[_u(e // per)] >> np.uint8((e % per) * bits)) & mask
    return None


# ---------------------------------------------------------------------------------------------
# Permutation path for layouts that move elements in runs of 1-4 (e.g. `(2,1)` on 32-bit
# elements, `T(*,*,2,*,3)`): perm[i] is the buffer position of element i of the C-order array.
# One index load per element beats `move`'s per-run table walk by 5-6x there (measured).


@_kernel
def scatter(src, perm, dst):
    for i in range(perm.size):
        dst[_u(perm[_u(i)])] = src[_u(i)]
    return None


@_kernel
def gather(buf, perm, dst):
    for i in range(perm.size):
        dst[_u(i)] = buf[_u(perm[_u(i)])]
    return None
