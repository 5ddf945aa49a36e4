"""Resharding: the planner on a 4096-device mesh, `DeviceMesh.reshard` of 16 MiB (64 MiB with
`BENCH_LONG=1`), the pass on 1k reshards (and 10k).

Targets (issue 24):

* `Plan.time_plan_and_traffic`: `reshard_plan` + `plan.traffic` on `<["a"=8, "b"=8, "c"=8,
  "d"=8]>`, `[65536, 65536]` bf16: <= 20 ms (no per-device data).
* `ReshardRatio.track_ratio`: time(`DeviceMesh.reshard` of f32 on 2x4, `[{x},{y}] ->
  [{y},{x}]`) / time(`np.copyto` of the result's bytes), interleaved in one process: <= 2 on the
  even global-copy path; <= 1.5 on the general block path (`copy=True`, uneven, unreduced; issue
  37 item 17) for `track_ratio_out`, which reshards into one destination (`out=`) as `np.copyto`
  copies into one: a result in fresh memory pays its page faults (`track_ratio_fresh` divides by
  a copy into fresh memory, ~1.8x `np.copyto` by itself).
* `Pass.time_pass`: `sdy-reshard-to-collectives` on a module of n reshards: <= 50 us per
  reshard, linear (compare n = 1000 and 10000).

Set `SHARDING_BENCH_SKIP_LARGE=1` to skip the 16 (64) MiB case.
"""

import os
import pathlib
import sys
import time

import numpy as np

try:
    from ._common import LONG, SkipNotImplemented, sizes
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import LONG, SkipNotImplemented, sizes

try:
    import sharding
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    import sharding

HUGE = '<["a"=8, "b"=8, "c"=8, "d"=8]>'
PAIRS = {
    "permute": ('<@m, [{"a", "b"}, {"c", "d"}]>', '<@m, [{"c", "d"}, {"b", "a"}]>'),
    "slice+permute": ('<@m, [{"a"}, {"b"}]>', '<@m, [{"b", "c"}, {"a", "d"}]>'),
    "all_to_all": ('<@m, [{"a", "b", "c", "d"}, {}]>', '<@m, [{"a", "b"}, {"c", "d"}]>'),
    "all_to_all 8": ('<@m, [{"a"}, {"b", "c"}]>', '<@m, [{"a", "c"}, {"b"}]>'),
    "gather 512": ('<@m, [{"a", "b", "c", "d"}, {}]>', '<@m, [{}, {"d"}]>'),
    "gather sub-axis": ('<@m, [{"a":(1)2, "b", "c", "d"}, {}]>', '<@m, [{}, {"d"}]>'),
}


class Plan:
    params = [list(PAIRS)]
    param_names = ["pair"]

    def setup(self, pair):
        self.mesh = sharding.Mesh.parse(HUGE)
        self.source, self.target = (sharding.TensorSharding.parse(t) for t in PAIRS[pair])

    def time_plan(self, pair):
        sharding.reshard_plan(self.source, self.target, self.mesh, (65536, 65536), dtype="bf16")

    def time_plan_and_traffic(self, pair):
        sharding.reshard_plan(self.source, self.target, self.mesh, (65536, 65536), dtype="bf16").traffic


def _best(fn, number=3):
    best = float("inf")
    for _ in range(number):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


_N = 4096 if LONG else 2048  # f32 [N, N]: 64 MiB, 16 MiB
RATIO_CASES = {  # path: (shape, source, target, shard(copy=...))
    "even": ((_N, _N), '<@mesh, [{"x"}, {"y"}]>', '<@mesh, [{"y"}, {"x"}]>', False),
    "copy=True": ((_N, _N), '<@mesh, [{"x"}, {"y"}]>', '<@mesh, [{"y"}, {"x"}]>', True),
    "uneven": ((_N - 1, _N + 1), '<@mesh, [{"x"}, {"y"}]>', '<@mesh, [{"y"}, {"x"}]>', False),
    "unreduced": ((_N - 1, _N + 1), '<@mesh, [{"x"}, {}], unreduced={"y"}>', '<@mesh, [{}, {"x"}], unreduced={"y"}>', True),
}


class ReshardRatio:
    """Target: <= 2 (even: the global-copy path), <= 1.5 (issue 37 item 17: the general block path:
    copy=True, uneven, unreduced) x np.copyto of as many bytes as all the result's buffers hold
    (16 MiB f32, 64 MiB with `BENCH_LONG=1`; 4x that for unreduced, whose 4 partials per tile each
    hold a buffer).
    `track_ratio_fresh` divides by a copy into fresh memory instead (`ndarray.copy`): the floor
    of any result in new memory, page faults included."""

    params = [list(RATIO_CASES)]
    param_names = ["path"]
    timeout = 300

    def setup(self, path):
        if os.environ.get("SHARDING_BENCH_SKIP_LARGE"):
            raise SkipNotImplemented("large case skipped (SHARDING_BENCH_SKIP_LARGE)")
        shape, source, target, copy = RATIO_CASES[path]
        self.dm = sharding.DeviceMesh('<["x"=2, "y"=4]>')
        a = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
        self.x = self.dm.shard(a, sharding.TensorSharding.parse(source), copy=copy)
        self.target = sharding.TensorSharding.parse(target)
        result = self.dm.reshard(self.x, self.target)[0].data
        self.src = np.ones(result.size, result.dtype)
        self.dst = np.empty_like(self.src)
        self.out = np.zeros(result.shape, result.dtype)

    def time_reshard(self, path):
        self.dm.reshard(self.x, self.target)

    def _ratio(self, reference, run=None):
        run = run or (lambda: self.dm.reshard(self.x, self.target))
        ratios = []
        for r in range(7):  # interleaved rounds, median of per-round ratios
            ref = _best(reference)
            reshard = _best(run)
            ratios.append(reshard / ref)
        return float(np.median(ratios))

    def track_ratio(self, path):
        return self._ratio(lambda: np.copyto(self.dst, self.src))

    def track_ratio_fresh(self, path):
        return self._ratio(lambda: self.src.copy())

    def track_ratio_out(self, path):
        return self._ratio(lambda: np.copyto(self.dst, self.src),
                           lambda: self.dm.reshard(self.x, self.target, out=self.out))

    track_ratio.unit = "x np.copyto"
    track_ratio_fresh.unit = "x ndarray.copy"
    track_ratio_out.unit = "x np.copyto"


def _module(n):
    mesh = 'sdy.mesh @mesh = <["x"=2, "y"=4]>\n'
    body = ['func.func @f(%arg0: tensor<8192x8192xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) '
            '-> tensor<8192x8192xbf16> {']
    targets = ['<@mesh, [{"y"}, {"x"}]>', '<@mesh, [{}, {"x", "y"}]>', '<@mesh, [{"x", "y"}, {}]>']
    for i in range(n):
        body.append(f"  %{i} = sdy.reshard %arg0 {targets[i % 3]} : tensor<8192x8192xbf16>")
    body.append(f"  return %{n - 1} : tensor<8192x8192xbf16>\n}}")
    return mesh + "\n".join(body) + "\n"


class Pass:
    params = [sizes([1000], [10000])]
    param_names = ["reshards"]
    timeout = 300

    def setup(self, n):
        import sdy_passes

        self.sdy_passes = sdy_passes
        self.text = _module(n)

    def time_pass(self, n):
        module = self.sdy_passes.parse_module(self.text)
        self.sdy_passes.run_passes(module, "builtin.module(func.func(sdy-reshard-to-collectives))", verify=False)

    def track_us_per_reshard(self, n):
        module = self.sdy_passes.parse_module(self.text)
        t0 = time.perf_counter()
        self.sdy_passes.run_passes(module, "builtin.module(func.func(sdy-reshard-to-collectives))", verify=False)
        return (time.perf_counter() - t0) / n * 1e6

    track_us_per_reshard.unit = "us"
