"""Verify a module the way MLIR + Shardy do for the ops the import passes meet.

`verify_module(module)` raises `VerificationError(message, location)` for the first problem, with
Shardy's message text and prefix (`'func.func' op arg 0 - unknown axis name: "c"`):

* symbols: unique names (`redefinition of symbol named 'mesh'`), meshes valid (M1-M7);
* every sdy sharding — func argument/result attributes, `sdy.sharding` on any op, the `sharding`
  of constraint/reshard/data-flow-edge ops, the in/out shardings of manual and named
  computations — checked by `sharding.verify` against the module's meshes and the value's type,
  with the axes bound by enclosing manual computations;
* each op's `OpDef` (`sdy_passes.dialects`): operand/result/region counts, parent op,
  non-empty blocks, segment sizes, required attributes, attribute kinds, one-block regions,
  then its `verify` hook (`sdy.data_flow_edge`, `sdy.manual_computation`,
  `sdy.named_computation`, `sdy.propagation_barrier` rules; `func.call` callees exist); its
  regions' terminator once the ops inside are verified; empty blocks.
"""

from __future__ import annotations

import weakref
from operator import attrgetter

from sharding import InvalidMeshError, Mesh, MeshTable
from sharding.verify import verify_mesh

from sdy_passes.dialects import VerifyContext, lookup
from sdy_passes.dialects._base import ATTRIBUTE_KINDS, SEGMENT_SIZES, fail as _fail, has_trait, segment_sizes
from sdy_passes.dialects.sdy import bound_manual_axes, verify_discardable
from sdy_passes.errors import VerificationError, expect
from sdy_passes.ir import Block, Module, Operation, edit_count, symbol_name

__all__ = ["verify_module", "verify_op"]

_CHECKED_ATTRIBUTES = ("sdy.sharding", "sdy.sharding_rule")
"""The sdy attributes whose check reads only the op's own attribute and types, the meshes and
the manual axes around it (`sdy.propagation_edges` also reads other values' shardings)."""

_PASSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""module op -> (`edit_count()`, its meshes, {op: the inputs of its passed own checks}) at the
module's last successful verification: a pipeline verifies after every pass; most passes edit
nothing, and most ops keep their fields (frozen values) from one pass to the next."""


class _Passed:
    """The ops' own checks (`_verify_own`) in one verification: those of the last one
    (`before`) are skipped for ops whose inputs are the same, and those passed now are collected
    (`now`)."""

    __slots__ = ("before", "now", "axes", "isolated")

    def __init__(self, before: dict, isolated: bool = False):
        self.before = before
        self.now: dict[Operation, tuple] = {}
        self.axes: dict[Block, tuple[str, ...]] = {}
        self.isolated = isolated
        """Whether the dominance walk found every `IsolatedFromAbove` op's inside isolated (then
        `_verify_isolated` has nothing to report)."""

    def key(self, op: Operation) -> tuple | None:
        """Everything `_verify_own` reads of `op` (and around it), or None if it reads more.
        Compared with `==`: attribute and type values are frozen, mostly the same objects."""
        attrs = op.attributes
        block = op.parent
        axes = None
        if attrs:
            for name in attrs:
                if name.startswith("sdy.") and name not in _CHECKED_ATTRIBUTES:
                    return None
            if "sdy.sharding" in attrs:
                axes = self.axes.get(block)
                if axes is None:
                    parent = block.parent_op if block is not None else None
                    axes = self.axes[block] = bound_manual_axes(parent, include_self=True) if parent else ()
        regions = [(len(r.blocks), bool(r.blocks and r.blocks[0].ops)) for r in op.regions] if op.regions else None
        region = block.parent if block is not None else None
        return (op.name, regions, tuple(map(_TYPE, op.results)), tuple(map(_TYPE, op._operands)),
                tuple(op.properties.items()), attrs.get("sdy.sharding"), attrs.get("sdy.sharding_rule"), axes,
                region.parent if region is not None else None)


_TYPE = attrgetter("type")


def verify_module(module: Module) -> None:
    """Raise `VerificationError` for the problem MLIR's verifier reports (see `_verify_tree`)."""
    expect(module, (Module,), "a Module", "verify_module")
    last = _PASSED.get(module.op)
    edits = edit_count()
    if last is not None and last[0] == edits:
        return  # no IR edited since it passed
    symbols: dict[str, Operation] = {}
    meshes = _mesh_table(module, symbols)
    ctx = VerifyContext(module, meshes, symbols)
    dominance, isolated = _dominance(module)
    passed = _Passed(last[2] if last is not None and last[1] == meshes else {}, isolated)
    error = _verify_tree(module.op, ctx, passed) or dominance
    if error is not None:
        raise error
    _PASSED[module.op] = (edits, meshes, passed.now)


def _is_isolated(op: Operation) -> bool:
    opdef = lookup(op.name)
    return bool(op.regions) and opdef is not None and "IsolatedFromAbove" in opdef.traits


def _verify_tree(root: Operation, ctx: VerifyContext, passed: _Passed) -> VerificationError | None:
    """MLIR's `OperationVerifier` on `root`, in the order jaxlib 0.10.2 reports (found by
    probing it): `root`, then block by block the ops not behind an `IsolatedFromAbove` op, each
    block's ops in order before the blocks nested in them, which come last op first, an op's
    region traits once the blocks nested in it are done, stopping at the first failure; then
    every isolated op inside, in text order, verified the same way, the last failure being the
    one reported; then `root`'s region traits and own isolation. Iterative but for one
    level of recursion per isolated nesting level."""
    try:
        verify_op(root, ctx, passed)
        blocks = [b for region in root.regions for b in region.blocks]
        while blocks:
            item = blocks.pop()
            if isinstance(item, Operation):  # all blocks nested in it are done
                _verify_regions(item)
                continue
            if not item.ops and lookup(item.parent_op.name) and not has_trait(item.parent_op, "NoTerminator"):
                raise VerificationError("empty block: expect at least a terminator", item.parent_op.location)
            for op in item.ops:
                if not op.regions:
                    verify_op(op, ctx, passed)
                elif not _is_isolated(op):
                    verify_op(op, ctx, passed)
                    blocks.append(op)
                    blocks.extend(b for region in op.regions for b in region.blocks)
        failed = None
        for op in _isolated_inside(root):
            failed = _verify_tree(op, ctx, passed) or failed
        if failed is not None:
            return failed
        _verify_regions(root)
        if root.parent is not None and not passed.isolated:
            _verify_isolated(root)
    except VerificationError as e:
        return e
    return None


def _verify_regions(op: Operation) -> None:
    """The region traits MLIR checks once the ops inside are verified (`verifyRegionInvariants`):
    `SingleBlockImplicitTerminator`'s terminator."""
    opdef = lookup(op.name)
    terminator = opdef.terminator if opdef is not None else None
    if terminator is None:
        return
    for region in op.regions:
        if region.blocks and region.blocks[-1].ops and region.blocks[-1].ops[-1].name != terminator:
            _fail(op, f"expects regions to end with '{terminator}', found '{region.blocks[-1].ops[-1].name}'")


def _isolated_inside(root: Operation) -> list[Operation]:
    """The `IsolatedFromAbove` ops inside `root` not inside another one, in text order."""
    found, stack = [], [root]
    while stack:
        op = stack.pop()
        if not op.regions:
            continue
        if op is not root and _is_isolated(op):
            found.append(op)
            continue
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                stack.extend(reversed(block.ops))
    return found


def _dominance(module: Module) -> tuple[VerificationError | None, bool]:
    """The first operand not defined before its use (earlier in the same block or in an
    enclosing one; regions of several blocks are only checked for values of enclosing regions),
    and whether every operand was defined inside the nearest `IsolatedFromAbove` op around its
    use (as `_verify_isolated` checks; False whenever this walk cannot tell: after a dominance
    error, or with an unregistered op's regions, which it does not enter)."""
    available: dict = {}  # value -> the nearest isolated op around its definition
    isolated = True
    # (block, next op index, values added by this block, nearest isolated op), depth first; a
    # block is left for its op's regions and resumed after them
    stack = [(module.body, 0, [], module.op)]
    while stack:
        block, i, added, scope = stack.pop()
        if i == 0:
            multi = block.parent is not None and len(block.parent.blocks) > 1
            local = [v for b in block.parent.blocks for v in b.arguments] if multi else list(block.arguments)
            if multi:
                local += [r for b in block.parent.blocks for o in b.ops for r in o.results]
            for v in local:
                if v not in available:
                    available[v] = scope
                    added.append(v)
        else:  # resumed: the previous op's results are defined once its regions are done
            for r in block.ops[i - 1].results:
                if r not in available:
                    available[r] = scope
                    added.append(r)
        ops = block.ops
        while i < len(ops):
            op = ops[i]
            i += 1
            for n, value in enumerate(op._operands):
                defined = available.get(value)
                if defined is None:
                    return VerificationError(f"operand #{n} does not dominate this use", op.location), False
                if defined is not scope:
                    isolated = False
            if op.regions:
                opdef = lookup(op.name)
                if opdef is None:  # MLIR takes an unregistered op's regions for graph regions: no order
                    isolated = False
                else:
                    stack.append((block, i, added, scope))
                    inner = op if "IsolatedFromAbove" in opdef.traits else scope
                    for region in reversed(op.regions):
                        for b in reversed(region.blocks):
                            stack.append((b, 0, [], inner))
                    break
            for r in op.results:
                if r not in available:
                    available[r] = scope
                    added.append(r)
        else:
            for v in added:
                del available[v]
    return None, isolated


def _verify_isolated(isolated: Operation) -> None:
    """MLIR's `IsolatedFromAbove`: no op inside uses a value defined outside (in a block that
    is not inside), the first such op in text order reported."""
    blocks, ops = set(), []
    stack = [op for region in reversed(isolated.regions) for block in reversed(region.blocks)
             for op in reversed(block.ops)]
    blocks.update(block for region in isolated.regions for block in region.blocks)
    while stack:
        op = stack.pop()
        ops.append(op)
        for region in reversed(op.regions):
            blocks.update(region.blocks)
            for block in reversed(region.blocks):
                stack.extend(reversed(block.ops))
    for op in ops:
        for value in op._operands:
            if value.parent_block not in blocks:
                raise VerificationError(f"'{op.name}' op using value defined outside "
                                        "the region", op.location)


def verify_op(op: Operation, ctx: VerifyContext, passed: _Passed | None = None) -> None:
    """MLIR's order: the op's own checks (`_verify_own`), then its definition's verifier. With
    `passed`, the own checks are skipped if they passed on the same inputs in the module's last
    verification. The region traits (`_verify_regions`) wait for the ops inside."""
    key = passed.key(op) if passed is not None else None
    if key is None or passed.before.get(op) != key:
        _verify_own(op, ctx)
    if key is not None:
        passed.now[op] = key
    opdef = lookup(op.name)
    if opdef is not None and opdef.verify is not None:
        opdef.verify(op, ctx)


def _verify_own(op: Operation, ctx: VerifyContext) -> None:
    """The sdy attributes on the op, then its definition's traits (region, result and operand
    counts, parent, non-empty blocks, segment sizes), then its ODS invariants (required
    attributes, then attribute constraints, each in name order as MLIR's properties struct holds
    them, then one-block regions)."""
    if op.attributes:
        verify_discardable(op, ctx)
    opdef = lookup(op.name)
    if opdef is None:
        return
    n_operands = len(op._operands)
    for kind, expected, found in (("region", opdef.num_regions, len(op.regions)),
                                  ("result", opdef.num_results, len(op.results)),
                                  ("operand", opdef.num_operands, n_operands)):
        if expected is not None and expected != found:
            _fail(op, _count_message(kind, expected, found))
    if n_operands < opdef.min_operands:
        _fail(op, f"expected {opdef.min_operands} or more operands, but found {n_operands}")
    if opdef.parent is not None:
        parent = op.parent_op
        if parent is None or parent.name != opdef.parent:
            _fail(op, f"expects parent op '{opdef.parent}'")
    if opdef.terminator is not None and any(r.blocks and not r.blocks[0].ops for r in op.regions):
        _fail(op, "expects a non-empty block")
    if opdef.segments != (0, 0):
        _verify_segments(op, opdef.segments)
    for name in opdef.required:
        if name not in op.properties:
            _fail(op, f"requires attribute '{name}'")
    for name, kind in opdef.attribute_kinds:
        value = op.properties.get(name)
        if value is not None and not ATTRIBUTE_KINDS[kind].satisfies(value):
            _fail(op, f"attribute '{name}' failed to satisfy constraint: {ATTRIBUTE_KINDS[kind].description}")
    names = opdef.single_block_regions
    for i, region in enumerate(op.regions if names else ()):
        if len(region.blocks) != 1:
            _fail(op, f"region #{i} ('{names[min(i, len(names) - 1)]}') failed to verify constraint: region with 1 "
                      "blocks")
    if len(op.results) < opdef.min_results:  # (after the attributes, as jaxlib reports it)
        _fail(op, f"expected {opdef.min_results} or more results")
    variadic = n_operands - opdef.min_operands
    if opdef.operand_groups > 1 and (variadic == 0 or variadic % opdef.operand_groups):
        _fail(op, f"expected {opdef.operand_groups} equally sized, non-empty variadic operand groups, but "
                  f"found {variadic} variadic operands")


def _verify_segments(op: Operation, segments: tuple[int, int]) -> None:
    """ODS `AttrSizedOperandSegments` / `AttrSizedResultSegments`."""
    for name, n, kind, found in zip(SEGMENT_SIZES, segments, ("operand", "result"),
                                    (len(op._operands), len(op.results))):
        if n:
            sizes = segment_sizes(op.properties.get(name), n)
            if any(size < 0 for size in sizes):
                _fail(op, f"'{name}' attribute cannot have negative elements")
            if sum(sizes) != found:
                _fail(op, f"{kind} count ({found}) does not match with the total size ({sum(sizes)}) specified in "
                          f"attribute '{name}'")


def _count_message(kind: str, expected: int, found: int) -> str:
    """MLIR's trait messages (`ZeroRegions`, `OneResult`, `NOperands<2>`, `NRegions<2>`, ...)."""
    if expected == 0:
        return f"requires zero {kind}s"
    if expected == 1:
        return "requires a single operand" if kind == "operand" else f"requires one {kind}"
    if kind == "operand":
        return f"expected {expected} operands, but found {found}"
    return f"expected {expected} {kind}s"


def _mesh_table(module: Module, seen: dict[str, Operation]) -> MeshTable:
    """The meshes; fills `seen` with every top-level symbol (a name twice is an error)."""
    entries = []
    for op in module.ops:
        name = symbol_name(op)
        if name is None:
            continue
        if name in seen:
            raise VerificationError(f"redefinition of symbol named '{name}'", op.location)
        seen[name] = op
        if op.name == "sdy.mesh":
            mesh = op.properties.get("mesh")
            if mesh is None:
                _fail(op, "requires attribute 'mesh'")
            if not isinstance(mesh, Mesh):
                _fail(op, "attribute 'mesh' failed to satisfy constraint: Mesh of axes and a list of devices")
            try:
                verify_mesh(mesh)
            except InvalidMeshError as e:
                _fail(op, str(e))
            entries.append((name, mesh))
    return MeshTable(tuple(entries))
