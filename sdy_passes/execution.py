"""`execute(module, *args, mesh=...)`: a JAX program run as every device of a mesh runs it (spec
execute.md §1.3, §3, §6, §8).

The module is propagated, exported with explicit collectives and partitioned (`partition`); the
local `@main` then runs on every device in lockstep with the interpreter's evaluators (the
StableHLO collectives see every device's buffer at once; control flow must agree across
devices). Inputs are sharded and outputs assembled with `sharding.DeviceMesh`. The report
(memory per device, bytes per collective, device and mesh axis, alpha-beta time) is computed
from the local module's types alone, so `dry=True` needs shapes only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr

from sharding import DeviceMesh, Mesh, TensorSharding
from sharding.cost import default_links

from sdy_passes.attributes import RankedTensorType
from sdy_passes.common._value_shardings import func_arg_sharding, func_result_sharding
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import ExecutionError
from sdy_passes.interpreter._core import NUMERICS, Context, is_float, is_int
from sdy_passes.ir import Module
from sdy_passes.parser import parse_module
from sdy_passes.partition import GLOBAL_STEPS
from sdy_passes.pass_manager import run_passes

__all__ = ["execute", "Execution", "Report"]

_COLLECTIVES = ("stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
                "stablehlo.all_to_all", "stablehlo.collective_permute", "stablehlo.collective_broadcast")


@dataclass(frozen=True)
class Report:
    """What the run costs: `memory` (dims `device`), `traffic` (dims `collective, device, axis`:
    bytes each device sends per collective, attributed to the mesh axes each message crosses) and
    `time` (alpha-beta seconds per collective, dim `collective`)."""

    memory: xr.Dataset
    traffic: xr.Dataset
    time: xr.Dataset

    @property
    def total_time(self) -> float:
        return float(self.time["seconds"].sum())

    def __str__(self) -> str:
        mem = self.memory
        lines = ["memory per device (bytes): arguments {:,} results {:,} peak {:,} (max over devices)".format(
            int(mem["arguments"].max()), int(mem["results"].max()), int(mem["peak"].max()))]
        tr = self.traffic
        lines.append(f"{'collective':<48} {'group':>5} {'sent/dev':>12} {'total':>14} "
                     + " ".join(f"{'cross ' + a:>12}" for a in tr.axis.values) + f" {'time (s)':>10}")
        for i, name in enumerate(tr.collective.values):
            sent = tr["bytes"].isel(collective=i)
            per_axis = sent.sum("device")
            lines.append(f"{str(name):<48} {int(tr['group_size'][i]):>5} {int(sent.sum('axis').max()):>12,} "
                         f"{int(per_axis.sum()):>14,} " + " ".join(f"{int(v):>12,}" for v in per_axis.values)
                         + f" {float(self.time['seconds'][i]):>10.3g}")
        lines.append(f"total bytes {int(tr['bytes'].sum()):,}; alpha-beta time {self.total_time:.3g} s")
        return "\n".join(lines)


class Execution:
    """The result of `execute`: `outputs` (`sharding.ShardedArray`s; None for a dry run),
    `global_outputs()`, `local` (the partitioned module), `inputs`, `report`."""

    def __init__(self, outputs, inputs, local, report, mesh):
        self.outputs = outputs
        self.inputs = inputs
        self.local = local
        self.report = report
        self.mesh = mesh

    def global_outputs(self) -> tuple:
        """The global value of each output, as JAX assembles it: each tile from the first device
        (by id) holding it (replicas may differ after a manual computation without checks)."""
        if self.outputs is None:
            raise ExecutionError("a dry run has no values")
        out = []
        for o in self.outputs:
            full = np.empty(o.global_shape, o.data.dtype)
            index = o.index_map()
            for d, buf in sorted(o.per_device(), reverse=True):
                where = index[d]
                full[where] = buf[tuple(slice(0, s.stop - s.start) for s in where)]
            out.append(full)
        return tuple(out)


def _fill_value(fill, dtype):
    if fill != "poison":
        return fill
    if dtype == np.bool_:
        return True
    if is_float(dtype):
        return np.nan
    if is_int(dtype):
        return np.iinfo(dtype).max if dtype.kind in "iu" else 0
    return 0


def _mesh(module: Module, mesh):
    meshes = [op for op in module.ops if op.name == "sdy.mesh"]
    if not meshes and mesh is None:  # an unsharded program runs on one device (JAX's jit without a mesh)
        return DeviceMesh(Mesh.parse("<[]>"))
    if len(meshes) != 1:
        raise ExecutionError(f"execute needs a module with exactly one sdy.mesh, found {len(meshes)}")
    own = meshes[0].properties["mesh"]
    if mesh is None:
        return DeviceMesh(own)
    if isinstance(mesh, (str, Mesh)):
        mesh = DeviceMesh(mesh)
    if not isinstance(mesh, DeviceMesh):
        raise ExecutionError(f"mesh: expected a sharding.DeviceMesh, found {type(mesh).__name__}")
    if mesh.mesh.axes != own.axes or tuple(mesh.mesh.devices) != tuple(own.devices):
        raise ExecutionError(f"mesh {mesh.mesh.body()} is not the module's mesh {own.body()}")
    return mesh


def execute(module, *args, mesh=None, func: str = "main", numerics: str = "fast", dry: bool = False,
            fill="poison", links=None, algorithm: str = "ring") -> Execution:
    """Partitions `module` (a `Module` or MLIR text) and runs `@func` on every device of `mesh`
    (a `sharding.DeviceMesh`; None: the module's mesh). `args` are global numpy arrays (or, with
    `dry=True`, anything with `.shape` and `.dtype`). `fill` is what padding holds ("poison":
    NaN, the int max, True). Raises `ExecutionError` (bad arguments, divergent control flow) and
    `UnsupportedOpError` (an op without a local form or evaluator), located at the op."""
    if numerics not in NUMERICS:
        raise ExecutionError(f"numerics must be one of {', '.join(map(repr, NUMERICS))}, found {numerics!r}")
    m = parse_module(module) if isinstance(module, str) else module.clone()
    if not isinstance(m, Module):
        raise ExecutionError(f"expected a Module or MLIR text, found {type(module).__name__}")
    dm = _mesh(m, mesh)
    exported = run_passes(m, GLOBAL_STEPS)
    f = exported.lookup_symbol(func)
    if f is None or f.name != "func.func" or not f.regions or not f.regions[0].blocks:
        raise ExecutionError(f"no function @{func} with a body in the module")
    ft = f.properties["function_type"].type
    if len(args) != len(ft.inputs):
        raise ExecutionError(f"@{func} takes {len(ft.inputs)} arguments, found {len(args)}", f.location)
    for i, (a, t) in enumerate(zip(args, ft.inputs)):
        dt = numpy_dtype(t.element_type)
        if tuple(a.shape) != tuple(t.shape) or np.dtype(a.dtype) != dt:
            raise ExecutionError(f"@{func}: argument #{i}: expected '{t}', found {np.dtype(a.dtype).name}"
                                 f"{list(a.shape)}", f.location)
    mesh_name = next((op.properties["sym_name"].value for op in exported.ops if op.name == "sdy.mesh"), dm.mesh)
    replicated = lambda t: TensorSharding.replicated(mesh_name, len(t.shape))  # noqa: E731
    in_shardings = [func_arg_sharding(f, i) or replicated(t) for i, t in enumerate(ft.inputs)]
    out_shardings = [func_result_sharding(f, i) or replicated(t) for i, t in enumerate(ft.results)]
    out_types = list(ft.results)
    local = run_passes(exported.clone(), "sdy-convert-global-to-local")
    lf = local.lookup_symbol(func)
    report = _report(local, lf, dm, links, algorithm)
    if dry:
        return Execution(None, None, local, report, dm)
    inputs = [dm.shard(np.asarray(a), s, fill=_fill_value(fill, np.dtype(a.dtype)), copy=True)
              for a, s in zip(args, in_shardings)]
    ids = tuple(int(d) for d in dm.mesh.devices)
    per_device = [[np.array(x.local(d)) for d in ids] for x in inputs]
    ctx = Context(local, numerics, devices=ids, partitioned=True)
    with np.errstate(all="ignore"):
        results = ctx.call(lf, per_device)
    outputs = []
    for buffers, s, t in zip(results, out_shardings, out_types):
        dt = numpy_dtype(t.element_type)
        out = dm.shard(np.zeros(t.shape, dt), s, copy=True)
        grid = out.placement.device_grid()
        where = {d: i for i, d in enumerate(ids)}
        values = out.data.values
        for pos in np.ndindex(grid.shape):
            values[pos] = np.asarray(buffers[where[int(grid[pos])]])
        out.data.values = values
        outputs.append(out)
    return Execution(tuple(outputs), tuple(inputs), local, report, dm)


# -- the report ----------------------------------------------------------------------------------

def _bytes(t) -> int:
    if not isinstance(t, RankedTensorType) or None in t.shape:
        return 0
    dt = numpy_dtype(t.element_type)
    return math.prod(t.shape) * (dt.itemsize if dt is not None else 1)


def _groups(op, n_devices: int) -> np.ndarray:
    if op.name == "stablehlo.collective_permute":
        return op.properties["source_target_pairs"].to_numpy().reshape(-1, 2)
    a = op.properties.get("replica_groups")
    g = a.to_numpy() if a is not None else np.zeros((0, 0), np.int64)
    return g if g.size else np.arange(n_devices)[None]


def _report(local: Module, func, dm: DeviceMesh, links, algorithm) -> Report:
    mesh = dm.mesh
    ids = [int(d) for d in mesh.devices]
    names = list(mesh.axis_names)
    coords = {d: np.unravel_index(p, mesh.shape) for p, d in enumerate(ids)}
    block = func.regions[0].blocks[0]
    # memory: arguments, results, and the peak of live top-level values (each freed after its
    # last use at the top level; values inside regions are not counted)
    last = {}
    ops = block.ops
    for i, op in enumerate(ops):
        for v in op.operands:
            last[v] = i
        for inner in op.walk():
            for v in inner.operands:
                if v in last or v in block.arguments:
                    last[v] = i
    live = {a: _bytes(a.type) for a in block.arguments}
    peak = sum(live.values())
    for i, op in enumerate(ops):
        for r in op.results:
            live[r] = _bytes(r.type)
        peak = max(peak, sum(live.values()))
        for v in [v for v in live if last.get(v, -1) <= i and v not in block.arguments]:
            del live[v]
    args_b = sum(_bytes(a.type) for a in block.arguments)
    res_b = sum(_bytes(v.type) for v in ops[-1].operands)
    n = len(ids)
    memory = xr.Dataset({"arguments": ("device", [args_b] * n), "results": ("device", [res_b] * n),
                         "peak": ("device", [peak] * n)}, coords={"device": ids})
    # traffic: per-message model of §6.2, bytes attributed to the axes each message crosses
    table = default_links(mesh)
    for k, v in (links or {}).items():
        if k not in table:
            raise ExecutionError(f"links: unknown mesh axis {k!r} (axes: {names})")
        table[k] = tuple(v)
    rows, labels, sizes, times = [], [], [], []
    for op in func.walk():
        if op.name not in _COLLECTIVES:
            continue
        b = sum(_bytes(v.type) for v in op.operands)
        sent = np.zeros((n, len(names)))
        where = {d: i for i, d in enumerate(ids)}
        groups = _groups(op, n)
        if op.name == "stablehlo.collective_permute":
            msgs = [(s, t, b) for s, t in groups.tolist() if s != t]
            g = 2
        else:
            g = groups.shape[1]
            share = {"stablehlo.all_gather": b, "stablehlo.all_reduce": 2 * b / g,
                     "stablehlo.reduce_scatter": b / g, "stablehlo.all_to_all": b / g,
                     "stablehlo.collective_broadcast": b}[op.name]
            msgs = [(s, t, share) for grp in groups.tolist() for s in grp for t in grp if s != t
                    and (op.name != "stablehlo.collective_broadcast" or s == grp[0])]
        crossed: set = set()
        for s, t, nbytes in msgs:
            for a in range(len(names)):
                if coords[s][a] != coords[t][a]:
                    sent[where[s], a] += nbytes
                    crossed.add(a)
        rows.append(sent)
        loc = op.location
        labels.append(f"{op.name.split('.')[1]}@{getattr(loc, 'line', '?')}:{getattr(loc, 'col', '?')}"
                      if loc is not None else op.name.split(".")[1])
        sizes.append(g)
        times.append(_time(op.name, g, b, sorted(crossed, reverse=True), mesh, names, table, algorithm))
    labels = [f"{i}:{x}" for i, x in enumerate(labels)]
    traffic = xr.Dataset({"bytes": (("collective", "device", "axis"),
                                    np.array(rows).reshape(len(rows), n, len(names))),
                          "group_size": ("collective", np.array(sizes, np.int64))},
                         coords={"collective": labels, "device": ids, "axis": names})
    time = xr.Dataset({"seconds": ("collective", np.array(times, float))}, coords={"collective": labels})
    return Report(memory, traffic, time)


def _time(kind, g, b, axes, mesh, names, table, algorithm) -> float:
    """Alpha-beta seconds: rings per crossed axis, minor-most first (as `sharding.cost`);
    all-reduce = reduce-scatter + all-gather; a permute is one message on its slowest link."""
    if algorithm not in ("ring", "bidirectional_ring"):
        raise ExecutionError(f"algorithm must be 'ring' or 'bidirectional_ring', found {algorithm!r}")
    div = 2 if algorithm == "bidirectional_ring" else 1
    if kind == "stablehlo.collective_permute":
        return max((table[names[a]][0] + b / table[names[a]][1] / 1 for a in axes), default=0.0)
    t, block = 0.0, b
    sizes = [mesh.shape[a] for a in axes]
    total = math.prod(sizes) or 1
    for a, ga in zip(axes, sizes):
        alpha, beta = table[names[a]]
        if kind == "stablehlo.all_gather":
            t += (ga - 1) * alpha + (ga - 1) * block / beta / div
            block *= ga
        elif kind == "stablehlo.all_to_all":
            t += (ga - 1) * alpha + (ga - 1) * (b / total) * (total / ga) / beta / div
        else:  # reduce-scatter ring on this axis (all-reduce: twice, the all-gather back)
            rounds = 2 if kind == "stablehlo.all_reduce" else 1
            t += rounds * ((ga - 1) * alpha + (ga - 1) * (block / ga) / beta / div)
            block /= ga
    return t
