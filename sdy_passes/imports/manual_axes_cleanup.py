"""`sdy-manual-axes-cleanup`: sorted `manual_axes`, unused manual axes made explicitly replicated.

Shardy's `manual_axes_cleanup.cc` (spec/sdy_passes.md §9), per `sdy.manual_computation`:

* without in/out shardings, manual axes are only allowed with an empty body (else an error);
* the common mesh is the first sharding's non-empty mesh (as written: `@name` or inlined);
* `manual_axes` are sorted in that mesh's axis order;
* a sharding of a tensor that does not use every manual axis gets the missing parts (set
  difference, sub-axes included) added to `replicated` (sorted and merged), and the common mesh.
"""

from __future__ import annotations

from dataclasses import replace

from sharding import AxisRef, ManualAxes, Mesh, TensorSharding, TensorShardingPerValue
from sharding.axes import difference, sort_and_merge

from sdy_passes.common._value_shardings import MANUAL_COMPUTATION, is_shaped
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Module, Operation, SymbolTable
from sdy_passes.pass_manager import Pass

_NO_SHARDINGS_ERROR = (
    "op has manual_axes when there are no in/out shardings and the body is not empty. This isn't "
    "allowed at this stage, please contact the Shardy team or file a bug.")


class ManualAxesCleanupPass(Pass):
    name = "sdy-manual-axes-cleanup"
    summary = "Sorts manual axes and adds unused ones to the replicated axes."

    def run(self, module: Module) -> None:
        table = module.symbol_table()
        for op in module.walk(post_order=True):
            if op.name == MANUAL_COMPUTATION:
                _cleanup(op, table)


def _mesh_of(mesh_or_ref, table: SymbolTable) -> Mesh | None:
    if isinstance(mesh_or_ref, Mesh):
        return mesh_or_ref
    mesh_op = table.lookup(mesh_or_ref)
    return None if mesh_op is None else mesh_op.properties.get("mesh")


def _common_mesh_or_ref(shardings, table: SymbolTable):
    """Shardy's `getCommonMeshOrRef`: the first sharding on a non-empty mesh wins."""
    mesh_or_ref, mesh = None, None
    for sharding in shardings:
        other = _mesh_of(sharding.mesh_or_ref, table)
        if mesh is None or mesh.is_empty:
            mesh, mesh_or_ref = other, sharding.mesh_or_ref
    return mesh_or_ref, mesh


def _cleanup(op: Operation, table: SymbolTable) -> None:
    ins = op.properties["in_shardings"].shardings
    outs = op.properties["out_shardings"].shardings
    manual_axes = op.properties["manual_axes"].names
    if not ins and not outs:
        body = op.regions[0].block
        if manual_axes and body.ops and body.ops[0].name != "sdy.return":
            raise PassFailedError(_NO_SHARDINGS_ERROR, op.location)
        return
    mesh_or_ref, mesh = _common_mesh_or_ref((*ins, *outs), table)
    if mesh is None:
        raise PassFailedError(f"unknown mesh: @{mesh_or_ref}", op.location)
    order = {a.name: i for i, a in enumerate(mesh.axes)}
    sorted_axes = tuple(sorted(manual_axes, key=lambda n: order.get(n, len(order))))
    if sorted_axes != manual_axes:
        op.properties["manual_axes"] = ManualAxes(sorted_axes)
    manual_refs = [AxisRef(n) for n in sorted_axes]
    for key, types in (("in_shardings", op.operand_types), ("out_shardings", op.result_types)):
        shardings = op.properties[key].shardings
        new = [_add_unused(s, t, manual_refs, mesh_or_ref, mesh) for s, t in zip(shardings, types)]
        if new != list(shardings):
            op.properties[key] = TensorShardingPerValue(tuple(new))


def _add_unused(sharding: TensorSharding, type_, manual_refs, mesh_or_ref, mesh: Mesh) -> TensorSharding:
    if not is_shaped(type_):
        return sharding
    used = list(sharding.axis_refs())
    unused = difference(manual_refs, used, mesh) if manual_refs and manual_refs != used else ()
    if not unused:
        return sharding
    return replace(sharding, mesh_or_ref=mesh_or_ref,
                   replicated_axes=sort_and_merge((*sharding.replicated_axes, *unused), mesh))
