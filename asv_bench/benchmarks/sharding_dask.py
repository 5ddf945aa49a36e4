"""Lazy shards on dask: a bf16 reshard `[{x},{y}] -> [{y},{x}]` beyond one machine's memory.

Targets (issue 27):

* `Graph.time_build` / `Graph.track_build_seconds`: `shard` + `DeviceMesh.reshard` of a lazy bf16
  [131072, 131072] (32 GiB) on `<["x"=16, "y"=16]>`, graph only: <= 1 s.
* `Graph.time_repr`, `Graph.time_traffic`: `ShardedArray` repr and `plan.traffic` on it run under a
  dask scheduler that refuses to compute (they never touch data).
* `Computed.peakmem_reshard_checksums`: the same reshard of bf16 [4096, 4096] (32 MiB; with
  `BENCH_LONG=1` also [16384, 16384], 512 MiB, and the target's [65536, 65536], 8 GiB) computed to
  one checksum per device with the threaded scheduler (2 workers): peak memory far below the
  array's size.

The input is uint16 from `dask.array` random viewed as bf16 (dask has no bf16 random). Set
`SHARDING_BENCH_SKIP_LARGE=1` to skip the computed case.
"""

import os
import pathlib
import sys
import time

import numpy as np

try:
    from ._common import SkipNotImplemented, sizes
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import SkipNotImplemented, sizes

try:
    import sharding
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    import sharding


def _refuse(*args, **kwargs):
    raise RuntimeError("computed")


def _lazy(n, k):
    try:
        import dask.array as da
        import ml_dtypes
    except ImportError:
        raise SkipNotImplemented("dask is not installed") from None
    bits = da.random.default_rng(0).integers(0, 1 << 16, (n, n), dtype=np.uint16, chunks=n // k)
    return bits.view(ml_dtypes.bfloat16)


def _reshard(n, k):
    dm = sharding.DeviceMesh(f'<["x"={k}, "y"={k}]>')
    x = dm.shard(_lazy(n, k), '<@mesh, [{"x"}, {"y"}]>')
    return dm.reshard(x, '<@mesh, [{"y"}, {"x"}]>')


class Graph:
    """bf16 [131072, 131072] on 16x16, graph only."""

    def setup(self):
        import dask

        self.y, self.plan = _reshard(131072, 16)
        self._config = dask.config.set(scheduler=_refuse)
        self._config.__enter__()

    def teardown(self):
        self._config.__exit__(None, None, None)

    def time_build(self):
        _reshard(131072, 16)

    def track_build_seconds(self):
        t0 = time.perf_counter()
        _reshard(131072, 16)
        return time.perf_counter() - t0

    track_build_seconds.unit = "s"

    def time_repr(self):
        repr(self.y)

    def time_traffic(self):
        self.plan._cache.clear()
        self.plan.traffic


class Computed:
    """bf16 [n, n] on 16x16 (4096; 16384 and 65536 with BENCH_LONG=1), resharded and checksummed per device."""

    params = [sizes([4096], [16384, 65536])]
    param_names = ["n"]
    timeout = 900
    number = 1
    repeat = 1

    def setup(self, n):
        if os.environ.get("SHARDING_BENCH_SKIP_LARGE"):
            raise SkipNotImplemented("large case skipped (SHARDING_BENCH_SKIP_LARGE)")
        _lazy(8, 2)

    def peakmem_reshard_checksums(self, n):
        import dask

        y, _ = _reshard(n, 16)
        sums = y.data.data.view(np.uint16).sum(axis=(2, 3), dtype=np.uint64)
        with dask.config.set(scheduler="threads", num_workers=2):
            sums.compute()
