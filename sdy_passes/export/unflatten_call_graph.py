"""`sdy-unflatten-call-graph`: calls of clones of one func share one func again.

Shardy's `export/unflatten_call_graph.cc`, the inverse of `sdy-flatten-call-graph`. A func's
key is its origin (`sdy.original_func_name`, else its name), its `sdy.func_manual_axes` and its
argument and result shardings (Shardy's `getFuncArgShardings` / `getFuncResultShardings`).
Every call then calls the first func (in call order) with its callee's key. With
`dedup-functions-fully`, shardings are left out of the key: every call of one origin calls one
func, whatever its shardings, and `sdy-insert-func-call-reshards` reconciles the results. That
func starts as the first call's callee; walking the calls, a call whose callee's full key now
has more calls than the chosen func's makes its callee the choice (Shardy's `populateFuncCache`). Funcs lose both attributes; funcs
nobody calls any more are left for `symbol-dce`.
"""

from __future__ import annotations

from collections import Counter

from sdy_passes.common._value_shardings import func_arg_sharding
from sdy_passes.attributes import SymbolRefAttr
from sdy_passes.imports.constant_or_scalar_splitter import ORIGINAL_FUNC_NAME, original_func_name
from sdy_passes.ir import Module, Operation, SymbolTable, symbol_name
from sdy_passes.pass_manager import Pass
from sdy_passes.imports.propagate_sharding_from_func_to_call import (
    callee, func_result_shardings, func_shardings,
)

FUNC_MANUAL_AXES = "sdy.func_manual_axes"


class UnflattenCallGraphPass(Pass):
    name = "sdy-unflatten-call-graph"
    summary = "Makes calls of clones with the same origin and shardings call one func."
    options = {"dedup-functions-fully": False}

    def run(self, module: Module) -> None:
        table = module.symbol_table()
        fully = self.options["dedup-functions-fully"]
        calls = [op for op in module.walk() if op.name == "func.call"]
        funcs = [callee(call, table) for call in calls]
        keys = {id(f): _key(f, table) for f in set(funcs)}

        def cache_key(func: Operation):
            key = keys[id(func)]
            return key[:2] if fully else key

        chosen: dict = {}
        for func in funcs:
            chosen.setdefault(cache_key(func), func)
        if fully:
            counts: Counter = Counter()
            for func in funcs:
                counts[keys[id(func)]] += 1
                cached = chosen[cache_key(func)]
                if counts[keys[id(func)]] > counts[keys[id(cached)]]:
                    chosen[cache_key(func)] = func
        for call, func in zip(calls, funcs):
            call.properties["callee"] = SymbolRefAttr(symbol_name(chosen[cache_key(func)]))
        for func in module.funcs():
            func.attributes.pop(ORIGINAL_FUNC_NAME, None)
            func.attributes.pop(FUNC_MANUAL_AXES, None)


def _key(func: Operation, table: SymbolTable) -> tuple:
    """Shardy's `ComputationKey`: origin, manual axes, then argument and result shardings."""
    inputs = func.properties["function_type"].type.inputs
    return (original_func_name(func), func.attributes.get(FUNC_MANUAL_AXES),
            func_shardings(func, func_arg_sharding, inputs, table),
            func_result_shardings(func, table))
