"""`sdy-remove-size-one-axes`: drops axes of size 1 from every sharding.

Shardy's `remove_size_one_axes.cc`. Only when some `sdy.mesh` has a size-1 axis: in every
sharding (func arguments and results, op shardings, in/out shardings of named and manual
computations, constraints, edges), size-1 axes leave the dims, `replicated` and `unreduced`; a
dim left closed and empty loses its priority. The meshes and `manual_axes` keep them.
"""

from __future__ import annotations

from dataclasses import replace

from sharding import Mesh, TensorSharding

from sdy_passes.common._value_shardings import transform_shardings
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass


class RemoveSizeOneAxesPass(Pass):
    name = "sdy-remove-size-one-axes"
    summary = "Removes axes of size one from all shardings."

    def run(self, module: Module) -> None:
        meshes = {op.properties["sym_name"].value: op.properties["mesh"] for op in module.meshes()}
        if not any(axis.size == 1 for mesh in meshes.values() for axis in mesh.axes):
            return

        def remove(sharding: TensorSharding) -> TensorSharding:
            mesh = sharding.mesh_or_ref
            if not isinstance(mesh, Mesh):
                mesh = meshes.get(mesh)
                if mesh is None:
                    raise PassFailedError(f"unknown mesh: @{sharding.mesh_or_ref}")

            def keep(axes):
                return tuple(a for a in axes if a.size(mesh) != 1)

            dims = tuple(
                replace(d, axes=axes, priority=None if not axes and d.is_closed else d.priority)
                for d in sharding.dim_shardings for axes in [keep(d.axes)])
            new = replace(sharding, dim_shardings=dims, replicated_axes=keep(sharding.replicated_axes),
                          unreduced_axes=keep(sharding.unreduced_axes))
            return sharding if new == sharding else new

        transform_shardings(module, remove)
