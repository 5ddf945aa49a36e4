"""LLVM intrinsics for the loops LLVM's own vectorisation fell short on: they load, shuffle and
store whole LLVM vectors (numba exposes no vector type). numba's boundscheck does not see inside
them: their callers hand them whole tiles only, and a test runs every one against guard pages.

- word groups (`_group_shuffle`, for `packed`): p rows of 64 columns <-> 64 uint32 words;
- streaming stores (`_store_block`, `_stream_end`, `_stream_fence`, `_copy_stream`, for `tiled`
  and `packed`): whole cache lines written past the cache, for arrays larger than it;
- square transposes (`_square_shuffle`, for `square`): an n x n block of a transposed source
  <-> its tile rows;
- tiny tiles (`_tile_shuffle`, for `tiny`): a rows of lcm(tc, 16) columns <-> their tiles;
- atomics for the parallel drivers' work stealing (`_fetch_add`, `_num_threads`).
"""

from __future__ import annotations

import platform

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

# 64 columns of one word group at a time: the group's p row vectors and its 64 words (256
# bytes) are the same bytes in two orders, converted by two LLVM `shufflevector`s (numba exposes
# no vector type, hence the intrinsics): one inside each 16-byte lane (4 columns), which puts
# each row's 4 columns side by side, and one that moves those 4-column pieces between lanes.
# LLVM picks the instructions for the host (on AVX-512 VBMI, two-source byte permutes). Two
# shuffles beat one straight from words to rows and scalar shifts and masks; 16 or 32 columns at
# a time ran slower. Tiles whose width is a multiple of 64 use them.

_COLUMNS = 64  # per shuffle; 16 lanes of 4 columns
# Streaming unzips take two shuffles' columns at a time, so each row goes out as two lines
# per `_store_block`, halving its carry and branch work per line (encode's blocks are 4 lines
# already: 8-line blocks did not gain).
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
# lines should be; non-temporal stores write whole lines straight to memory (below the cache
# size they are slower: the arrays then stay in the cache between calls; see
# `tiling._runtime.STREAM_BYTES`). They need 64-byte aligned addresses, and numpy
# puts large arrays 16 bytes past a line: each block (a word group's 256 bytes, or one row of
# it when decoding) is then written as the aligned lines it covers, the line it shares with the
# previous block of its run completed from that block's last 64 bytes (`carry`). The partial
# lines at either end of a run get plain stores: a plain store into a line still in flight as a
# streaming store stalled the whole run.

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
    thread reads them. One per tile row, after all its runs (not one per run)."""
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
    """Rows of the square whose columns are `vs` (see `_transpose_stages`). (One shuffle of all
    n vectors at once left the choice of instructions to LLVM, which spilled registers.)"""
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
