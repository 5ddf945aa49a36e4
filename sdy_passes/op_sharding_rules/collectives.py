"""StableHLO collectives that change shapes: all_gather, all_to_all, reduce_scatter (the others
are element-wise)."""

from __future__ import annotations

from sdy_passes.op_sharding_rules._attrs import int_attr
from sdy_passes.op_sharding_rules._builder import NEED_REPLICATION, Builder, shape_of


def all_gather(op, conservative: bool):
    dim = int_attr(op, "all_gather_dim")
    shape = shape_of(op.operands[0].type)
    return (Builder.of(op).add_pointwise_if(shape, lambda d: d != dim)
            .add_factor_operands(dim, shape[dim], NEED_REPLICATION)
            .add_factor_results(dim, shape_of(op.results[0].type)[dim], NEED_REPLICATION).build())


def all_to_all(op, conservative: bool):
    split, concat = int_attr(op, "split_dimension"), int_attr(op, "concat_dimension")
    in_shape, out_shape = shape_of(op.operands[0].type), shape_of(op.results[0].type)
    builder = (Builder.of(op).add_pointwise_if(in_shape, lambda d: d not in (split, concat))
               .add_factor_operands(split, in_shape[split], NEED_REPLICATION)
               .add_factor_results(split, out_shape[split], NEED_REPLICATION))
    if split != concat:
        builder.add_factor_operands(concat, in_shape[concat], NEED_REPLICATION)
        builder.add_factor_results(concat, out_shape[concat], NEED_REPLICATION)
    return builder.build()


def reduce_scatter(op, conservative: bool):
    dim = int_attr(op, "scatter_dimension")
    shape = shape_of(op.operands[0].type)
    return (Builder.of(op).add_pointwise_if(shape, lambda d: d != dim)
            .add_factor_operands(dim, shape[dim], NEED_REPLICATION)
            .add_factor_results(dim, shape_of(op.results[0].type)[dim], NEED_REPLICATION).build())
