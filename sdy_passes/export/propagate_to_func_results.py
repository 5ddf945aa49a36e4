"""`sdy-propagate-to-func-results`: each func but the main one takes its results' shardings.

Shardy's `export/propagate_to_func_results.cc`. The main func is the only func if there is one,
else `@main`. Every other func with a body sets result N's `sdy.sharding` to the sharding of
the value its `func.return` returns there, or removes it when that value has none (`res_attrs`
goes when all its entries are then empty, as MLIR drops an all-empty attribute array).
"""

from __future__ import annotations

from sdy_passes.common._value_shardings import SHARDING, get_sharding, remove_func_attr, set_func_attr_sharding
from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass
from sdy_passes.imports.propagate_sharding_from_func_to_call import main_func


class PropagateToFuncResultsPass(Pass):
    name = "sdy-propagate-to-func-results"
    summary = "Copies the shardings of returned values onto the results of every func but main."

    def run(self, module: Module) -> None:
        main = main_func(module)
        for func in module.funcs():
            if func is main or not func.regions[0].blocks:
                continue
            ret = func.regions[0].block.terminator
            if ret is None or ret.name != "func.return":
                continue
            for i, value in enumerate(ret.operands):
                sharding = get_sharding(value)
                if sharding is not None:
                    set_func_attr_sharding(func, "res_attrs", i, len(ret.operands), sharding)
                else:
                    remove_func_attr(func, "res_attrs", i, SHARDING)
