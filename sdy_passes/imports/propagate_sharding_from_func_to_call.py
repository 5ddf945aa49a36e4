"""`sdy-propagate-sharding-from-func-to-call`: calls take their callee's result shardings.

Shardy's `propagate_sharding_from_func_to_call.cc`: a `func.call` without `sdy.sharding` gets
the callee's result shardings when some result has one on a non-maximal mesh (the others
become fully open on that mesh). A call that has `sdy.sharding`, even empty, keeps it.
"""

from __future__ import annotations

from sharding import Mesh, TensorShardingPerValue

from sdy_passes.common._value_shardings import SHARDING, func_result_sharding, open_sharding
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Module, Operation, SymbolTable, symbol_name
from sdy_passes.pass_manager import Pass


class PropagateShardingFromFuncToCallPass(Pass):
    name = "sdy-propagate-sharding-from-func-to-call"
    summary = "Copies func result shardings onto calls without shardings."

    def run(self, module: Module) -> None:
        table = module.symbol_table()
        for call in module.walk(post_order=True):
            if call.name == "func.call" and SHARDING not in call.attributes:
                shardings = func_result_shardings(callee(call, table), table)
                if shardings is not None:
                    call.attributes[SHARDING] = shardings


def callee(call: Operation, table: SymbolTable) -> Operation:
    """The func a `func.call` calls (Shardy's `getFuncOpOrDie`, an error here)."""
    name = call.properties["callee"].root
    func = table.lookup(name)
    if func is None or func.name != "func.func":
        raise PassFailedError(f"Failed to lookup function: {name}", call.location)
    return func


def main_func(module) -> Operation:
    """Shardy's `getMainFuncOrDie(useSingleFunc=true)`: the only func, else `@main` (where
    Shardy aborts, an error at the first func)."""
    funcs = module.funcs()
    if len(funcs) == 1:
        return funcs[0]
    main = module.lookup_symbol("main")
    if main is None or main.name != "func.func":
        found = ", ".join("@" + symbol_name(f) for f in funcs) or "none"
        raise PassFailedError(f"Failed to lookup function: main (expected a single func or a func "
                              f"@main; found funcs: {found})",
                              funcs[0].location if funcs else
                              module.ops[0].location if module.ops else module.op.location)
    return main


def mesh_or_ref_of(shardings, table: SymbolTable):
    """Shardy's `getMeshOrRef`: the mesh of the first sharding whose mesh is not maximal."""
    for sharding in shardings:
        if sharding is None:
            continue
        mesh = sharding.mesh_or_ref
        if not isinstance(mesh, Mesh):
            mesh_op = table.lookup(mesh)
            mesh = None if mesh_op is None else mesh_op.properties.get("mesh")
        if mesh is not None and not mesh.is_maximal:
            return sharding.mesh_or_ref
    return None


def func_shardings(func: Operation, get, types, table: SymbolTable):
    """Shardy's `getFuncArgShardings` / `getFuncResultShardings` (`get` reads one)."""
    shardings = [get(func, i) for i in range(len(types))]
    mesh_or_ref = mesh_or_ref_of(shardings, table)
    if mesh_or_ref is None:
        return None
    return TensorShardingPerValue(tuple(
        s if s is not None else open_sharding(mesh_or_ref, t) for s, t in zip(shardings, types)))


def func_result_shardings(func: Operation, table: SymbolTable) -> TensorShardingPerValue | None:
    """Shardy's `getFuncResultShardings` (None when no result has a non-maximal sharding)."""
    return func_shardings(func, func_result_sharding, func.properties["function_type"].type.results, table)
