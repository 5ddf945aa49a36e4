"""`DeviceMesh.reshard(..., out=)`: the result's buffers written into a given array (issue 37
item 17: no fresh memory, so a loop of reshards runs near `np.copyto`), bit for bit the result
without `out`, every element written, on every path (even global copy, general blocks, padding,
unreduced partials, several steps, no step); a bad `out` gets a ShardingError."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sharding import DeviceMesh, ShardingError, TensorSharding
from sharding._partials import bits
from tests.sharding.reshard_cases import random_triple


def _reshards(seed: int, count: int):
    """Random `(device mesh, source, target, shape)` that Shardy reshards (any mesh, shape,
    unreduced axes and reduction)."""
    rng = random.Random(seed)
    found = 0
    while found < count:
        table, s, t, shape = random_triple(rng)
        if s is None or t.mesh_or_ref != "mesh" or table["mesh"].total_size > 32:
            continue
        dm = DeviceMesh(table["mesh"], name="mesh")
        if s.unreduced_axes:
            op = rng.choice(["sum", "max"])
            s = TensorSharding(s.mesh_or_ref, s.dim_shardings, s.replicated_axes, s.unreduced_axes, op)
            t = TensorSharding(t.mesh_or_ref, t.dim_shardings, t.replicated_axes, t.unreduced_axes, op)
        try:
            dm.reshard(dm.shard(np.zeros(shape, np.int8), s), t)
        except ShardingError:
            continue  # a plan jaxlib rejects or stops short of
        found += 1
        yield rng, dm, s, t, shape


def test_reshard_into_out_is_the_result_bit_for_bit():
    """60 random reshards (f32 with NaN payloads and -0.0, int8), from views and from copies,
    into an `out` full of a sentinel pattern: the same bits as without `out`, padding included,
    and the result's buffers are views of `out`."""
    paths = set()
    for i, (rng, dm, s, t, shape) in enumerate(_reshards(11, 60)):
        gen = np.random.default_rng(i)
        dtype = np.float32 if i % 2 else np.int8
        raw = gen.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
        x = raw.view(dtype).reshape(shape).copy()
        fill = rng.choice([0, 1])
        sharded = dm.shard(x, s, fill=fill, copy=bool(i % 3))
        want, plan = dm.reshard(sharded, t, fill=fill)
        out = np.empty(want.data.shape, dtype)
        bits(out)[...] = 0x5A  # a pattern no reshard writes by chance everywhere
        got, got_plan = dm.reshard(sharded, t, fill=fill, out=out)
        where = (str(s), str(t), shape, i)
        assert np.array_equal(bits(np.asarray(got.data)), bits(np.asarray(want.data))), where
        assert np.shares_memory(np.asarray(got.data), out) and out.flags.writeable, where
        assert got_plan.transfers == plan.transfers and got.sharding == want.sharding, where
        paths.add((len(plan.steps) > 1, bool(s.unreduced_axes), want.placement.local_shape != got.placement.local_shape))
    assert {p[0] for p in paths} == {False, True} and {p[1] for p in paths} == {False, True}


def test_even_copy_and_no_step_paths_write_out():
    """The paths without block moves: the even global copy, and a reshard to the same sharding."""
    dm = DeviceMesh('<["x"=2, "y"=4]>')
    x = np.arange(8 * 12, dtype=np.float32).reshape(8, 12)
    for source, target in (('<@mesh, [{"x"}, {"y"}]>', '<@mesh, [{"y"}, {"x"}]>'),
                           ('<@mesh, [{"x"}, {"y"}]>', '<@mesh, [{"x"}, {"y"}]>'),
                           ('<@mesh, [{"x"}, {}]>', '<@mesh, [{}, {}]>')):
        sharded = dm.shard(x, source)
        want, _ = dm.reshard(sharded, target)
        out = np.full(want.data.shape, np.nan, np.float32)
        got, _ = dm.reshard(sharded, target, out=out)
        assert np.array_equal(np.asarray(got.data), np.asarray(want.data)), (source, target)
        assert np.shares_memory(np.asarray(got.data), out)
        assert np.array_equal(np.asarray(dm.unshard(got)), x)


@pytest.mark.parametrize("make, message", [
    (lambda shape: np.empty(shape[1:], np.float32), "found shape"),
    (lambda shape: np.empty(shape, np.float64), "found dtype float64"),
    (lambda shape: np.empty(shape[::-1], np.float32).T, "non-contiguous"),
    (lambda shape: np.broadcast_to(np.empty(shape[-1], np.float32), shape), "non-contiguous"),
    (lambda shape: [[0.0]], "expected a numpy array, found list"),
])
def test_bad_out_is_refused(make, message):
    dm = DeviceMesh('<["x"=2, "y"=4]>')
    x = np.ones((7, 9), np.float32)
    sharded = dm.shard(x, '<@mesh, [{"x"}, {"y"}]>', copy=True)
    shape = dm.reshard(sharded, '<@mesh, [{"y"}, {"x"}]>')[0].data.shape
    with pytest.raises(ShardingError, match=message):
        dm.reshard(sharded, '<@mesh, [{"y"}, {"x"}]>', out=make(shape))


def test_out_sharing_the_operand_or_read_only_is_refused():
    dm = DeviceMesh('<["x"=2, "y"=4]>')
    sharded = dm.shard(np.ones((7, 9), np.float32), '<@mesh, [{"x"}, {}]>', copy=True)  # C-contiguous
    with pytest.raises(ShardingError, match="shares memory"):
        dm.reshard(sharded, '<@mesh, [{"x"}, {}]>', out=sharded.data.values)
    frozen = np.empty(sharded.data.shape, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ShardingError, match="read-only"):
        dm.reshard(sharded, '<@mesh, [{"x"}, {}]>', out=frozen)


def test_lazy_shards_refuse_out():
    pytest.importorskip("dask.array", reason="dask is not installed (pip install 'layout-toolkit[dask]')")
    dm = DeviceMesh('<["x"=2]>')
    sharded = dm.shard(np.ones((4, 4), np.float32), '<@mesh, [{"x"}, {}]>', backend="dask")
    with pytest.raises(ShardingError, match="dask"):
        dm.reshard(sharded, '<@mesh, [{}, {"x"}]>', out=np.empty((2, 4, 2), np.float32))


def test_a_repeated_reshard_plans_once_and_keys_on_everything_the_plan_reads():
    """Plans and placements are cached on frozen values (the per-call cost of a loop of
    reshards): a repeat gives the same bits and record, while a different dtype, shape, uneven
    mode or mesh device order gets its own plan, and a refused reshard is refused every time."""
    src, dst = TensorSharding.parse('<@mesh, [{"x"}, {"y"}]>'), TensorSharding.parse('<@mesh, [{"x", "y"}, {}]>')
    results = {}  # (dst's dim 0 cut in 8: 10 rows padded 2,2,2,2,2,0,0,0, ragged 2,2,1,0,2,2,1,0)
    for uneven in ("padded", "ragged"):
        for devices in (None, [7, 6, 5, 4, 3, 2, 1, 0]):
            dm = DeviceMesh('<["x"=2, "y"=4]>' if devices is None else f'<["x"=2, "y"=4], device_ids={devices}>',
                            name="mesh", uneven=uneven)
            for shape in ((8, 8), (10, 7)):
                for dtype in (np.int8, np.float32):
                    x = np.arange(np.prod(shape)).astype(dtype).reshape(shape)
                    first = dm.reshard(dm.shard(x, src), dst)
                    again = dm.reshard(dm.shard(x, src), dst)
                    key = (uneven, devices is None, shape, dtype)
                    assert np.array_equal(bits(np.asarray(first[0].data)), bits(np.asarray(again[0].data))), key
                    assert first[1].transfers == again[1].transfers, key
                    assert sum(t.bytes for t in first[1].transfers) % np.dtype(dtype).itemsize == 0, key
                    assert np.array_equal(np.asarray(dm.unshard(first[0])), x), key
                    results[key] = first[1].transfers
    assert results[("padded", True, (8, 8), np.int8)] != results[("padded", True, (8, 8), np.float32)]
    assert results[("padded", True, (8, 8), np.int8)] != results[("padded", False, (8, 8), np.int8)]
    assert results[("padded", True, (10, 7), np.int8)] != results[("ragged", True, (10, 7), np.int8)]
    dm = DeviceMesh('<["x"=2, "y"=4]>', name="mesh")
    sharded = dm.shard(np.zeros((8, 8)), src)
    for _ in range(2):
        with pytest.raises(ShardingError):
            dm.reshard(sharded, TensorSharding.parse('<@mesh, [{"x", "y"}, {"x"}]>'))
