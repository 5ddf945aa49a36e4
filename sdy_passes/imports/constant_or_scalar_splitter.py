"""`sdy-constant-or-scalar-splitter`: each non-constant use gets its own constant sub-computation.

Shardy's `constant_or_scalar_splitter.cc` as bundled in jaxlib 0.10.2 (spec/sdy_passes.md §6):

* Phase A: every `stablehlo.constant` becomes `sdy.constant` (same type and attributes).
* Phase B: funcs in call-graph post-order (callees first); in each, the bodies of named
  computations (innermost first), then the func body. A region pass walks in pre-order (not
  into nested named computation bodies), collecting constant expressions (constants, iotas and
  constant-preserving ops on constant operands: broadcast, reshape, slice, element-wise ops,
  calls and named computations whose body is constant) and broadcasts of scalars. Every other op
  gets a fresh copy of each such sub-computation it uses (rank-0 values are shared); copying a
  call copies its callee (recursively) under a new name, with `sdy.original_func_name`. Each
  pass then erases the originals left without users (sharding groups aside).

Copies are placed right before their originals, as in Shardy; they are collected during a
region pass and spliced in once per block, so a constant with N users costs O(N), not O(N^2).
"""

from __future__ import annotations

import contextlib
import gc
import itertools

from sdy_passes.common._value_shardings import NAMED_COMPUTATION, is_scalar, shape_of
from sdy_passes.attributes import StringAttr, SymbolRefAttr
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Block, Module, Operation, OpResult, Region, SymbolTable, symbol_name
from sdy_passes.pass_manager import Pass

SHARDING_GROUP = "sdy.sharding_group"
ORIGINAL_FUNC_NAME = "sdy.original_func_name"

# Pure ops with MLIR's `Elementwise` or `BroadcastingElementwise` trait (probed against jaxlib,
# spec/sdy_passes.md §6.2), plus the sdy ops Shardy treats as element-wise and that are pure.
ELEMENTWISE = frozenset({
    *("stablehlo." + n for n in (
        "abs", "add", "and", "atan2", "cbrt", "ceil", "clamp", "compare", "complex", "convert",
        "cosine", "count_leading_zeros", "divide", "exponential", "exponential_minus_one", "floor",
        "imag", "is_finite", "log", "log_plus_one", "logistic", "maximum", "minimum", "multiply",
        "negate", "not", "or", "popcnt", "power", "real", "reduce_precision", "remainder",
        "round_nearest_afz", "round_nearest_even", "rsqrt", "select", "shift_left",
        "shift_right_arithmetic", "shift_right_logical", "sign", "sine", "sqrt", "subtract",
        "tan", "tanh", "xor")),
    *("chlo." + n for n in (
        "acos", "acosh", "asin", "asinh", "atan", "atanh", "bessel_i1e", "conj", "cosh", "digamma",
        "erf", "erf_inv", "erfc", "lgamma", "sinh", "square", "tan", "is_inf", "broadcast_compare",
        "broadcast_add", "broadcast_and", "broadcast_atan2", "broadcast_divide", "broadcast_maximum",
        "broadcast_minimum", "broadcast_multiply", "broadcast_next_after", "broadcast_or",
        "broadcast_polygamma", "broadcast_power", "broadcast_remainder", "broadcast_select",
        "broadcast_shift_left", "broadcast_shift_right_arithmetic", "broadcast_shift_right_logical",
        "broadcast_subtract", "broadcast_xor", "broadcast_zeta")),
    "sdy.reshard", "sdy.propagation_barrier",
})
SHAPE_OPS = frozenset({"stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.slice"})
CONSTANT_SOURCES = frozenset({"sdy.constant", "stablehlo.iota"})
TERMINATORS = frozenset({"func.return", "sdy.return", "stablehlo.return"})


def is_pure_elementwise(op: Operation) -> bool:
    """Shardy's `isPure(op) && isElementwise(op)` for the ops this library knows."""
    if op.name in ELEMENTWISE:
        return True
    if op.name == "stablehlo.bitcast_convert":  # element-wise when the shape is kept
        return shape_of(op.operands[0].type) == shape_of(op.results[0].type)
    return False


def is_terminator(op: Operation) -> bool:
    return op.name in TERMINATORS or op.name.startswith("cf.")


def mlir_use_order_users(value, converted) -> list[Operation]:
    """The users of `value` in MLIR's use-list order, so sharding-group copies come out in the
    order Shardy makes them.

    MLIR prepends each new use, so a parsed value lists its users newest first; but a converted
    constant's uses were moved over by replace-all-uses-with, which leaves them oldest first.
    `converted` is the set of ops `convert_constants` renamed.
    """
    uses = value.uses if value.owner in converted else reversed(value.uses)
    return [use.operation for use in uses]


def convert_constants(root: Operation) -> set[Operation]:
    """Phase A: `stablehlo.constant` → `sdy.constant`, in place (same results and attributes).

    Returns the converted ops (Shardy replaces them, which reorders their use lists)."""
    converted = set()
    for op in root.walk():
        if op.name == "stablehlo.constant":
            op.name = "sdy.constant"
            converted.add(op)
    return converted


@contextlib.contextmanager
def gc_paused():
    """Pause Python's cyclic GC while a pass makes many IR objects.

    Each copy allocates a handful of tracked objects; on a 100k-op module the full collections
    they trigger scan the whole IR again and again (measured: 39 vs 12 us per op for this pass).
    Nothing is leaked: collection resumes, as it was, when the pass ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- batched IR edits ----------------------------------------------------------------------------

class Splicer:
    """Ops to insert right before given anchors, and ops to remove, applied once per block.

    Copies are recorded detached (their use lists are live, their place is not) and spliced in
    creation order before their anchor by `flush()`, which also drops the removed ops.
    """

    def __init__(self):
        self.before: dict[Operation, list[Operation]] = {}
        self.removed: set[Operation] = set()
        self.blocks: dict[Block, None] = {}

    def insert_before(self, op: Operation, anchor: Operation) -> None:
        self.before.setdefault(anchor, []).append(op)
        self.blocks[anchor.parent] = None

    def erase(self, op: Operation) -> None:
        """Drop `op`'s operand uses (and those of its nested ops) now; detach it at `flush()`."""
        for nested in op.walk(post_order=True):
            nested.drop_operand_uses()
        self.removed.add(op)
        self.blocks[op.parent] = None

    def flush(self) -> None:
        for block in self.blocks:
            ops: list[Operation] = []
            for op in block.ops:
                ops.extend(self.before.get(op, ()))
                if op not in self.removed:
                    ops.append(op)
            block.set_ops(ops)
        self.before.clear()
        self.removed.clear()
        self.blocks.clear()


def values_to_copy(result: OpResult, mapping: dict, shared=lambda value: False):
    """The values of `result`'s sub-computation in the order to copy them, operands first (depth
    first, iterative: a chain of constant ops may be as long as the module). Values already in
    `mapping` or `shared` are skipped: the caller clones each value's op into `mapping` before
    asking for the next."""
    stack = [(result, False)]
    while stack:
        value, operands_done = stack.pop()
        if value in mapping or shared(value):
            continue
        if operands_done:
            yield value
            continue
        stack.append((value, True))
        stack.extend((v, False) for v in reversed(value.owner.operands) if isinstance(v, OpResult))


# -- the call graph ------------------------------------------------------------------------------

def funcs_in_post_order(module: Module, table: SymbolTable) -> list[Operation]:
    """Funcs with a body, callees before callers: MLIR's call graph in post-order (a DFS from a
    root linked to every func in module order, following calls in op order)."""
    callees: dict[Operation, list[Operation]] = {}
    for func in module.funcs():
        if not func.regions or func.regions[0].is_empty:
            continue
        out: dict[Operation, None] = {}
        for op in func.walk():
            if op.name == "func.call":
                callee = table.lookup(op.properties["callee"].root)
                if callee is not None and callee.regions and not callee.regions[0].is_empty:
                    out[callee] = None
        callees[func] = list(out)
    order: list[Operation] = []
    seen: set[Operation] = set()
    for root in callees:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(callees[root]))]
        while stack:
            node, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(callees[child])))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def original_func_name(func: Operation) -> str:
    attr = func.attributes.get(ORIGINAL_FUNC_NAME)
    return attr.value if isinstance(attr, StringAttr) else symbol_name(func)


# -- the pass ------------------------------------------------------------------------------------

class ConstantOrScalarSplitterPass(Pass):
    name = "sdy-constant-or-scalar-splitter"
    summary = "Gives every non-constant use its own copy of constant and scalar-broadcast sub-computations."

    def run(self, module: Module) -> None:
        with gc_paused():
            _Splitter(module, convert_constants(module.op)).run()


class _Splitter:
    def __init__(self, module: Module, converted: set[Operation]):
        self.module = module
        self.converted = converted
        self.table = module.symbol_table()
        self.counter = itertools.count()
        self.non_constant_ncs: set[str] = set()
        self.non_constant_funcs: set[str] = set()
        self.splicer = Splicer()

    def run(self) -> None:
        for func in funcs_in_post_order(self.module, self.table):
            ncs = [op for op in func.walk(post_order=True) if op.name == NAMED_COMPUTATION]
            for nc in ncs:
                self.region_pass(nc.regions[0], func)
            self.region_pass(func.regions[0], func)

    # -- classification -------------------------------------------------------------------------
    def callee(self, call: Operation) -> Operation:
        name = call.properties["callee"].root
        func = self.table.lookup(name)
        if func is None or func.name != "func.func":
            raise PassFailedError(f"Failed to lookup function: {name}", call.location)
        return func

    def is_constant_preserving(self, op: Operation) -> bool:
        if op.name == "func.call":
            return original_func_name(self.callee(op)) not in self.non_constant_funcs
        if op.name == NAMED_COMPUTATION:
            return op.properties["name"].value not in self.non_constant_ncs
        return op.name in SHAPE_OPS or is_pure_elementwise(op)

    def is_constant_expression(self, op: Operation, constants: dict) -> bool:
        if op.name in CONSTANT_SOURCES:
            return True
        return self.is_constant_preserving(op) and all(
            isinstance(v, OpResult) and v.owner in constants for v in op.operands)

    # -- one region -----------------------------------------------------------------------------
    def region_pass(self, region: Region, func: Operation) -> None:
        constants: dict[Operation, None] = {}  # ordered sets
        expansions: dict[Operation, None] = {}
        self.groups_of: dict[OpResult, list[Operation]] = {}
        self.walk(region, func, constants, expansions)
        self.splicer.flush()
        for op in [*expansions, *reversed(constants)]:
            users = [u.operation for r in op.results for u in r.uses]
            if all(u.name == SHARDING_GROUP for u in users):
                for user in dict.fromkeys(users):
                    self.splicer.erase(user)
                self.splicer.erase(op)
        self.splicer.flush()

    def walk(self, region: Region, func: Operation, constants: dict, expansions: dict) -> None:
        # Pre-order; the body of a named computation is not entered (it had its own pass).
        for block in region.blocks:
            for op in list(block.ops):
                self.process(op, func, constants, expansions)
                if op.name != NAMED_COMPUTATION:
                    for nested in op.regions:
                        self.walk(nested, func, constants, expansions)

    def process(self, op: Operation, func: Operation, constants: dict, expansions: dict) -> None:
        if op.name in ("func.func", SHARDING_GROUP):
            return
        if self.is_constant_expression(op, constants):
            constants[op] = None
            return
        if not self.is_constant_preserving(op) and not is_terminator(op):
            nc = op.parent_of_type(NAMED_COMPUTATION)
            if nc is not None:
                self.non_constant_ncs.add(nc.properties["name"].value)
            self.non_constant_funcs.add(original_func_name(func))
        if op.name == "stablehlo.broadcast_in_dim" and is_scalar(op.operands[0]):
            expansions[op] = None
            return
        for i, value in enumerate(op.operands):
            if isinstance(value, OpResult) and (value.owner in constants or value.owner in expansions):
                op.set_operand(i, self.copy_sub_computation(value))

    # -- copies ---------------------------------------------------------------------------------
    def copy_sub_computation(self, result: OpResult):
        if is_scalar(result):
            return result  # scalars are not sharded: they stay shared
        mapping: dict = {}
        self._copy(result, mapping)
        return mapping[result]

    def _copy(self, result: OpResult, mapping: dict) -> None:
        """Copies of `result`'s defining ops, operands first; scalars stay shared."""
        for value in values_to_copy(result, mapping, is_scalar):
            op = value.owner
            copy = op.clone(mapping)
            self.splicer.insert_before(copy, op)
            if copy.name == "func.call":
                new_callee = self.clone_func(self.callee(copy))
                copy.properties["callee"] = SymbolRefAttr(new_callee)
            for user in self.group_users(value):
                self.splicer.insert_before(user.clone(mapping), op)

    def group_users(self, result: OpResult) -> list[Operation]:
        """`result`'s sharding-group users in MLIR use order. They do not change during a region
        pass (only copies are added, using copies), so one scan per value keeps a constant with N
        users linear (Shardy scans all users for every copy: quadratic)."""
        found = self.groups_of.get(result)
        if found is None:
            found = self.groups_of[result] = [
                u for u in mlir_use_order_users(result, self.converted) if u.name == SHARDING_GROUP]
        return found

    def clone_func(self, func: Operation) -> str:
        """Shardy's `cloneFuncRecursively`: a copy of `func` (and of every func it calls,
        inserted first) appended to the module under a uniqued name; iterative, as chains of
        calls may be deeper than Python's stack. A recursive call graph would be copied forever
        (Shardy overflows its stack): that is an error here."""
        frames = [self._copy_frame(func)]  # [func, its copy, its calls left, the call awaiting its callee]
        on_path, copied = {func}, None
        while True:
            frame = frames[-1]
            if copied is not None:
                frame[3].properties["callee"] = SymbolRefAttr(copied)
                copied = None
            frame[3] = next(frame[2], None)
            if frame[3] is None:
                frames.pop()
                on_path.discard(frame[0])
                copied = self.table.insert(frame[1], symbol_name(frame[0]), self.counter)
                if not frames:
                    return copied
                continue
            callee = self.callee(frame[3])
            if callee in on_path:
                raise PassFailedError(
                    f"cannot copy the constant sub-computation: '@{symbol_name(callee)}' calls itself "
                    "recursively", callee.location)
            on_path.add(callee)
            frames.append(self._copy_frame(callee))

    def _copy_frame(self, func: Operation) -> list:
        copy = func.clone()
        copy.attributes[ORIGINAL_FUNC_NAME] = StringAttr(original_func_name(func))
        return [func, copy, iter([op for op in copy.walk(post_order=True) if op.name == "func.call"]), None]
