"""gather and scatter (`addGatherScatterFactors`): offset dims, batch dims, collapsed dims and
the index vector dim."""

from __future__ import annotations

from sdy_passes.op_sharding_rules._attrs import fields
from sdy_passes.op_sharding_rules._builder import (
    NEED_REPLICATION, NULL, PASS_THROUGH, REDUCTION, Builder, shape_of,
)

_REDUCERS = frozenset({"stablehlo.add", "stablehlo.multiply", "stablehlo.maximum", "stablehlo.minimum"})
_LOGICAL = frozenset({"stablehlo.and", "stablehlo.or"})


def _common_reduction_op(scatter) -> str | None:
    """`getCommonSupportedReductionOp`: the one associative op (add, multiply, max, min; and/or
    on i1) every result of the update computation applies to its two block arguments."""
    if not scatter.regions or not scatter.regions[0].blocks:
        return None
    block = scatter.regions[0].blocks[0]
    num_inputs = (scatter.num_operands - 1) // 2
    ret = block.terminator
    if (len(block.arguments) != 2 * num_inputs or ret is None or ret.name != "stablehlo.return"
            or ret.num_operands != num_inputs):
        return None
    common = None
    for index, value in enumerate(ret.operands):
        op = getattr(value, "owner", None)
        if not hasattr(op, "name") or op.num_operands != 2:
            return None
        type_ = value.type
        if not hasattr(type_, "element_type"):
            return None
        logical = str(type_.element_type) == "i1" and op.name in _LOGICAL
        if not logical and op.name not in _REDUCERS:
            return None
        if common is not None and common != op.name:
            return None
        common = op.name

        def is_arg(v, i):
            return getattr(v, "owner", None) is block and v.index == i

        a, b = op.operands
        if not ((is_arg(a, index) and is_arg(b, index + num_inputs))
                or (is_arg(a, index + num_inputs) and is_arg(b, index))):
            return None
    return common


def _add_factors(op, input_shape, slices_shape, indices_shape, index_vector_dim, offset_dims,
                 collapsed_dims, input_batching_dims, indices_batching_dims, add):
    is_scatter = op.name == "stablehlo.scatter"
    input_dim = 0
    batch_pos = 0
    for slices_dim, slices_size in enumerate(slices_shape):
        if slices_dim in offset_dims:
            while input_dim in collapsed_dims or input_dim in input_batching_dims:
                input_dim += 1
            input_size = input_shape[input_dim]
            if input_size == slices_size:
                add(input_dim, NULL, slices_dim, input_size, PASS_THROUGH, False)
            elif is_scatter:
                add(input_dim, NULL, NULL, input_size, NEED_REPLICATION, False)
                add(NULL, NULL, slices_dim, slices_size, NEED_REPLICATION, False)
            elif slices_size == 1:
                add(input_dim, NULL, NULL, input_size, REDUCTION, False)
                add(NULL, NULL, slices_dim, slices_size, NEED_REPLICATION, False)
            else:
                add(input_dim, NULL, slices_dim, input_size, NEED_REPLICATION, True)
            input_dim += 1
        else:
            indices_dim = batch_pos if batch_pos < index_vector_dim else batch_pos + 1
            explicit = indices_dim in indices_batching_dims
            input_batch_dim = (input_batching_dims[indices_batching_dims.index(indices_dim)]
                               if explicit else NULL)
            kind = PASS_THROUGH
            if is_scatter and not explicit:
                kind = REDUCTION if _common_reduction_op(op) is not None else NEED_REPLICATION
            add(input_batch_dim, indices_dim, slices_dim, slices_size, kind, False)
            batch_pos += 1
    for dim in collapsed_dims:
        size = input_shape[dim]
        kind = PASS_THROUGH if is_scatter else NEED_REPLICATION if size == 1 else REDUCTION
        add(dim, NULL, NULL, size, kind, False)
    if index_vector_dim < len(indices_shape):
        add(NULL, index_vector_dim, NULL, indices_shape[index_vector_dim], NEED_REPLICATION, False)


def gather(op, conservative: bool):
    dims = fields(op, "dimension_numbers")
    builder = Builder.of(op)
    _add_factors(
        op, shape_of(op.operands[0].type), shape_of(op.results[0].type), shape_of(op.operands[1].type),
        dims.get("index_vector_dim", 0), dims.get("offset_dims", ()), dims.get("collapsed_slice_dims", ()),
        dims.get("operand_batching_dims", ()), dims.get("start_indices_batching_dims", ()),
        lambda i, x, s, size, kind, blocked: builder.add_factor([i, x], [s], size, kind, blocked))
    return builder.build()


def scatter(op, conservative: bool):
    dims = fields(op, "scatter_dimension_numbers")
    num_inputs = (op.num_operands - 1) // 2
    builder = Builder.of(op)

    def add(input_dim, indices_dim, update_dim, size, kind, blocked):
        builder.add_factor([input_dim] * num_inputs + [indices_dim] + [update_dim] * num_inputs,
                           [input_dim] * num_inputs, size, kind, blocked)

    _add_factors(
        op, shape_of(op.operands[0].type), shape_of(op.operands[num_inputs + 1].type),
        shape_of(op.operands[num_inputs].type), dims.get("index_vector_dim", 0),
        dims.get("update_window_dims", ()), dims.get("inserted_window_dims", ()),
        dims.get("input_batching_dims", ()), dims.get("scatter_indices_batching_dims", ()), add)
    return builder.build()
