"""Shardy's sharding projection (`sharding_projection.{h,cc}`): tensor shardings seen per factor.

An op's `#sdy.op_sharding_rule` maps each dim of each operand and result to factors. Projecting
a `TensorSharding` onto the rule hands each dim's axes out to the dim's factors, major first
(spec/propagation.md §3):

* a non-minor-most factor takes axes while they divide what is left of its size; an axis that
  covers the end of one factor and the start of the next is split into sub-axes
  (`"a"=4` over factors `2x2` becomes `"a":(1)2`, `"a":(2)2`);
* when the factor's remaining size and the next axis are coprime, that axis and all after it
  become the factor's *overflow axes* and the dim's later factors are closed and left out;
* the minor-most factor takes all remaining axes, divisible or not.

Projecting back concatenates a dim's factors' axes (merging sub-axes at factor boundaries) and
stops after a factor with overflow axes or one not fully sharded (anything after it would need
a strided view).

`ShardingProjection.build(operand_shardings, result_shardings, rule, mesh)` projects;
`TensorFactorShardings.to_tensor_sharding(...)` projects one tensor back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Sequence

from sharding import AxisRef, DimensionSharding, Mesh, TensorSharding
from sharding.axes import can_coexist, can_merge, contains, merge, prefix_without_overlap

from sdy_passes.attributes import OpShardingRule

__all__ = [
    "PrefixStatus", "is_axis_list_prefix_of", "is_strict_prefix", "prefix_of", "add_axis_or_merge",
    "prefix_without_overlap_in", "greatest_common_prefix",
    "FactorSharding", "TensorFactorShardings", "ShardingProjection", "total_axes_size",
]


# -- axis helpers (Shardy's AxisRefAttr methods missing from sharding.axes) ----------------------

def prefix_of(a: AxisRef, b: AxisRef) -> bool:
    """`a` is `b` or a major part of it (`"x":(1)2` of `"x"`)."""
    return contains(b, a) and a.pre_size == b.pre_size


def prefix_without_overlap_in(a: AxisRef | None, others) -> AxisRef | None:
    """The largest major part of `a` overlapping none of `others` (Shardy's
    `getPrefixWithoutOverlap` over a list)."""
    for other in others:
        if a is None:
            return None
        a = prefix_without_overlap(a, other)
    return a


def greatest_common_prefix(first: Sequence[AxisRef], second: Sequence[AxisRef]) -> list[AxisRef]:
    """The longest axis list both lists start with (the last axis may be a common sub-axis)."""
    out: list[AxisRef] = []
    for a, b in zip(first, second):
        if a == b:
            out.append(a)
            continue
        if can_coexist(a, b):
            if prefix_of(a, b):
                out.append(a)
            elif prefix_of(b, a):
                out.append(b)
        break
    return out


def add_axis_or_merge(axes: list[AxisRef], axis: AxisRef, mesh: Mesh) -> None:
    if axes and can_merge(axes[-1], axis):
        axes[-1] = merge(axes[-1], axis, mesh)
    else:
        axes.append(axis)


def total_axes_size(axes: Sequence[AxisRef], mesh: Mesh) -> int:
    return math.prod(a.size(mesh) for a in axes)


class PrefixStatus(Enum):
    EQUAL = 0
    STRICT_PREFIX = 1
    NOT_A_PREFIX = 2


def is_axis_list_prefix_of(first: Sequence[AxisRef], second: Sequence[AxisRef]) -> PrefixStatus:
    """Whether `first` is `second`, a strict prefix of it (last axis a prefix sub-axis), or not."""
    if not first:
        return PrefixStatus.EQUAL if not second else PrefixStatus.STRICT_PREFIX
    if len(first) > len(second):
        return PrefixStatus.NOT_A_PREFIX
    n = len(first)
    if any(first[i] != second[i] for i in range(n - 1)):
        return PrefixStatus.NOT_A_PREFIX
    if len(first) == len(second) and first[-1] == second[-1]:
        return PrefixStatus.EQUAL
    return PrefixStatus.STRICT_PREFIX if prefix_of(first[-1], second[n - 1]) else PrefixStatus.NOT_A_PREFIX


def is_strict_prefix(first: Sequence[AxisRef], second: Sequence[AxisRef]) -> bool:
    return is_axis_list_prefix_of(first, second) is PrefixStatus.STRICT_PREFIX


# -- the projection ------------------------------------------------------------------------------

@dataclass(slots=True)
class FactorSharding:
    """How one tensor is sharded along one factor (mutable: propagation expands it)."""

    axes: list[AxisRef] = field(default_factory=list)
    is_closed: bool = False
    is_minor_most: bool = False
    overflow_axes: list[AxisRef] = field(default_factory=list)


class _RemainingAxis:
    """What is left of the dim's current axis while it is handed out (Shardy's AxisRefInfo)."""

    __slots__ = ("size", "split_pre_size")

    def __init__(self, axis: AxisRef, mesh: Mesh):
        self.size = axis.size(mesh)
        self.split_pre_size = axis.pre_size if axis.is_sub_axis else None

    def ref(self, name: str, mesh: Mesh) -> AxisRef:
        if self.split_pre_size is None:
            return AxisRef(name)
        return AxisRef.sub(name, self.split_pre_size, self.size)


def _remaining(axes, index: int, mesh: Mesh) -> _RemainingAxis | None:
    return _RemainingAxis(axes[index], mesh) if index < len(axes) else None


def _add_remaining_axes(out: list[AxisRef], info, axes, index: int, mesh: Mesh) -> None:
    while info is not None:
        add_axis_or_merge(out, info.ref(axes[index].name, mesh), mesh)
        index += 1
        info = _remaining(axes, index, mesh)


@dataclass(slots=True)
class TensorFactorShardings:
    """One tensor's sharding per factor of the rule (only factors its mapping reaches)."""

    factors: dict[int, FactorSharding] = field(default_factory=dict)
    replicated_axes: tuple[AxisRef, ...] = ()
    unreduced_axes: tuple[AxisRef, ...] = ()

    @classmethod
    def build(cls, mapping, sharding: TensorSharding | None, factor_sizes: Sequence[int],
              mesh: Mesh, closed_if_missing: bool = False) -> TensorFactorShardings:
        out = cls()
        factors = out.factors
        if sharding is None:  # every factor open (or closed) and empty
            for factor_indices in mapping:
                last = len(factor_indices) - 1
                for k, factor in enumerate(factor_indices):
                    factors[factor] = FactorSharding([], closed_if_missing, k == last, [])
            return out
        for dim, factor_indices in enumerate(mapping):
            dim_sharding = sharding.dim_shardings[dim]
            axes, dim_closed = dim_sharding.axes, dim_sharding.is_closed
            if not axes:
                last = len(factor_indices) - 1
                for k, factor in enumerate(factor_indices):
                    factors[factor] = FactorSharding([], dim_closed, k == last, [])
                continue
            index = 0
            info = _remaining(axes, index, mesh)
            has_overflow = False
            for k, factor in enumerate(factor_indices):
                fs = out.factors[factor] = FactorSharding(is_minor_most=k == len(factor_indices) - 1)
                if has_overflow:
                    # Later factors of a dim with overflow axes stay empty and closed.
                    fs.is_closed = True
                    break
                fs.is_closed = dim_closed
                remaining_size = factor_sizes[factor]
                if fs.is_minor_most:
                    # The minor-most factor may be sharded unevenly (padding).
                    _add_remaining_axes(fs.axes, info, axes, index, mesh)
                    break
                gcd = 1
                while info is not None and (info.size == 1 or (gcd := math.gcd(remaining_size, info.size)) > 1):
                    name = axes[index].name
                    if info.size > gcd:
                        pre = info.split_pre_size or 1
                        ref = AxisRef.sub(name, pre, gcd)
                        info.split_pre_size = pre * gcd
                        info.size //= gcd
                        remaining_size //= gcd
                    else:
                        ref = info.ref(name, mesh)
                        remaining_size //= info.size
                        index += 1
                        info = _remaining(axes, index, mesh)
                    fs.axes.append(ref)
                if remaining_size > 1 and info is not None:
                    # The factor's remaining size and the axis are coprime: overflow.
                    has_overflow = True
                    _add_remaining_axes(fs.overflow_axes, info, axes, index, mesh)
        out.replicated_axes = sharding.replicated_axes
        out.unreduced_axes = sharding.unreduced_axes
        return out

    def expand(self, factor: int, new_axes: Sequence[AxisRef]) -> bool:
        """Take `new_axes` along `factor` if the current axes are a strict prefix of them."""
        fs = self.factors.get(factor)
        if fs is None or not is_strict_prefix(fs.axes, new_axes):
            return False
        fs.axes = list(new_axes)
        return True

    def update(self, factor: int, new_axes: Sequence[AxisRef], new_overflow: Sequence[AxisRef]) -> bool:
        fs = self.factors.get(factor)
        if fs is None or (fs.axes == list(new_axes) and fs.overflow_axes == list(new_overflow)):
            return False
        fs.axes, fs.overflow_axes = list(new_axes), list(new_overflow)
        return True

    def sharding_size(self, mesh: Mesh) -> int:
        return math.prod(a.size(mesh) for fs in self.factors.values()
                         for a in (*fs.axes, *fs.overflow_axes))

    def to_tensor_sharding(self, mapping, factor_sizes: Sequence[int], mesh_name: str,
                           mesh: Mesh) -> TensorSharding:
        """Project back: each dim is its factors' axes, closed if any factor is."""
        dims = []
        for factor_indices in mapping:
            closed = False
            axes: list[AxisRef] = []
            for k, factor in enumerate(factor_indices):
                fs = self.factors[factor]
                closed |= fs.is_closed
                sharded = 1
                for j, axis in enumerate(fs.axes):
                    sharded *= axis.size(mesh)
                    if j == 0:
                        add_axis_or_merge(axes, axis, mesh)  # merge sub-axes across factors
                    else:
                        axes.append(axis)
                if fs.overflow_axes:
                    for j, axis in enumerate(fs.overflow_axes):
                        if j == 0:
                            add_axis_or_merge(axes, axis, mesh)
                        else:
                            axes.append(axis)
                    break
                if sharded < factor_sizes[factor]:
                    break  # a later factor would need a strided view
            dims.append(DimensionSharding(tuple(axes), closed))
        return TensorSharding(mesh_name, tuple(dims), self.replicated_axes, self.unreduced_axes)


class ShardingProjection:
    """The operands' and results' `TensorFactorShardings` for one op and rule."""

    __slots__ = ("operands", "results")

    def __init__(self, operands: list[TensorFactorShardings], results: list[TensorFactorShardings]):
        self.operands = operands
        self.results = results

    @classmethod
    def build(cls, operand_shardings: Sequence[TensorSharding | None],
              result_shardings: Sequence[TensorSharding | None], rule: OpShardingRule,
              mesh: Mesh, closed_if_missing: bool = False) -> ShardingProjection:
        sizes = rule.factor_sizes

        def side(shardings, mappings):
            if len(shardings) != len(mappings):
                raise ValueError(f"the rule maps {len(mappings)} tensors, the op has {len(shardings)}")
            return [TensorFactorShardings.build(m, s, sizes, mesh, closed_if_missing)
                    for s, m in zip(shardings, mappings)]
        return cls(side(operand_shardings, rule.operand_mappings), side(result_shardings, rule.result_mappings))

    @classmethod
    def from_axes_per_factor(cls, axes_per_factor: Sequence[Sequence[AxisRef]],
                             rule: OpShardingRule) -> ShardingProjection:
        """Every tensor sharded along each factor by the given axes (all closed)."""
        def tensor(mapping):
            out = TensorFactorShardings()
            for factor_indices in mapping:
                for k, factor in enumerate(factor_indices):
                    out.factors[factor] = FactorSharding(list(axes_per_factor[factor]), True,
                                                         k == len(factor_indices) - 1)
            return out
        return cls([tensor(m) for m in rule.operand_mappings], [tensor(m) for m in rule.result_mappings])

    @property
    def tensors(self) -> list[TensorFactorShardings]:
        """Operands, then results."""
        return self.operands + self.results

    def expand(self, factor: int, new_axes: Sequence[AxisRef]) -> tuple[list[bool], list[bool]]:
        return ([t.expand(factor, new_axes) for t in self.operands],
                [t.expand(factor, new_axes) for t in self.results])

    def update(self, factor: int, new_axes, new_overflow) -> tuple[list[bool], list[bool]]:
        return ([t.update(factor, new_axes, new_overflow) for t in self.operands],
                [t.update(factor, new_axes, new_overflow) for t in self.results])

    def greatest_common_prefix_axes(self, num_factors: int) -> list[list[AxisRef]]:
        out: list[list[AxisRef] | None] = [None] * num_factors
        for tensor in self.tensors:
            for factor, fs in tensor.factors.items():
                current = out[factor]
                out[factor] = list(fs.axes) if current is None else greatest_common_prefix(current, fs.axes)
        return [axes or [] for axes in out]

    def __eq__(self, other) -> bool:
        return isinstance(other, ShardingProjection) and (self.operands, self.results) == (other.operands, other.results)

    def __repr__(self) -> str:
        return f"ShardingProjection(operands={self.operands!r}, results={self.results!r})"
