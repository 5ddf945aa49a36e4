"""`stablehlo.custom_call`: the targets Shardy knows, by `call_target_name`.

Pointwise targets, linear algebra (Eigh, Qr, Householder products), top-k, the SPMD
partitioner's internal permutes, X64Combine; callbacks and `tpu_custom_call` get no rule; any
other target gets none and a once-per-process warning.
"""

from __future__ import annotations

from sdy_passes.op_sharding_rules._attrs import string_attr
from sdy_passes.op_sharding_rules._builder import (
    NEED_REPLICATION, NULL, Builder, pointwise_rule, shape_of,
)
from sdy_passes.errors import emit_warning_once

NO_RULE = frozenset({"sdy_testonly", "tpu_custom_call", "xla_python_cpu_callback",
                     "xla_python_gpu_callback", "xla_ffi_python_cpu_callback",
                     "xla_ffi_python_gpu_callback"})
POINTWISE = frozenset({
    "annotate_device_placement", "Cholesky", "CompactWyHelper", "InspectSharding",
    "InvertDiagBlocksLowerTriangular", "InvertDiagBlocksUpperTriangular", "LayoutConstraint",
    "mhlo.erf", "MoveToDevice", "MoveToHost", "X64SplitHigh", "X64SplitLow",
    "xla.megascale.provide_metadata",
    # the SPMD partitioner's collective permutes: every result sharded like the input
    "_SPMDInternalOp_MultiPad", "_SPMDInternalOp_RotateRight", "_SPMDInternalOp_MultiRotate",
    "_SPMDInternalOp_MultiSlice", "_SPMDInternalOp_Wrap"})


def _eigh(op):
    """Batch dims; the eigenvalues follow the input's last dim."""
    shape = shape_of(op.operands[0].type)
    d1, d2 = len(shape) - 2, len(shape) - 1
    return (Builder.of(op).add_pointwise(shape[:-2])
            .add_factor([d1], [d1, NULL], shape[d1])
            .add_factor([d2], [d2, d1], shape[d2]).build())


def _qr(op):
    shape, r_shape = shape_of(op.operands[0].type), shape_of(op.results[1].type)
    d1, d2 = len(shape) - 2, len(shape) - 1
    return (Builder.of(op).add_pointwise(shape[:-2])
            .add_factor([d1], [d1, NULL], shape[d1], NEED_REPLICATION)
            .add_factor([d2], [d2, NULL], shape[d2], NEED_REPLICATION)
            .add_factor([NULL], [NULL, d1], r_shape[d1], NEED_REPLICATION).build())


def _householder_product(op):
    lhs, taus = shape_of(op.operands[0].type), shape_of(op.operands[1].type)
    d1, d2 = len(lhs) - 2, len(lhs) - 1
    return (Builder.of(op).add_pointwise(lhs[:-2])
            .add_factor([d1, NULL], [d1], lhs[d1], NEED_REPLICATION)
            .add_factor([d2, NULL], [d2], lhs[d2], NEED_REPLICATION)
            .add_factor([NULL, d1], [NULL], taus[d1], NEED_REPLICATION).build())


def _top_k(op):
    return Builder.of(op).add_pointwise_with_diff_type_for_mismatch(
        shape_of(op.operands[0].type), shape_of(op.results[0].type), NEED_REPLICATION, True).build()


def _approx_top_k(op):
    """Operands: operand, iota, two scalar inits; results: values, indices."""
    builder = Builder.of(op)
    in_shape, out_shape = shape_of(op.operands[0].type), shape_of(op.results[0].type)
    for dim, (in_size, out_size) in enumerate(zip(in_shape, out_shape, strict=True)):
        if in_size == out_size:
            builder.add_factor_all(dim, in_size)
        else:  # the reduced dim
            builder.add_factor([dim, dim, NULL, NULL], [NULL, NULL], in_size)
            builder.add_factor([NULL] * 4, [dim, dim], out_size, NEED_REPLICATION, True)
    return builder.build()


def _x64_combine(op):
    """Replicated and blocked when it feeds a `rng_bit_generator` (whose state must be
    replicated); else element-wise."""
    if any(user.name == "stablehlo.rng_bit_generator" for r in op.results for user in r.users):
        shape = shape_of(op.results[0].type)
        return Builder.of(op).add_factor_all(0, shape[0], NEED_REPLICATION, True).build()
    return pointwise_rule(op)


_TARGETS = {
    "Eigh": _eigh, "Qr": _qr, "QrDecompositionBlock": _qr,
    "ProductOfElementaryHouseholderReflectors": _householder_product,
    "mhlo.topk": _top_k, "ApproxTopK": _approx_top_k, "PartialReduce": _approx_top_k,
    "X64Combine": _x64_combine,
}


def custom_call(op, conservative: bool):
    target = string_attr(op, "call_target_name")
    if target in NO_RULE:
        return None
    if target in POINTWISE:
        return pointwise_rule(op)
    rule = _TARGETS.get(target)
    if rule is not None:
        return rule(op)
    emit_warning_once("op sharding rules: unknown custom call",
                      f"custom call @{target} is unknown to SDY sharding rule registry", op.location)
    return None

