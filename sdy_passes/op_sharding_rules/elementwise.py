"""Element-wise ops: one pass-through factor per dim (`buildPointwise`), and select / clamp,
whose scalar operands map to no factor."""

from __future__ import annotations

from sdy_passes.op_sharding_rules._builder import Builder, pointwise_rule, shape_of


def pointwise(op, conservative: bool):
    return pointwise_rule(op)


def select(op, conservative: bool):
    """A scalar `pred` is broadcast: the other operands behave element-wise."""
    return Builder.of(op).add_pointwise(shape_of(op.results[0].type)).build()


def clamp(op, conservative: bool):
    """`min` and `max` may be scalars."""
    return Builder.of(op).add_pointwise(shape_of(op.operands[1].type)).build()
