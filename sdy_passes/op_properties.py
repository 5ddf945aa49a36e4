"""Op traits propagation needs, by op name (Shardy's `transforms/common/op_properties.cc` and
the StableHLO traits it reads).

* `is_elementwise(op)`: ops with MLIR's `Elementwise` or StableHLO's `BroadcastingElementwise`
  trait, a `bitcast_convert` between equal shapes, and the sdy ops propagation treats alike.
* `is_trivially_dead(op)`: an unused op without memory effects, which MLIR's greedy rewrite
  driver (and so every propagation pass) erases.
"""

from __future__ import annotations

from sdy_passes.attributes import BoolAttr
from sdy_passes.ir import Operation

__all__ = ["ELEMENTWISE_OPS", "is_elementwise", "is_trivially_dead"]

_UNARY = ("abs", "cbrt", "ceil", "convert", "count_leading_zeros", "cosine", "exponential",
          "exponential_minus_one", "floor", "imag", "is_finite", "log", "log_plus_one", "logistic",
          "not", "negate", "popcnt", "real", "round_nearest_afz", "round_nearest_even", "rsqrt",
          "sign", "sine", "sqrt", "tan", "tanh", "uniform_quantize", "uniform_dequantize")
_BINARY = ("add", "atan2", "complex", "divide", "maximum", "minimum", "multiply", "power",
           "remainder", "shift_left", "shift_right_arithmetic", "shift_right_logical", "subtract",
           "and", "or", "xor")
ELEMENTWISE_OPS = frozenset(
    ["stablehlo." + n for n in (*_UNARY, *_BINARY, "compare", "reduce_precision", "clamp", "select")]
    + ["sdy.propagation_barrier", "sdy.sharding_constraint", "sdy.reshard"])

# Ops whose memory effects are none (`Pure` / `NoMemoryEffect`) ...
_NO_EFFECTS = ELEMENTWISE_OPS - {"sdy.sharding_constraint"} | frozenset("stablehlo." + n for n in (
    "constant", "iota", "dynamic_iota", "create_token", "replica_id", "partition_id", "after_all",
    "get_tuple_element", "tuple", "dynamic_slice", "dynamic_update_slice", "batch_norm_grad",
    "batch_norm_inference", "batch_norm_training", "bitcast_convert", "broadcast",
    "broadcast_in_dim", "cholesky", "concatenate", "convolution", "cross-replica-sum", "dot",
    "dot_general", "einsum", "unary_einsum", "fft", "gather", "get_dimension_size", "reshape",
    "dynamic_reshape", "set_dimension_size", "reverse", "pad", "transpose", "triangular_solve",
    "torch_index_select", "optimization_barrier", "rng_bit_generator", "dynamic_pad",
    "dynamic_gather", "dynamic_conv", "slice")) | {"sdy.constant"}
# ... and ops whose effects are those of the ops in their regions (`RecursiveMemoryEffects`).
_RECURSIVE_EFFECTS = frozenset({"stablehlo.if", "stablehlo.case", "stablehlo.while", "stablehlo.reduce",
                                "stablehlo.map", "stablehlo.scatter", "stablehlo.select_and_scatter",
                                "stablehlo.sort", "stablehlo.reduce_window", "sdy.manual_computation",
                                "sdy.named_computation"})
_TERMINATORS = frozenset({"func.return", "stablehlo.return", "sdy.return"})


def is_elementwise(op: Operation) -> bool:
    if op.name == "stablehlo.bitcast_convert":
        return op.operands[0].type.shape == op.results[0].type.shape
    return op.name in ELEMENTWISE_OPS


def _has_no_effects(op: Operation) -> bool:
    if op.name in _TERMINATORS:
        return True  # terminators inside regions do not keep their parent alive
    if op.name == "stablehlo.custom_call":
        flag = op.properties.get("has_side_effect", op.attributes.get("has_side_effect"))
        return not (isinstance(flag, BoolAttr) and flag.value)
    if op.name in _RECURSIVE_EFFECTS:
        return all(_has_no_effects(inner) for region in op.regions for block in region.blocks
                   for inner in block.ops)
    return op.name in _NO_EFFECTS


def is_trivially_dead(op: Operation) -> bool:
    """MLIR's `isOpTriviallyDead`: no result is used and the op has no memory effects."""
    if op.name in _TERMINATORS or op.has_uses():
        return False
    return _has_no_effects(op)
