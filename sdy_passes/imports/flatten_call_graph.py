"""`sdy-flatten-call-graph`: every func is called from at most one call site.

Shardy's `flatten_call_graph.cc`. Calls are visited callees first (MLIR's call graph in
post-order, each func's calls in post-order); the first call of a func keeps it, every later
call gets its own copy, made recursively (the funcs it calls are copied too). Copies are
appended to the module, named `foo_N` (one counter per run, spec/sdy_passes.md §3) and carry
`sdy.original_func_name`.
"""

from __future__ import annotations

import itertools
from typing import Iterator

from sdy_passes.attributes import StringAttr, SymbolRefAttr
from sdy_passes.imports.constant_or_scalar_splitter import (
    ORIGINAL_FUNC_NAME, funcs_in_post_order, original_func_name,
)
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Module, Operation, SymbolTable, symbol_name
from sdy_passes.pass_manager import Pass
from sdy_passes.imports.propagate_sharding_from_func_to_call import callee


class FlattenCallGraphPass(Pass):
    name = "sdy-flatten-call-graph"
    summary = "Clones funcs so that each has at most one call site."

    def run(self, module: Module) -> None:
        table = module.symbol_table()
        counter = itertools.count()
        called: set[str] = set()
        for call in calls_in_post_order(module, table):
            func = callee(call, table)
            name = symbol_name(func)
            if name in called:
                call.properties["callee"] = SymbolRefAttr(clone_func_recursively(func, table, counter))
            else:
                called.add(name)


def calls_in_post_order(module: Module, table: SymbolTable) -> list[Operation]:
    """Shardy's `walkCalls` (post-order): funcs callees first, each func's calls in post-order.
    A func whose body moved away while walking has no calls left."""
    return [op for func in funcs_in_post_order(module, table)
            for op in func.walk(post_order=True) if op.name == "func.call"]


def recursive_call(module: Module, table: SymbolTable) -> tuple[Operation, list[Operation]] | None:
    """A `func.call` that closes a cycle of the call graph, with the funcs of the cycle (first
    found by an iterative DFS in module order), or None when the graph has no cycle."""
    calls: dict[Operation, list[tuple[Operation, Operation]]] = {}
    for func in module.funcs():
        calls[func] = [(op, target) for op in func.walk() if op.name == "func.call"
                       for target in [table.lookup(op.properties["callee"].root)] if target is not None]
    state: dict[Operation, int] = {}  # 1: on the DFS path, 2: done
    for root in calls:
        if root in state:
            continue
        path, stack = [root], [iter(calls[root])]
        state[root] = 1
        while stack:
            for call, target in stack[-1]:
                if state.get(target) == 1:
                    return call, path[path.index(target):]
                if target not in state and target in calls:
                    state[target] = 1
                    path.append(target)
                    stack.append(iter(calls[target]))
                    break
            else:
                state[path.pop()] = 2
                stack.pop()
    return None


def clone_func_recursively(func: Operation, table: SymbolTable, counter: Iterator[int],
                           cloning: tuple[Operation, ...] = ()) -> str:
    """Shardy's `cloneFuncRecursively` + `SymbolTable::insert`: a copy of `func`, and of every
    func it calls (inserted first), appended to the module under a uniqued name. A recursive
    call graph has no finite copy (Shardy recurses until it crashes): an error here."""
    if func in cloning:
        raise PassFailedError(f"cannot clone @{symbol_name(func)}: it calls itself (recursion "
                              f"through {' -> '.join('@' + symbol_name(f) for f in cloning)})",
                              func.location)
    copy = func.clone()
    copy.attributes[ORIGINAL_FUNC_NAME] = StringAttr(original_func_name(func))
    for call in copy.walk(post_order=True):
        if call.name == "func.call":
            call.properties["callee"] = SymbolRefAttr(clone_func_recursively(
                callee(call, table), table, counter, (*cloning, func)))
    return table.insert(copy, symbol_name(func), counter)
