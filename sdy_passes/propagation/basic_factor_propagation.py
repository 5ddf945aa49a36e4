"""Shardy's basic factor propagation strategy (`basic_factor_propagation.{h,cc}`).

For each factor of an op, the axes to propagate are the longest compatible major axes of the
tensors mapped to it (in the allowed direction), truncated where they conflict: with the
tensors' replicated/unreduced axes, with axes other factors use, with closed factors, factors
holding overflow axes, non-minor-most factors the axes do not divide, and (conservative) with
sub-axes. Every tensor whose sharding along the factor is a strict prefix of those axes takes
them (spec/propagation.md §4.2).
"""

from __future__ import annotations

import math
from enum import IntEnum
from typing import Callable, Sequence

from sharding import AxisRef, Mesh
from sharding.axes import contains

from sdy_passes.propagation.sharding_projection import (
    FactorSharding, ShardingProjection, TensorFactorShardings, prefix_of, prefix_without_overlap_in,
)

__all__ = ["PropagationDirection", "NONE", "FORWARD", "BACKWARD", "BOTH",
           "BasicFactorPropagation"]


class PropagationDirection(IntEnum):
    """Bit set: FORWARD = operands to results, BACKWARD = results to operands. The passes use
    the plain ints below (enum arithmetic is slow); the values are Shardy's."""

    NONE = 0
    FORWARD = 1
    BACKWARD = 2
    BOTH = 3


NONE, FORWARD, BACKWARD, BOTH = 0, 1, 2, 3


DirectionAlongFactor = Callable[[int], PropagationDirection]


def _compatible_major_axes(old: list[AxisRef], new: Sequence[AxisRef], can_expand: bool):
    """Merge `new` into the running common axes `old` (Shardy's getCompatibleMajorAxesInternal)."""
    result: list[AxisRef] = []
    i = 0
    n_old, n_new = len(old), len(new)
    while i < n_old and i < n_new:
        o, nw = old[i], new[i]
        i += 1
        if nw.name != o.name:
            return result, False
        if nw.sub_axis_info == o.sub_axis_info:
            result.append(nw)
            continue
        if prefix_of(nw, o):
            if i < n_new:
                result.append(nw)
                return result, False
            result.append(o)
        elif prefix_of(o, nw):
            if not can_expand or i < n_old:
                result.append(o)
                return result, False
            result.append(nw)
        else:
            return result, False
    result.extend(old[i:])
    if can_expand:
        result.extend(new[i:])
    return result, can_expand


class BasicFactorPropagation:
    """Propagates each factor's common axes to all tensors of the op."""

    # -- conflicts ------------------------------------------------------------------------------
    @staticmethod
    def prefix_no_conflicts_across_factors(axis: AxisRef, factors: dict[int, FactorSharding],
                                           factor: int, mesh: Mesh) -> AxisRef | None:
        result: AxisRef | None = axis
        for other, fs in factors.items():
            if other != factor:
                result = prefix_without_overlap_in(result, fs.overflow_axes)
                result = prefix_without_overlap_in(result, fs.axes)
                if result is None:
                    return None
        return result

    @staticmethod
    def prefix_no_conflicts_within_factor(axis: AxisRef, replicated, unreduced, fs: FactorSharding,
                                          prev_sharded_size: int, factor_size: int,
                                          mesh: Mesh) -> AxisRef | None:
        result = prefix_without_overlap_in(axis, replicated)
        result = prefix_without_overlap_in(result, unreduced)
        if result is None:
            return None
        factor_axes = fs.axes
        if any(contains(a, result) for a in factor_axes):
            return result
        if not fs.is_closed and not fs.overflow_axes:
            if fs.is_minor_most:
                return result
            if factor_size % prev_sharded_size == 0:
                size = result.size(mesh)
                gcd = math.gcd(factor_size // prev_sharded_size, size)
                if gcd == size:
                    return result
                if gcd != 1:
                    return AxisRef.sub(result.name, result.pre_size, gcd)
        if factor_axes and prefix_of(factor_axes[-1], result):
            return factor_axes[-1]
        return None

    @staticmethod
    def truncate_by_removing_conflicts(axes: list[AxisRef], remove_conflicts, mesh: Mesh,
                                       conservative: bool) -> None:
        prev = 1
        for i, cur in enumerate(axes):
            new = remove_conflicts(cur, prev)
            if new is None or (conservative and new.is_sub_axis):
                del axes[i:]
                return
            if new != cur:
                axes[i] = new
                del axes[i + 1:]
                return
            prev *= new.size(mesh)

    # -- compatible axes ------------------------------------------------------------------------
    @staticmethod
    def compatible_major_axes(projection: ShardingProjection, factor: int,
                              direction: PropagationDirection) -> list[AxisRef]:
        if direction == NONE:
            return []
        if direction == BACKWARD:
            first, second = projection.results, projection.operands
        else:
            first, second = projection.operands, projection.results
        result: list[AxisRef] = []
        can_expand = True
        for tensor in first:
            fs = tensor.factors.get(factor)
            if fs is not None:
                result, can_expand = _compatible_major_axes(result, fs.axes, can_expand)
        if direction != BOTH:
            can_expand = False
        for tensor in second:
            fs = tensor.factors.get(factor)
            if fs is not None:
                result, can_expand = _compatible_major_axes(result, fs.axes, can_expand)
        return result

    def _compatible_prefix_in_tensor(self, axis, tensor: TensorFactorShardings, factor, prev,
                                     factor_size, mesh):
        result = self.prefix_no_conflicts_across_factors(axis, tensor.factors, factor, mesh)
        if result is None:
            return None
        fs = tensor.factors.get(factor)
        if fs is None:
            return result
        return self.prefix_no_conflicts_within_factor(result, tensor.replicated_axes,
                                                      tensor.unreduced_axes, fs, prev,
                                                      factor_size, mesh)

    def compatible_major_sharding_axes(self, projection: ShardingProjection, factor: int,
                                       direction, factor_size: int, mesh: Mesh,
                                       conservative: bool) -> list[AxisRef]:
        axes = self.compatible_major_axes(projection, factor, direction)
        tensors = projection.tensors

        def remove(axis, prev):
            result = axis
            for tensor in tensors:
                result = self._compatible_prefix_in_tensor(result, tensor, factor, prev, factor_size, mesh)
                if result is None:
                    return None
            return result
        self.truncate_by_removing_conflicts(axes, remove, mesh, conservative)
        return axes

    def propagate_factor_shardings(self, projection: ShardingProjection,
                                   direction_along_factor: DirectionAlongFactor,
                                   factor_sizes: Sequence[int], mesh: Mesh, conservative: bool,
                                   op) -> tuple[list[bool], list[bool]]:
        update_operands = [False] * len(projection.operands)
        update_results = [False] * len(projection.results)
        for factor, size in enumerate(factor_sizes):
            axes = self.compatible_major_sharding_axes(projection, factor, direction_along_factor(factor),
                                                       size, mesh, conservative)
            ops, res = projection.expand(factor, axes)
            update_operands = [a or b for a, b in zip(update_operands, ops)]
            update_results = [a or b for a, b in zip(update_results, res)]
        return update_operands, update_results
