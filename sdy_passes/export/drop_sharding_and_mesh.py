"""`sdy-drop-sharding-and-mesh`: every `sdy.sharding` attribute (on ops, function arguments and
results) and every `sdy.mesh` go (Shardy's `export/drop_sharding_and_mesh.cc`): what
`sdy-convert-global-to-local` leaves becomes a plain StableHLO program that any interpreter runs."""

from __future__ import annotations

from sdy_passes.common._value_shardings import SHARDING, remove_func_attr
from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass

__all__ = ["DropShardingAndMeshPass"]


class DropShardingAndMeshPass(Pass):
    name = "sdy-drop-sharding-and-mesh"
    summary = "Drops every sdy.sharding attribute and every sdy.mesh."

    def run(self, module: Module) -> None:
        meshes = []
        for op in module.walk():
            op.attributes.pop(SHARDING, None)
            if op.name == "func.func":
                for key, count in (("arg_attrs", "inputs"), ("res_attrs", "results")):
                    for i in range(len(getattr(op.properties["function_type"].type, count))):
                        remove_func_attr(op, key, i, SHARDING)
            elif op.name == "sdy.mesh":
                meshes.append(op)
        for op in meshes:
            op.erase()
