"""`sdy-apply-sharding-constraints`: give a constraint's input the constraint's sharding.

Shardy's `apply_sharding_constraints.cc` (spec/sdy_passes.md §5). In post-order, for each
`sdy.sharding_constraint` (after the chain step) and each operand of an `sdy.manual_computation`
(with its in-sharding), the sharding is applied to the input when the input can hold a sharding,
has none, the sharding is fully closed, and no other constraint or manual computation uses the
input with a different sharding. A data-flow edge target is not sharded: the constraint is moved
(or, for a manual computation, created) right after it and takes over all its other uses.
Otherwise the input's sharding is set, and an applied constraint gets its identity
`sdy.sharding_rule`.

Options (jaxlib 0.10.2): `debug-sharding-origins` and `debug-propagation-edge-sharding` record
where an applied constraint's axes came from, as the propagate passes do
(`sdy_passes.propagation.source_sharding`): the constraints and manual computations get their
`sdy.sharding_origin_name`, the inputs `sdy.sharding_origins` / `sdy.propagation_edges`.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from sharding import Mesh, TensorSharding

from sdy_passes.common._value_shardings import (
    DATA_FLOW_EDGE, MANUAL_COMPUTATION, data_flow_edge_of, get_sharding, open_sharding,
    set_sharding, shardable_value,
)
from sdy_passes.attributes import OpShardingRule, RankedTensorType
from sdy_passes.ir import Module, Operation, OpResult, Value
from sdy_passes.pass_manager import Pass
from sdy_passes.propagation.sharding_projection import ShardingProjection
from sdy_passes.propagation.source_sharding import SourceShardingHandler

CONSTRAINT = "sdy.sharding_constraint"
SHARDING_RULE = "sdy.sharding_rule"
_DYNAMIC_FACTOR = -(2 ** 63)  # what Shardy records for a dynamic dim (ShapedType::kDynamic)


class ApplyShardingConstraintsPass(Pass):
    name = "sdy-apply-sharding-constraints"
    summary = "Applies sharding constraints to their inputs where possible."
    options = {"debug-sharding-origins": False, "debug-propagation-edge-sharding": False}

    def run(self, module: Module) -> None:
        debug = SourceShardingHandler(self.options["debug-sharding-origins"],
                                      self.options["debug-propagation-edge-sharding"])
        record = None
        if debug.enabled:
            debug.prepare(module)
            meshes = {m.properties["sym_name"].value: m.properties["mesh"] for m in module.meshes()}
            record = functools.partial(_set_and_record, debug, meshes)
        for op in module.walk(post_order=True):
            if op.name == CONSTRAINT:
                _apply_chain(op)
                _apply(op, op.operands[0], op.properties["sharding"], _constraint_moved_after, record)
            elif op.name == MANUAL_COMPUTATION:
                for i, sharding in enumerate(op.properties["in_shardings"].shardings):
                    # Operands are read as they are now: an earlier step may have replaced one.
                    _apply(op, op.operands[i], sharding, _new_constraint_after)
        if debug.enabled:
            debug.save(module)


def _set_and_record(debug: SourceShardingHandler, meshes: dict[str, Mesh], op: Operation,
                    value: Value, sharding: TensorSharding) -> None:
    """`set_sharding` of a constraint's input, recorded as a step through the constraint's
    identity rule (the result's axes reach the operand)."""
    rule = op.attributes[SHARDING_RULE]
    mesh = sharding.mesh_or_ref if isinstance(sharding.mesh_or_ref, Mesh) else meshes.get(sharding.mesh_or_ref)

    def projection():
        return ShardingProjection.build([get_sharding(v) for v in op.operands],
                                        [get_sharding(v) for v in op.results], rule, mesh)
    old = projection() if mesh is not None else None
    set_sharding(value, sharding)
    if old is not None and (new := projection()) != old:
        debug.record(op, list(op.operands), list(op.results), mesh, rule, old, new)


def _is_used_by_constraint_with_different_sharding(value: Value, sharding: TensorSharding) -> bool:
    for use in value.uses:
        user = use.operation
        if user.name == CONSTRAINT and user.properties["sharding"] != sharding:
            return True
        if user.name == MANUAL_COMPUTATION and \
                user.properties["in_shardings"].shardings[use.index] != sharding:
            return True
    return False


def _is_used_by_constraint(value: Value, excluded: Operation | None = None) -> bool:
    return any(u.operation is not excluded and u.operation.name in (CONSTRAINT, MANUAL_COMPUTATION)
               for u in value.uses)


def _should_apply(value: Value, sharding: TensorSharding) -> bool:
    return (shardable_value(value) is not None
            and get_sharding(value) is None
            and sharding.is_fully_closed
            and not _is_used_by_constraint_with_different_sharding(value, sharding))


def _move_after_value(op: Operation, value: Value) -> None:
    if isinstance(value, OpResult):
        op.move_after(value.owner)
    else:
        op.detach_if_attached()
        value.owner.insert(0, op)


def _constraint_moved_after(op: Operation, value: Value, sharding: TensorSharding) -> Operation:
    _move_after_value(op, value)
    return op


def _new_constraint_after(op: Operation, value: Value, sharding: TensorSharding) -> Operation:
    # A manual computation cannot move: a new constraint (at its location) follows the value.
    new = Operation.create(CONSTRAINT, [value], [value.type], properties={"sharding": sharding},
                           location=op.location)
    _move_after_value(new, value)
    return new


def _apply(op: Operation, value: Value, sharding: TensorSharding, constraint_after, record=None) -> None:
    if not _should_apply(value, sharding):
        return
    is_target = (isinstance(value, OpResult) and value.owner.name == DATA_FLOW_EDGE) \
        or data_flow_edge_of(value) is not None
    if is_target:
        # Sharding a data-flow target would constrain every target of its edge (GSPMD keeps
        # the constraint instead): route the value's other uses through a constraint.
        constraint = constraint_after(op, value, sharding)
        value.replace_all_uses_except(constraint.result, [constraint])
        if sharding.unreduced_axes:
            # Unreduced axes do not propagate: they must be on the value itself.
            current = get_sharding(value) or open_sharding(sharding.mesh_or_ref, value.type)
            set_sharding(value, replace(current, unreduced_axes=sharding.unreduced_axes))
        return
    if op.name == CONSTRAINT and SHARDING_RULE not in op.attributes:
        op.attributes[SHARDING_RULE] = _identity_rule(op.result.type)
    if record is not None and op.name == CONSTRAINT:
        record(op, value, sharding)
    else:
        set_sharding(value, sharding)


def _identity_rule(type_) -> OpShardingRule:
    shape = type_.shape if isinstance(type_, RankedTensorType) else ()
    return OpShardingRule.identity(tuple(_DYNAMIC_FACTOR if d is None else d for d in shape))


def _apply_chain(head: Operation) -> None:
    """The chain step: uses of the input after a chain `head -> ... -> tail` of single-use
    constraints (same block, not `func.return`) switch to the tail's result."""
    value = head.operands[0]
    if isinstance(value, OpResult) and value.owner.name == CONSTRAINT:
        return
    if get_sharding(value) is not None or _is_used_by_constraint(value, excluded=head):
        return
    tail = head
    while tail.result.has_one_use and tail.result.uses[0].operation.name == CONSTRAINT:
        tail = tail.result.uses[0].operation
    if tail is head or _is_used_by_constraint(tail.result):
        return
    block = tail.parent
    position = block.index_of(tail)

    def after_tail(use) -> bool:
        user = use.operation
        return (user is not head and user.name != "func.return" and user.parent is block
                and block.index_of(user) > position)

    value.replace_uses_where(tail.result, after_tail)
