"""`DeviceMesh(mesh, uneven="ragged")`: PyTorch DTensor's ragged shards (`torch.chunk` once per axis
sharding a dim, major to minor), checked against the spec's table and an independent reference,
through index_map, shard/unshard, pictures, collectives, reshard and traffic."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import sharding
from sharding import AxisRef, DeviceMesh, DimensionSharding, Mesh, MeshAxis, ShardingError, TensorSharding
from sharding.cost import record_traffic
from tests.sharding.test_collectives import DTYPES, _data, _same, _shards

T = TensorSharding.parse


def dtensor_slices(mesh: Mesh, s: TensorSharding, shape) -> dict[int, tuple[slice, ...]]:
    """DTensor's rule, written from the spec (sharding.md §9): per axis of a dim, major to minor,
    re-chunk the current local extent `L` into `k` chunks of `ceil(L/k)`; offsets compose."""
    sizes = {a.name: a.size for a in mesh.axes}
    out = {}
    for pos, coords in enumerate(itertools.product(*[range(a.size) for a in mesh.axes])):
        coord = dict(zip((a.name for a in mesh.axes), coords))
        dev = mesh.device_ids[pos] if mesh.device_ids else pos
        slices = []
        for dim, size in zip(s.dim_shardings, shape):
            offset, length = 0, size
            for ref in dim.axes:
                k, r = sizes[ref.name], coord[ref.name]
                chunk = -(-length // k)
                lo, hi = min(r * chunk, length), min((r + 1) * chunk, length)
                offset, length = offset + lo, hi - lo
            slices.append(slice(offset, offset + length))
        out[dev] = tuple(slices)
    return out


def test_spec_table_7_over_3_2():
    """sharding.md §6 Ex 4c: flat (XLA/Shardy) vs nested (DTensor)."""
    s = T('<@m, [{"a", "b"}]>')
    xla = DeviceMesh('<["a"=3, "b"=2]>').index_map(s, (7,))
    torch = DeviceMesh('<["a"=3, "b"=2]>', uneven="ragged").index_map(s, (7,))
    assert [(v[0].start, v[0].stop) for v in xla.values()] == [(0, 2), (2, 4), (4, 6), (6, 7), (7, 7), (7, 7)]
    assert [(v[0].start, v[0].stop) for v in torch.values()] == [(0, 2), (2, 3), (3, 5), (5, 6), (6, 7), (7, 7)]


def _random_case(rng: random.Random):
    names = rng.sample(["x", "y", "z"], rng.randint(1, 3))
    axes = tuple(MeshAxis(n, rng.choice([1, 2, 3, 4, 5])) for n in names)
    total = math.prod(a.size for a in axes)
    ids = tuple(rng.sample(range(total), total)) if rng.random() < 0.3 else ()
    mesh = Mesh(axes, ids)
    rank = rng.randint(1, 3)
    dims = [[] for _ in range(rank)]
    for n in names:
        where = rng.randrange(-1, rank)
        if where >= 0:
            dims[where].append(AxisRef(n))
    for d in dims:
        rng.shuffle(d)
    s = TensorSharding("m", tuple(DimensionSharding(tuple(d)) for d in dims))
    shape = tuple(rng.randint(0, 13) for _ in range(rank))
    return mesh, s, shape


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32))
def test_index_map_shard_unshard_match_dtensor(seed):
    rng = random.Random(seed)
    mesh, s, shape = _random_case(rng)
    dm = DeviceMesh(mesh, uneven="ragged")
    want = dtensor_slices(mesh, s, shape)
    assert dm.index_map(s, shape) == dict(sorted(want.items()))
    g = np.arange(math.prod(shape), dtype=np.int32).reshape(shape)
    x = dm.shard(g, s, fill=-7)
    for dev, buf in x.per_device():
        assert _same(buf, g[want[dev]])  # exactly the ragged shard: no padding
        assert _same(x.local(dev), g[want[dev]])
    assert _same(dm.unshard(x), g)
    # global_<dim>: each storage cell's global index, -1 after the ragged shard
    tiles = dm.placement(s, shape).num_tiles
    for d, n in enumerate(tiles):
        index = x.data.coords[f"global_dim_{d}"].values
        assert sorted(index[index >= 0].tolist()) == list(range(shape[d])) * (index.size // (n * max(
            x.local_shape[d], 1)) if n else 1) or index.size == 0


def test_sub_axes_and_bad_values_refused():
    dm = DeviceMesh('<["x"=4]>', uneven="ragged")
    sub = T('<@m, [{"x":(1)2}, {}]>')
    for call in (lambda: dm.index_map(sub, (5, 3)), lambda: dm.shard(np.zeros((5, 3)), sub),
                 lambda: sharding.visualize(sub, dm, (5, 3)),
                 lambda: sharding.visualize(sub, Mesh.parse('<["x"=4]>'), (5, 3), uneven="ragged"),
                 lambda: sharding.reshard_plan(sub, '<@m, [{}, {}]>', '<["x"=4]>', (5, 3), uneven="ragged")):
        with pytest.raises(ShardingError, match=r'sub-axis "x":\(1\)2 .* no DTensor meaning'):
            call()
    x = dm.shard(np.zeros((5, 3)), T('<@m, [{"x"}, {}]>'))
    with pytest.raises(ShardingError, match="no DTensor meaning"):
        dm.reshard(x, sub)
    with pytest.raises(ShardingError, match="unknown uneven='jagged': expected one of 'padded', 'ragged'"):
        DeviceMesh('<["x"=4]>', uneven="jagged")
    with pytest.raises(ShardingError, match="are padded, this device mesh is ragged"):
        dm.reshard(DeviceMesh('<["x"=4]>').shard(np.zeros((5, 3)), T('<@m, [{"x"}, {}]>')), '<@m, [{}, {"x"}]>')
    assert repr(dm) == "DeviceMesh(<[\"x\"=4]>, uneven='ragged')"


def test_picture_has_no_padding():
    dm = DeviceMesh('<["a"=3, "b"=2]>', uneven="ragged")
    text = str(sharding.visualize(T('<@m, [{"a", "b"}]>'), dm, (7,)))
    assert "ragged" in text and "pad" not in text and "[3:5]" in text and "[7:7]" in text


def _real_bytes(dm, source, target, shape, itemsize):
    """Elements each device needs under `target` that it does not hold under `source`."""
    before, after = dm.index_map(source, shape), dm.index_map(target, shape)
    out = {}
    for dev in after:
        need = set(itertools.product(*[range(s.start, s.stop) for s in after[dev]]))
        have = set(itertools.product(*[range(s.start, s.stop) for s in before[dev]]))
        out[dev] = len(need - have) * itemsize
    return out


def test_reshard_counts_only_real_bytes():
    dm = DeviceMesh('<["a"=3, "b"=2]>', uneven="ragged")
    g = np.arange(7, dtype=np.float32)
    x = dm.shard(g, T('<@m, [{"a", "b"}]>'))
    y, plan = dm.reshard(x, '<@m, [{"b", "a"}]>')
    assert [s.kind for s in plan.steps] == ["collective_permute"] and plan.uneven == "ragged"
    assert [(d, b.tolist()) for d, b in y.per_device()] == [(0, [0, 1]), (1, [4]), (2, [2, 3]), (3, [5]), (4, []),
                                                             (5, [6])]
    want = _real_bytes(dm, plan.source, plan.target, (7,), 4)
    assert plan.traffic.bytes_received.values[0].tolist() == [want[d] for d in sorted(want)] == [0, 4, 4, 0, 0, 4]
    # the padded layout moves other bytes for the same reshard
    padded = sharding.reshard_plan(plan.source, plan.target, dm.mesh, (7,))
    assert padded.traffic.bytes_received.values.tolist() != plan.traffic.bytes_received.values.tolist()


def _full_axes_triple(rng):
    mesh, s, shape = _random_case(rng)
    _, t, _ = _random_case(random.Random(rng.random()))
    names = [a.name for a in mesh.axes]
    dims = [[] for _ in shape]
    for n in names:
        where = rng.randrange(-1, len(shape))
        if where >= 0:
            dims[where].append(AxisRef(n))
    t = TensorSharding("m", tuple(DimensionSharding(tuple(d)) for d in dims))
    return mesh, s, t, shape


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**32))
def test_ragged_reshard_exact_and_traffic_from_shapes(seed):
    rng = random.Random(seed)
    for _ in range(8):
        mesh, s, t, shape = _full_axes_triple(rng)
        dm = DeviceMesh(mesh, uneven="ragged")
        dtype = rng.choice(DTYPES)
        plan = sharding.reshard_plan(s, t, mesh, shape, dtype=dtype, uneven="ragged")
        if plan.error or not plan.reaches_target:
            continue
        g = _data(rng, shape, dtype)
        y, executed = dm.reshard(dm.shard(g, s), t)
        got, want = _shards(y), _shards(dm.shard(g, t))
        assert all(_same(got[d], want[d]) for d in want)
        assert _same(dm.unshard(y), g)
        xr.testing.assert_equal(plan.traffic, record_traffic(executed))
        if len(plan.steps) == 1:
            real = _real_bytes(dm, s, t, shape, np.dtype(dtype).itemsize)
            tr = plan.traffic  # devices in mesh order
            assert tr.bytes_received.values[0].tolist() == [real[int(d)] for d in tr.device.values]


def test_ragged_on_dask_equals_in_memory():
    pytest.importorskip("dask.array", reason="dask is not installed (pip install 'layout-toolkit[dask]')")
    rng = random.Random(5)
    done = 0
    while done < 6:
        mesh, s, t, shape = _full_axes_triple(rng)
        plan = sharding.reshard_plan(s, t, mesh, shape, uneven="ragged")
        if plan.error or not plan.reaches_target:
            continue
        dm = DeviceMesh(mesh, uneven="ragged")
        g = np.random.default_rng(done).standard_normal(shape).astype(np.float32)
        lazy, executed = dm.reshard(dm.shard(g, s, backend="dask"), t)
        eager, eager_plan = dm.reshard(dm.shard(g, s), t)
        got, want = _shards(lazy), _shards(eager)
        assert all(_same(got[d], want[d]) for d in want) and executed.transfers == eager_plan.transfers
        assert _same(np.asarray(dm.unshard(lazy)), g)
        done += 1
