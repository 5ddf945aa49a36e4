"""Collectives on the simulated mesh: every step of a plan gives `shard(unshard(x), out_sharding)`
bit for bit (uneven dims, padding `fill`, unreduced partials), and the traffic a plan computes
from shapes equals the transfer record of its execution."""

from __future__ import annotations

import random

import ml_dtypes
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st

import sharding
from sharding import DeviceMesh, ShardingError, TensorSharding
from sharding.collectives import all_gather, all_reduce, all_slice, all_to_all, apply_step, collective_permute
from sharding.collectives import reduce_scatter
from sharding.cost import record_traffic
from sharding._partials import bits as _bits
from tests.sharding.reshard_cases import random_triple

DTYPES = [np.float32, np.float64, ml_dtypes.bfloat16, np.int8, np.int64, np.uint16, np.bool_, np.complex64,
          ml_dtypes.int4, ml_dtypes.float8_e4m3fn]


def _data(rng: random.Random, shape, dtype):
    gen = np.random.default_rng(rng.randrange(2**32))
    raw = gen.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    if np.dtype(dtype) == np.bool_:
        return (raw[: int(np.prod(shape))] & 1).astype(bool).reshape(shape)
    if np.dtype(dtype) == ml_dtypes.int4:
        return (raw[: int(np.prod(shape))].astype(np.int8) % 8).astype(ml_dtypes.int4).reshape(shape)
    return raw.view(dtype).reshape(shape)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool((_bits(np.ascontiguousarray(a)) == _bits(np.ascontiguousarray(b))).all())


def _shards(x) -> dict:
    return {d: np.array(v) for d, v in x.per_device()}


def _check_plan(rng, table, source, target, shape):
    if source is None or source.unreduced_axes != target.unreduced_axes or source.unreduced_axes:
        return  # the API refuses different unreduced axes; unreduced data has its own test
    mesh = table["mesh"]
    if mesh.total_size > 64:
        return  # keeps the per-pair copies of the simulation quick
    dm = DeviceMesh(mesh, name="mesh")
    if target.mesh_or_ref != "mesh":
        return  # a DeviceMesh holds one mesh
    dtype = rng.choice(DTYPES)
    plan = sharding.reshard_plan(source, target, mesh, shape, dtype=dtype)
    if plan.error or not plan.reaches_target:
        return
    fill = 0
    x = dm.shard(_data(rng, shape, dtype), source)
    glob = dm.unshard(x)
    record: list = []
    cur = x
    for i, step in enumerate(plan.steps):
        cur = apply_step(cur, step, record=record, index=i)
        expect = dm.shard(glob, step.out_sharding, fill=fill)
        got, want = _shards(cur), _shards(expect)
        assert got.keys() == want.keys()
        for dev in got:
            assert _same(got[dev], want[dev]), (str(step), dev, got[dev], want[dev])
    y, executed = dm.reshard(x, target)
    assert _same(dm.unshard(y), glob)
    want = _shards(dm.shard(glob, target))
    for dev, buf in _shards(y).items():
        assert _same(buf, want[dev])
    assert [(t.step, t.sender, t.receiver, t.bytes) for t in executed.transfers] == \
        [(t.step, t.sender, t.receiver, t.bytes) for t in record]
    xr.testing.assert_equal(plan.traffic, record_traffic(executed))


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2**32))
def test_plans_execute_exactly(seed):
    rng = random.Random(seed)
    for _ in range(15):
        _check_plan(rng, *random_triple(rng))


def test_tour_traffic():
    mesh = sharding.Mesh.parse('<["x"=2, "y"=4]>')
    plan = sharding.reshard_plan('<@mesh, [{"x"}, {"y"}]>', '<@mesh, [{"y"}, {"x"}]>', mesh, (8192, 8192),
                                 dtype="bf16")
    tr = plan.traffic
    mib = 1 << 20
    # Spec §3.1: the collective-permute moves 64 MiB (4 full buffers, crossing both axes), the
    # all-to-all 64 MiB (8 messages of 8 MiB crossing y).
    assert tr.bytes_sent.sum("device").values.tolist() == [64 * mib, 64 * mib]
    assert tr.messages.values.tolist() == [4, 8]
    assert tr.bytes_crossing.sel(axis="x").values.tolist() == [64 * mib, 0]
    assert tr.bytes_crossing.sel(axis="y").values.tolist() == [64 * mib, 64 * mib]
    assert "all_to_all" in plan.report()
    cost = plan.cost()
    assert len(cost.steps) == 2 and cost.total > 0
    assert plan.cost(algorithm="bidirectional_ring").total <= cost.total


def test_gather_traffic_and_uneven_slice():
    mesh = sharding.Mesh.parse('<["x"=2, "y"=2, "z"=2]>')
    plan = sharding.reshard_plan('<@mesh, [{"x", "y", "z"}, {}]>', '<@mesh, [{"x"}, {}]>', mesh, (16, 8))
    tr = plan.traffic
    assert tr.bytes_sent.values[0].tolist() == [192] * 8 and int(tr.messages[0]) == 24
    assert tr.bytes_crossing.values[0].tolist() == [0, 1024, 1024]
    # §3.1's uneven all-slice: device (0,1) needs element 3 from (1,1), 4 bytes crossing x.
    mesh2 = sharding.Mesh.parse('<["x"=2, "y"=2]>')
    plan = sharding.reshard_plan('<@mesh, [{"x"}]>', '<@mesh, [{"x", "y"}]>', mesh2, (5,))
    assert [str(s) for s in plan.steps] == ['sdy.all_slice [{"y"}] out_sharding=<@mesh, [{"x", "y"}]>']
    tr = plan.traffic
    assert int(tr.messages[0]) == 1 and tr.bytes_received.values[0].tolist() == [0, 4, 0, 0]
    assert tr.bytes_crossing.values[0].tolist() == [4, 0]


def test_single_collectives():
    dm = DeviceMesh('<["x"=2, "y"=3]>')
    glob = np.arange(35, dtype=np.float32).reshape(5, 7)
    x = dm.shard(glob, TensorSharding.parse('<@mesh, [{"x"}, {"y"}]>'), fill=-1)
    y = all_gather(x, [[], ["y"]], fill=-1)
    assert str(y.sharding) == '#sdy.sharding<@mesh, [{"x"}, {}]>'
    assert all(_same(a, b) for (_, a), (_, b) in zip(y.per_device(), dm.shard(glob, y.sharding, fill=-1).per_device()))
    z = all_slice(y, [["y"], []], fill=-1)
    assert str(z.sharding) == '#sdy.sharding<@mesh, [{"x", "y"}, {}]>'
    assert all(_same(a, b) for (_, a), (_, b) in zip(z.per_device(), dm.shard(glob, z.sharding, fill=-1).per_device()))
    w = all_to_all(z, sharding.syntax.AllToAllParam((sharding.AxisRef("y"),), 0, 1), fill=-1)
    assert str(w.sharding) == '#sdy.sharding<@mesh, [{"x"}, {"y"}]>'
    assert (dm.unshard(w) == glob).all()
    v = collective_permute(x, TensorSharding.parse('<@mesh, [{"x"}, {"y"}]>'))
    assert (dm.unshard(v) == glob).all()
    with pytest.raises(ShardingError, match="can't apply gathering axis"):
        all_gather(x, [["y"], []])
    with pytest.raises(ShardingError, match="sharded size of result"):
        collective_permute(x, TensorSharding.parse('<@mesh, [{"y"}, {"x"}]>'))


@pytest.mark.parametrize("op, reduce", [("sum", np.add), ("max", np.maximum), ("min", np.minimum)])
def test_reductions_of_partials(op, reduce):
    dm = DeviceMesh('<["x"=2, "y"=2]>')
    rng = np.random.default_rng(0)
    s = TensorSharding.parse('<@mesh, [{"x"}, {}], unreduced={"y"}>')
    s = TensorSharding(s.mesh_or_ref, s.dim_shardings, (), s.unreduced_axes, op)
    x = dm.shard(np.zeros((4, 6), np.float32), s, copy=True)
    # Put independent partials on the y positions.
    parts = rng.standard_normal((2, 2, 2, 6)).astype(np.float32)  # (x, y, local...)
    x.data.values[...] = parts
    y = all_reduce(x, ["y"])
    assert y.sharding.unreduced_axes == ()
    expect = reduce.reduce(parts, axis=1)  # (x, local)
    assert (dm.unshard(y) == expect.reshape(4, 6)).all()
    record: list = []
    z = reduce_scatter(x, [[], ["y"]], record=record)
    assert str(z.sharding) == '#sdy.sharding<@mesh, [{"x"}, {"y"}]>'
    assert (dm.unshard(z) == expect.reshape(4, 6)).all()
    assert len(record) == 4 and all(t.axes == ("y",) for t in record)


def test_reshard_refuses():
    dm = DeviceMesh('<["x"=2, "z"=1]>')
    x = dm.shard(np.zeros((4, 4)), TensorSharding.parse('<@mesh, [{"x"}, {}]>'))
    y, plan = dm.reshard(x, '<@mesh, [{"x"}, {"z"}]>')  # jaxlib stops short, same placement
    assert not plan.reaches_target and str(y.sharding) == '#sdy.sharding<@mesh, [{"x"}, {"z"}]>'
    with pytest.raises(ShardingError, match="unreduced"):
        dm.reshard(x, '<@mesh, [{}, {}], unreduced={"x"}>')
    with pytest.raises(ShardingError, match="fails its verifier"):
        d6 = DeviceMesh('<["x"=6]>')
        d6.reshard(d6.shard(np.zeros((12, 8)), TensorSharding.parse('<@m, [{"x":(1)2}, {}]>')),
                   '<@m, [{"x":(1)3}, {}]>')


def test_permute_to_another_device_order():
    table = sharding.MeshTable.parse('sdy.mesh @mesh = <["x"=2, "y"=2]> '
                                     'sdy.mesh @mesh2 = <["x"=2, "y"=2], device_ids=[3, 2, 1, 0]>')
    plan = sharding.reshard_plan('<@mesh, [{"x"}, {"y"}]>', '<@mesh2, [{"x"}, {}]>', table, (4, 6))
    glob = np.arange(24, dtype=np.int32).reshape(4, 6)
    x = DeviceMesh(table["mesh"], name="mesh").shard(glob, plan.source)
    record: list = []
    for i, step in enumerate(plan.steps):
        x = apply_step(x, step, mesh=plan.mesh_of(step.out_sharding), record=record, index=i)
        dm = DeviceMesh(plan.mesh_of(step.out_sharding), name=step.out_sharding.mesh_or_ref)
        want = _shards(dm.shard(glob, step.out_sharding))
        assert all(_same(buf, want[dev]) for dev, buf in _shards(x).items())
    executed = [(t.step, t.sender, t.receiver, t.bytes) for t in record]
    assert int(plan.traffic.messages.sum()) == len(executed)
    assert plan.traffic.bytes_received.values.sum() == sum(t[3] for t in executed)


def test_sub_axes_that_do_not_nest():
    # "x":(2)3 and "x":(1)3 on "x"=6 have no common pieces: the device-by-device path moves them.
    mesh = sharding.Mesh.parse('<["x"=6]>')
    dm = DeviceMesh(mesh)
    glob = np.arange(36, dtype=np.float64).reshape(6, 6)
    x = dm.shard(glob, TensorSharding.parse('<@mesh, [{"x":(2)3}, {}]>'))
    record: list = []
    y = collective_permute(x, TensorSharding.parse('<@mesh, [{"x":(1)3}, {}]>'), record=record)
    want = _shards(dm.shard(glob, y.sharding))
    assert all(_same(buf, want[dev]) for dev, buf in _shards(y).items())
    assert record and all(t.bytes == 2 * 6 * 8 for t in record)


def test_device_by_device_moves_agree_with_the_vectorized_ones():
    from sharding._moves import moves, moves_by_device as _moves_by_device

    rng = random.Random(1)
    checked = 0
    while checked < 10:
        table, s, t, shape = random_triple(rng)
        if s is None or s.unreduced_axes != t.unreduced_axes or table["mesh"].total_size > 16:
            continue
        try:
            plan = sharding.reshard_plan(s, t, table, shape)
        except ShardingError:
            continue
        prev = s
        for step in plan.steps:
            args = (prev, step.out_sharding, plan.mesh_of(prev), plan.mesh_of(step.out_sharding), shape)
            a, b = moves(*args), _moves_by_device(*args)
            key = lambda m: sorted(zip(m.receiver.tolist(), m.sender.tolist(), m.elements.tolist(),  # noqa: E731
                                       m.local.tolist(), map(tuple, m.lo.tolist()), map(tuple, m.crossing.tolist())))
            assert key(a) == key(b), (str(prev), str(step))
            assert a.partial.tolist() == b.partial.tolist(), (str(prev), str(step))
            prev = step.out_sharding
            checked += 1



@pytest.mark.parametrize("source,target", [
    ('<@mesh, [{"x"}, {"y"}]>', '<@mesh, [{"y"}, {"x"}]>'),
    ('<@mesh, [{"x", "y"}, {}]>', '<@mesh, [{}, {"y", "x"}]>'),
    ('<@mesh, [{"x"}, {}]>', '<@mesh, [{"y":(2)2}, {"x", "y":(1)2}]>'),
    ('<@mesh, [{"y"}, {"x"}]>', '<@mesh, [{"x"}, {}]>'),  # replicated: stride-0 views
])
def test_reshard_global_copy_matches_block_copies(source, target, monkeypatch):
    """An unpadded `shard` of a numpy array is views of one global array; `reshard` then copies
    that array once (no per-block copies) and gives the same bits as block copies from separate
    buffers (`copy=True`), in memory of its own."""
    import sharding._numpy as coll

    dm = DeviceMesh('<["x"=2, "y"=4]>')
    g = np.arange(16 * 24, dtype=np.float32).reshape(16, 24)
    want = _shards(dm.shard(g, target))
    blocks = _shards(dm.reshard(dm.shard(g, source, copy=True), target)[0])
    monkeypatch.setattr(coll, "_execute", lambda *a, **k: pytest.fail("block copies on the global path"))
    y, _ = dm.reshard(dm.shard(g, source), target)
    monkeypatch.undo()
    for dev, buf in _shards(y).items():
        assert _same(buf, want[dev]) and _same(buf, blocks[dev])
    assert not np.shares_memory(y.data.values, g)
    assert _same(dm.unshard(dm.reshard(y, source)[0]), g)  # from the result's views again
