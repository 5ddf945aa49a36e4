"""The simulated device mesh: device maps against XLA/JAX, the spec's worked tables, shard/unshard."""

from __future__ import annotations

import itertools
import json
import math

import ml_dtypes
import numpy as np
import pytest
import xarray as xr
from hypothesis import given, strategies as st

from sharding import (DeviceMesh, InvalidShardingError, Mesh, MeshAxis, MeshTable, ShardedArray, ShardingError,
                      TensorSharding, equivalent)
from tests.conftest import ORACLE_JSON, needs_shared
from tests.sharding import _device_oracle as oracle
from tests.sharding.strategies import shardings


def S(text: str) -> TensorSharding:
    return TensorSharding.parse(text)


def M(text: str) -> Mesh:
    return Mesh.parse(text)


def ranges(index_map) -> dict[int, str]:
    return {k: ", ".join(f"{s.start}:{s.stop}" for s in v) for k, v in index_map.items()}


# -- reference rule: the spec's pseudocode (§5.3), written independently of the library -------------


def reference_map(mesh: Mesh, s: TensorSharding, shape) -> dict[int, tuple[slice, ...]]:
    sizes = {a.name: a.size for a in mesh.axes}
    out = {}
    for pos, coords in enumerate(itertools.product(*[range(a.size) for a in mesh.axes])):
        c_of = dict(zip(sizes, coords))
        slices = []
        for d, dim in zip(shape, s.dim_shardings):
            t, n = 0, 1
            for ref in dim.axes:
                if ref.sub_axis_info is None:
                    k, coord = sizes[ref.name], c_of[ref.name]
                else:
                    pre, k = ref.sub_axis_info.pre_size, ref.sub_axis_info.size
                    coord = (c_of[ref.name] // (sizes[ref.name] // (pre * k))) % k
                t, n = t * k + coord, n * k
            c = -(-d // n)
            slices.append(slice(min(t * c, d), min((t + 1) * c, d)))
        out[mesh.devices[pos]] = tuple(slices)
    return dict(sorted(out.items()))


# -- the spec's worked examples (§6) --------------------------------------------------------------


def test_ex1_two_sub_axes_on_different_dims():
    got = DeviceMesh(M('<["x"=8]>')).index_map(S('#sdy.sharding<@m, [{"x":(2)2}, {"x":(1)2}]>'), (8, 4))
    assert ranges(got) == {0: "0:4, 0:2", 1: "0:4, 0:2", 2: "4:8, 0:2", 3: "4:8, 0:2",
                           4: "0:4, 2:4", 5: "0:4, 2:4", 6: "4:8, 2:4", 7: "4:8, 2:4"}


def test_ex2_device_ids_sub_axis_explicit_replicated():
    mesh = M('<["x"=4, "y"=2], device_ids=[0, 2, 4, 6, 1, 3, 5, 7]>')
    s = S('#sdy.sharding<@m, [{"x":(2)2, "y"}, {}], replicated={"x":(1)2}>')
    assert ranges(DeviceMesh(mesh).index_map(s, (8, 2))) == {
        0: "0:2, 0:2", 1: "0:2, 0:2", 2: "2:4, 0:2", 3: "2:4, 0:2",
        4: "4:6, 0:2", 5: "4:6, 0:2", 6: "6:8, 0:2", 7: "6:8, 0:2"}


def test_ex3_arbitrary_device_ids_minor_sub_axis():
    mesh = M('<["a"=2, "b"=4], device_ids=[3, 1, 2, 0, 7, 5, 6, 4]>')
    s = S('#sdy.sharding<@m, [{"b":(2)2}, {"a"}]>')
    assert ranges(DeviceMesh(mesh).index_map(s, (4, 4))) == {
        0: "2:4, 0:2", 1: "2:4, 0:2", 2: "0:2, 0:2", 3: "0:2, 0:2",
        4: "2:4, 2:4", 5: "2:4, 2:4", 6: "0:2, 2:4", 7: "0:2, 2:4"}


def test_ex4a_uneven_dims_are_padded_at_the_end():
    dm = DeviceMesh(M('<["x"=2, "y"=4]>'))
    s = S('#sdy.sharding<@m, [{"x"}, {"y"}]>')
    assert ranges(dm.index_map(s, (7, 6))) == {
        0: "0:4, 0:2", 1: "0:4, 2:4", 2: "0:4, 4:6", 3: "0:4, 6:6",
        4: "4:7, 0:2", 5: "4:7, 2:4", 6: "4:7, 4:6", 7: "4:7, 6:6"}
    x = np.arange(42, dtype=np.float32).reshape(7, 6)
    sh = dm.shard(x, s, fill=-1)
    assert sh.local_shape == (4, 2)
    local = dict(sh.per_device())
    assert (local[3] == -1).all() and (local[7] == -1).all()  # whole buffer is padding
    assert (local[4][3] == -1).all() and (local[4][:3] == x[4:7, 0:2]).all()  # last row padded
    assert (local[0] == x[0:4, 0:2]).all()


def test_ex4b_non_mesh_order_within_a_dim():
    got = DeviceMesh(M('<["x"=2, "y"=4]>')).index_map(S('#sdy.sharding<@m, [{"y", "x"}, {}]>'), (7, 6))
    rows = {d: f"{v[0].start}:{v[0].stop}" for d, v in got.items()}
    assert rows == {0: "0:1", 4: "1:2", 1: "2:3", 5: "3:4", 2: "4:5", 6: "5:6", 3: "6:7", 7: "7:7"}
    got = DeviceMesh(M('<["x"=4, "y"=2]>')).index_map(S('#sdy.sharding<@m, [{"y", "x"}, {}]>'), (8, 2))
    assert [got[d][0].start for d in range(4)] == [0, 4, 1, 5]


def test_ex4c_flat_xla_rule_not_dtensor_chunks():
    got = DeviceMesh(M('<["a"=3, "b"=2]>')).index_map(S('#sdy.sharding<@m, [{"a", "b"}]>'), (7,))
    assert ranges(got) == {0: "0:2", 1: "2:4", 2: "4:6", 3: "6:7", 4: "7:7", 5: "7:7"}


def test_ex5_design_doc_examples():
    dm = DeviceMesh(M('<["x"=2, "y"=4, "z"=2]>'))
    got = dm.index_map(S('#sdy.sharding<@m, [{"x"}, {"z", "y"}]>'), (4, 8))
    for (x, y, z), dev in zip(itertools.product(range(2), range(4), range(2)), range(16)):
        assert got[dev] == (slice(2 * x, 2 * x + 2), slice(4 * z + y, 4 * z + y + 1))
    assert dm.shard(np.zeros((4, 8)), S('#sdy.sharding<@m, [{"x"}, {?}], replicated={"y"}>')).local_shape == (2, 8)
    sh = DeviceMesh(M('<["x"=2, "y"=8, "z"=2]>')).shard(np.zeros((4, 8)), S('#sdy.sharding<@m, [{"x"}, {"y":(2)2}]>'))
    assert sh.local_shape == (2, 4)
    assert dict(sh.data.sizes) == {"x": 2, "y:(1)2": 2, "y:(2)2": 2, "y:(4)2": 2, "z": 2, "dim_0": 2, "dim_1": 4}
    # A reshape keeps each device's elements: [{"x"}] on 8 == [{"x":(1)2}, {"x":(2)2}] on 2x4.
    dm4 = DeviceMesh(M('<["x"=4]>'))
    flat = dm4.index_map(S('#sdy.sharding<@m, [{"x"}]>'), (8,))
    square = dm4.index_map(S('#sdy.sharding<@m, [{"x":(1)2}, {"x":(2)2}]>'), (2, 4))
    for x in range(4):
        rows, cols = square[x]
        assert (rows.start, cols.start, cols.stop) == (x // 2, 2 * (x % 2), 2 * (x % 2) + 2)
        elements = [r * 4 + c for r in range(rows.start, rows.stop) for c in range(cols.start, cols.stop)]
        assert elements == list(range(flat[x][0].start, flat[x][0].stop))
    buffers = DeviceMesh(M('<["x"=8, "y"=2, "z"=3]>')).shard(
        np.zeros((7, 3, 8)), S('#sdy.sharding<@m, [{"x"}, {"y"}, {"z"}]>'))
    assert buffers.local_shape == (1, 2, 3)


def test_mesh_xy_and_mesh_full_are_equivalent():
    full = (S('#sdy.sharding<@mesh_full, [{"devices":(1)4}, {"devices":(4)2}]>'), M('<["devices"=8]>'))
    xy = (S('#sdy.sharding<@mesh_xy, [{"x"}, {"y"}]>'), M('<["x"=4, "y"=2]>'))
    assert equivalent(xy, full, (4, 4))
    assert not equivalent(xy, (S('#sdy.sharding<@mesh_xy, [{"y"}, {"x"}]>'), M('<["x"=4, "y"=2]>')), (4, 4))
    table = MeshTable.parse('sdy.mesh @mesh_0 = <["a"=4, "b"=2]> sdy.mesh @mesh_1 = <["x"=2, "y"=2, "z"=2]>')
    assert equivalent((S('#sdy.sharding<@mesh_0, [{"b"}]>'), table), (S('#sdy.sharding<@mesh_1, [{"z"}]>'), table), (4,))
    assert equivalent((S('#sdy.sharding<@mesh_0, [{"b"}]>'), DeviceMesh(table["mesh_0"])),
                      (S('#sdy.sharding<mesh<["x"=2, "y"=2, "z"=2]>, [{"z"}]>'), None), (4,))
    assert not equivalent((S('#sdy.sharding<@mesh_0, [{"b"}]>'), table), (S('#sdy.sharding<@mesh_1, [{"x"}]>'), table), (4,))


def test_equivalent_compares_unreduced_groups():
    mesh = M('<["a"=2, "b"=2]>')
    plain = (S('#sdy.sharding<@m, [{"a"}]>'), mesh)
    partial = (S('#sdy.sharding<@m, [{"a"}], unreduced={"b"}>'), mesh)
    assert not equivalent(plain, partial, (4,))
    assert equivalent(partial, partial, (4,))


# -- recorded truth (../oracle/jax_device_maps.json) ----------------------------------------------


def _recorded():
    if not ORACLE_JSON.exists():
        return []
    return [c for c in json.loads(ORACLE_JSON.read_text()) if "mesh_axes" in c and "sdy" in c]


@needs_shared(ORACLE_JSON)
@pytest.mark.parametrize("case", _recorded(), ids=lambda c: f"{c['sdy']}-{c['shape']}")
def test_recorded_device_maps(case):
    mesh = Mesh(tuple(MeshAxis(a, s) for a, s in case["mesh_axes"]), tuple(case["device_ids"] or ()))
    s = TensorSharding.parse(case["sdy"])
    if isinstance(s.mesh_or_ref, Mesh):  # JAX's inline form may omit device_ids of the case
        mesh = s.mesh_or_ref
    got = DeviceMesh(mesh).index_map(s, case["shape"])
    assert oracle.as_ranges(got) == case["per_device"]
    if "padded_shard_shape" in case:
        assert DeviceMesh(mesh).shard(np.zeros(case["shape"]), s).local_shape == tuple(case["padded_shard_shape"])


# -- live: XLA's and JAX's device maps (one child process) ----------------------------------------


@pytest.mark.jaxlib
def test_device_maps_equal_xla_and_jax_live():
    cases, results = oracle.cases(), oracle.results()["cases"]
    assert len(cases) >= 40
    compared_xla = compared_jax = 0
    for case, res in zip(cases, results):
        assert "error" not in res, (case, res)
        ours = oracle.as_ranges(DeviceMesh(M(case["mesh"])).index_map(S(case["sharding"]), case["shape"]))
        if "xla_map" in res:
            assert res["xla_map"] == ours, case
            compared_xla += 1
        if "jax_map" in res:
            assert res["jax_map"] == ours, case
            compared_jax += 1
    assert compared_xla >= 40 and compared_jax >= 40


# -- DeviceMesh ---------------------------------------------------------------------------------


def test_devices_dataarray_respects_device_ids():
    dm = DeviceMesh(M('<["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>'))
    assert dm.devices.dims == ("x", "y")
    assert dm.devices.sel(x=0, y=1).item() == 6
    assert DeviceMesh('<["a"=2]>').devices.values.tolist() == [0, 1]
    assert DeviceMesh(M('<[], device_ids=[3]>')).devices.item() == 3


def test_index_map_with_replicated_and_open_dims():
    dm = DeviceMesh(M('<["x"=2, "y"=4]>'))
    implicit = dm.index_map(S('#sdy.sharding<@m, [{"x"}, {}]>'), (8, 8))
    explicit = dm.index_map(S('#sdy.sharding<@m, [{"x"}, {?}p2], replicated={"y"}>'), (8, 8))
    assert implicit == explicit
    assert implicit[3] == (slice(0, 4), slice(0, 8)) and implicit[4] == (slice(4, 8), slice(0, 8))


def test_maximal_mesh_holds_everything_on_one_device():
    dm = DeviceMesh(M('<[], device_ids=[3]>'))
    assert dm.index_map(S('#sdy.sharding<@m, []>'), (4, 4)) == {3: (slice(0, 4), slice(0, 4))}
    x = np.arange(16).reshape(4, 4)
    sh = dm.shard(x, S('#sdy.sharding<@m, []>'))
    assert [d for d, _ in sh.per_device()] == [3]
    assert (dm.unshard(sh) == x).all()


# -- shard / unshard ----------------------------------------------------------------------------


def test_shard_layout_coords_and_views():
    dm = DeviceMesh(M('<["x"=2, "y"=4]>'))
    x = np.arange(48, dtype=np.int32).reshape(6, 8)
    sh = dm.shard(x, S('#sdy.sharding<@m, [{"x"}, {}]>'))
    assert sh.data.dims == ("x", "y", "dim_0", "dim_1")
    assert sh.data.device_id.values.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert sh.data["global_dim_0"].dims == ("x", "dim_0")
    assert sh.data["global_dim_0"].values.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert not sh.data.values.flags.writeable
    local = dict(sh.per_device())
    assert np.shares_memory(local[0], local[3])  # replicas share memory
    assert np.shares_memory(local[0], x)  # an even numpy input is not copied
    assert (sh.local(5) == x[3:6]).all()
    copied = dm.shard(x, S('#sdy.sharding<@m, [{"x"}, {}]>'), copy=True)
    mine = dict(copied.per_device())
    assert mine[0].flags.writeable and not np.shares_memory(mine[0], mine[3])
    assert not np.shares_memory(mine[0], x)


def test_padding_coords_and_fill():
    dm = DeviceMesh(M('<["x"=4]>'))
    sh = dm.shard(np.ones(5, np.float32), S('#sdy.sharding<@m, [{"x"}]>'), fill=np.nan)
    assert sh.data["global_dim_0"].values.tolist() == [[0, 1], [2, 3], [4, -1], [-1, -1]]
    assert np.isnan(sh.local(3)).all() and np.isnan(sh.local(2)[1])


def test_dataarray_input_keeps_dims_and_comes_back():
    x = xr.DataArray(np.arange(24.0).reshape(4, 6), dims=("batch", "feature"), name="w",
                     coords={"feature": list("abcdef")}, attrs={"units": "m"})
    dm = DeviceMesh(M('<["x"=2, "y"=2]>'))
    sh = dm.shard(x, S('#sdy.sharding<@m, [{"y"}, {"x"}]>'))
    assert sh.data.dims == ("x", "y", "batch", "feature") and sh.data.name == "w"
    assert sh.data.sel(x=1, y=0)["global_feature"].values.tolist() == [3, 4, 5]
    back = dm.unshard(sh)
    assert isinstance(back, xr.DataArray)
    xr.testing.assert_identical(back, x)


def test_sub_axes_become_their_own_dims():
    dm = DeviceMesh(M('<["x"=8]>'))
    sh = dm.shard(np.arange(32).reshape(8, 4), S('#sdy.sharding<@m, [{"x":(2)2}, {"x":(1)2}]>'))
    assert sh.data.dims == ("x:(1)2", "x:(2)2", "x:(4)2", "dim_0", "dim_1")
    assert sh.data.device_id.values.reshape(-1).tolist() == list(range(8))


def test_unshard_raises_when_replicas_disagree():
    dm = DeviceMesh(M('<["x"=2, "y"=2]>'))
    sh = dm.shard(np.zeros((4, 4)), S('#sdy.sharding<@m, [{"x"}, {}]>'), copy=True)
    sh.data.values[1, 1, 0, 0] = 1.0  # device 3's buffer
    with pytest.raises(ShardingError, match="replicas disagree along mesh dim 'y': device 3 holds different data than device 2"):
        dm.unshard(sh)


def test_unreduced_sum_holds_partials_and_reduces_back():
    dm = DeviceMesh(M('<["x"=2, "y"=2]>'))
    x = np.array([[1.5, -0.0], [np.nan, 4.0]], np.float32)
    sh = dm.shard(x, S('#sdy.sharding<@m, [{"x"}, {}], unreduced={"y"}>'))
    local = dict(sh.per_device())
    assert (local[0] == x[:1]).all() and np.signbit(local[1]).all() and (local[1] == 0).all()
    assert dm.unshard(sh).view(np.uint32).tolist() == x.view(np.uint32).tolist()
    changed = dm.shard(x, S('#sdy.sharding<@m, [{"x"}, {}], unreduced={"y"}>'), copy=True)
    changed.data.values[0, 1] = 1.0  # a real partial sum on device 1
    assert dm.unshard(changed)[0].tolist() == [2.5, 1.0]


def test_unreduced_max_replicates_and_reduces():
    dm = DeviceMesh(M('<["x"=2]>'))
    s = TensorSharding("m", S('#sdy.sharding<@m, [{}]>').dim_shardings, (), S('#sdy.sharding<@m, [{}], unreduced={"x"}>').unreduced_axes, "max")
    sh = dm.shard(np.array([3, 1, 2], np.int8), s, copy=True)
    assert [v.tolist() for _, v in sh.per_device()] == [[3, 1, 2], [3, 1, 2]]
    sh.data.values[1] = [0, 5, 0]
    assert dm.unshard(sh).tolist() == [3, 5, 2]


def test_errors_are_clear():
    dm = DeviceMesh(M('<["x"=2, "y"=4]>'))
    with pytest.raises(InvalidShardingError, match="sharding doesn't match tensor rank: 2 != 1"):
        dm.index_map(S('#sdy.sharding<@m, [{"x"}, {}]>'), (8,))
    with pytest.raises(InvalidShardingError, match='unknown axis name: "z"'):
        dm.index_map(S('#sdy.sharding<@m, [{"z"}]>'), (8,))
    with pytest.raises(ShardingError, match="expected a non-negative int shape dim 0"):
        dm.index_map(S('#sdy.sharding<@m, [{"x"}]>'), (-1,))
    with pytest.raises(ShardingError, match="are also mesh axes"):
        dm.shard(xr.DataArray(np.zeros((2, 4)), dims=("x", "f")), S('#sdy.sharding<@m, [{"x"}, {}]>'))
    with pytest.raises(ShardingError, match="dtype object"):
        dm.shard(np.array([None, 1]), S('#sdy.sharding<@m, [{"x"}]>'))
    with pytest.raises(ShardingError, match="does not fit dtype int8"):
        dm.shard(np.zeros(3, np.int8), S('#sdy.sharding<@m, [{"x"}]>'), fill=1000)
    with pytest.raises(ShardingError, match="is not this device mesh"):
        dm.index_map(S('#sdy.sharding<mesh<["x"=8]>, [{"x"}]>'), (8,))
    with pytest.raises(InvalidShardingError, match="unknown mesh: @other"):
        DeviceMesh(M('<["x"=2]>'), name="m").index_map(S('#sdy.sharding<@other, [{"x"}]>'), (8,))
    with pytest.raises(ShardingError, match="expected a ShardedArray"):
        dm.unshard(np.zeros(3))
    other = DeviceMesh(M('<["x"=4]>'))
    with pytest.raises(ShardingError, match="sharded over devices"):
        other.unshard(dm.shard(np.zeros(8), S('#sdy.sharding<@m, [{"x"}]>')))


# -- properties ---------------------------------------------------------------------------------

_NAMES = ["x", "y", "z", "data"]


@st.composite
def small_meshes(draw) -> Mesh:
    n = draw(st.integers(1, 3))
    names = draw(st.permutations(_NAMES))[:n]
    sizes = [draw(st.sampled_from([1, 2, 3, 4, 6, 8])) for _ in names]
    while math.prod(sizes) > 48:
        sizes[sizes.index(max(sizes))] //= 2
    ids: tuple[int, ...] = ()
    if draw(st.booleans()):
        ids = tuple(draw(st.permutations(range(math.prod(sizes)))))
    return Mesh(tuple(MeshAxis(a, s) for a, s in zip(names, sizes)), ids)


def _random_array(draw, shape, dtype) -> np.ndarray:
    n = math.prod(shape)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if dtype == "int4":
        return rng.integers(-8, 8, n).astype(ml_dtypes.int4).reshape(shape)
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    dt = np.dtype(dtype)
    bits = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8)  # any bit pattern: NaN payloads, -0.0
    return bits.view(dt).reshape(shape)


_DTYPES = ["float32", ml_dtypes.bfloat16, "int4", "bool", "complex64", "uint8", "float64"]


@st.composite
def sharded_cases(draw):
    mesh = draw(small_meshes())
    rank = draw(st.integers(0, 3))
    s = draw(shardings(mesh, rank=rank))
    shape = tuple(draw(st.integers(0, 9)) for _ in range(rank))
    dtype = draw(st.sampled_from(_DTYPES))
    return mesh, s, _random_array(draw, shape, dtype)


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@given(sharded_cases(), st.booleans())
def test_unshard_of_shard_is_bit_exact(case, copy):
    mesh, s, x = case
    dm = DeviceMesh(mesh)
    sh = dm.shard(x, s, copy=copy)
    y = dm.unshard(sh)
    assert y.dtype == x.dtype and y.shape == x.shape and _bits(y) == _bits(x)


@given(sharded_cases())
def test_index_map_matches_reference_and_shards(case):
    mesh, s, x = case
    dm = DeviceMesh(mesh)
    index_map = dm.index_map(s, x.shape)
    assert index_map == reference_map(mesh, s, x.shape)
    assert sorted(index_map) == sorted(mesh.devices)
    if s.unreduced_axes:
        return  # partial results are not slices of x
    sh = dm.shard(x, s, fill=0)
    for dev, local in sh.per_device():
        part = x[index_map[dev]]
        assert local.shape == sh.local_shape
        assert _bits(local[tuple(slice(0, k) for k in part.shape)]) == _bits(part)


@given(st.data())
def test_equivalent_to_itself_and_to_its_hlo_import(data):
    from sharding import from_hlo_sharding, to_hlo_sharding

    mesh = data.draw(small_meshes())
    rank = data.draw(st.integers(0, 3))
    s = data.draw(shardings(mesh, rank=rank))
    shape = tuple(data.draw(st.integers(0, 9)) for _ in range(rank))
    assert equivalent((s, mesh), (s, mesh), shape)
    m2, s2 = from_hlo_sharding(to_hlo_sharding(s, mesh), rank=rank, num_devices=mesh.total_size)
    if mesh.total_size > 1 or not any(d.axes for d in s.dim_shardings):
        assert DeviceMesh(m2).index_map(s2, shape) == DeviceMesh(mesh).index_map(s, shape)


def test_sharded_array_repr():
    sh = DeviceMesh(M('<["x"=2]>')).shard(np.zeros((4, 2), np.float32), S('#sdy.sharding<@m, [{"x"}, {}]>'))
    assert isinstance(sh, ShardedArray)
    assert repr(sh) == ('ShardedArray(#sdy.sharding<@m, [{"x"}, {}]>, mesh=<["x"=2]>, global_shape=(4, 2), '
                        'local_shape=(2, 2), dtype=float32)')


def test_copy_gives_every_device_its_own_writable_buffer():
    dm = DeviceMesh(M('<["x"=2, "y"=4]>'))
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    for text in ('#sdy.sharding<@m, [{"x"}, {"y"}]>', '#sdy.sharding<@m, [{"y"}, {}]>'):
        sh = dm.shard(x, S(text), copy=True)
        local = dict(sh.per_device())
        assert not any(np.shares_memory(local[a], local[b]) for a in local for b in local if a < b)
        assert not any(np.shares_memory(v, x) for v in local.values())
        local[5][...] = -1
        assert (x >= 0).all()


@given(st.data())
def test_round_trip_with_any_axis_names(data):
    from tests.sharding.strategies import meshes

    mesh = data.draw(meshes().filter(lambda m: m.total_size <= 64))
    rank = 0 if mesh.is_maximal else data.draw(st.integers(0, 2))
    s = data.draw(shardings(mesh, rank=rank))
    x = _random_array(data.draw, tuple(data.draw(st.integers(0, 5)) for _ in range(rank)), "float32")
    dm = DeviceMesh(mesh)
    assert _bits(dm.unshard(dm.shard(x, s))) == _bits(x)


def test_non_contiguous_input_and_mesh_text():
    dm = DeviceMesh('<["x"=2, "y"=3]>')
    x = np.arange(60).reshape(6, 10).T[::2]  # strided, transposed
    s = S('#sdy.sharding<@m, [{"y"}, {"x"}]>')
    sh = dm.shard(x, s)
    for dev, local in sh.per_device():
        part = x[sh.index_map()[dev]]
        assert (local[: part.shape[0], : part.shape[1]] == part).all()
    assert (dm.unshard(sh) == x).all()


def test_reserved_coordinate_names():
    with pytest.raises(ShardingError, match=r"taken by the shards' coordinates"):
        DeviceMesh(M('<["device_id"=2]>')).shard(np.zeros(4), S('#sdy.sharding<@m, [{"device_id"}]>'))
