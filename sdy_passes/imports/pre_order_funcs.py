"""`sdy-pre-order-funcs`: funcs reordered in call-graph pre-order (callers before callees).

Shardy's `pre_order_funcs.cc`: the reverse post-order of MLIR's call graph (a DFS from a root
linked to every func in module order); each func is moved to the end of the module in that
order, so other top-level ops (meshes, declarations) come first.
"""

from __future__ import annotations

from sdy_passes.imports.constant_or_scalar_splitter import funcs_in_post_order
from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass


class PreOrderFuncsPass(Pass):
    name = "sdy-pre-order-funcs"
    summary = "Sorts funcs in call-graph pre-order."

    def run(self, module: Module) -> None:
        order = funcs_in_post_order(module, module.symbol_table())[::-1]
        moved = {id(func) for func in order}
        # one list: a module already in order is not edited (and not verified again)
        module.body.set_ops([op for op in module.body.ops if id(op) not in moved] + order)
