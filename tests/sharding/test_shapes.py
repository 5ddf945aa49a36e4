"""Local shapes, shards per dim and replicated axes; the design doc's examples (spec §6 Ex 5)."""

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sharding import AxisRef, InvalidShardingError, Mesh, MeshAxis, MeshTable, ShardingError, TensorSharding, verify
from tests.conftest import ORACLE_JSON, needs_shared
from tests.sharding.strategies import meshes, shardings


def parse(mesh, sharding):
    return Mesh.parse(mesh), TensorSharding.parse(sharding)


def placement(mesh: Mesh, s: TensorSharding, shape) -> dict[int, tuple[tuple[int, int], ...]]:
    """Device id -> data slice per dim, straight from spec §5 (a test-local reference)."""
    out = {}
    for pos, coords in enumerate(itertools.product(*(range(a.size) for a in mesh.axes))):
        coord = dict(zip(mesh.axis_names, coords))
        slices = []
        for d, dim in zip(shape, s.dim_shardings):
            t, n = 0, 1
            for r in dim.axes:
                full = mesh.axis_size(r.name)
                pre, k = (r.sub_axis_info.pre_size, r.sub_axis_info.size) if r.sub_axis_info else (1, full)
                t, n = t * k + (coord[r.name] // (full // (pre * k))) % k, n * k
            c = -(-d // n)
            slices.append((min(t * c, d), min((t + 1) * c, d)))
        out[mesh.devices[pos]] = tuple(slices)
    return out


def test_local_shape_2x1():
    mesh, s = parse('<["x"=2, "y"=4, "z"=2]>', '<@m, [{"x"}, {"z", "y"}]>')
    assert s.local_shape((4, 8), mesh) == (2, 1) and s.num_shards_per_dim(mesh) == (2, 8)
    # The device at (x, y, z) holds rows 2x:2x+2 and column 4z + y.
    for (x, y, z), dev in zip(itertools.product(range(2), range(4), range(2)), range(16)):
        assert placement(mesh, s, (4, 8))[dev] == ((2 * x, 2 * x + 2), (4 * z + y, 4 * z + y + 1))


def test_local_shape_2x8_with_replicated():
    mesh, s = parse('<["x"=2, "y"=4, "z"=2]>', '<@m, [{"x"}, {?}], replicated={"y"}>')
    assert s.local_shape((4, 8), mesh) == (2, 8)
    assert s.replicated_mesh_axes(mesh) == (AxisRef("y"), AxisRef("z"))
    assert s.replicated_mesh_axes(mesh, explicit=True) == (AxisRef("y"),)
    assert s.replicated_mesh_axes(mesh, explicit=False) == (AxisRef("z"),)


def test_local_shape_2x4_with_sub_axis():
    mesh, s = parse('<["x"=2, "y"=8, "z"=2]>', '<@m, [{"x"}, {"y":(2)2}]>')
    assert s.local_shape((4, 8), mesh) == (2, 4)
    assert s.replicated_mesh_axes(mesh) == (AxisRef.sub("y", 1, 2), AxisRef.sub("y", 4, 2), AxisRef("z"))


def test_uneven_dims_are_padded():
    mesh, s = parse('<["x"=8, "y"=2, "z"=3]>', '<@m, [{"x"}, {"y"}, {"z"}]>')
    assert s.local_shape((7, 3, 8), mesh) == (1, 2, 3)
    mesh, s = parse('<["x"=2, "y"=4]>', '<@m, [{"x"}, {"y"}]>')
    assert s.local_shape((7, 6), mesh) == (4, 2)
    with pytest.raises(ShardingError, match="expected an int shape dim 0, got: None"):  # issue 37 item 9
        s.local_shape((None, 6), mesh)


def test_reshape_keeps_elements_on_devices():
    mesh = Mesh.parse('<["x"=4]>')
    flat = placement(mesh, TensorSharding.parse('<@m, [{"x"}]>'), (8,))
    square = placement(mesh, TensorSharding.parse('<@m, [{"x":(1)2}, {"x":(2)2}]>'), (2, 4))
    index = np.arange(8).reshape(2, 4)
    for dev in range(4):
        (r0, r1), (c0, c1) = square[dev]
        assert sorted(index[r0:r1, c0:c1].ravel()) == list(range(*flat[dev][0]))


def test_mesh_full_and_mesh_xy_place_alike():
    full, s_full = parse('<["devices"=8]>', '<@mesh_full, [{"devices":(1)4}, {"devices":(4)2}]>')
    xy, s_xy = parse('<["x"=4, "y"=2]>', '<@mesh_xy, [{"x"}, {"y"}]>')
    assert placement(full, s_full, (4, 4)) == placement(xy, s_xy, (4, 4))
    assert s_full.local_shape((4, 4), full) == s_xy.local_shape((4, 4), xy) == (1, 2)


def test_two_meshes_over_the_same_devices():
    table = MeshTable.parse('sdy.mesh @mesh_0 = <["a"=4, "b"=2]>\nsdy.mesh @mesh_1 = <["x"=2, "y"=2, "z"=2]>')
    b = TensorSharding.parse('<@mesh_0, [{"b"}]>')
    z = TensorSharding.parse('<@mesh_1, [{"z"}]>')
    assert placement(table["mesh_0"], b, (4,)) == placement(table["mesh_1"], z, (4,))
    assert b.local_shape((4,), table) == z.local_shape((4,), table) == (2,)


def test_rank_mismatch_and_unknown_mesh():
    mesh, s = parse('<["x"=2]>', '<@m, [{"x"}]>')
    with pytest.raises(InvalidShardingError, match="sharding doesn't match tensor rank: 1 != 2"):
        s.local_shape((4, 4), mesh)
    with pytest.raises(InvalidShardingError, match="unknown mesh: @m"):
        s.local_shape((4,), MeshTable())


@given(st.data())
def test_local_shape_covers_every_slice(data):
    mesh = data.draw(meshes(allow_maximal=False))
    s = data.draw(shardings(mesh))
    shape = tuple(data.draw(st.lists(st.integers(0, 20), min_size=s.rank, max_size=s.rank)))
    local = s.local_shape(shape, mesh)
    slices = placement(mesh, s, shape)
    for dev_slices in slices.values():
        assert all(hi - lo <= c for (lo, hi), c in zip(dev_slices, local))
    # Shards per dim times the replicated devices is the mesh size.
    free = s.replicated_mesh_axes(mesh)
    unreduced = s.unreduced_axes
    sizes = [r.size(mesh) for r in free] + [r.size(mesh) for r in unreduced]
    assert math.prod(s.num_shards_per_dim(mesh)) * math.prod(sizes) == mesh.total_size


def _recorded_cases():
    if not ORACLE_JSON.exists():
        return []
    return [c for c in json.loads(ORACLE_JSON.read_text()) if "sdy" in c]


@needs_shared(ORACLE_JSON)
@pytest.mark.parametrize("case", _recorded_cases(), ids=lambda c: c["sdy"])
def test_recorded_jax_and_xla_cases(case):
    """Texts printed by JAX/XLA round-trip and verify; local shapes and slices agree."""
    s = TensorSharding.parse(case["sdy"])
    assert str(s) == case["sdy"]
    mesh = Mesh(tuple(MeshAxis(n, k) for n, k in case["mesh_axes"]), tuple(case["device_ids"] or ()))
    if isinstance(s.mesh_or_ref, Mesh):
        assert s.mesh_or_ref.axes == mesh.axes
    verify(s, mesh=mesh, shape=tuple(case["shape"]))
    expected = case.get("shard_shape") or case.get("padded_shard_shape")
    if expected:
        assert list(s.local_shape(tuple(case["shape"]), mesh)) == expected
    got = placement(mesh, s, tuple(case["shape"]))
    assert {str(k): [list(x) for x in v] for k, v in got.items()} == case["per_device"]
