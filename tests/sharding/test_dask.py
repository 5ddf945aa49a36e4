"""Lazy shards on dask: one chunk per distinct shard, nothing computed until asked, and every
collective and reshard equal to the in-memory path bit for bit (same transfers, same traffic)."""

from __future__ import annotations

import random
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

da = pytest.importorskip("dask.array", reason="dask is not installed (pip install 'layout-toolkit[dask]')")
import dask  # noqa: E402
import xarray as xr  # noqa: E402

import sharding  # noqa: E402
from sharding import DeviceMesh, ShardingError, TensorSharding  # noqa: E402
from sharding.collectives import all_gather, all_reduce, all_slice, all_to_all, apply_step  # noqa: E402
from sharding.collectives import collective_permute, reduce_scatter  # noqa: E402
from sharding.cost import record_traffic  # noqa: E402
from tests.sharding.reshard_cases import random_triple  # noqa: E402
from tests.sharding.test_collectives import DTYPES, _data, _same, _shards  # noqa: E402

T = TensorSharding.parse


class _NoCompute:
    """A dask scheduler that fails the test if anything is computed."""

    def __enter__(self):
        def refuse(*args, **kwargs):
            raise AssertionError("computed")

        self._cfg = dask.config.set(scheduler=refuse)
        self._cfg.__enter__()

    def __exit__(self, *exc):
        self._cfg.__exit__(*exc)


def _same_shards(a, b) -> bool:
    ga, gb = _shards(a), _shards(b)
    return ga.keys() == gb.keys() and all(_same(ga[d], gb[d]) for d in ga)


def test_lazy_shard_one_chunk_per_distinct_shard():
    dm = DeviceMesh('<["x"=2, "y"=4]>')
    g = np.arange(7 * 6, dtype=np.float32).reshape(7, 6)
    s = T('<@m, [{"x"}, {}]>')  # 2 distinct shards, each held by 4 replicas
    with _NoCompute():
        x = dm.shard(g, s, backend="dask")
        assert isinstance(x.data.data, da.Array) and x.data.data.npartitions == 8
        repr(x), repr(x.data)
        u = dm.unshard(x)
        assert isinstance(u, da.Array) and u.chunks == ((4, 3), (6,))
    from dask._task_spec import Alias, convert_legacy_graph

    graph = convert_legacy_graph(dict(x.data.data.__dask_graph__()))
    aliases = [k for k, v in graph.items() if isinstance(v, Alias)]
    assert len(aliases) == 8  # every device chunk is an alias of its shard's task
    assert len({graph[k].target for k in aliases}) == 2
    assert _same_shards(x, dm.shard(g, s, fill=0))
    assert _same(u.compute(), g)


def test_dask_inputs_and_rechunking():
    dm = DeviceMesh('<["x"=2, "y"=2]>')
    g = np.random.default_rng(0).standard_normal((10, 6)).astype(np.float32)
    s = T('<@m, [{"x"}, {"y"}]>')
    for chunks in [(5, 3), (3, 4), (10, 6), (1, 1)]:  # aligned, misaligned, one chunk, tiny
        x = dm.shard(da.from_array(g, chunks=chunks), s, fill=-1)
        assert isinstance(x.data.data, da.Array)
        assert _same_shards(x, dm.shard(g, s, fill=-1))
    arr = xr.DataArray(da.from_array(g, chunks=3), dims=("row", "col"), name="w", attrs={"units": "m"})
    x = dm.shard(arr, s)
    assert x.data.dims == ("x", "y", "row", "col") and x.data.name == "w"
    back = dm.unshard(x)
    assert isinstance(back, xr.DataArray) and isinstance(back.data, da.Array) and back.attrs == {"units": "m"}
    xr.testing.assert_identical(back.compute(), arr.compute())
    with pytest.raises(ShardingError, match="unknown chunk sizes"):
        lazy = da.from_array(g, chunks=5)
        dm.shard(lazy[lazy[:, 0] > -10], s)
    # backend="numpy" computes a dask input
    assert isinstance(dm.shard(da.from_array(g), s, backend="numpy").data.data, np.ndarray)


def test_unreduced_and_replica_checks_are_lazy():
    dm = DeviceMesh('<["x"=2, "y"=2]>')
    g = np.arange(16.0).reshape(4, 4)
    s = T('<@m, [{"x"}, {}], unreduced={"y"}>')
    x = dm.shard(g, s, backend="dask")
    assert _same_shards(x, dm.shard(g, s))
    assert _same(dm.unshard(x).compute(), g)
    # replicas that disagree fail when computed, like the in-memory unshard
    r = dm.shard(g, T('<@m, [{"x"}, {}]>'), copy=True)
    r.data.values[0, 1, 0, 0] = 99
    lazy = sharding.ShardedArray(r.data.chunk({"x": 1, "y": 1}), r.sharding, r.mesh, r.placement, r.dims, None)
    u = dm.unshard(lazy)
    with pytest.raises(ShardingError, match="replicas disagree"):
        u.compute()


def test_bad_backend_and_no_dask():
    dm = DeviceMesh('<["x"=2]>')
    with pytest.raises(ShardingError, match="unknown backend='cupy': expected one of 'numpy', 'dask'"):
        dm.shard(np.zeros(4), T('<@m, [{"x"}]>'), backend="cupy")
    code = ("import sys; sys.modules['dask'] = None; sys.modules['dask.array'] = None\n"
            "import numpy as np, sharding\n"
            "dm = sharding.DeviceMesh('<[\"x\"=2]>'); s = sharding.TensorSharding.parse('<@m, [{\"x\"}]>')\n"
            "assert (dm.unshard(dm.shard(np.arange(4), s)) == np.arange(4)).all()\n"
            "try:\n    dm.shard(np.arange(4), s, backend='dask')\nexcept sharding.ShardingError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "lazy shards need dask" in out.stdout


def test_single_collectives_lazy():
    dm = DeviceMesh('<["x"=2, "y"=3]>')
    glob = np.arange(35, dtype=np.float32).reshape(5, 7)
    s = T('<@mesh, [{"x"}, {"y"}]>')
    eager, lazy = dm.shard(glob, s, fill=-1), dm.shard(glob, s, fill=-1, backend="dask")
    steps = [lambda v: all_gather(v, [[], ["y"]], fill=-1), lambda v: all_slice(v, [["y"], []], fill=-1),
             lambda v: all_to_all(v, sharding.syntax.AllToAllParam((sharding.AxisRef("y"),), 0, 1), fill=-1),
             lambda v: collective_permute(v, T('<@mesh, [{"x"}, {"y"}]>'), fill=-1)]
    for step in steps:
        with _NoCompute():
            lazy = step(lazy)
        eager = step(eager)
        assert isinstance(lazy.data.data, da.Array)
        assert _same_shards(lazy, eager)


@pytest.mark.parametrize("op", ["sum", "max", "min"])
def test_reductions_lazy(op):
    dm = DeviceMesh('<["x"=2, "y"=2, "z"=2]>')
    s = T('<@mesh, [{"x"}, {}], unreduced={"y", "z"}>')
    s = TensorSharding(s.mesh_or_ref, s.dim_shardings, (), s.unreduced_axes, op)
    x = dm.shard(np.zeros((4, 6), np.float32), s, copy=True)
    x.data.values[...] = np.random.default_rng(1).standard_normal(x.data.shape).astype(np.float32)
    lazy = sharding.ShardedArray(x.data.chunk({"x": 1, "y": 1, "z": 1}), x.sharding, x.mesh, x.placement, x.dims,
                                 None)
    for fn in (lambda v, r: all_reduce(v, ["y"], record=r), lambda v, r: reduce_scatter(v, [[], ["y", "z"]], record=r)):
        re, rl = [], []
        with _NoCompute():
            out_l = fn(lazy, rl)
        out_e = fn(x, re)
        assert _same_shards(out_l, out_e) and re == rl


def _check_plan_lazy(rng, table, source, target, shape):
    if source is None or source.unreduced_axes or source.unreduced_axes != target.unreduced_axes:
        return
    if target.mesh_or_ref != "mesh":
        return
    mesh = table["mesh"]
    dm = DeviceMesh(mesh, name="mesh")
    dtype = rng.choice(DTYPES)
    plan = sharding.reshard_plan(source, target, mesh, shape, dtype=dtype)
    if plan.error or not plan.reaches_target:
        return
    glob = _data(rng, shape, dtype)
    chunks = tuple(max(1, rng.randint(1, max(n, 1))) for n in shape)  # any chunking: rechunked
    eager = dm.shard(glob, source, fill=3)
    lazy = dm.shard(da.from_array(glob, chunks=chunks), source, fill=3)
    re, rl = [], []
    for i, step in enumerate(plan.steps):
        with _NoCompute():
            lazy = apply_step(lazy, step, fill=3, record=rl, index=i)
        eager = apply_step(eager, step, fill=3, record=re, index=i)
        assert _same_shards(lazy, eager), str(step)
    assert re == rl
    x = dm.shard(da.from_array(glob, chunks=chunks), source)
    with _NoCompute():
        y, executed = dm.reshard(x, target)
        u = dm.unshard(y)
        traffic = executed.traffic
    assert _same(u.compute(), glob)
    assert _same_shards(y, dm.shard(glob, target))
    xr.testing.assert_equal(traffic, record_traffic(executed))
    _, eager_plan = dm.reshard(dm.shard(glob, source), target)
    assert executed.transfers == eager_plan.transfers


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**32))
def test_plans_execute_lazily_exactly(seed):
    """The collectives suite's random plans, step by step on both backends."""
    rng = random.Random(seed)
    for _ in range(10):
        _check_plan_lazy(rng, *random_triple(rng))
