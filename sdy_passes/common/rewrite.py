"""MLIR's greedy pattern rewrite driver (`GreedyPatternRewriteDriver`), as the canonicalizer
runs it on a module; `canonicalize` and any later pattern pass use it.

A `Pattern` matches ops of one name (`root`) and rewrites them through the `Rewriter`, which
tells the driver what changed. Each iteration:

1. walks the module (post-order, or pre-order reversed when `top_down`) to fill the worklist;
   on the way every `ConstantLike` op is uniqued per (dialect, value, type) in the nearest
   isolated-from-above region and the first of each is moved to the front of that region's
   entry block (MLIR's `OperationFolder`), the others replaced by it;
2. pops ops from the back of the worklist: an unused op without memory effects is erased,
   else the op's patterns are tried, highest benefit first, until one applies;
3. with region simplification, erases every op no live op uses (MLIR's region DCE).

It stops when an iteration changes nothing or after `max_iterations` (jaxlib's canonicalizer
in the export pipeline: 10). As MLIR does, the rewriter queues an op it creates or modifies
(and the ops enclosing it), and the definitions of an erased op's operands that are left with
at most one other user. No op folds here: no op of the table has a folder that jaxlib runs on
these modules (spec/export.md §2.9).
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

from sdy_passes.attributes import UnknownLoc
from sdy_passes.common.op_properties import is_trivially_dead, would_be_trivially_dead
from sdy_passes.dialects._base import has_trait
from sdy_passes.ir import Block, Operation, OpResult, Region, Value

__all__ = ["Pattern", "Rewriter", "apply_patterns_greedily"]

_ERASED_LOCATION = UnknownLoc()


class Pattern:
    """A rewrite of ops named `root`: `rewrite(op, rewriter)` returns True if it changed the IR
    (through `rewriter` only). `benefit` orders a root's patterns (MLIR's DRR patterns count
    their matched ops); `labels` are the debug labels `enable-patterns` selects."""

    def __init__(self, root: str, rewrite: Callable[[Operation, "Rewriter"], bool], *,
                 benefit: int = 1, labels: tuple[str, ...] = ()):
        self.root, self.rewrite, self.benefit, self.labels = root, rewrite, benefit, labels
        self.name = rewrite.__name__


class _Worklist:
    """MLIR's `Worklist`: push ignores an op already queued, pop takes the newest."""

    def __init__(self):
        self.ops: list[Operation | None] = []
        self.where: dict[Operation, int] = {}

    def push(self, op: Operation) -> None:
        if op not in self.where:
            self.where[op] = len(self.ops)
            self.ops.append(op)

    def pop(self) -> Operation | None:
        while self.ops:
            op = self.ops.pop()
            if op is not None:
                del self.where[op]
                return op
        return None

    def remove(self, op: Operation) -> None:
        i = self.where.pop(op, None)
        if i is not None:
            self.ops[i] = None

    def reverse(self) -> None:
        self.ops.reverse()
        self.where = {op: i for i, op in enumerate(self.ops) if op is not None}


class Rewriter:
    """The edits a pattern may make; each one queues what MLIR's driver would queue."""

    def __init__(self, scope: Region):
        self.scope = scope
        self.worklist = _Worklist()
        self.insertion_point: Operation | None = None

    # -- notifications --------------------------------------------------------------------
    def add_to_worklist(self, op: Operation) -> None:
        """The op and its ancestors inside the scope, innermost first."""
        chain = []
        while op is not None:
            chain.append(op)
            region = op.parent_region
            if region is self.scope:
                for o in chain:
                    self.worklist.push(o)
                return
            if region is None:
                return
            op = region.parent

    def _add_operands_to_worklist(self, op: Operation) -> None:
        for value in op.operands:
            if not isinstance(value, OpResult):
                continue
            others = {id(u) for u in value.users if u is not op}
            if len(others) <= 1:
                self.add_to_worklist(value.owner)

    # -- edits ----------------------------------------------------------------------------
    def create(self, name: str, operands: Sequence[Value], result_types, properties=None,
               attributes=None, location=None) -> Operation:
        """A new op inserted before the insertion point (the op being rewritten)."""
        op = Operation.create(name, operands, result_types, properties, attributes,
                              location=location)
        op.insert_before(self.insertion_point)
        self.add_to_worklist(op)
        return op

    def replace_all_uses_with(self, old: Value, new: Value) -> None:
        # MLIR walks a use list newest first and queues each user it modifies
        for use in reversed(old.uses):
            use.operation.set_operand(use.index, new)
            self.add_to_worklist(use.operation)

    def replace_op(self, op: Operation, values: Sequence[Value]) -> None:
        for old, new in zip(op.results, values):
            self.replace_all_uses_with(old, new)
        self.erase_op(op)

    def erase_op(self, op: Operation) -> None:
        for inner in _reverse_post_order(op):
            self._add_operands_to_worklist(inner)
            self.worklist.remove(inner)
        op.erase(drop_uses=True)


def _reverse_post_order(op: Operation) -> Iterable[Operation]:
    """The order MLIR erases a tree in: nested ops last to first, then the op."""
    for region in reversed(op.regions):
        for block in reversed(region.blocks):
            for inner in reversed(block.ops):
                yield from _reverse_post_order(inner)
    yield op


# -- constants (MLIR's OperationFolder) -----------------------------------------------------------

class _ConstantUniquer:
    def __init__(self, rewriter: Rewriter):
        self.rewriter = rewriter
        self.scopes: dict[int, dict] = {}
        self.owned: set[int] = set()

    def insert(self, op: Operation) -> bool:
        """Unique a `ConstantLike` op: True if it is kept (maybe moved), False if replaced."""
        block = op.parent
        region = _insertion_region(block)
        key = (op.name.partition(".")[0], op.properties.get("value"), op.results[0].type)
        table = self.scopes.setdefault(id(region), {})
        existing = table.get(key)
        if existing is not None:
            self.rewriter.replace_op(op, existing.results)
            existing.location = _ERASED_LOCATION
            return False
        entry = region.blocks[0]
        if block is not entry or (entry.ops[0] is not op and id(op.prev_op) not in self.owned):
            op.detach()
            entry.prepend(op)
            op.location = _ERASED_LOCATION
        table[key] = op
        self.owned.add(id(op))
        return True


def _insertion_region(block: Block) -> Region:
    region = block.parent
    while not has_trait(region.parent, "IsolatedFromAbove") and region.parent.parent is not None:
        region = region.parent.parent_region
    return region


# -- region DCE -----------------------------------------------------------------------------------

def _region_dce(root: Operation, rewriter: Rewriter) -> bool:
    """Erase ops whose results no live op uses and that have no memory effects (last to
    first, so chains go in one sweep), until none is left."""
    changed = False
    while True:
        erased = False
        for region in root.regions:
            erased |= _dce_region(region, rewriter)
        if not erased:
            return changed
        changed = True


def _dce_region(region: Region, rewriter: Rewriter) -> bool:
    erased = False
    for block in reversed(region.blocks):
        for op in reversed(list(block.ops)):
            if not op.has_uses() and would_be_trivially_dead(op):
                rewriter.erase_op(op)
                erased = True
                continue
            for inner in op.regions:
                erased |= _dce_region(inner, rewriter)
    return erased


# -- the driver -----------------------------------------------------------------------------------

def apply_patterns_greedily(root: Operation, patterns: Iterable[Pattern], *, top_down: bool = False,
                            max_iterations: int = 10, max_num_rewrites: int = -1,
                            region_simplify: bool = True) -> bool:
    """Rewrite the ops inside `root` (a module op, one region) to a fixed point; True if it
    converged within `max_iterations` (-1: no limit)."""
    by_root: dict[str, list[Pattern]] = {}
    for p in patterns:
        by_root.setdefault(p.root, []).append(p)
    for group in by_root.values():
        group.sort(key=lambda p: -p.benefit)  # stable: registration order within a benefit
    region = root.regions[0]
    iteration = 0
    while True:
        iteration += 1
        if max_iterations != -1 and iteration > max_iterations:
            return False
        rewriter = Rewriter(region)
        uniquer = _ConstantUniquer(rewriter)
        for op in _walk(region, top_down):
            # a constant equal to one seen before is replaced by it and not queued
            if not has_trait(op, "ConstantLike") or uniquer.insert(op):
                rewriter.add_to_worklist(op)
        if top_down:
            rewriter.worklist.reverse()
        changed = _process(rewriter, by_root, max_num_rewrites)
        if region_simplify:
            changed |= _region_dce(root, rewriter)
        if not changed:
            return True


def _walk(region: Region, top_down: bool) -> Iterable[Operation]:
    for block in list(region.blocks):
        for op in list(block.ops):
            yield from op.walk(post_order=not top_down)


def _process(rewriter: Rewriter, by_root: dict[str, list[Pattern]], max_num_rewrites: int) -> bool:
    changed, rewrites = False, 0
    worklist = rewriter.worklist
    while max_num_rewrites == -1 or rewrites < max_num_rewrites:
        op = worklist.pop()
        if op is None:
            return changed
        if is_trivially_dead(op):
            rewriter.erase_op(op)
            changed = True
            continue
        for pattern in by_root.get(op.name, ()):
            rewriter.insertion_point = op
            if pattern.rewrite(op, rewriter):
                changed = True
                rewrites += 1
                break
    return changed
