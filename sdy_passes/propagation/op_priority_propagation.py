"""`sdy-op-priority-propagate`: aggressive propagation run once per op heuristic
(`op_priority_propagation.cc`, spec/propagation.md §4.4).

Run *p* lets each op propagate along a factor in the union of the directions the first *p*+1
heuristics give, intersected with the caller's direction. With
`run-op-priority-propagation=false` it is a single aggressive run.
"""

from __future__ import annotations

from sdy_passes.propagation.aggressive_propagation import AggressivePropagationPass
from sdy_passes.propagation.basic_factor_propagation import BACKWARD, BOTH, FORWARD, NONE
from sdy_passes.propagation.basic_propagation import SHARDING_RULE
from sdy_passes.attributes import OpShardingRule, StringAttr
from sdy_passes.ir import Operation
from sdy_passes.common.op_properties import is_elementwise
from sdy_passes.common._value_shardings import is_scalar

__all__ = ["OpPriorityPropagationPass", "OP_PROPAGATION_SCHEDULE"]

_PASS_THROUGH = frozenset({"stablehlo.reshape", "stablehlo.transpose", "sdy.data_flow_edge",
                           "sdy.func_data_flow_edge"})
_DYNAMIC_SLICES = frozenset({"stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice"})


def _direction_based_on_uses(op: Operation, allow_multi_use: bool) -> int:
    if allow_multi_use:
        return BOTH
    multi = any(not v.has_one_use and not is_scalar(v) for v in op.operands)
    return NONE if multi else BOTH


def _is_offload_custom_call(op: Operation) -> bool:
    target = op.properties.get("call_target_name", op.attributes.get("call_target_name"))
    return op.name == "stablehlo.custom_call" and isinstance(target, StringAttr) \
        and target.value in ("MoveToDevice", "MoveToHost")


def _pass_through_op(op: Operation, allow_multi_use: bool) -> int:
    if is_elementwise(op) or _is_offload_custom_call(op) or op.name in _PASS_THROUGH:
        return _direction_based_on_uses(op, allow_multi_use)
    if op.name in _DYNAMIC_SLICES:
        return _direction_based_on_uses(op, allow_multi_use) & FORWARD
    return NONE


def _only_pass_through_factors_broadcast_backward(op: Operation, factor: int) -> int:
    rule = op.attributes.get(SHARDING_RULE)
    if isinstance(rule, OpShardingRule) and factor in (
            *rule.reduction_factors, *rule.need_replication_factors, *rule.permutation_factors):
        return NONE
    return BACKWARD if op.name == "stablehlo.broadcast_in_dim" else BOTH


def _broadcast_backward(op: Operation, factor: int) -> int:
    return BACKWARD if op.name == "stablehlo.broadcast_in_dim" else BOTH


OP_PROPAGATION_SCHEDULE = (
    lambda op, f: _pass_through_op(op, False),
    lambda op, f: _pass_through_op(op, True),
    _only_pass_through_factors_broadcast_backward,
    _broadcast_backward,
    lambda op, f: BOTH,
)
"""The heuristics, in priority order; only #2 depends on the factor."""


def op_based_directions(priority: int, get_directions):
    """Directions for run `priority`: per factor, the union of heuristics 0..priority,
    intersected with the caller's directions."""
    heuristics = OP_PROPAGATION_SCHEDULE[:priority + 1]

    def directions(op: Operation, num_factors: int) -> list[int]:
        allowed = NONE
        for k in range(len(heuristics) - 1, -1, -1):  # the later ones allow more: stop at BOTH
            if k != 2:  # the one heuristic that depends on the factor
                allowed |= heuristics[k](op, 0)
                if allowed == BOTH:
                    break
        caller = get_directions(op, num_factors)
        if len(heuristics) > 2 and allowed != BOTH:
            return [(allowed | _only_pass_through_factors_broadcast_backward(op, f)) & caller[f]
                    for f in range(num_factors)]
        return [allowed & c for c in caller]
    return directions


class OpPriorityPropagationPass(AggressivePropagationPass):
    name = "sdy-op-priority-propagate"
    summary = "Propagates shardings op heuristic by op heuristic (aggressive strategy)."
    options = {**AggressivePropagationPass.options, "run-op-priority-propagation": True}

    def propagate(self, module, groups, get_directions) -> None:
        if not self.options["run-op-priority-propagation"]:
            super().propagate(module, groups, get_directions)
            return
        for priority in range(len(OP_PROPAGATION_SCHEDULE)):
            super().propagate(module, groups, op_based_directions(priority, get_directions))
