"""Every public function of `sharding` validates its arguments (issue 37 item 9).

One table names each public callable with arguments it accepts; the sweep replaces one argument
at a time by values of the wrong type or size and requires either success or a `ShardingError`
that is not chained onto an internal exception, within seconds (never a hang, a foreign
exception, or Python's own ValueError from printing a huge int). A second test fails when a name
of `sharding.__all__` is missing from the table.
"""

from __future__ import annotations

import inspect

import jax  # noqa: F401  (to_named_sharding reads its devices only once jax is imported)
import numpy as np

import sharding
from sharding import (AxisRef, DeviceMesh, DimensionSharding, HloSharding, ManualAxes, Mesh, MeshAxis, MeshTable,
                      ShardingError, SubAxisInfo, TensorSharding, TensorShardingPerValue, equivalent,
                      from_hlo_sharding, from_named_sharding, reshard_plan, to_hlo_sharding, to_named_sharding, verify,
                      verify_mesh, visualize)
from tests.argument_sweep import findings

BAD = [None, "x", b"x", 1.5, -1, 2**63, 10**5000, True, [], object(), "\u0662", np.float64(2.0), "", [[1, [2]]],
       np.int64(3), np.True_, {"a": 1}, "\U0001d7d9", -(2**63) - 1, float("nan"), float("inf"), np.float32("nan"),
       np.uint64(2**64 - 1), np.int8(-1), np.array(3), np.array([1, 2]), 2**64, ((1,),), (2**63,), (10**5000,)]
INNER = [None, -1, 2**63, 10**5000, True, np.True_, 1.5, float("nan"), "\u0662", np.uint64(2**64 - 1), np.array(3), [[1]]]
"""Entries nested inside a good tuple argument (`argument_sweep.nested`)."""

M = Mesh.of(x=2, y=4)
S = TensorSharding.parse('<@m, [{"x"}, {"y"}]>')
T = TensorSharding.parse('<@m, [{"y"}, {}]>')
TABLE = MeshTable.of(m=M)
X = np.arange(64.0).reshape(8, 8)


def _table():
    dm = DeviceMesh(M)
    sharded = dm.shard(X, S)
    plan = reshard_plan(S, T, M, (8, 8))
    picture = visualize(S, M, (8, 8))
    return [
        ("MeshAxis", MeshAxis, ("x", 2), {}),
        ("Mesh", Mesh, ((MeshAxis("x", 2),), (1, 0)), {}),
        ("Mesh.of", Mesh.of, (), {"x": 2, "device_ids": (1, 0)}),
        ("Mesh.parse", Mesh.parse, ('<["x"=2]>',), {}),
        ("Mesh.axis_size", M.axis_size, ("x",), {}),
        ("MeshTable", MeshTable, ((("m", M),),), {}),
        ("MeshTable.of", MeshTable.of, (), {"m": M}),
        ("MeshTable.parse", MeshTable.parse, ('sdy.mesh @m = <["x"=2]>',), {}),
        ("MeshTable.same_devices", TABLE.same_devices, ("m", "m"), {}),
        ("MeshTable.__getitem__", TABLE.__getitem__, ("m",), {}),
        ("AxisRef", AxisRef, ("x",), {}),
        ("AxisRef.sub", AxisRef.sub, ("x", 1, 2), {}),
        ("AxisRef.parse", AxisRef.parse, ('"x":(1)2',), {}),
        ("AxisRef.size", AxisRef("x").size, (M,), {}),
        ("SubAxisInfo", SubAxisInfo, (1, 2), {}),
        ("DimensionSharding", DimensionSharding, ((AxisRef("x"),), True, 1), {}),
        ("TensorSharding", TensorSharding, ("m", (DimensionSharding(),), (), (), "sum"), {}),
        ("TensorSharding.parse", TensorSharding.parse, ('<@m, [{"x"}]>',), {}),
        ("TensorSharding.replicated", TensorSharding.replicated, ("m", 2), {"is_closed": True}),
        ("TensorSharding.local_shape", S.local_shape, ((8, 8), M), {}),
        ("TensorSharding.num_shards_per_dim", S.num_shards_per_dim, (M,), {}),
        ("TensorSharding.replicated_mesh_axes", S.replicated_mesh_axes, (M,), {"explicit": None}),
        ("TensorSharding.resolve_mesh", S.resolve_mesh, (M,), {}),
        ("TensorShardingPerValue", TensorShardingPerValue, ((S,),), {}),
        ("TensorShardingPerValue.parse", TensorShardingPerValue.parse, ('#sdy.sharding_per_value<[<@m, []>]>',), {}),
        ("ManualAxes", ManualAxes, (("x",),), {}),
        ("ManualAxes.parse", ManualAxes.parse, ('{"x"}',), {}),
        ("verify", verify, (S,), {"mesh": M, "shape": (8, 8), "check_divisibility": True, "manual_axes": ()}),
        ("verify_mesh", verify_mesh, (M,), {}),
        ("DeviceMesh", DeviceMesh, (M,), {"name": "m", "uneven": "padded"}),
        ("DeviceMesh.from_jax", DeviceMesh.from_jax, (M,), {}),  # (never a jax mesh here: always refused)
        ("DeviceMesh.placement", dm.placement, (S, (8, 8)), {"cut_by_replicated": False}),
        ("DeviceMesh.index_map", dm.index_map, (S, (8, 8)), {}),
        ("DeviceMesh.shard", dm.shard, (X, S), {"fill": 0, "copy": False, "backend": None}),
        ("DeviceMesh.unshard", dm.unshard, (sharded,), {}),
        ("DeviceMesh.reshard", dm.reshard, (sharded, T), {"fill": 0, "out": None}),
        ("ShardedArray.local", sharded.local, (0,), {}),
        ("equivalent", equivalent, ((S, M), (S, M), (8, 8)), {}),
        ("HloSharding.parse", HloSharding.parse, ("{devices=[2,4]<=[8]}",), {}),
        ("HloSharding.tiled", HloSharding.tiled, ((2, 4),),
         {"device_list": (), "iota_reshape": (8,), "iota_perm": (0,), "subgroups": ()}),
        ("to_hlo_sharding", to_hlo_sharding, (S, M), {"manual_axes": ()}),
        ("from_hlo_sharding", from_hlo_sharding, ("{devices=[2,4]<=[8]}",),
         {"rank": 2, "num_devices": 8, "mesh_name": "m"}),
        ("to_named_sharding", to_named_sharding, (S, M), {"devices": None}),
        ("from_named_sharding", from_named_sharding, (S, 2), {"mesh_name": "m", "modify_wrt_axis_types": False}),
        ("visualize", visualize, (S, M, (8, 8)), {"uneven": None}),
        ("ShardingPicture.text", picture.text, (), {"width": 80}),
        ("reshard_plan", reshard_plan, (S, T, M, (8, 8)), {"dtype": "f32", "uneven": "padded"}),
        ("ReshardPlan.cost", plan.cost, (), {"links": None, "algorithm": "ring"}),
        ("ReshardPlan.report", plan.report, (), {"links": None}),
    ]


def _label(value) -> str:
    try:
        return repr(value)[:40]
    except ValueError:  # (an int past Python's 4,300 digits, maybe nested)
        return f"<{type(value).__name__} holding 10**5000>"


def test_every_public_function_refuses_bad_arguments_with_its_own_error():
    bad = []
    for name, fn, args, kwargs in _table():
        bad += findings(name, fn, args, kwargs, BAD, ShardingError, 5, _label, INNER)
    assert not bad, f"{len(bad)}:\n" + "\n".join(bad[:400])


def test_the_sweep_covers_every_public_name():
    listed = {name.split(".")[0] for name, *_ in _table()}
    values = {"ShardingError", "ShardingParseError", "InvalidMeshError", "InvalidShardingError",  # exceptions
              "ShardedArray", "ShardingPicture", "ReshardPlan", "ReshardStep", "HloSharding"}  # made by the package
    missing = [n for n in sharding.__all__ if n not in listed and n not in values]
    assert not missing, f"public names without a row in the sweep: {missing}"
    assert all(inspect.isclass(getattr(sharding, n)) for n in values if n != "HloSharding")
