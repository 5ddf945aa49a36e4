"""Linear algebra and signal ops: cholesky, triangular_solve, fft, batch_norm_inference,
rng_bit_generator."""

from __future__ import annotations

from sdy_passes.op_sharding_rules._attrs import bool_attr, enum_value, int_attr, ints
from sdy_passes.op_sharding_rules._builder import (
    NEED_REPLICATION, NULL, PASS_THROUGH, Builder, shape_of,
)


def cholesky(op, conservative: bool):
    """Batch dims pass through; the two matrix dims need replication."""
    shape = shape_of(op.operands[0].type)
    batch = len(shape) - 2
    return Builder.of(op).add_pointwise(
        shape, lambda dim: PASS_THROUGH if dim < batch else NEED_REPLICATION).build()


def triangular_solve(op, conservative: bool):
    a, b = shape_of(op.operands[0].type), shape_of(op.operands[1].type)
    builder = Builder.of(op).add_pointwise(a[:-2])
    dim1, dim2 = len(a) - 2, len(a) - 1
    transposed = enum_value(op, "transpose_a") in ("TRANSPOSE", "ADJOINT")
    if bool_attr(op, "left_side"):  # op(a) @ result = b
        non_contracting, contracting = (dim2, dim1) if transposed else (dim1, dim2)
        builder.add_factor([non_contracting, dim1], [NULL], a[non_contracting], NEED_REPLICATION)
        builder.add_factor([NULL, dim2], [dim2], b[dim2], NEED_REPLICATION)
        builder.add_factor([contracting, NULL], [dim1], a[contracting], NEED_REPLICATION)
    else:  # result @ op(a) = b
        non_contracting, contracting = (dim1, dim2) if transposed else (dim2, dim1)
        builder.add_factor([NULL, dim1], [dim1], b[dim1], NEED_REPLICATION)
        builder.add_factor([non_contracting, dim2], [NULL], a[non_contracting], NEED_REPLICATION)
        builder.add_factor([contracting, NULL], [dim2], a[contracting], NEED_REPLICATION)
    return builder.build()


def fft(op, conservative: bool):
    """Batch dims pass through, fft dims need replication, the last one blocked if truncated."""
    in_shape, out_shape = shape_of(op.operands[0].type), shape_of(op.results[0].type)
    num_fft = len(ints(op, "fft_length"))
    builder = Builder.of(op)
    for dim, size in enumerate(in_shape):
        if dim < len(in_shape) - num_fft:
            builder.add_factor_all(dim, size)
        elif dim < len(in_shape) - 1:
            builder.add_factor_all(dim, size, NEED_REPLICATION)
        else:
            builder.add_factor_all(dim, size, NEED_REPLICATION, in_shape[-1] != out_shape[-1])
    return builder.build()


def batch_norm_inference(op, conservative: bool):
    """The operand's dims; the scale/offset/mean/variance vectors follow the feature dim."""
    feature = int_attr(op, "feature_index")
    builder = Builder.of(op)
    for dim, size in enumerate(shape_of(op.operands[0].type)):
        dims = [0 if dim == feature else NULL] * op.num_operands
        dims[0] = dim
        builder.add_factor(dims, [dim], size)
    return builder.build()


def rng_bit_generator(op, conservative: bool):
    """The states must be replicated and do not propagate to each other; the output is free."""
    builder = Builder.of(op)
    for dim, size in enumerate(shape_of(op.operands[0].type)):
        builder.add_factor([dim], [dim, NULL], size, NEED_REPLICATION, True)
    for dim, size in enumerate(shape_of(op.results[1].type)):
        builder.add_factor([NULL], [NULL, dim], size)
    return builder.build()
