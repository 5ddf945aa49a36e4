"""Reductions and windows: reduce, reduce_window, select_and_scatter, sort."""

from __future__ import annotations

import re

from sdy_passes.op_sharding_rules._attrs import attr, int_attr, ints
from sdy_passes.op_sharding_rules._builder import (
    NEED_REPLICATION, NULL, PASS_THROUGH, PERMUTATION, REDUCTION, Builder, shape_of,
)


def reduce(op, conservative: bool):
    """Inputs then init values; reduced dims are reduction factors of the inputs only."""
    num_inputs = op.num_operands // 2
    dimensions = ints(op, "dimensions")
    builder = Builder.of(op)
    operand_dims = [NULL] * op.num_operands
    out_dim = 0
    for in_dim, size in enumerate(shape_of(op.operands[0].type)):
        operand_dims[:num_inputs] = [in_dim] * num_inputs
        if in_dim in dimensions:
            builder.add_factor(operand_dims, [NULL] * num_inputs, size, REDUCTION)
        else:
            builder.add_factor(operand_dims, [out_dim] * num_inputs, size)
            out_dim += 1
    return builder.build()


def _padding(op) -> list[int] | None:
    found = attr(op, "padding")
    if found is None:
        return None
    text = str(found)
    return [int(x) for x in re.findall(r"-?\d+", text[:text.rindex(":")])]


def _is_window_pass_through(padding, window_dims, strides, dim: int) -> bool:
    if padding is not None:
        # a splat `dense<0>` pads every dim alike
        low, high = (padding[0], padding[0]) if len(padding) == 1 else padding[2 * dim:2 * dim + 2]
        if low != 0 or high != 0:
            return False
    return (not strides or strides[dim] == 1) and (not window_dims or window_dims[dim] == 1)


def reduce_window(op, conservative: bool):
    padding = _padding(op)
    window = ints(op, "window_dimensions")
    strides = ints(op, "window_strides", ())
    return Builder.of(op).add_pointwise(
        shape_of(op.results[0].type),
        lambda dim: PASS_THROUGH if _is_window_pass_through(padding, window, strides, dim) else PERMUTATION,
        lambda kind: conservative and kind == PERMUTATION).build()


def select_and_scatter(op, conservative: bool):
    padding = _padding(op)
    window = ints(op, "window_dimensions", ())
    strides = ints(op, "window_strides", ())
    source = shape_of(op.operands[1].type)
    builder = Builder.of(op)
    for dim, size in enumerate(shape_of(op.results[0].type)):
        if _is_window_pass_through(padding, window, strides, dim):
            builder.add_factor_all(dim, size)
            continue
        builder.add_factor([NULL, dim, NULL], [NULL], source[dim], NEED_REPLICATION, conservative)
        builder.add_factor([dim, NULL, NULL], [dim], size, PERMUTATION, conservative)
    return builder.build()


def sort(op, conservative: bool):
    shape = shape_of(op.operands[0].type)
    dimension = int_attr(op, "dimension", -1)
    blocked = all(dim == dimension or size == 1 for dim, size in enumerate(shape))
    builder = Builder.of(op)
    for dim, size in enumerate(shape):
        if dim == dimension:
            builder.add_factor_all(dim, size, NEED_REPLICATION, blocked)
        else:
            builder.add_factor_all(dim, size)
    return builder.build()
