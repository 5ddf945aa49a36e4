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
import zlib
from dataclasses import dataclass

import numpy as np
import xarray as xr

from sharding import DeviceMesh, Mesh, ShardedArray, TensorSharding
from sharding.cost import default_links

from sdy_passes.attributes import RankedTensorType
from sdy_passes.common._value_shardings import func_arg_sharding, func_result_sharding
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import ExecutionError
from sdy_passes.interpreter._core import EAGER, NUMERICS, Context, Shards, is_float, is_int
from sdy_passes.interpreter.lazy import Lazy
from sdy_passes.ir import Module
from sdy_passes.parser import parse_module
from sdy_passes.partition import GLOBAL_STEPS
from sdy_passes.pass_manager import run_passes
from sdy_passes.printer import Printer

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
    """The result of `execute`: `outputs` (`sharding.ShardedArray`s, lazy with `backend="dask"`;
    None for a dry run), `global_outputs()`, `checksums()`, `values(name)` (with
    `keep_values=True`), `local` (the partitioned module), `inputs`, `input_reshards` (argument
    index -> the `ReshardPlan` that moved a `ShardedArray` argument to the argument's sharding),
    `report`."""

    def __init__(self, outputs, inputs, local, report, mesh, kept=None, input_reshards=None):
        self.outputs = outputs
        self.inputs = inputs
        self.local = local
        self.report = report
        self.mesh = mesh
        self.input_reshards = input_reshards or {}
        self._kept = kept

    def _values(self):
        if self.outputs is None:
            raise ExecutionError("a dry run has no values")
        return self.outputs

    def global_outputs(self) -> tuple:
        """The global value of each output, as JAX assembles it: each tile from the first device
        (by id) holding it (replicas may differ after a manual computation without checks)."""
        out = []
        for o in self._values():
            full = np.empty(o.global_shape, o.data.dtype)
            index = o.index_map()
            for d, buf in sorted(o.per_device(), key=lambda x: x[0], reverse=True):
                where = index[d]
                full[where] = buf[tuple(slice(0, s.stop - s.start) for s in where)]
            out.append(full)
        return tuple(out)

    def checksums(self) -> tuple:
        """Per output, the CRC-32 of each device's buffer (padding included) as a DataArray over
        `device`; lazy outputs are computed chunk by chunk (one device's buffer at a time per
        thread), so the memory stays bounded whatever the global size."""
        out = []
        for o in self._values():
            grid = o.placement.device_grid()
            data = o.data.data
            npieces = grid.ndim
            if isinstance(data, np.ndarray):
                sums = np.vectorize(lambda *pos: zlib.crc32(np.ascontiguousarray(data[pos]).tobytes()),
                                    otypes=[np.uint32])(*np.indices(grid.shape)) if npieces else \
                    np.array(zlib.crc32(np.ascontiguousarray(data).tobytes()), np.uint32)
            else:
                sums = data.map_blocks(_crc_block, npieces, dtype=np.uint32,
                                       drop_axis=list(range(npieces, data.ndim))).compute(scheduler="threads")
            ids = grid.reshape(-1)
            order = np.argsort(ids)
            out.append(xr.DataArray(np.asarray(sums).reshape(-1)[order], dims="device",
                                    coords={"device": ids[order]}, name="crc32"))
        return tuple(out)

    def values(self, name: str) -> dict:
        """`{device id: buffer}` of the local module's SSA value `name` (`"%3"`, `"%arg0"`, as
        `print_module(run.local)` names them in the function run); needs `keep_values=True`."""
        if self._kept is None:
            raise ExecutionError("values(name) needs execute(..., keep_values=True)")
        kept, names, ids, engine = self._kept
        v = names.get(name)
        if v is None:
            raise ExecutionError(f"no value {name} in the local function (values: {', '.join(list(names)[:20])}"
                                 + (", ..." if len(names) > 20 else "") + ")")
        if v not in kept:
            raise ExecutionError(f"value {name} was never computed (a branch not taken)")
        shards = kept[v]
        buffers = engine.concrete(shards.buffers)  # lazy values are computed here
        return {d: buffers[i] for d, i in sorted(zip(ids, shards.index.tolist()))}


def _crc_block(block, npieces):
    return np.full((1,) * npieces, zlib.crc32(np.ascontiguousarray(block).tobytes()), np.uint32)


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
    if isinstance(mesh, dict):  # {mesh symbol: DeviceMesh}
        sym = meshes[0].properties["sym_name"].value
        if set(mesh) != {sym}:
            raise ExecutionError(f"mesh: expected {{{sym!r}: DeviceMesh}} for the module's mesh @{sym}, "
                                 f"found keys {sorted(map(str, mesh))}")
        mesh = mesh[sym]
    if isinstance(mesh, (str, Mesh)):
        mesh = DeviceMesh(mesh)
    if not isinstance(mesh, DeviceMesh):
        raise ExecutionError(f"mesh: expected a sharding.DeviceMesh, found {type(mesh).__name__}")
    if mesh.mesh.axes != own.axes or tuple(mesh.mesh.devices) != tuple(own.devices):
        raise ExecutionError(f"mesh {mesh.mesh.body()} is not the module's mesh {own.body()}")
    return mesh


def _is_dask(x) -> bool:
    return type(x).__module__.startswith("dask.")


def _shards(x: ShardedArray, engine) -> Shards:
    """The engine's value of a sharded argument: one buffer per distinct tile."""
    p = x.placement
    n = p.device_grid().size
    tiles = p.tile_indices().reshape(n, -1)
    _, first, inverse = np.unique(tiles, axis=0, return_index=True, return_inverse=True)
    positions = [tuple(int(i) for i in np.unravel_index(f, p.piece_sizes)) for f in first.tolist()]
    data = x.data.data
    if isinstance(engine, Lazy):
        buffers = engine.inputs(data, positions)
    else:
        buffers = [np.ascontiguousarray(data[pos]) for pos in positions]  # a device owns its buffer
    return Shards(buffers, inverse.reshape(-1))


def _assemble(dm: DeviceMesh, value: Shards, sharding, t, ids, engine) -> ShardedArray:
    """The output `ShardedArray` of the engine's value."""
    dt = numpy_dtype(t.element_type)
    lazy = isinstance(engine, Lazy)
    out = dm.shard(engine.array.zeros(t.shape, dt) if lazy else np.zeros(t.shape, dt), sharding,
                   copy=not lazy, backend="dask" if lazy else None)
    local = tuple(out.local_shape)
    grid = out.placement.device_grid()
    where = {d: i for i, d in enumerate(ids)}
    pick = [value.buffers[value.index[where[int(d)]]] for d in grid.reshape(-1)]
    if lazy:
        keys = np.empty(grid.shape, object)
        for pos, b in zip(np.ndindex(grid.shape), pick):
            keys[pos] = b
        out.data = out.data.copy(data=engine.array_of(keys, local, dt))
    else:
        out.data.values = np.stack([np.asarray(b) for b in pick]).reshape(grid.shape + local)
    return out


def _estimate_tasks(func, n: int) -> int:
    """Tasks the lazy graph needs, before it is built: a task per device per argument and
    result, per op result as many as the distinct shards of its operands (at most one per device;
    ops in loop bodies once), plus a task per member of every collective."""
    block = func.regions[0].blocks[0]
    distinct: dict = {a: n for a in block.arguments}
    total = n * (len(block.arguments) + len(block.ops[-1].operands))
    for op in func.walk():
        if op is func:
            continue
        ins = max((distinct.get(v, n) for v in op.operands), default=1)
        for r in op.results:
            distinct[r] = ins
        total += ins * (1 + len(op.results))
        if op.name in _COLLECTIVES:
            total += n * (1 + len(op.results))
    return total


def execute(module, *args, mesh=None, func: str = "main", numerics: str = "fast", backend: str | None = None,
            dry: bool = False, fill="poison", links=None, algorithm: str = "ring", keep_values: bool = False,
            max_tasks: int = 2_000_000) -> Execution:
    """Partitions `module` (a `Module` or MLIR text) and runs `@func` on every device of `mesh`
    (a `sharding.DeviceMesh`, `{mesh symbol: DeviceMesh}`, or None: the module's mesh). `args`
    are global numpy or dask arrays, `sharding.ShardedArray`s (resharded to the argument's
    sharding when theirs differs: `Execution.input_reshards`), or, with `dry=True`, anything
    with `.shape` and `.dtype`. Each op runs once per distinct shard (spec execute.md §3).
    `backend="dask"` builds the graph lazily (one task per distinct shard per op; refused past
    `max_tasks`, with the estimate). `fill` is what padding holds ("poison": NaN, the int max,
    True). `keep_values=True` keeps every value for `Execution.values(name)`. Raises
    `ExecutionError` (bad arguments, divergent control flow) and `UnsupportedOpError` (an op
    without a local form or evaluator), located at the op."""
    if numerics not in NUMERICS:
        raise ExecutionError(f"numerics must be one of {', '.join(map(repr, NUMERICS))}, found {numerics!r}")
    if backend not in (None, "dask"):
        raise ExecutionError(f"backend must be None or 'dask', found {backend!r}")
    m = parse_module(module) if isinstance(module, str) else module.clone() if isinstance(module, Module) else None
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
        shape, dtype = (a.global_shape, a.data.dtype) if isinstance(a, ShardedArray) else (a.shape, a.dtype)
        if tuple(shape) != tuple(t.shape) or np.dtype(dtype) != dt:
            raise ExecutionError(f"@{func}: argument #{i}: expected '{t}', found {np.dtype(dtype).name}"
                                 f"{list(shape)}", f.location)
    mesh_name = next((op.properties["sym_name"].value for op in exported.ops if op.name == "sdy.mesh"), dm.mesh)
    replicated = lambda t: TensorSharding.replicated(mesh_name, len(t.shape))  # noqa: E731
    in_shardings = [func_arg_sharding(f, i) or replicated(t) for i, t in enumerate(ft.inputs)]
    out_shardings = [func_result_sharding(f, i) or replicated(t) for i, t in enumerate(ft.results)]
    local = run_passes(exported.clone(), "sdy-convert-global-to-local")
    lf = local.lookup_symbol(func)
    report = _report(local, lf, dm, links, algorithm)
    if dry:
        return Execution(None, None, local, report, dm)
    lazy = backend == "dask"
    ids = tuple(int(d) for d in dm.mesh.devices)
    if lazy:
        estimate = _estimate_tasks(lf, len(ids))
        if estimate > max_tasks:
            raise ExecutionError(f"the task graph would have about {estimate:,} tasks, more than "
                                 f"max_tasks={max_tasks:,} (raise max_tasks, or run dry=True)", lf.location)
    inputs, reshards = [], {}
    for i, (a, s) in enumerate(zip(args, in_shardings)):
        if isinstance(a, ShardedArray):
            if a.index_map() != dm.index_map(s, a.global_shape):
                a, reshards[i] = dm.reshard(a, s, fill=_fill_value(fill, a.data.dtype))
            inputs.append(a)
        else:
            dask_arg = _is_dask(a)
            inputs.append(dm.shard(a if dask_arg else np.asarray(a), s, fill=_fill_value(fill, np.dtype(a.dtype)),
                                   backend="dask" if dask_arg else None))
    engine = Lazy(max_tasks) if lazy else EAGER
    ctx = Context(local, numerics, devices=ids, mesh_device_ids=ids, partitioned=True, backend=engine,
                  kept={} if keep_values else None)
    with np.errstate(all="ignore"):
        results = ctx.call(lf, [_shards(x, engine) for x in inputs])
    outputs = tuple(_assemble(dm, v, s, t, ids, engine) for v, s, t in zip(results, out_shardings, ft.results))
    kept = None
    if keep_values:
        printer = Printer(generic=False)
        printer.use_mlir_names(local.op)
        values = [*lf.regions[0].blocks[0].arguments]
        for op in lf.walk():
            for region in op.regions if op is not lf else ():
                for b in region.blocks:
                    values += b.arguments
            values += [] if op is lf else op.results
        kept = (ctx.kept, {printer.value_name(v): v for v in values}, ids, engine)
    return Execution(outputs, tuple(inputs), local, report, dm, kept, reshards)


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
