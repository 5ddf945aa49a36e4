"""The simulated device mesh: `shard` / `unshard` of 16 MiB (64 MiB with `BENCH_LONG=1`) against
`jax.device_put` and `np.copyto`.

`impl` of `Shard`: "shard" is `DeviceMesh.shard` (read-only views; replicas share memory),
"shard_copy" is `shard(..., copy=True)` (every device its own writable buffer),
"jax_device_put" is `jax.device_put(x, NamedSharding(...))` on 8 CPU devices (skipped without
jax), "np_copyto" a plain `np.copyto` of the same bytes into a preallocated array. Ratios of interest:
time(jax_device_put) / time(shard) >= 1 and time(np_copyto) / time(shard) >= 0.9 for
`2x4 [{x},{y}]`; time(jax_device_put) / time(shard) >= 10 for `replicated x8`, whose
`track_peak_extra_memory` (extra resident memory during one call / input bytes) must stay <= 1.1.

Set `SHARDING_BENCH_SKIP_LARGE=1` to skip the 16 (64) MiB cases.
"""

import gc
import os
import pathlib
import sys

import numpy as np

try:
    from ._common import LONG, SkipNotImplemented
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import LONG, SkipNotImplemented

try:
    import sharding
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    import sharding

N = 4096 if LONG else 2048  # N x N float32: 64 MiB, 16 MiB
CASES = {
    "2x4 [{x},{y}]": ('<["x"=2, "y"=4]>', '#sdy.sharding<@mesh, [{"x"}, {"y"}]>'),
    "replicated x8": ('<["x"=8]>', '#sdy.sharding<@mesh, [{}, {}]>'),
    "uneven 2x4 [{y},{x}]": ('<["x"=2, "y"=4]>', '#sdy.sharding<@mesh, [{"y"}, {"x"}]>'),
}
IMPLS = ["shard", "shard_copy", "jax_device_put", "np_copyto"]


def _input(case):
    if os.environ.get("SHARDING_BENCH_SKIP_LARGE"):
        raise SkipNotImplemented("large case skipped (SHARDING_BENCH_SKIP_LARGE)")
    rows = N - 1 if case.startswith("uneven") else N
    return np.random.default_rng(0).standard_normal((rows, N), dtype=np.float32)


def _jax_put(mesh, s, x):
    """`jax.device_put` onto 8 CPU devices with the same placement (via `to_named_sharding`)."""
    if "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    try:
        import jax
    except ImportError:
        raise SkipNotImplemented("jax is not installed") from None
    if len(jax.devices()) < mesh.total_size:
        raise SkipNotImplemented("fewer than 8 jax devices")
    named = sharding.to_named_sharding(s, mesh)

    def put():
        return jax.device_put(x, named).block_until_ready()

    return put


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(field)


def _peak_extra_bytes(fn):
    """Peak resident memory added while `fn()` runs (and its result is alive)."""
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS
        base = _status("VmRSS")
        result = fn()
        peak = _status("VmHWM")
    except OSError:  # not Linux: numpy reports its allocations to tracemalloc
        import tracemalloc

        tracemalloc.start()
        result = fn()
        peak, base = tracemalloc.get_traced_memory()[1], 0
        tracemalloc.stop()
    del result
    return peak - base


class Shard:
    params = [list(CASES), IMPLS]
    param_names = ["case", "impl"]
    timeout = 300

    def setup(self, case, impl):
        self.x = x = _input(case)
        mesh_text, sharding_text = CASES[case]
        mesh, s = sharding.Mesh.parse(mesh_text), sharding.TensorSharding.parse(sharding_text)
        if impl == "jax_device_put":
            if case.startswith("uneven"):
                raise SkipNotImplemented("JAX rejects uneven dims (IndivisibleError)")
            self.fn = _jax_put(mesh, s, x)
        elif impl == "np_copyto":
            dst = np.empty_like(x)
            self.fn = lambda: np.copyto(dst, x)
        else:
            dm, copy = sharding.DeviceMesh(mesh), impl == "shard_copy"
            self.fn = lambda: dm.shard(x, s, copy=copy)
        self.fn()

    def time_shard(self, case, impl):
        self.fn()

    def track_peak_extra_memory(self, case, impl):
        return _peak_extra_bytes(self.fn) / self.x.nbytes

    track_peak_extra_memory.unit = "x input"


class Unshard:
    params = [list(CASES)]
    param_names = ["case"]
    timeout = 300

    def setup(self, case):
        x = _input(case)
        mesh_text, sharding_text = CASES[case]
        self.dm = sharding.DeviceMesh(sharding.Mesh.parse(mesh_text))
        self.sharded = self.dm.shard(x, sharding.TensorSharding.parse(sharding_text), copy=True)
        self.dm.unshard(self.sharded)

    def time_unshard(self, case):
        self.dm.unshard(self.sharded)


class IndexMap:
    params = [["2x4 [{x},{y}]", "x8 sub-axes", "64 devices"]]
    param_names = ["case"]

    def setup(self, case):
        mesh, text, shape = {
            "2x4 [{x},{y}]": ('<["x"=2, "y"=4]>', '#sdy.sharding<@m, [{"x"}, {"y"}]>', (4096, 4096)),
            "x8 sub-axes": ('<["x"=8]>', '#sdy.sharding<@m, [{"x":(2)2}, {"x":(1)2}]>', (8, 4)),
            "64 devices": ('<["a"=4, "b"=4, "c"=4]>', '#sdy.sharding<@m, [{"c", "a"}, {"b":(2)2}]>', (64, 64)),
        }[case]
        self.dm = sharding.DeviceMesh(sharding.Mesh.parse(mesh))
        self.s, self.shape = sharding.TensorSharding.parse(text), shape
        self.dm.index_map(self.s, self.shape)

    def time_index_map(self, case):
        self.dm.index_map(self.s, self.shape)
