"""`sdy-sharding-group-import`: validate sharding groups, merge overlapping ones, renumber.

Shardy's `sharding_group_import.cc` (spec/sdy_passes.md §8):

1. Walking the `sdy.sharding_group` ops in order, keyed by their original `group_id`: all ops of
   a group have the same enclosing `sdy.manual_computation` (or none), and the same input shape;
   the first op breaking either rule fails the pass with Shardy's message.
2. Groups sharing a value are merged (union-find; a merged class keeps the leader of the class of
   the value's first group id).
3. Class leaders are renumbered 0, 1, ... in the order their ids were first inserted (not by
   minimum id), and each value keeps only its first sharding_group op.
"""

from __future__ import annotations

from sdy_passes.common._value_shardings import MANUAL_COMPUTATION, shape_of
from sdy_passes.attributes import IntegerAttr, I64
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Module, Operation, Value
from sdy_passes.pass_manager import Pass

SHARDING_GROUP = "sdy.sharding_group"


class ShardingGroupImportPass(Pass):
    name = "sdy-sharding-group-import"
    summary = "Validates, merges and renumbers sharding groups."

    def run(self, module: Module) -> None:
        groups_of_value = _validate(module)
        if not groups_of_value:
            return
        _renumber(groups_of_value)
        _erase_duplicates(groups_of_value)


def _group_id(op: Operation) -> int:
    return op.properties["group_id"].value


def _validate(module: Module) -> dict[Value, list[Operation]]:
    """Sharding-group ops per input value (in order), after checking Shardy's two rules."""
    groups_of_value: dict[Value, list[Operation]] = {}
    manual_of_group: dict[int, Operation | None] = {}
    shape_of_group: dict[int, tuple] = {}
    for op in module.walk(post_order=True):
        if op.name != SHARDING_GROUP:
            continue
        value = op.operands[0]
        groups_of_value.setdefault(value, []).append(op)
        group = _group_id(op)
        manual = op.parent_of_type(MANUAL_COMPUTATION)
        if manual_of_group.setdefault(group, manual) is not manual:
            raise PassFailedError(
                f"ShardingGroupOps values cannot cross ManualComputationOp boundaries for groupId: {group}",
                op.location)
        shape = shape_of(value.type)
        if shape_of_group.setdefault(group, shape) != shape:
            raise PassFailedError(f"ShardingGroupOps values must have the same shape for groupId: {group}",
                                  op.location)
    return groups_of_value


class _EquivalenceClasses:
    """LLVM's `EquivalenceClasses<int64_t>`: members in insertion order, `union` keeps the
    first argument's leader."""

    def __init__(self):
        self.parent: dict[int, int] = {}  # insertion-ordered

    def leader(self, x: int) -> int:
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: int, b: int) -> None:
        self.parent.setdefault(a, a)
        self.parent.setdefault(b, b)
        la, lb = self.leader(a), self.leader(b)
        if la != lb:
            self.parent[lb] = la


def _renumber(groups_of_value: dict[Value, list[Operation]]) -> None:
    classes = _EquivalenceClasses()
    for ops in groups_of_value.values():
        canonical = _group_id(ops[0])
        for op in ops:
            classes.union(canonical, _group_id(op))
    new_id: dict[int, int] = {}
    for member in classes.parent:
        if classes.leader(member) == member:
            new_id[member] = len(new_id)
    for ops in groups_of_value.values():
        for op in ops:
            op.properties["group_id"] = IntegerAttr(new_id[classes.leader(_group_id(op))], I64)


def _erase_duplicates(groups_of_value: dict[Value, list[Operation]]) -> None:
    # Every op on one value now has the same id: keep the first, erase the others, all of a
    # block's at once (erasing one at a time shifts the block's op list n times: quadratic).
    doomed = {op for ops in groups_of_value.values() for op in ops[1:]}
    blocks = {op.parent: None for op in doomed if op.parent is not None}
    for block in blocks:
        block.set_ops([op for op in block.ops if op not in doomed])
    for op in doomed:
        op.erase()
