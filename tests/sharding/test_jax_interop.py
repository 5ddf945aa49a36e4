"""JAX interop both ways (issue 36 item 1) against JAX itself on 8 CPU devices, in one child.

For each case (a `jax.sharding.Mesh` with some device order and axis types, a `PartitionSpec`,
an array rank and shape) the child asks JAX for `NamedSharding._to_sdy_sharding(ndim)` (also with
`modify_wrt_axis_types=True`), `devices_indices_map` and the shards `device_put` leaves on each
device (`addressable_shards`), and this library (imported in the child: the objects are JAX's)
for `from_named_sharding`, `DeviceMesh.from_jax`, `DeviceMesh.index_map`/`shard` given the
NamedSharding, `to_named_sharding` back, and `reshard_plan` between two NamedShardings. The
parent compares. The cases are drawn at random from a fixed seed (meshes on 8 devices in any
device order, specs with axis tuples in any order, `P.UNCONSTRAINED`, unreduced on Explicit axes).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import pathlib
import random
import subprocess
import sys

import pytest

from sharding import Mesh, ShardingError, TensorSharding, reshard_plan
from tests.jaxlib_child import run_child

pytestmark = pytest.mark.jaxlib
ROOT = str(pathlib.Path(__file__).resolve().parents[2])

_CODE = r"""
import sys
sys.path.insert(0, PAYLOAD["root"])
import numpy as np
import jax
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P
import sharding as lib
from sharding.hlo import from_named_sharding, to_named_sharding
from sharding.simulate import DeviceMesh

DEVS = jax.devices()

def spec_of(entries, unreduced):
    parts = [P.UNCONSTRAINED if e == "U" else tuple(e) if isinstance(e, list) else e for e in entries]
    return P(*parts, unreduced=frozenset(unreduced))

def ranges(index_map, shape):
    return {str(d.id if hasattr(d, "id") else d): [[0 if s.start is None else s.start, n if s.stop is None else s.stop]
                                                   for s, n in zip(idx, shape)] for d, idx in index_map.items()}

def run(case):
    names, sizes, order, types, entries, unreduced, ndim, other = (case[k] for k in
        ("names", "sizes", "order", "types", "entries", "unreduced", "ndim", "other"))
    mesh = Mesh(np.array([DEVS[i] for i in order]).reshape(sizes), tuple(names),
                axis_types=tuple(AxisType[t] for t in types))
    ns = NamedSharding(mesh, spec_of(entries, unreduced))
    shape = tuple(case["shape"])
    out = {"jax_sdy": str(ns._to_sdy_sharding(ndim).build({})),
           "jax_sdy_modified": str(ns._to_sdy_sharding(ndim, modify_wrt_axis_types=True).build({}))}
    m, s = from_named_sharding(ns, ndim)
    _, sm = from_named_sharding(ns, ndim, modify_wrt_axis_types=True)
    dm = DeviceMesh.from_jax(mesh)
    out.update(mesh=m.body(), sdy=str(s), sdy_modified=str(sm), device_mesh=dm.mesh.body())
    if not unreduced:  # (JAX has no device map or device_put for unreduced)
        out["jax_map"] = ranges(ns.devices_indices_map(shape), shape)
        out["map"] = ranges(dm.index_map(ns, shape), shape)
        if "U" not in entries:  # (device_put of P.UNCONSTRAINED raises KeyError in JAX 0.10.2)
            x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
            arr = jax.device_put(x, ns)
            out["jax_shards"] = {str(sh.device.id): np.asarray(sh.data).tolist() for sh in arr.addressable_shards}
            out["shards"] = {str(d): b.tolist() for d, b in dm.shard(x, ns).per_device()}
        back = to_named_sharding(s, m, devices=DEVS)
        out["round_trip_map"] = ranges(back.devices_indices_map(shape), shape)
    back = to_named_sharding(s, m, devices=DEVS)
    blocks = [[(b.devices, b.slices) for b in lib.visualize(*a, **k).blocks] for a, k in
              (((ns,), {"global_shape": shape}), ((s, m, shape), {}))]
    out["picture"] = blocks[0] == blocks[1]
    m2, s2 = from_named_sharding(back, ndim)
    out["round_trip"] = [m2.body(), str(s2)]
    if other is not None:
        ns2 = NamedSharding(mesh, spec_of(other, unreduced))
        plan = lib.reshard_plan(ns, ns2, shape=shape, dtype="bf16")
        out["plan"] = [str(step) for step in plan.steps]
        out["plan_dtype"] = str(plan.dtype)
    return out

from jax._src.interpreters import mlir as jmlir
from jax._src.lib.mlir import ir
RESULT = []
with jmlir.make_ir_context(), ir.Location.unknown():
    for case in PAYLOAD["cases"]:
        try:
            RESULT.append(run(case))
        except Exception as e:
            RESULT.append({"error": f"{type(e).__name__}: {e}"[:500]})
"""

_MESHES = [((8,), ("d",)), ((2, 4), ("x", "y")), ((4, 2), ("x", "y")), ((2, 2, 2), ("a", "b", "c")),
           ((2, 1, 4), ("p", "one", "q"))]


def _cases(n: int = 80, seed: int = 37) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for k in range(n):
        sizes, names = rng.choice(_MESHES)
        order = list(range(8))
        if k % 3:
            rng.shuffle(order)
        types = [rng.choice(["Auto", "Explicit"]) for _ in names]
        if k % 4 == 0:
            types = ["Explicit"] * len(names)
        ndim = rng.randint(1, 3)
        places = [rng.randint(-2, ndim - 1) for _ in names]  # -1: replicated, -2: unreduced (Explicit)
        unreduced = [a for a, p, t in zip(names, places, types) if p == -2 and t == "Explicit"]
        entries = []
        for d in range(ndim):
            mine = [a for a, p in zip(names, places) if p == d]
            rng.shuffle(mine)
            entries.append(None if not mine else mine[0] if len(mine) == 1 else mine)
        if "Explicit" not in types and rng.random() < 0.6:
            entries[rng.randrange(ndim)] = "U"
        while entries and entries[-1] is None and rng.random() < 0.5:
            entries.pop()  # a spec shorter than the rank
        sharded = [math.prod(dict(zip(names, sizes))[a] for a in ([e] if isinstance(e, str) and e != "U" else
                   e if isinstance(e, list) else [])) for e in entries + [None] * (ndim - len(entries))]
        other = None
        if not unreduced and "U" not in entries and k % 2:
            other_entries = [None] * ndim
            for a in names:
                d = rng.randint(-1, ndim - 1)
                if d >= 0:
                    other_entries[d] = a if other_entries[d] is None else [*([other_entries[d]]
                                       if isinstance(other_entries[d], str) else other_entries[d]), a]
            other = other_entries
        shape = [2 * 8 * s // math.gcd(8, s) if rng.random() < 0.5 else 8 * s for s in sharded]
        out.append(dict(names=list(names), sizes=list(sizes), order=order, types=types, entries=entries,
                        unreduced=unreduced, ndim=ndim, shape=shape, other=other))
    return out


@functools.lru_cache(maxsize=None)
def oracle() -> list[dict]:
    return run_child(_CODE, {"root": ROOT, "cases": _cases()},
                     env={"XLA_FLAGS": "--xla_force_host_platform_device_count=8"})


def _sdy_without_mesh(text: str) -> str:
    """`#sdy.sharding<mesh<...>, [dims]...>` -> `[dims]...` (JAX's inline mesh has no device_ids)."""
    return text.split(">, ", 1)[1]


def test_named_shardings_convert_and_place_as_jax():
    bad = []
    for case, result in zip(_cases(), oracle()):
        where = f"{case}: "
        if "error" in result:
            bad.append(where + result["error"])
            continue
        mesh = Mesh.parse(result["mesh"])
        assert mesh.devices == tuple(case["order"]) and mesh.axis_names == tuple(case["names"])
        if result["device_mesh"] != result["mesh"]:
            bad.append(where + f"DeviceMesh.from_jax {result['device_mesh']} vs {result['mesh']}")
        for mine, theirs in ((result["sdy"], result["jax_sdy"]), (result["sdy_modified"], result["jax_sdy_modified"])):
            if _sdy_without_mesh(theirs) != mine.split("@mesh, ", 1)[1]:
                bad.append(where + f"sdy {mine} vs JAX {theirs}")
        for key, jax_key in (("map", "jax_map"), ("shards", "jax_shards"), ("round_trip_map", "jax_map")):
            if key in result and result[key] != result[jax_key]:
                bad.append(where + f"{key} differs from JAX's {jax_key}")
        if not result["picture"]:
            bad.append(where + "visualize(named_sharding, global_shape=...) differs")
        if "U" not in case["entries"] and result["round_trip"] != [result["mesh"], result["sdy"]]:
            bad.append(where + f"to_named_sharding and back: {result['round_trip']}")  # (open dims close)
        if "plan" in result:
            # NamedShardings carry their meshes: the plan's shardings inline it
            target = dataclasses.replace(TensorSharding.parse(_plan_target(case)), mesh_or_ref=mesh)
            source = dataclasses.replace(TensorSharding.parse(result["sdy"]), mesh_or_ref=mesh)
            want = reshard_plan(source, target, shape=case["shape"], dtype="bf16")
            if result["plan"] != [str(s) for s in want.steps] or result["plan_dtype"] != "bfloat16":
                bad.append(where + f"plan {result['plan']} vs {[str(s) for s in want.steps]}")
    assert not bad, f"{len(bad)} of {len(_cases())}:\n" + "\n".join(bad[:10])


def _plan_target(case) -> str:
    dims = []
    for e in case["other"]:
        refs = [] if e is None else [e] if isinstance(e, str) else e
        dims.append("{" + ", ".join(f'"{r}"' for r in refs) + "}")
    return f"#sdy.sharding<@mesh, [{', '.join(dims)}]>"


def test_the_cases_cover_the_features():
    cases = _cases()
    assert sum(bool(c["unreduced"]) for c in cases) >= 5
    assert sum("U" in c["entries"] for c in cases) >= 5
    assert sum(c["other"] is not None for c in cases) >= 10
    assert sum(c["order"] != sorted(c["order"]) for c in cases) >= 20
    assert sum(any(isinstance(e, list) for e in c["entries"]) for c in cases) >= 10


_NO_JAX = r"""
import sys
sys.path.insert(0, sys.argv[1])
import sharding, sharding.hlo, sharding.simulate, sharding.reshard, sharding.visualization, sharding.cost
from sharding import DeviceMesh, from_hlo_sharding, reshard_plan, to_named_sharding
assert "jax" not in sys.modules and "jaxlib" not in sys.modules, sorted(m for m in sys.modules if "jax" in m)
try:
    to_named_sharding(sharding.TensorSharding.parse('<@m, [{"x"}]>'), sharding.Mesh.of(x=2))
except sharding.ShardingError as e:
    assert "import jax first" in str(e), e
else:
    raise AssertionError("to_named_sharding without jax")
"""


def test_no_library_module_imports_jax():
    proc = subprocess.run([sys.executable, "-c", _NO_JAX, ROOT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


class _NotJax:
    pass


@pytest.mark.parametrize("call", [
    lambda: __import__("sharding.hlo").hlo.from_named_sharding(_NotJax(), 2),
    lambda: __import__("sharding.hlo").hlo.mesh_from_jax(_NotJax()),
    lambda: __import__("sharding.simulate").simulate.DeviceMesh.from_jax("x"),
    lambda: reshard_plan('<@m, [{"x"}]>', '<@m, [{}]>', Mesh.of(x=2)),  # no shape
])
def test_interop_refuses_what_is_not_jax(call):
    with pytest.raises(ShardingError):
        call()
