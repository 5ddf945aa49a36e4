"""Shardy's aggressive factor propagation strategy (`aggressive_factor_propagation.{h,cc}`).

Unlike the basic strategy, each tensor takes the longest prefix of a factor's compatible axes
that fits *its own* sharding, and factors competing for an axis within a tensor are served in
order: the factor whose source tensor (the largest tensor already sharded like the axes) is
largest first, then (element-wise ops) the larger total axes size, the lower source tensor
index, the lower factor index (spec/propagation.md §4.3).
"""

from __future__ import annotations

from typing import Sequence

from sharding import AxisRef, Mesh

from sdy_passes.propagation.basic_factor_propagation import BasicFactorPropagation, DirectionAlongFactor
from sdy_passes.common.op_properties import is_elementwise
from sdy_passes.propagation.sharding_projection import (
    PrefixStatus, ShardingProjection, TensorFactorShardings, is_axis_list_prefix_of, is_strict_prefix,
    total_axes_size,
)

__all__ = ["AggressiveFactorPropagation"]


def _factor_source_tensors(projection: ShardingProjection, factor_sizes, axes_per_factor):
    """Per factor, (size, index) of the largest tensor whose axes are a prefix of the factor's."""
    sources = [(-1, -1)] * len(factor_sizes)
    for index, tensor in enumerate(projection.tensors):
        size = 1
        for factor in tensor.factors:
            size *= factor_sizes[factor]
        for factor, fs in tensor.factors.items():
            axes = axes_per_factor[factor]
            if axes and is_axis_list_prefix_of(axes, fs.axes) is not PrefixStatus.NOT_A_PREFIX \
                    and size > sources[factor][0]:
                sources[factor] = (size, index)
    return sources


class AggressiveFactorPropagation(BasicFactorPropagation):

    def _propagated_factor_sharding(self, factor: int, tensor: TensorFactorShardings,
                                    axes_per_factor, mesh: Mesh, conservative: bool,
                                    factor_sizes) -> list[AxisRef]:
        fs = tensor.factors.get(factor)
        if fs is None:
            return []
        new_axes = list(axes_per_factor[factor])
        size = factor_sizes[factor]
        self.truncate_by_removing_conflicts(
            new_axes,
            lambda axis, prev: self.prefix_no_conflicts_within_factor(
                axis, tensor.replicated_axes, tensor.unreduced_axes, fs, prev, size, mesh),
            mesh, conservative)
        if not is_strict_prefix(fs.axes, new_axes):
            return []
        self.truncate_by_removing_conflicts(
            new_axes,
            lambda axis, prev: self.prefix_no_conflicts_across_factors(axis, tensor.factors, factor, mesh),
            mesh, conservative)
        return new_axes

    def propagate_factor_shardings(self, projection: ShardingProjection,
                                   direction_along_factor: DirectionAlongFactor,
                                   factor_sizes: Sequence[int], mesh: Mesh, conservative: bool,
                                   op) -> tuple[list[bool], list[bool]]:
        update_operands = [False] * len(projection.operands)
        update_results = [False] * len(projection.results)
        axes_per_factor = [self.compatible_major_axes(projection, f, direction_along_factor(f))
                           for f in range(len(factor_sizes))]
        if not any(axes_per_factor):
            return update_operands, update_results
        sources = _factor_source_tensors(projection, factor_sizes, axes_per_factor)
        elementwise = op is not None and _is_elementwise(op)

        def key(f):
            axes_size = total_axes_size(axes_per_factor[f], mesh) if elementwise else 0
            return (-sources[f][0], -axes_size, sources[f][1], f)
        order = sorted(range(len(factor_sizes)), key=key)
        order = [f for f in order if axes_per_factor[f]]  # a factor without axes changes nothing

        def propagate(tensors, updated, expand):
            for index, tensor in enumerate(tensors):
                any_update = False
                for factor in order:
                    new_axes = self._propagated_factor_sharding(factor, tensor, axes_per_factor, mesh,
                                                                conservative, factor_sizes)
                    if new_axes:
                        any_update |= expand(tensor, factor, new_axes)
                updated[index] = any_update

        propagate(projection.results, update_results, lambda t, f, axes: t.expand(f, axes))

        def expand_operand(tensor, factor, new_axes):
            if elementwise:
                # An element-wise op's operand takes a result's longer axes along the factor.
                for result in projection.results:
                    fs = result.factors.get(factor)
                    if fs is not None and is_strict_prefix(fs.axes, new_axes):
                        new_axes = fs.axes
            return tensor.expand(factor, new_axes)
        propagate(projection.operands, update_operands, expand_operand)
        return update_operands, update_results


def _is_elementwise(op) -> bool:
    return is_elementwise(op)
