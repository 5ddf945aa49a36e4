"""A numpy interpreter for StableHLO (spec execute.md §1.1, §4): `interpret(module, *args)`.

Each op's evaluator lives in a family module here (`elementwise`, `movement`, `reduction`,
`control`, `collectives`, `chlo`, `custom_call`, `rng`) and is named in the op's `OpDef` in the
one op table (`sdy_passes.dialects`); adding an op is one function and one row.
"""

from __future__ import annotations

from sharding import DeviceMesh, Mesh, ShardedArray, ShardingError

from sdy_passes.errors import ExecutionError, UnsupportedOpError
from sdy_passes.interpreter._core import NUMERICS, run_func
from sdy_passes.ir import Module
from sdy_passes.parser import parse_module

__all__ = ["interpret", "ExecutionError", "UnsupportedOpError", "NUMERICS"]


def interpret(module, *args, func: str = "main", numerics: str = "fast", mesh=None) -> tuple:
    """Runs `@func` of `module` (a `Module` or MLIR text, pretty or generic) on numpy arrays
    (ml_dtypes for bf16/f8/int4; Python scalars for 0-d arguments) and returns its results as a
    tuple of numpy arrays.

    `numerics="fast"` uses BLAS and numpy's pairwise sums (within the float tier of JAX's CPU
    results, bit-exact on integers and data movement); `"reference"` reproduces the StableHLO
    reference interpreter bit for bit (sequential sums and dots, f32 transcendentals in f64
    rounded once). Shardings are ignored (the global value). Raises `ExecutionError` for
    arguments that do not fit the signature and `UnsupportedOpError` (at the op's line:col) for
    ops without an evaluator.

    `sharding.ShardedArray` arguments are unsharded first. `sdy.manual_computation` bodies run
    per device, on the module's mesh or on `mesh` (a `sharding.DeviceMesh`, `Mesh` or mesh text
    with the same axes: its device order is the devices' order).
    """
    if isinstance(module, str):
        module = parse_module(module)
    elif not isinstance(module, Module):
        raise ExecutionError(f"expected a Module or MLIR text, found {type(module).__name__}")
    return run_func(module, [_global(i, a) for i, a in enumerate(args)], func, numerics, mesh=_mesh(mesh))


def _global(i: int, a):
    if not isinstance(a, ShardedArray):
        return a
    try:
        return DeviceMesh(a.mesh).unshard(a)
    except ShardingError as e:
        raise ExecutionError(f"argument #{i}: {e}") from None


def _mesh(mesh) -> Mesh | None:
    if mesh is None or isinstance(mesh, Mesh):
        return mesh
    if isinstance(mesh, DeviceMesh):
        return mesh.mesh
    if isinstance(mesh, str):
        try:
            return Mesh.parse(mesh)
        except ShardingError as e:
            raise ExecutionError(f"mesh: {e}") from None
    raise ExecutionError(f"mesh: expected a sharding.DeviceMesh, Mesh or mesh text, found {type(mesh).__name__}")
