"""Ops that move elements around: broadcast_in_dim, reshape (compound factors), transpose,
bitcast_convert, concatenate, pad, slice, dynamic_slice, dynamic_update_slice, reverse."""

from __future__ import annotations

import math

from sdy_passes.ir import OpResult
from sdy_passes.dialects._base import has_trait
from sdy_passes.op_sharding_rules._attrs import int_attr, ints
from sdy_passes.op_sharding_rules._builder import (
    NEED_REPLICATION, NULL, PASS_THROUGH, PERMUTATION, Builder, shape_of,
)


def broadcast_in_dim(op, conservative: bool):
    builder = Builder.of(op)
    in_shape, out_shape = shape_of(op.operands[0].type), shape_of(op.results[0].type)
    out_to_in = [NULL] * len(out_shape)
    for in_dim, out_dim in enumerate(ints(op, "broadcast_dimensions")):
        out_to_in[out_dim] = in_dim
    for out_dim, out_size in enumerate(out_shape):
        in_dim = out_to_in[out_dim]
        if in_dim != NULL and in_shape[in_dim] == 1 and out_size != 1:
            builder.add_factor([in_dim], [NULL], 1)  # expanded in place
            in_dim = NULL
        builder.add_factor([in_dim], [out_dim], out_size)
    return builder.build()


def reshape(op, conservative: bool):
    """Input and output dims walked together: common factors while the products agree (their
    gcd), one factor per side when the gcd is 1, then factors that bring the sides back together
    (spec/propagation.md §2.5). No rule for zero elements."""
    in_shape, out_shape = shape_of(op.operands[0].type), shape_of(op.results[0].type)
    if math.prod(in_shape) == 0:
        return None
    builder = Builder.of(op)
    in_rank, out_rank = len(in_shape), len(out_shape)
    in_dim = out_dim = 0
    dims_in = dims_out = factors_in = factors_out = 1
    while in_dim < in_rank or out_dim < out_rank:
        if in_dim < in_rank and in_shape[in_dim] == 1:
            builder.add_factor([in_dim], [NULL], 1)
            in_dim += 1
            continue
        if out_dim < out_rank and out_shape[out_dim] == 1:
            builder.add_factor([NULL], [out_dim], 1)
            out_dim += 1
            continue
        if in_dim < in_rank and dims_in == factors_in:
            dims_in *= in_shape[in_dim]
        if out_dim < out_rank and dims_out == factors_out:
            dims_out *= out_shape[out_dim]
        next_in, next_out = dims_in // factors_in, dims_out // factors_out
        gcd = math.gcd(next_in, next_out)

        def next_if_diverged(nxt, smaller, larger):
            if larger % smaller == 0 and nxt % (larger // smaller) == 0:
                return larger // smaller  # a factor that makes both sides converge
            if nxt > gcd:
                return nxt // gcd  # keeps the gcd for the next step
            return nxt

        if factors_in == factors_out:
            if gcd > 1:
                builder.add_factor([in_dim], [out_dim], gcd)
                factors_in *= gcd
                factors_out *= gcd
            else:
                builder.add_factor([in_dim], [NULL], next_in)
                factors_in *= next_in
                builder.add_factor([NULL], [out_dim], next_out)
                factors_out *= next_out
        elif factors_in < factors_out:
            next_in = next_if_diverged(next_in, factors_in, factors_out)
            builder.add_factor([in_dim], [NULL], next_in)
            factors_in *= next_in
        else:
            next_out = next_if_diverged(next_out, factors_out, factors_in)
            builder.add_factor([NULL], [out_dim], next_out)
            factors_out *= next_out
        if in_dim < in_rank and dims_in == factors_in:
            in_dim += 1
        if out_dim < out_rank and dims_out == factors_out:
            out_dim += 1
    return builder.build()


def transpose(op, conservative: bool):
    builder = Builder.of(op)
    in_shape = shape_of(op.operands[0].type)
    for out_dim, in_dim in enumerate(ints(op, "permutation")):
        builder.add_factor([in_dim], [out_dim], in_shape[in_dim])
    return builder.build()


def bitcast_convert(op, conservative: bool):
    """Any dim but the extra minor dim of the side with the narrower element type."""
    in_shape, out_shape = shape_of(op.operands[0].type), shape_of(op.results[0].type)
    builder = Builder.of(op).add_pointwise(in_shape if len(in_shape) < len(out_shape) else out_shape)
    if len(in_shape) < len(out_shape):
        builder.add_factor([NULL], [len(out_shape) - 1], out_shape[-1], NEED_REPLICATION)
    elif len(in_shape) > len(out_shape):
        builder.add_factor([len(in_shape) - 1], [NULL], in_shape[-1], NEED_REPLICATION)
    return builder.build()


def _is_slice(value) -> bool:
    return isinstance(value, OpResult) and value.owner.name == "stablehlo.slice"


def _slice_source(value):
    return value.owner.operands[0] if _is_slice(value) else value


def concatenate(op, conservative: bool):
    dimension = int_attr(op, "dimension")

    def kind(dim):
        if dim != dimension:
            return PASS_THROUGH
        operands = op.operands
        if all(_is_slice(v) for v in operands):
            return PERMUTATION  # concat(slice(l), slice(r))
        same = _slice_source(operands[0])
        if all(_slice_source(v) is same for v in operands) and any(_is_slice(v) for v in operands):
            return PERMUTATION  # concat(slice(x), x, slice(x))
        return NEED_REPLICATION

    return Builder.of(op).add_pointwise_if(
        shape_of(op.results[0].type), lambda dim: not conservative or dim != dimension, kind).build()


def pad(op, conservative: bool):
    return Builder.of(op).add_pointwise_with_diff_type_for_mismatch(
        shape_of(op.operands[0].type), shape_of(op.results[0].type), PERMUTATION, conservative).build()


def slice_(op, conservative: bool):
    return Builder.of(op).add_pointwise_with_diff_type_for_mismatch(
        shape_of(op.operands[0].type), shape_of(op.results[0].type), PERMUTATION, conservative).build()


def dynamic_slice(op, conservative: bool):
    return Builder.of(op).add_pointwise_with_diff_type_for_mismatch(
        shape_of(op.operands[0].type), shape_of(op.results[0].type), NEED_REPLICATION, True).build()


def dynamic_update_slice(op, conservative: bool):
    """A sliced dim: the operand/result factor passes through; the update's own factor needs
    replication unless every start index is a constant."""
    operand_shape, update_shape = shape_of(op.operands[0].type), shape_of(op.operands[1].type)
    constant = all(isinstance(v, OpResult) and (v.owner.name == "sdy.constant"  # not ConstantLike
                                                 or has_trait(v.owner, "ConstantLike"))
                   for v in op.operands[2:])
    builder = Builder.of(op)
    dims = [NULL] * op.num_operands
    for dim, (operand_size, update_size) in enumerate(zip(operand_shape, update_shape, strict=True)):
        if operand_size == update_size:
            builder.add_factor_all(dim, operand_size)
            continue
        dims[0], dims[1] = dim, NULL
        builder.add_factor(dims, [dim], operand_size)
        dims[0], dims[1] = NULL, dim
        builder.add_factor(dims, [NULL], update_size, PASS_THROUGH if constant else NEED_REPLICATION)
    return builder.build()


def reverse(op, conservative: bool):
    dimensions = ints(op, "dimensions")
    return Builder.of(op).add_pointwise(
        shape_of(op.results[0].type),
        lambda dim: PERMUTATION if dim in dimensions else PASS_THROUGH).build()
