"""`sdy-import-func-calls`: each `func.call` becomes an `sdy.named_computation` of its callee.

Shardy's `import_func_calls.cc`. Calls are visited callees first (`sdy-flatten-call-graph`'s
order). The computation is named after the callee's original name, takes the callee's argument
shardings as in-shardings (fully open where missing; none if no argument is sharded on a
non-maximal mesh) and the call's `sdy.sharding` as out-shardings, and keeps the call's other
attributes (and the func's `execution_thread`). The first call of a func moves the func's body
into the computation (`func.return` becomes `sdy.return`); a later call copies that body and
warns once per process. The funcs whose bodies moved are erased. With
`add-data-flow-edges-on-named-computations` (default), every named computation then gets its
`sdy.data_flow_edge`s, as `sdy-add-data-flow-edges` adds them.
"""

from __future__ import annotations

from sdy_passes.common._value_shardings import (
    NAMED_COMPUTATION, SHARDING, block_arg_edge_owners, func_arg_sharding,
)
from sdy_passes.imports.add_data_flow_edges import add_edges
from sdy_passes.attributes import StringAttr
from sdy_passes.imports.constant_or_scalar_splitter import original_func_name
from sdy_passes.imports.flatten_call_graph import calls_in_post_order, funcs_in_post_order, recursive_call
from sdy_passes.ir import Module, Operation, Region, SymbolTable, erase_ops, replace_ops, symbol_name
from sdy_passes.errors import PassFailedError, emit_warning_once
from sdy_passes.parser import MAX_NESTING
from sdy_passes.pass_manager import Pass
from sdy_passes.imports.propagate_sharding_from_func_to_call import callee, func_shardings

EXECUTION_THREAD = "execution_thread"


class ImportFuncCallsPass(Pass):
    name = "sdy-import-func-calls"
    summary = "Turns func calls into named computations of their callees."
    options = {"add-data-flow-edges-on-named-computations": True}

    def run(self, module: Module) -> None:
        table = module.symbol_table()
        cycle = recursive_call(module, table)
        if cycle is not None:  # (its body would have to hold itself; jaxlib recurses until it crashes)
            call, funcs = cycle
            raise PassFailedError(f"cannot import a recursive call: @{symbol_name(funcs[0])} calls itself "
                                  f"({' -> '.join('@' + symbol_name(f) for f in [*funcs, funcs[0]])})",
                                  call.location)
        deep = _too_deep_call(module, table)
        if deep is not None:  # (the printer, verifier and parser read at most MAX_NESTING levels)
            raise PassFailedError(f"importing this call of @{deep.properties['callee'].root} would nest "
                                  f"regions more than {MAX_NESTING} levels deep", deep.location)
        moved: dict[str, Region] = {}
        for call in calls_in_post_order(module, table):
            _import_call(call, moved, table)
        erase_ops([table.lookup(name) for name in moved])  # the module's op list rebuilt once
        if self.options["add-data-flow-edges-on-named-computations"]:
            placed: dict[Operation, list[Operation]] = {}
            for op in module.walk(post_order=True):
                # (a computation made from a func declaration has no body: the verifier says so)
                if op.name == NAMED_COMPUTATION and op.regions[0].blocks:
                    add_edges(block_arg_edge_owners(op), placed)
                    add_edges(op.results, placed)
            replace_ops(placed)


def _too_deep_call(module: Module, table: SymbolTable) -> Operation | None:
    """The first call (callees first) whose named computation would sit more than MAX_NESTING
    regions deep in the module, counting the callee's own calls as imported; None if none."""
    inner: dict[Operation, int] = {}  # func -> region levels inside its body once imported
    for func in funcs_in_post_order(module, table):
        deepest = 0
        for op in func.walk():
            if op is func or not (op.regions or op.name == "func.call"):
                continue
            level, above = 1, op.parent_op
            while above is not func:
                level, above = level + 1, above.parent_op
            target = table.lookup(op.properties["callee"].root) if op.name == "func.call" else None
            level += inner.get(target, 0)
            if 1 + level > MAX_NESTING and target is not None:  # (deeper IR built in Python: as it was)
                return op
            deepest = max(deepest, level)
        inner[func] = deepest
    return None


def _import_call(call: Operation, moved: dict[str, Region], table: SymbolTable) -> None:
    func = callee(call, table)
    name = call.properties["callee"].root
    properties = {"name": StringAttr(original_func_name(func))}
    in_shardings = func_shardings(func, func_arg_sharding, func.properties["function_type"].type.inputs, table)
    if in_shardings is not None:
        properties["in_shardings"] = in_shardings
    if SHARDING in call.attributes:
        properties["out_shardings"] = call.attributes[SHARDING]
    attributes = {k: v for k, v in call.attributes.items() if k != SHARDING}
    if EXECUTION_THREAD in func.attributes:
        attributes[EXECUTION_THREAD] = func.attributes[EXECUTION_THREAD]
    region = moved.get(name)
    if region is not None:
        emit_warning_once(
            "sdy-import-func-calls: multiple call ops",
            f"function @{name} has multiple call ops, we need to clone the function body for "
            "each call", call.location)
        body = region.clone({}, {})
    else:
        body = _take_body(func.regions[0])
        moved[name] = body
    computation = Operation.create(NAMED_COMPUTATION, call.operands, call.result_types,
                                   properties=properties, attributes=attributes, regions=[body],
                                   location=call.location)
    call.replace_with(computation)
    for old, new in zip(call.results, computation.results):
        old.replace_all_uses_with(new)
    call.erase()


def _take_body(source: Region) -> Region:
    """The func's blocks moved into a new region, each `func.return` now an `sdy.return`."""
    blocks = list(source.blocks)
    source.blocks.clear()
    region = Region()
    for block in blocks:
        block.parent = None
        region.add_block(block)
        ret = block.terminator
        block.append(Operation.create("sdy.return", ret.operands, location=ret.location))
        ret.erase()
    return region
