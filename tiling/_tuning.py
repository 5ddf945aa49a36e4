"""Every tuning constant of the tiling engine and kernels, one line each on what it trades.

Fitted on the project's 2-core benchmark VM; the asv `Ratio*` benchmarks (asv_bench/) are where
to re-measure before changing one, and the commit that set each holds its measurements. The
kernels read theirs at compile time (an edit here recompiles them: `_kernels.jit`).
"""

# When numba loads (`_runtime`): importing it costs 0.5-1 s, the numpy reference serves until then
SMALL_BYTES = 1 << 20                # arrays up to this go to the reference before numba loads
FAST_REFERENCE_BYTES = 64 << 20      # the same for the fast-path formats (quick in numpy)
REFERENCE_BUDGET_SECONDS = 0.05      # reference time per process before numba loads anyway

# Which kernel (`_fast_plans`, `_generic_plans`, `_engine`)
PERM_MAX = 1 << 21                   # most elements for the permutation kernels (4 B each)
PERM_RUN = 4                         # `move` runs this short take the permutation kernels
MOVE_RUN_NS = 5.3                    # `move` cost model: ns per run (table lookups, loop set-up),
MOVE_LINE_NS = 1.2                   # + per element whose stride passes a line (64 B to 2 KiB),
MOVE_FAR_READ_NS = 2.5               # + per element read from past 2 KiB (a page soon),
MOVE_FAR_WRITE_NS = 4.2              # + per element written past 2 KiB: picks `move`'s inner dim
ROW_MAJOR_MAX = 1 << 16              # most elements a "copy" plan copies as bytes (then: kernel)

# Threads and stores (`_runtime`)
PARALLEL_BYTES = 1 << 20             # arrays from this size take the `_par` kernels (OpenMP, TBB)
WORKQUEUE_PARALLEL_BYTES = 8 << 20   # the same under numba's `workqueue` (60 us per launch)

# Relayout bands (`relayout`)
BAND_BYTES = 2 << 20                 # temporary per band: larger leaves the cache
BAND_MAX_BYTES = 32 << 20            # rows longer than this go through `move` (no huge temporary)

# Caches (`_engine`, `codec`)
MAX_PLANS = 512                      # plans kept (each a few hundred bytes plus its tables)
PLAN_CACHE_BYTES = 256 << 20         # tables the plans hold at most, then the cache starts afresh
MAX_CALLS = 1024                     # validated kinds of call (layout, dtype, dims) `codec` keeps

# Kernels (`_kernels`): compile-time constants
TILE_ROWS_PER_CALL = 16              # tile rows per row-function call when each is one whole tile
STRIDED_DECODE_ROWS = 8              # tile rows per column sweep decoding into strided columns
PRED_COLUMNS = 4096                  # columns per 1-bit packing sweep (4 bytes of scratch each)
SQUARES = 4                          # square blocks per column sweep, at least
SWEEP_BYTES = 1 << 20                # decoding 64-bit transposed: tile rows per sweep up to this
ENCODE_SWEEP_BYTES = 1 << 18         # encoding transposed: the same
SQUARE_PARTS = 8                     # column parts per sweep when too few sweeps for the threads
TINY_ELEMENTS = 256                  # most elements one tiny-tile shuffle moves (a * columns)
