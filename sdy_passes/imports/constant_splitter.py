"""`sdy-constant-splitter`: the pass before it became `sdy-constant-or-scalar-splitter`.

Shardy's `constant_splitter.cc` as of its last version (openxla/shardy `cf15aa28`, 2025-06;
spec/sdy_passes.md §6.3). jaxlib 0.10.2 no longer has it, so it is checked by hand-made cases
only. Per `func.func`:

1. every `stablehlo.constant` becomes `sdy.constant`;
2. in post-order, an op is a constant expression if it is `sdy.constant` or `stablehlo.iota`, or
   a pure `broadcast_in_dim`, `slice` or element-wise op whose operands are all constant
   expressions; any other op (sharding groups aside) gets a fresh copy of each constant
   sub-computation it uses — scalars included, each copy right before its original;
3. every constant expression is then erased (its sharding groups first).

Unlike the newer pass it does not split broadcasts of non-constant scalars, does not treat
reshapes, calls or named computations as constant, and copies rank-0 constants too.
"""

from __future__ import annotations

from sdy_passes.imports.constant_or_scalar_splitter import (
    CONSTANT_SOURCES, SHARDING_GROUP, Splicer, convert_constants, gc_paused, is_pure_elementwise,
    mlir_use_order_users, values_to_copy,
)
from sdy_passes.ir import Module, Operation, OpResult
from sdy_passes.pass_manager import Pass

_SHAPE_OPS = frozenset({"stablehlo.broadcast_in_dim", "stablehlo.slice"})


class ConstantSplitterPass(Pass):
    name = "sdy-constant-splitter"
    summary = "Gives every non-constant use its own copy of constant sub-computations (old rules)."

    def run(self, module: Module) -> None:
        with gc_paused():
            for func in module.funcs():
                _split(func, convert_constants(func))


def _is_constant_expression(op: Operation, constants: dict) -> bool:
    if op.name in CONSTANT_SOURCES:
        return True
    return (op.name in _SHAPE_OPS or is_pure_elementwise(op)) and all(
        isinstance(v, OpResult) and v.owner in constants for v in op.operands)


def _split(func: Operation, converted: set[Operation]) -> None:
    splicer = Splicer()
    constants: dict[Operation, None] = {}
    for op in func.walk(post_order=True):
        if op.name == SHARDING_GROUP:
            continue
        if _is_constant_expression(op, constants):
            constants[op] = None
            continue
        for i, value in enumerate(op.operands):
            if isinstance(value, OpResult) and value.owner in constants:
                mapping: dict = {}
                _copy(value, mapping, splicer, converted)
                op.set_operand(i, mapping[value])
    splicer.flush()
    for op in reversed(constants):
        for user in dict.fromkeys(u.operation for r in op.results for u in r.uses):
            if user.name == SHARDING_GROUP:
                splicer.erase(user)
        splicer.erase(op)
    splicer.flush()


def _copy(result: OpResult, mapping: dict, splicer: Splicer, converted: set[Operation]) -> None:
    """Copies of `result`'s defining ops, operands first (scalars too)."""
    for value in values_to_copy(result, mapping):
        op = value.owner
        splicer.insert_before(op.clone(mapping), op)
        for user in mlir_use_order_users(value, converted):
            if user.name == SHARDING_GROUP:
                splicer.insert_before(user.clone(mapping), op)
