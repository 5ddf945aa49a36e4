"""Verify a module the way MLIR + Shardy do for the ops the import passes meet.

`verify_module(module)` raises `VerificationError(message, location)` for the first problem, with
Shardy's message text and prefix (`'func.func' op arg 0 - unknown axis name: "c"`):

* symbols: unique names (`redefinition of symbol named 'mesh'`), meshes valid (M1-M7);
* every sdy sharding — func argument/result attributes, `sdy.sharding` on any op, the `sharding`
  of constraint/reshard/data-flow-edge ops, the in/out shardings of manual and named
  computations — checked by `sharding.verify` against the module's meshes and the value's type,
  with the axes bound by enclosing manual computations;
* each op's `OpDef` (`sdy_passes.dialects`): operand/result/region counts, required
  attributes, then its `verify` hook (`sdy.data_flow_edge`, `sdy.manual_computation`,
  `sdy.named_computation`, `sdy.propagation_barrier` rules; `func.call` callees exist).
"""

from __future__ import annotations

from sharding import InvalidMeshError, Mesh, MeshTable
from sharding.verify import verify_mesh

from sdy_passes.dialects import VerifyContext, lookup
from sdy_passes.dialects._base import ATTRIBUTE_KINDS, fail as _fail
from sdy_passes.dialects.sdy import verify_discardable
from sdy_passes.errors import VerificationError
from sdy_passes.ir import Module, Operation, symbol_name

__all__ = ["verify_module", "verify_op"]

def verify_module(module: Module) -> None:
    """Raise `VerificationError` for the first invalid op (module order, parents first)."""
    ctx = VerifyContext(module, _mesh_table(module))
    for op in module.walk():
        verify_op(op, ctx)


def verify_op(op: Operation, ctx: VerifyContext) -> None:
    """MLIR's order: the sdy attributes on the op, then its definition's invariants (operand and
    result counts, required attributes), then its own verifier."""
    verify_discardable(op, ctx)
    opdef = lookup(op.name)
    if opdef is None:
        return
    for kind, expected, found in (("operand", opdef.num_operands, len(op.operands)),
                                  ("result", opdef.num_results, len(op.results)),
                                  ("region", opdef.num_regions, len(op.regions))):
        if expected is not None and expected != found:
            _fail(op, _count_message(kind, expected, found))
    for name in opdef.required:
        if name not in op.properties:
            _fail(op, f"requires attribute '{name}'")
    for name, kind in opdef.attribute_kinds:
        value = op.properties.get(name)
        if value is not None and not ATTRIBUTE_KINDS[kind][1](value):
            _fail(op, f"attribute '{name}' failed to satisfy constraint: {kind}")
    if opdef.verify is not None:
        opdef.verify(op, ctx)


def _count_message(kind: str, expected: int, found: int) -> str:
    """MLIR's trait messages (`OneOperand`, `ZeroResults`, `NOperands<2>`, ...)."""
    if expected == 0:
        return f"requires zero {kind}s"
    if expected == 1 and kind == "result":
        return "requires one result"
    if expected == 1 and kind == "operand":
        return "requires a single operand"
    if kind == "region":
        return f"requires {expected} region{'s' if expected != 1 else ''}"
    return f"expected {expected} {kind}s, but found {found}"


def _mesh_table(module: Module) -> MeshTable:
    seen: dict[str, Operation] = {}
    entries = []
    for op in module.ops:
        name = symbol_name(op)
        if name is None:
            continue
        if name in seen:
            raise VerificationError(f"redefinition of symbol named '{name}'", op.location)
        seen[name] = op
        if op.name == "sdy.mesh":
            mesh = op.properties.get("mesh")
            if not isinstance(mesh, Mesh):
                _fail(op, "requires attribute 'mesh' of type MeshAttr")
            try:
                verify_mesh(mesh)
            except InvalidMeshError as e:
                _fail(op, str(e))
            entries.append((name, mesh))
    return MeshTable(tuple(entries))
