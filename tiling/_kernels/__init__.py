"""Numba kernels that move bit patterns between a logical array and a tiled buffer.

Every kernel takes C-contiguous 1-D arrays and plain ints, writes into a caller-allocated output
and returns None: no Python objects, no exceptions, no float math (values are unsigned
containers: bf16 as uint16, f32 as uint32, s8/s4/pred as uint8). The kernels validate nothing;
`tiling.codec` has checked every size before a kernel runs, and the planners
(`tiling._fast_plans`, `tiling._generic_plans`) derive every index argument from those checked
sizes. Each equals `tiling._reference` (the plain-numpy
engine) on the layouts its family serves, which the tests check bit for bit.

A strided array reaches a kernel as a flat span of its memory plus element strides, so
Fortran-ordered, transposed, reversed or sliced sources are read in place, without an extra
copy. Batch dims (the physical dims before the two a tile covers) arrive as `boffs`, the element
offset of each batch's first element.

One module per kernel family:

- `tiled`: one 2-D tile T(a, tc) (`encode_tiled`, `decode_tiled`);
- `packed`: T(a, tc)(p, 1), p rows to a 32-bit word (`encode_packed`, `decode_packed`);
- `square`: T(a, tc) over transposed sources (`encode_square`, `decode_square`);
- `tiny`: T(a, tc), tc <= 4, one kernel set per shape in `TINY_TILES` (`tiny_tiles`);
- `generic`: any layout through tables (`move`, `pack_bits`, `unpack_bits`), and the
  permutation kernels (`scatter`, `gather`);
- `parallel`: the `_par` twins of tiled, packed and square over numba's threads;
- `llvm`: the LLVM intrinsics (vector shuffles, streaming stores, atomics) the loops call;
- `jit`: the decorators and the on-disk cache (`CACHE_ENABLED`, `CACHE_DIR`, `LOCK_FILE`).

Threads: every kernel is serial and `nogil` (callers may run several encodes in their own
threads); the `_par` twins split the tile rows over numba's threads: `tiling._fast_plans` takes
them for large arrays only, with the disk cache on (they compile 2.5x slower), and
`tiling._runtime` runs them from one Python thread at a time.
"""

import numba
from numba.core.caching import NullCache
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target

from tiling._kernels.generic import gather, move, pack_bits, scatter, unpack_bits
from tiling._kernels.jit import CACHE_DIR, CACHE_ENABLED, LOCK_FILE
from tiling._kernels.packed import decode_packed, encode_packed
from tiling._kernels.parallel import (
    decode_packed_par, decode_square_par, decode_tiled_par, encode_packed_par,
    encode_square_par, encode_tiled_par,
)
from tiling._kernels.square import decode_square, encode_square
from tiling._kernels.tiled import decode_tiled, encode_tiled
from tiling._kernels.tiny import TINY_TILES, tiny_tiles

# Numba's target context installs its implementations (and checks for scipy's BLAS) on the first
# compile or cache load of a process: 0.3-0.4 s of CPU, half of a warm first call. Done here, on
# the thread that loads numba while the numpy reference serves (`tiling._runtime`), the first
# kernel's own load (about 0.04 s from a warm cache) no longer waits for it. Under numba's lock,
# as numba's own loads do it.
with global_compiler_lock:
    cpu_target.target_context.refresh()

__all__ = [
    "CACHE_DIR", "CACHE_ENABLED", "LOCK_FILE", "NullCache", "TINY_TILES", "decode_packed", "decode_packed_par",
    "decode_square", "decode_square_par", "decode_tiled", "decode_tiled_par", "encode_packed",
    "encode_packed_par", "encode_square", "encode_square_par", "encode_tiled", "encode_tiled_par",
    "gather", "move", "numba", "pack_bits", "scatter", "tiny_tiles", "unpack_bits",
]
