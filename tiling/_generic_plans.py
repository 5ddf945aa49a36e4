"""Generic plans: any layout the reference accepts, through tables.

`generic_plan` serves what `tiling._fast_plans` does not: `*` runs, tiles of three or more
entries, sub-byte and widened storage, 128-bit elements. Its kernel is `move`, which walks the
array and the buffer in one nested loop whose inner dims and strides come from tables built
here (`tiling._geometry`); storage narrower or wider than the container goes through a
temporary (`pack_bits`/`unpack_bits`, or the reference's packing). C-contiguous arrays of at
most PERM_MAX elements whose runs are at most PERM_RUN long take the permutation kernels
(`scatter`/`gather`) instead, with a table of each element's buffer position.
"""

from __future__ import annotations

import numpy as np

from tiling import _reference, _runtime
from tiling._geometry import (
    _add_word_dim, _buffer_positions, _geometry, _kernel_args, _loop, _num_final,
    _side_for_array, _side_for_layout, _span, _storage_bits, _words,
)
from tiling._runtime import Plan, call, specialised
from tiling._tuning import PERM_MAX, PERM_RUN
from tiling.dtypes import ElementType
from tiling.layout import Layout

def generic_plan(a: np.ndarray, layout: Layout, element: ElementType,
                 encode: bool) -> Plan | None:
    """Plan for the table-driven `move` kernel (or the permutation kernels), or None for
    strides that are not whole elements; `a` is the logical container array."""
    if _geometry(a) is None:
        return None
    kernels = _runtime.load_kernels()
    dims = a.shape
    nbits = _storage_bits(layout, element)
    natural = a.itemsize * 8
    words = 2 if a.itemsize == 16 else 1
    word = np.dtype(np.uint64) if words == 2 else a.dtype
    physical = tuple(dims[d] for d in layout.major_to_minor)
    n_final = _num_final(physical, layout)
    used = -(-n_final * nbits // 8)
    order, sizes = _loop(dims, layout, words)
    side = _side_for_layout(dims, layout, words)
    if words == 2:
        side = _add_word_dim(side)
    sizes, array_args, layout_args = _kernel_args([_side_for_array(a), side], order, sizes,
                                                  item=word.itemsize, writes=1 if encode else 0)
    has_padding = n_final > a.size
    if (words == 1 and nbits == natural and 0 < a.size <= PERM_MAX and a.flags.c_contiguous
            and min(array_args[4], layout_args[4]) <= PERM_RUN):
        return perm_plan(dims, layout, word, used, n_final, encode)
    move = specialised(kernels.move, word.str, a.flags.c_contiguous, encode)

    if encode:
        def run(x, out):
            if x.size == 0:
                out.fill(0)
                return
            if nbits == natural:
                dst = out[:used].view(word)
            else:
                dst = np.zeros(n_final * words, word) if has_padding else np.empty(n_final, word)
            if has_padding and nbits == natural:
                dst.fill(0)
            call(move, sizes, _span(_words(x)), *array_args, dst, *layout_args)
            store(dst, element, nbits, natural, used, out)
    else:
        def run(buf, out):
            if out.size == 0:
                return
            src = stored(buf, element, nbits, natural, n_final, used, word)
            call(move, sizes, src, *layout_args, _span(_words(out)), *array_args)
    packing = (specialised(kernels.pack_bits if encode else kernels.unpack_bits),) \
        if nbits < 8 else ()
    return Plan("move", run, (sizes,) + tuple(array_args) + tuple(layout_args),
                dispatchers=(move,) + packing)


def stored(buf, element, nbits, natural, n_final, used, word):
    """The `n_final` stored elements of `buf` as containers (a view when stored at full width)."""
    if nbits == natural:
        return buf[:used].view(word)
    if nbits < 8:
        values = np.empty(n_final, np.uint8)
        call(specialised(_runtime.load_kernels().unpack_bits), buf, nbits, values)
        return values
    return np.ascontiguousarray(_reference.unpack(buf, element, nbits, n_final))


def store(values, element, nbits, natural, used, out):
    """Writes containers `values` into `out` at `nbits` per element and zeroes the tail; at full
    width `values` already is `out[:used]`."""
    if nbits >= 8 and nbits != natural:
        _reference.pack(values, element, nbits, out)
        return
    if nbits < 8:
        call(specialised(_runtime.load_kernels().pack_bits), values, nbits, out[:used])
    out[used:] = 0


# The permutation path (`_kernels.scatter`/`gather`): for C-contiguous arrays of at most
# PERM_MAX elements whose `move` plan has an inner run of at most PERM_RUN elements; its int32
# table costs 4 bytes per element, held in the plan cache.


def perm_plan(dims, layout: Layout, word: np.dtype, used: int, n_final: int,
              encode: bool) -> Plan:
    perm = _buffer_positions(dims, layout)
    kernels = _runtime.load_kernels()
    if encode:
        scatter = specialised(kernels.scatter, word.str)

        def run(x, out):
            dst = out[:used].view(word)
            if n_final > perm.size:
                dst.fill(0)
            call(scatter, x.reshape(-1), perm, dst)
            out[used:] = 0
        return Plan("scatter", run, (perm,), dispatchers=(scatter,))
    gather = specialised(kernels.gather, word.str)

    def run(buf, out):
        call(gather, buf[:used].view(word), perm, out.reshape(-1))
    return Plan("gather", run, (perm,), dispatchers=(gather,))

