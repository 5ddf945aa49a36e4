"""Arguments of the plan and the simulation, checked and bound without numpy (the planner,
which `sdy_passes` imports, stays light)."""

from __future__ import annotations

from .errors import ShardingError, as_shape, is_one_of, shown
from .mesh import Mesh, MeshTable
from .tensor_sharding import TensorSharding

__all__ = ["check_shape", "parse_mesh", "resolve", "check_uneven", "check_full_axes", "UNEVEN"]

UNEVEN = ("padded", "ragged")
"""How a dim that does not divide evenly is cut: XLA's padding, or DTensor's ragged shards (`_ragged`)."""


def check_shape(shape) -> tuple[int, ...]:
    """A global shape as a tuple of non-negative int64 dims (numpy integers too), or a clear error."""
    return as_shape(shape)


def parse_mesh(text: str) -> Mesh | MeshTable:
    """Mesh text as the command line takes it: a mesh body (`<[...]>`, `#sdy.mesh<...>`,
    `mesh<...>`), or `sdy.mesh @name = <...>` ops (a `MeshTable`)."""
    if "sdy.mesh" in text and "@" in text:
        return MeshTable.parse(text)
    return Mesh.parse(text)


def resolve(sharding: TensorSharding, mesh) -> Mesh:
    """The `Mesh` a sharding is bound to; a single `Mesh` binds whatever name it uses."""
    if not isinstance(sharding, TensorSharding):
        raise ShardingError(f"expected a TensorSharding, got: {type(sharding).__name__}")
    if isinstance(mesh, str):
        mesh = parse_mesh(mesh)
    if isinstance(sharding.mesh_or_ref, Mesh):
        if isinstance(mesh, Mesh) and mesh != sharding.mesh_or_ref:
            raise ShardingError(f"the sharding's inlined mesh {sharding.mesh_or_ref.body()} differs from the "
                                f"given mesh {mesh.body()}")
        return sharding.mesh_or_ref
    if mesh is None:
        raise ShardingError(f"the sharding names mesh @{sharding.mesh_or_ref}: pass its Mesh or a MeshTable")
    if not isinstance(mesh, (Mesh, MeshTable)):
        raise ShardingError(f"expected a Mesh or a MeshTable, got: {type(mesh).__name__}")
    return sharding.resolve_mesh(mesh)


def check_uneven(value) -> str:
    if not is_one_of(value, UNEVEN):
        raise ShardingError(f"unknown uneven={shown(value)}: expected one of {', '.join(map(repr, UNEVEN))}")
    return value


def check_full_axes(sharding: TensorSharding) -> None:
    """Sub-axes have no DTensor meaning: refuse them under `ragged`."""
    for ref in [r for d in sharding.dim_shardings for r in d.axes] + list(sharding.unreduced_axes):
        if ref.sub_axis_info is not None:
            raise ShardingError(f"sub-axis {ref} in {sharding} has no DTensor meaning: uneven='ragged' shards by "
                                "full mesh axes only (use uneven='padded')")
