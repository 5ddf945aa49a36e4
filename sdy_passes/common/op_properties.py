"""Op properties propagation needs (Shardy's `transforms/common/op_properties.cc` and MLIR's
`isOpTriviallyDead`), read from the traits in the op's `OpDef`.

* `is_elementwise(op)`: ops with MLIR's `Elementwise` or StableHLO's `BroadcastingElementwise`
  trait, a `bitcast_convert` between equal shapes, and the sdy ops propagation treats alike.
* `is_trivially_dead(op)`: an unused op without memory effects, which MLIR's greedy rewrite
  driver (and so every propagation pass) erases; `would_be_trivially_dead(op)`: the same once
  its results are unused (MLIR's region DCE).
"""

from __future__ import annotations

from sdy_passes.attributes import BoolAttr
from sdy_passes.dialects import lookup
from sdy_passes.ir import Operation

__all__ = ["is_elementwise", "is_trivially_dead", "would_be_trivially_dead"]

_ELEMENTWISE_FOR_PROPAGATION = frozenset({"sdy.propagation_barrier", "sdy.sharding_constraint",
                                          "sdy.reshard"})
"""Shardy's ops without the trait that its propagation schedules as element-wise."""


def _traits(op: Operation) -> frozenset[str]:
    opdef = lookup(op.name)
    return opdef.traits if opdef is not None else frozenset()


def is_elementwise(op: Operation) -> bool:
    traits = _traits(op)
    if "Elementwise" in traits or "BroadcastingElementwise" in traits:
        return True
    if op.name == "stablehlo.bitcast_convert":
        return op.operands[0].type.shape == op.results[0].type.shape
    return op.name in _ELEMENTWISE_FOR_PROPAGATION


def _has_no_effects(op: Operation) -> bool:
    if op.name == "stablehlo.custom_call":
        flag = op.properties.get("has_side_effect", op.attributes.get("has_side_effect"))
        return not (isinstance(flag, BoolAttr) and flag.value)
    traits = _traits(op)
    if "RecursiveMemoryEffects" in traits:
        return all(_has_no_effects(inner) for region in op.regions for block in region.blocks
                   for inner in block.ops)
    return "NoMemoryEffect" in traits


def is_trivially_dead(op: Operation) -> bool:
    """MLIR's `isOpTriviallyDead`: no result is used, not a terminator, no memory effects."""
    if op.has_uses() or "Terminator" in _traits(op):
        return False
    return _has_no_effects(op)


def would_be_trivially_dead(op: Operation) -> bool:
    """MLIR's `wouldOpBeTriviallyDead`: dead once unused (not a terminator, no memory effects)."""
    return "Terminator" not in _traits(op) and _has_no_effects(op)
