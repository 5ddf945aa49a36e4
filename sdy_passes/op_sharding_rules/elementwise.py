"""Element-wise ops: one pass-through factor per dim (`buildPointwise`), and select / clamp,
whose scalar operands map to no factor."""

from __future__ import annotations

from sdy_passes.op_sharding_rules._builder import Builder, pointwise_rule, shape_of

POINTWISE = (
    "sdy.sharding_constraint", "abs", "add", "all_reduce", "and", "atan2", "cbrt", "ceil",
    "count_leading_zeros", "collective_broadcast", "collective_permute", "compare", "complex",
    "convert", "cosine", "cross-replica-sum", "divide", "exponential", "exponential_minus_one",
    "floor", "imag", "is_finite", "log_plus_one", "log", "logistic", "maximum", "minimum",
    "multiply", "negate", "not", "or", "popcnt", "power", "real", "reduce_precision",
    "remainder", "round_nearest_even", "round_nearest_afz", "rsqrt", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "sign", "sine", "sqrt", "subtract", "tan",
    "tanh", "xor")


def pointwise(op, conservative: bool):
    return pointwise_rule(op)


def select(op, conservative: bool):
    """A scalar `pred` is broadcast: the other operands behave element-wise."""
    return Builder.of(op).add_pointwise(shape_of(op.results[0].type)).build()


def clamp(op, conservative: bool):
    """`min` and `max` may be scalars."""
    return Builder.of(op).add_pointwise(shape_of(op.operands[1].type)).build()


RULES = {
    **{(name if "." in name else f"stablehlo.{name}"): pointwise for name in POINTWISE},
    "stablehlo.select": select,
    "stablehlo.clamp": clamp,
}
