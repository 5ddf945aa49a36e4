"""Shardy's `OpShardingRuleBuilder` (`op_sharding_rule_builder.cc`): factors added one by one.

Each tensor (operands, then results) gets one list of factor indices per dim. A factor is added
with its size, kind and the dim it maps to in each tensor (`NULL` = none). When the rule is
built, every dim still without a factor gets a new size-1 factor (operands first).
"""

from __future__ import annotations

from sdy_passes.attributes import OpShardingRule, RankedTensorType

NULL = -1
"""`kNullDim`: the factor does not map to a dim of this tensor."""
PASS_THROUGH, REDUCTION, NEED_REPLICATION, PERMUTATION = range(4)


DYNAMIC = -(2 ** 63)
"""`ShapedType::kDynamic`, the size MLIR gives a dynamic dim."""


def shape_of(type_) -> tuple[int, ...]:
    """Shardy's `getTensorShape`: a ranked tensor's shape, `()` for other types."""
    if not isinstance(type_, RankedTensorType):
        return ()
    shape = type_.shape
    return shape if None not in shape else tuple(DYNAMIC if d is None else d for d in shape)


class Builder:
    __slots__ = ("operands", "results", "sizes", "kinds", "blocked")

    def __init__(self, operand_types, result_types):
        self.operands = [[[] for _ in shape_of(t)] for t in operand_types]
        self.results = [[[] for _ in shape_of(t)] for t in result_types]
        self.sizes: list[int] = []
        self.kinds: tuple[list[int], ...] = ([], [], [], [])  # indexed by kind; [0] unused
        self.blocked: list[int] = []

    @classmethod
    def of(cls, op) -> Builder:
        return cls([v.type for v in op.operands], [r.type for r in op.results])

    def _reserve(self, size: int, kind: int, blocked: bool) -> int:
        index = len(self.sizes)
        self.sizes.append(size)
        if blocked:
            self.blocked.append(index)
        if kind != PASS_THROUGH:
            self.kinds[kind].append(index)
        return index

    def add_factor(self, operand_dims, result_dims, size: int, kind: int = PASS_THROUGH,
                   blocked: bool = False) -> Builder:
        """A factor mapped to `operand_dims[i]` of operand i and `result_dims[j]` of result j; a
        size-1 factor is left out of dims that already have a factor."""
        index = self._reserve(size, kind, blocked)
        for mappings, dims in ((self.operands, operand_dims), (self.results, result_dims)):
            for mapping, dim in zip(mappings, dims, strict=True):
                if dim != NULL and (size != 1 or not mapping[dim]):
                    mapping[dim].append(index)
        return self

    def add_factor_all(self, dim: int, size: int, kind: int = PASS_THROUGH,
                       blocked: bool = False) -> Builder:
        """A factor mapped to `dim` of every tensor of non-zero rank."""
        index = self._reserve(size, kind, blocked)
        for mapping in (*self.operands, *self.results):
            if mapping:
                mapping[dim].append(index)
        return self

    def add_factor_operands(self, dim: int, size: int, kind: int = PASS_THROUGH) -> Builder:
        """`addFactorSameForAllOperands`."""
        index = self._reserve(size, kind, False)
        for mapping in self.operands:
            if mapping:
                mapping[dim].append(index)
        return self

    def add_factor_results(self, dim: int, size: int, kind: int = PASS_THROUGH) -> Builder:
        """`addFactorSameForAllResults`."""
        index = self._reserve(size, kind, False)
        for mapping in self.results:
            if mapping:
                mapping[dim].append(index)
        return self

    def add_pointwise(self, shape, kind_of=lambda dim: PASS_THROUGH, blocked_if=lambda kind: False) -> Builder:
        for dim, size in enumerate(shape):
            kind = kind_of(dim)
            self.add_factor_all(dim, size, kind, blocked_if(kind))
        return self

    def add_pointwise_if(self, shape, pred, kind_of=lambda dim: PASS_THROUGH) -> Builder:
        for dim, size in enumerate(shape):
            if pred(dim):
                self.add_factor_all(dim, size, kind_of(dim))
        return self

    def add_pointwise_with_diff_type_for_mismatch(self, in_shape, out_shape, mismatch_kind: int,
                                                  mismatch_blocked: bool) -> Builder:
        for dim, (in_size, out_size) in enumerate(zip(in_shape, out_shape, strict=True)):
            if in_size == out_size:
                self.add_factor_all(dim, in_size)
            else:
                self.add_factor_all(dim, in_size, mismatch_kind, mismatch_blocked)
        return self

    def build(self) -> OpShardingRule:
        sizes = list(self.sizes)

        def freeze(mappings):
            out = []
            for mapping in mappings:
                dims = []
                for factors in mapping:
                    if factors:
                        dims.append(tuple(factors))
                    else:
                        dims.append((len(sizes),))
                        sizes.append(1)
                out.append(tuple(dims))
            return tuple(out)

        operands = freeze(self.operands)
        results = freeze(self.results)
        kinds = self.kinds
        return OpShardingRule(operands, results, tuple(sizes), tuple(kinds[REDUCTION]),
                              tuple(kinds[NEED_REPLICATION]), tuple(kinds[PERMUTATION]),
                              tuple(self.blocked))


def pointwise_rule(op) -> OpShardingRule | None:
    """`buildPointwise`: factor i for dim i of every tensor, sized by the first result's shape
    (no rule when the first result is not a tensor)."""
    if not op.results or not isinstance(op.results[0].type, RankedTensorType):
        return None
    shape = op.results[0].type.shape
    builder = Builder.of(op)
    builder.sizes = list(shape)
    for mapping in (*builder.operands, *builder.results):
        for i, factors in enumerate(mapping):
            factors.append(i)
    return builder.build()
