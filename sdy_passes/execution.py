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

import numpy as np

from sharding import DeviceMesh, Mesh, TensorSharding

from sdy_passes.common._value_shardings import func_arg_sharding, func_result_sharding
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import ExecutionError
from sdy_passes.execution_report import Report
from sdy_passes.execution_report import report as _report
from sdy_passes.interpreter._core import NUMERICS, Context, is_float, is_int
from sdy_passes.ir import Module
from sdy_passes.parser import parse_module
from sdy_passes.partition import GLOBAL_STEPS
from sdy_passes.pass_manager import run_passes

__all__ = ["execute", "Execution", "Report"]


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
            fill="poison", links=None, algorithm: str = "ring", device=None) -> Execution:
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
    report = _report(local, lf, dm, links, algorithm, device=device, global_func=f)
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
