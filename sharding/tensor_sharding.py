"""Tensor shardings: per-dim axes, open/closed dims, priorities, replicated/unreduced axes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator

from .axes import PARSERS, AxisRef, difference, quote, sort_and_merge
from .errors import InvalidShardingError, ShardingError, as_flag, as_int, as_shape, as_tuple, is_one_of, shown
from ._frozen import kept_hash, state_without_hash
from .mesh import Mesh, MeshTable, symbol_name

__all__ = [
    "DimensionSharding", "TensorSharding", "TensorShardingPerValue", "ManualAxes",
    "REDUCTION_OPS", "as_sharding",
]

_MAX_LISTED_RANK = 2**16  # dims built one by one; refused above this before building them
REDUCTION_OPS = ("sum", "max", "min")
"""Reductions of unreduced axes (Shardy `main`; jaxlib 0.10.2 only knows the implicit sum)."""


def _check_items(values: tuple, kind: type, field: str) -> None:
    if not all(type(v) is kind for v in values):
        for v in values:
            if not isinstance(v, kind):
                raise ShardingError(f"expected {kind.__name__} values in {field}, got: {shown(v)}")


def _axes_text(axes: tuple[AxisRef, ...]) -> str:
    return ", ".join(map(str, axes))


@dataclass(frozen=True, slots=True)
class DimensionSharding:
    """How one tensor dim is sharded: `{"x", "y"}`, `{"x", ?}`, `{?}p1`."""

    axes: tuple[AxisRef, ...] = ()
    """Axis refs, major to minor."""
    is_closed: bool = True
    """Closed dims (`{...}`) are fixed; open ones (`{..., ?}`) may be sharded further."""
    priority: int | None = None
    """`pN`: lower is propagated earlier; `None` is the highest priority."""

    def __post_init__(self) -> None:
        if not isinstance(self.axes, tuple):
            object.__setattr__(self, "axes", as_tuple(self.axes, "axes"))
        _check_items(self.axes, AxisRef, "axes")
        if self.priority is not None:
            object.__setattr__(self, "priority", as_int(self.priority, "priority (or None)"))

    @property
    def is_empty(self) -> bool:
        return not self.axes

    def sharded_size(self, mesh: Mesh, sizes: dict[str, int] | None = None) -> int:
        """Number of shards along this dim: the product of its axis ref sizes.

        `sizes` (axis name to size, as `dict(mesh.shape)` would give) saves a mesh lookup per ref."""
        if sizes is None:
            return math.prod(a.size(mesh) for a in self.axes)
        total = 1
        for a in self.axes:
            info = a.sub_axis_info
            if info is None and a.name not in sizes:
                raise ShardingError(f'unknown axis name: "{a.name}"')
            total *= sizes[a.name] if info is None else info.size
        return total

    def __str__(self) -> str:
        body = _axes_text(self.axes)
        if not self.is_closed:
            body = body + ", ?" if self.axes else "?"
        text = "{" + body + "}"
        return text if self.priority is None else f"{text}p{self.priority}"


@dataclass(frozen=True, slots=True)
class TensorSharding:
    """Shardy's `#sdy.sharding<@mesh, [dims...], replicated={...}, unreduced={...}>`."""

    mesh_or_ref: str | Mesh
    """Name of an `sdy.mesh` symbol (without `@`), or an inlined `Mesh`."""
    dim_shardings: tuple[DimensionSharding, ...] = ()
    replicated_axes: tuple[AxisRef, ...] = ()
    """Axes explicitly replicated (sorted in mesh order); they block later propagation."""
    unreduced_axes: tuple[AxisRef, ...] = ()
    """Axes along which the tensor holds partial results (sorted in mesh order)."""
    reduction_op: str = "sum"
    """How unreduced axes reduce: `sum` (all jaxlib 0.10.2 knows), or Shardy `main`'s `max`/`min`."""
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    __hash__ = kept_hash  # (a dict and cache key in every pass)
    __getstate__ = state_without_hash

    def __post_init__(self) -> None:
        if not isinstance(self.mesh_or_ref, (str, Mesh)):
            raise ShardingError(f"expected a mesh name (str) or a Mesh, got: {shown(self.mesh_or_ref)}")
        for name, kind in (("dim_shardings", DimensionSharding), ("replicated_axes", AxisRef),
                            ("unreduced_axes", AxisRef)):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, value := as_tuple(value, name))
            _check_items(value, kind, name)
        if not is_one_of(self.reduction_op, REDUCTION_OPS):
            raise ShardingError(f"reduction_op must be one of {REDUCTION_OPS}, got: {shown(self.reduction_op)}")

    @classmethod
    def parse(cls, text: str) -> TensorSharding:
        """Parses `#sdy.sharding<...>`, `sharding<...>` or a bare `<@m, [...]>` body."""
        return PARSERS["tensor_sharding"](text)

    @classmethod
    def replicated(cls, mesh_or_ref: str | Mesh, rank: int, *, is_closed: bool = True) -> TensorSharding:
        """A fully replicated sharding (`{}` or, open, `{?}` for every dim)."""
        if not isinstance(is_closed, bool):
            raise ShardingError(f"expected a bool is_closed, got: {shown(is_closed)}")
        rank = as_int(rank, "rank", 0, _MAX_LISTED_RANK)
        return cls(mesh_or_ref, (DimensionSharding((), is_closed),) * rank)

    @property
    def rank(self) -> int:
        return len(self.dim_shardings)

    @property
    def mesh_name(self) -> str | None:
        """The referenced mesh symbol, or `None` for an inlined mesh."""
        return self.mesh_or_ref if isinstance(self.mesh_or_ref, str) else None

    @property
    def is_fully_replicated(self) -> bool:
        """No dim is sharded (Shardy's `isFullyReplicated`)."""
        return all(not d.axes for d in self.dim_shardings)

    @property
    def is_fully_closed(self) -> bool:
        return all(d.is_closed for d in self.dim_shardings)

    @property
    def is_fully_open(self) -> bool:
        return all(not d.is_closed for d in self.dim_shardings)

    def axis_refs(self) -> Iterator[AxisRef]:
        """Every axis ref: dims in order, then replicated, then unreduced."""
        for dim in self.dim_shardings:
            yield from dim.axes
        yield from self.replicated_axes
        yield from self.unreduced_axes

    def resolve_mesh(self, mesh: Mesh | MeshTable | str) -> Mesh:
        """The mesh this sharding is bound to: inlined, looked up in a table, or `mesh` itself
        (a `Mesh`, a `MeshTable` or their text)."""
        if isinstance(self.mesh_or_ref, Mesh):
            return self.mesh_or_ref
        mesh = as_mesh(mesh)
        if isinstance(mesh, MeshTable):
            found = mesh.get(self.mesh_or_ref)
            if found is None:
                raise InvalidShardingError(f"unknown mesh: {symbol_name(self.mesh_or_ref)}")
            return found
        if not isinstance(mesh, Mesh):
            raise ShardingError(f"expected a Mesh or a MeshTable for @{self.mesh_or_ref}, got: {type(mesh).__name__}")
        return mesh

    # -- shapes ----------------------------------------------------------------------------

    def num_shards_per_dim(self, mesh: Mesh | MeshTable) -> tuple[int, ...]:
        """How many pieces each dim is cut into."""
        m = self.resolve_mesh(mesh)
        sizes = {a.name: a.size for a in m.axes}
        return tuple(d.sharded_size(m, sizes) for d in self.dim_shardings)

    def local_shape(self, shape: tuple[int, ...], mesh: Mesh | MeshTable) -> tuple[int, ...]:
        """Per-device buffer shape: `ceil(dim / shards)` (uneven dims are padded at the end)."""
        shape = as_shape(shape)
        shards = self.num_shards_per_dim(mesh)
        if len(shape) != len(shards):
            raise InvalidShardingError(f"sharding doesn't match tensor rank: {len(shards)} != {len(shape)}")
        for d, n in enumerate(shards):
            if n < 1:
                raise InvalidShardingError(f"dim {d} is split into {n} shards; verify the sharding first")
        return tuple(-(-d // n) for d, n in zip(shape, shards))

    def replicated_mesh_axes(self, mesh: Mesh | MeshTable, *, explicit: bool | None = None) -> tuple[AxisRef, ...]:
        """Parts of the mesh that shard no dim (and are not unreduced), in mesh order.

        `explicit=True` gives only the `replicated` list, `False` only the implicit rest,
        `None` both. Axes partly used by sub-axes contribute their unused sub-axes.
        """
        m = self.resolve_mesh(mesh)
        explicit = as_flag(explicit, "explicit", allow_none=True)
        if explicit:
            return self.replicated_axes
        used = [a for d in self.dim_shardings for a in d.axes] + list(self.unreduced_axes)
        if explicit is False:
            used += self.replicated_axes
        free = difference([AxisRef(a.name) for a in m.axes], sort_and_merge(used, m), m)
        return sort_and_merge(free, m) if free else ()

    # -- text ------------------------------------------------------------------------------

    def body(self) -> str:
        """The bare form used by pretty sdy ops: `<@m, [{"x"}, {}]>`."""
        if isinstance(self.mesh_or_ref, Mesh):
            mesh = "mesh" + self.mesh_or_ref.body()
        else:
            mesh = symbol_name(self.mesh_or_ref)
        text = f"<{mesh}, [" + ", ".join(map(str, self.dim_shardings)) + "]"
        if self.replicated_axes:
            text += ", replicated={" + _axes_text(self.replicated_axes) + "}"
        if self.unreduced_axes:
            op = "" if self.reduction_op == "sum" else self.reduction_op
            text += f", unreduced={op}{{" + _axes_text(self.unreduced_axes) + "}"
        return text + ">"

    def __str__(self) -> str:
        return "#sdy.sharding" + self.body()

    def __repr__(self) -> str:
        return f"TensorSharding({str(self)!r})"


def as_sharding(value) -> TensorSharding:
    """A `TensorSharding`, or sharding text (`#sdy.sharding<...>` or its `<...>` body) parsed."""
    if isinstance(value, TensorSharding):
        return value
    if isinstance(value, str):
        return TensorSharding.parse(value)
    raise ShardingError(f"expected a TensorSharding or sharding text, got: {type(value).__name__}")


def as_mesh(value) -> Mesh | MeshTable:
    """A `Mesh` or `MeshTable`, or mesh text parsed: a body (`<["x"=2]>`, `#sdy.mesh<...>`,
    `mesh<...>`) or `sdy.mesh @name = <...>` ops."""
    if isinstance(value, (Mesh, MeshTable)):
        return value
    if isinstance(value, str):
        return MeshTable.parse(value) if "sdy.mesh" in value and "@" in value else Mesh.parse(value)
    raise ShardingError(f"expected a Mesh, a MeshTable or mesh text, got: {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class TensorShardingPerValue:
    """One sharding per op result: `#sdy.sharding_per_value<[<@m, [...]>, ...]>`."""

    shardings: tuple[TensorSharding, ...] = ()
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    __hash__ = kept_hash  # (a dict and cache key in every pass)
    __getstate__ = state_without_hash

    def __post_init__(self) -> None:
        if not isinstance(self.shardings, tuple):
            object.__setattr__(self, "shardings", as_tuple(self.shardings, "shardings"))
        _check_items(self.shardings, TensorSharding, "shardings")

    @classmethod
    def parse(cls, text: str) -> TensorShardingPerValue:
        return PARSERS["tensor_sharding_per_value"](text)

    def body(self) -> str:
        """`[<@m, [...]>, ...]`, the form pretty ops print."""
        return "[" + ", ".join(s.body() for s in self.shardings) + "]"

    def __str__(self) -> str:
        return "#sdy.sharding_per_value<" + self.body() + ">"


@dataclass(frozen=True, slots=True)
class ManualAxes:
    """The `manual_axes` of an `sdy.manual_computation`: `{"x", "y"}` (full axes only)."""

    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.names, tuple):
            object.__setattr__(self, "names", as_tuple(self.names, "manual axis names"))
        _check_items(self.names, str, "manual axis names")

    @classmethod
    def parse(cls, text: str) -> ManualAxes:
        return PARSERS["manual_axes"](text)

    def body(self) -> str:
        return "{" + ", ".join(quote(n) for n in self.names) + "}"

    def __str__(self) -> str:
        return "#sdy<manual_axes" + self.body() + ">"
