"""`execute(module, *args, mesh=...)`: a JAX program run as every device of a mesh runs it (spec
execute.md §1.3, §3, §6, §8).

The module is propagated, exported with explicit collectives and partitioned (`partition`); the
local `@main` then runs once per distinct shard (`interpreter._core.Shards`; lazily on dask
with `backend="dask"`), the StableHLO collectives once per group of devices; control flow must
agree across devices. Inputs are sharded and outputs assembled with `sharding.DeviceMesh`. The
report (`execution_report`: memory, traffic per collective, device and mesh axis, time, compute)
is computed from the local module's types alone, so `dry=True` needs shapes only.
"""

from __future__ import annotations

import zlib

import numpy as np
import xarray as xr

from sharding import DeviceMesh, Mesh, ShardedArray, ShardingError, TensorSharding

from sdy_passes.common._value_shardings import func_arg_sharding, func_result_sharding
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import ExecutionError, expect, shown
from sdy_passes.execution_report import COLLECTIVES, Report
from sdy_passes.execution_report import report as _report
from sdy_passes.interpreter._core import EAGER, NUMERICS, Context, Shards, is_float, is_int
from sdy_passes.interpreter.lazy import Lazy
from sdy_passes.ir import Module
from sdy_passes.parser import parse_module
from sdy_passes.partition import GLOBAL_STEPS
from sdy_passes.pass_manager import run_passes
from sdy_passes.printer import Printer

__all__ = ["execute", "Execution", "Report"]

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
        try:
            mesh = DeviceMesh(mesh)
        except ShardingError as e:
            raise ExecutionError(f"mesh: {e}") from None
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
        if op.name in COLLECTIVES:
            total += n * (1 + len(op.results))
    return total


def execute(module, *args, mesh=None, func: str = "main", numerics: str = "fast", backend: str | None = None,
            dry: bool = False, fill="poison", links=None, algorithm: str = "ring", device=None,
            keep_values: bool = False, max_tasks: int = 2_000_000) -> Execution:
    """Partitions `module` (a `Module` or MLIR text) and runs `@func` on every device of `mesh`
    (a `sharding.DeviceMesh`, `{mesh symbol: DeviceMesh}`, or None: the module's mesh). `args`
    are global numpy or dask arrays, `sharding.ShardedArray`s (resharded to the argument's
    sharding when theirs differs: `Execution.input_reshards`), or, with `dry=True`, anything
    with `.shape` and `.dtype`. Each op runs once per distinct shard (spec execute.md §3).
    `backend="dask"` builds the graph lazily (one task per distinct shard per op; refused past
    `max_tasks`, with the estimate). `device`: a compute profile for the report's roofline time
    (`{"flops": F/s, "hbm_bytes": B/s}`). `fill` is what padding holds ("poison": NaN, the int max,
    True). `keep_values=True` keeps every value for `Execution.values(name)`. Raises
    `ExecutionError` (bad arguments, divergent control flow) and `UnsupportedOpError` (an op
    without a local form or evaluator), located at the op."""
    if numerics not in NUMERICS:
        raise ExecutionError(f"numerics must be one of {', '.join(map(repr, NUMERICS))}, found {shown(numerics)}")
    if backend not in (None, "dask"):
        raise ExecutionError(f"backend must be None or 'dask', found {shown(backend)}")
    m = parse_module(module) if isinstance(module, str) else module.clone() if isinstance(module, Module) else None
    if not isinstance(m, Module):
        raise ExecutionError(f"expected a Module or MLIR text, found {type(module).__name__}")
    dm = _mesh(m, mesh)
    exported = run_passes(m, GLOBAL_STEPS)
    f = exported.lookup_symbol(expect(func, (str,), "a function name (str)", "func", ExecutionError))
    if f is None or f.name != "func.func" or not f.regions or not f.regions[0].blocks:
        raise ExecutionError(f"no function @{func} with a body in the module")
    ft = f.properties["function_type"].type
    if len(args) != len(ft.inputs):
        raise ExecutionError(f"@{func} takes {len(ft.inputs)} arguments, found {len(args)}", f.location)
    for i, (a, t) in enumerate(zip(args, ft.inputs)):
        dt = numpy_dtype(t.element_type)
        if not isinstance(a, ShardedArray) and not (hasattr(a, "shape") and hasattr(a, "dtype")):
            raise ExecutionError(f"@{func}: argument #{i}: expected an array of type '{t}', found "
                                 f"{type(a).__name__}", f.location)
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
    if dry:
        return Execution(None, None, local, _report(local, lf, dm, links, algorithm, device=device, global_func=f),
                         dm)
    lazy = backend == "dask"
    ids = tuple(int(d) for d in dm.mesh.devices)
    if lazy:
        estimate = _estimate_tasks(lf, len(ids))
        if estimate > max_tasks:
            raise ExecutionError(f"the task graph would have about {estimate:,} tasks, more than "
                                 f"max_tasks={max_tasks:,} (raise max_tasks, or run dry=True)", lf.location)
    inputs, reshards = [], {}
    for i, (a, s) in enumerate(zip(args, in_shardings)):
        try:
            if isinstance(a, ShardedArray):
                if a.index_map() != dm.index_map(s, a.global_shape):
                    a, reshards[i] = dm.reshard(a, s, fill=_fill_value(fill, a.data.dtype))
                inputs.append(a)
            else:
                dask_arg = _is_dask(a)
                inputs.append(dm.shard(a if dask_arg else np.asarray(a), s, fill=_fill_value(fill, np.dtype(a.dtype)),
                                       backend="dask" if dask_arg else None))
        except ShardingError as e:  # (a fill that does not fit the dtype)
            raise ExecutionError(f"@{func}: argument #{i}: {e}") from None
    report = _report(local, lf, dm, links, algorithm, device=device, global_func=f,
                     input_reshards=[(f"%arg{i}", plan) for i, plan in sorted(reshards.items())])
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
