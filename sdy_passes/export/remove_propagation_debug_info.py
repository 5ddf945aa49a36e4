"""`sdy-remove-propagation-debug-info`: the debug attributes propagation's `debug-*` options
leave go, from ops and from func argument and result attributes (Shardy's
`export/remove_propagation_debug_info.cc`)."""

from __future__ import annotations

from sdy_passes.attributes import ArrayAttr, DictionaryAttr
from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass

__all__ = ["RemovePropagationDebugInfoPass"]

DEBUG_ATTRS = ("sdy.propagation_edges", "sdy.block_arg_propagation_edges",
               "sdy.result_propagation_edges", "sdy.sharding_origins",
               "sdy.block_arg_sharding_origins", "sdy.result_sharding_origins")


class RemovePropagationDebugInfoPass(Pass):
    name = "sdy-remove-propagation-debug-info"
    summary = "Removes propagation's sharding-origin and propagation-edge attributes."

    def run(self, module: Module) -> None:
        for op in module.walk():
            if op.name != "func.func":
                for name in DEBUG_ATTRS:
                    op.attributes.pop(name, None)
                continue
            for key in ("arg_attrs", "res_attrs"):
                attrs = op.properties.get(key)
                if not isinstance(attrs, ArrayAttr):
                    continue
                entries = [DictionaryAttr.from_dict({k: v for k, v in e.as_dict().items()
                                                     if k not in DEBUG_ATTRS})
                           if any(n in e.as_dict() for n in DEBUG_ATTRS) else e
                           for e in attrs.elements]
                if entries == list(attrs.elements):
                    continue
                # MLIR drops the array once every entry is empty
                if all(len(e) == 0 for e in entries):
                    del op.properties[key]
                else:
                    op.properties[key] = ArrayAttr(tuple(entries))
