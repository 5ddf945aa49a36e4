"""XLA and JAX as the oracle for device maps and HloSharding text, all in ONE child process.

For every case (a mesh, an sdy sharding, a divisible shape) the child

* compiles a module whose result carries the sharding (XLA's Shardy export + SPMD partitioner on
  8 CPU devices) and reads back the HloSharding XLA exported;
* asks `GSPMDSharding(devices, that HloSharding).devices_indices_map(shape)` (XLA's device map);
* for full-axis shardings, asks `NamedSharding(Mesh(devices[device_ids]), P(...))
  .devices_indices_map(shape)` (JAX's map) and JAX's own HloSharding;
* builds `sharding.to_named_sharding(...)` (this library, imported in the child) and asks its map.

It also prints a list of HloSharding texts through `xc.HloSharding.from_string` (XLA's printer).
Main-function outputs with uneven dims are rewritten by XLA's export (spec §7.4), so the shapes
here divide evenly; uneven layouts are checked against the recorded and worked tables.
"""

from __future__ import annotations

import functools
import hashlib
import pathlib

from sharding import Mesh, TensorSharding
from tests.jaxlib_child import cached, run_child

ROOT = str(pathlib.Path(__file__).resolve().parents[2])

_CODE = r"""
import sys
sys.path.insert(0, PAYLOAD["root"])
import numpy as np
import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from jax._src import compiler
from jax._src.interpreters import mlir as jmlir
from jax._src.lib import xla_client as xc
from jax._src.lib.mlir import ir
from jax._src.sharding_impls import GSPMDSharding
import sharding as lib

DEVS = jax.devices()

def ranges(index_map, shape):
    out = {}
    for dev, idx in index_map.items():
        out[str(dev.id)] = [[0 if s.start is None else s.start, d if s.stop is None else s.stop]
                            for s, d in zip(idx, shape)]
    return out

def export(mesh_text, sharding_text, shape, n):
    ty = "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"
    text = (f"module @m attributes {{mhlo.num_partitions = {n} : i32, mhlo.num_replicas = 1 : i32}} {{\n"
            f"  sdy.mesh @mesh = {mesh_text}\n"
            f"  func.func public @main(%arg0: {ty}) -> ({ty} {{sdy.sharding = {sharding_text}}}) {{\n"
            f"    %0 = stablehlo.add %arg0, %arg0 : {ty}\n    return %0 : {ty}\n  }}\n}}")
    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        opts = compiler.get_compile_options(num_replicas=1, num_partitions=n,
                                            device_assignment=np.array(DEVS[:n]).reshape(1, n),
                                            backend=DEVS[0].client)
        exe = compiler.backend_compile_and_load(DEVS[0].client, module, xc.DeviceList(tuple(DEVS[:n])), opts, [])
    return str(xc.HloSharding.from_proto(exe.get_output_shardings()[0]))

cases = []
for case in PAYLOAD["cases"]:
    out = {}
    shape, n = tuple(case["shape"]), case["n"]
    try:
        out["hlo"] = hlo = export(case["mesh"], case["sharding"], shape, n)
        # GSPMDSharding has no device map for unreduced subgroups (NotImplementedError).
        if "unreduced" not in hlo:
            gspmd = GSPMDSharding(DEVS[:n], xc.HloSharding.from_string(hlo))
            out["xla_map"] = ranges(gspmd.devices_indices_map(shape), shape)
    except Exception as e:
        out["error"] = f"{type(e).__name__}: {e}"[:500]
    if case["jax"] is not None:
        names, sizes, ids, spec = case["jax"]
        mesh = Mesh(np.array(DEVS)[ids].reshape(sizes), tuple(names))
        ns = NamedSharding(mesh, P(*[tuple(s) if isinstance(s, list) else s for s in spec]))
        out["jax_map"] = ranges(ns.devices_indices_map(shape), shape)
        out["jax_hlo"] = str(ns._to_xla_hlo_sharding(len(shape)))
    try:
        named = lib.to_named_sharding(lib.TensorSharding.parse(case["sharding"]), lib.Mesh.parse(case["mesh"]))
        if named.spec.unreduced:  # (JAX has no device map for unreduced axes)
            out["named_unreduced"] = sorted(named.spec.unreduced)
        else:
            out["named_map"] = ranges(named.devices_indices_map(shape), shape)
    except lib.ShardingError as e:
        out["named_error"] = str(e)
    cases.append(out)
printed = [str(xc.HloSharding.from_string(t)) for t in PAYLOAD["hlo_texts"]]
RESULT = {"cases": cases, "printed": printed}
"""

_MESHES = {
    "xy": '<["x"=2, "y"=4]>',
    "xy_rev": '<["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>',
    "xy_stride": '<["x"=2, "y"=4], device_ids=[0, 2, 4, 6, 1, 3, 5, 7]>',
    "xy_perm": '<["x"=2, "y"=4], device_ids=[5, 1, 6, 0, 3, 7, 2, 4]>',
    "yx": '<["x"=4, "y"=2]>',
    "yx_stride": '<["x"=4, "y"=2], device_ids=[0, 2, 4, 6, 1, 3, 5, 7]>',
    "xyz": '<["x"=2, "y"=2, "z"=2]>',
    "xyz_perm": '<["x"=2, "y"=2, "z"=2], device_ids=[3, 1, 2, 0, 7, 5, 6, 4]>',
    "x8": '<["x"=8]>',
    "ab": '<["a"=2, "b"=4]>',
    "ab_perm": '<["a"=2, "b"=4], device_ids=[3, 1, 2, 0, 7, 5, 6, 4]>',
    "x4": '<["x"=4]>',
    "one": '<["x"=2, "one"=1, "y"=4]>',
}

_XY = [
    '[{"x"}, {"y"}]', '[{"y"}, {"x"}]', '[{"x", "y"}, {}]', '[{"y", "x"}, {}]', '[{}, {"y"}]',
    '[{"x"}, {}]', '[{}, {}]', '[{?}, {"y"}]', '[{"x", ?}, {"y"}p1]', '[{"x"}, {}], replicated={"y"}',
    '[{"y":(1)2}, {"x"}]', '[{"y":(2)2}, {}]', '[{"y":(2)2, "x"}, {"y":(1)2}]',
    '[{}, {"y":(1)2}], replicated={"x"}',
]
_GROUPS = [
    (["xy", "xy_rev", "xy_stride", "xy_perm"], _XY),
    (["yx", "yx_stride"], ['[{"y", "x"}, {}]', '[{"x":(2)2, "y"}, {}], replicated={"x":(1)2}',
                           '[{"x"}, {"y"}]', '[{"x":(1)2}, {"y", "x":(2)2}]']),
    (["xyz", "xyz_perm"], ['[{"z", "x"}, {"y"}]', '[{"y"}, {}, {"x"}]', '[{"x", "y", "z"}, {}, {}]',
                           '[{"z"}, {"y"}, {"x"}]', '[{}, {"z", "y"}, {}]']),
    (["x8"], ['[{"x":(2)2}, {"x":(1)2}]', '[{"x":(1)4}, {}]', '[{"x":(2)4}, {}]',
              '[{"x":(4)2, "x":(1)2}, {}]', '[{"x":(1)2, "x":(4)2}, {}]', '[{"x"}, {}]']),
    (["ab", "ab_perm"], ['[{"b":(2)2}, {"a"}]', '[{"b":(1)2}, {"a", "b":(2)2}]',
                         '[{"a"}, {}], unreduced={"b"}', '[{}, {"b":(2)2}], unreduced={"a"}']),
    (["x4"], ['[{"x"}]', '[{"x":(1)2}]', '[{"x":(2)2}]', '[{}]']),
    (["one"], ['[{"x", "one"}, {"y"}]', '[{"one"}, {}]', '[{"y"}, {"one", "x"}]', '[{"y"}, {}], unreduced={"one"}',
               '[{}, {}], unreduced={"one"}']),
]

HLO_TEXTS = [
    "{devices=[2,2,2]<=[2,2,2]T(2,0,1)}", "{devices=[2,2,2]<=[2,2,2]T(0,1,2)}", "{devices=[4,2]<=[2,2,2]T(1,0,2)}",
    "{devices=[2,4]<=[1,8]T(1,0)}", "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
    "{devices=[2,2]0,2,1,3}", "{devices=[2,1,2]0,1,2,3 last_tile_dims={unreduced}}",
    "{devices=[1,2,2]<=[4] last_tile_dims={unreduced, replicated}}", "{replicated}", "{maximal device=3}",
    "{devices=[4,2]<=[2,2,2]T(2,1,0)}", "{devices=[3,4]<=[2,3,2]T(1,0,2)}", "{devices=[2,3,2]<=[12]}",
    "{devices=[2,2,3]<=[3,4]T(1,0) last_tile_dim_replicate}", "{devices=[1,1]<=[1]}",
]


@functools.lru_cache(maxsize=None)
def cases() -> tuple[dict, ...]:
    """The oracle cases: mesh and sharding text, shape, device count and JAX's spec if any."""
    out = []
    for mesh_keys, bodies in _GROUPS:
        for key in mesh_keys:
            mesh = Mesh.parse(_MESHES[key])
            for body in bodies:
                text = f"#sdy.sharding<@mesh, {body}>"
                shape = (8, 16, 24)[: TensorSharding.parse(text).rank]  # every tile count divides 8
                out.append(dict(mesh=_MESHES[key], sharding=text, shape=list(shape), n=mesh.total_size,
                                jax=_jax_spec(mesh, TensorSharding.parse(text))))
    return tuple(out)


def _jax_spec(mesh: Mesh, s: TensorSharding):
    """`(names, sizes, device_ids, spec)` for JAX, or None when a sub-axis or unreduced is used."""
    if s.unreduced_axes or any(r.is_sub_axis for d in s.dim_shardings for r in d.axes):
        return None
    spec = []
    for d in s.dim_shardings:
        names = [r.name for r in d.axes]
        spec.append(None if not names else names[0] if len(names) == 1 else names)
    return list(mesh.axis_names), list(mesh.shape), list(mesh.devices), spec


@functools.lru_cache(maxsize=None)
def results() -> dict:
    """Runs the child once for all xdist workers (and later runs while neither the cases nor the
    `sharding` sources, which the child imports, change)."""
    payload = {"root": ROOT, "cases": list(cases()), "hlo_texts": HLO_TEXTS}
    sources = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(pathlib.Path(ROOT, "sharding").glob("*.py"))))
    return cached([_CODE, payload, sources.hexdigest()],
                  lambda: run_child(_CODE, payload, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}))


def as_ranges(index_map: dict) -> dict[str, list[list[int]]]:
    """`{device_id: slices}` in the oracle's JSON form."""
    return {str(k): [[s.start, s.stop] for s in v] for k, v in sorted(index_map.items())}


