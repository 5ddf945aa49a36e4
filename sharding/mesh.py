"""Meshes: named axes over a list of devices (`<["x"=2, "y"=4], device_ids=[...]>`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator

from .axes import PARSERS, quote
from .errors import INT64_MAX, INT64_MIN, ShardingError, as_int, as_tuple, shown
from ._frozen import kept_hash, state_without_hash

__all__ = ["MeshAxis", "Mesh", "MeshTable", "symbol_name", "mesh_verifier_error", "MAX_DEVICES", "check_devices"]

MAX_DEVICES = 2**20
"""The most devices whose per-device data (device lists, simulated shards, pictures) is built.
Symbolic functions (`verify`, `local_shape`, `to_hlo_sharding`) take meshes of any size."""
_MAX_NDIM = 64  # numpy's limit on array dims


def check_devices(count: int, ndim: int = 0) -> None:
    """Refuses, before allocating, per-device data for more than `MAX_DEVICES` devices or an
    array of more dims than numpy allows."""
    if count > MAX_DEVICES:
        raise ShardingError(f"{count} devices are too many to list or simulate (at most {MAX_DEVICES}); "
                            "verify, local_shape and to_hlo_sharding work on any mesh")
    if ndim > _MAX_NDIM:
        raise ShardingError(f"{ndim} mesh axes or pieces are too many to simulate (numpy arrays have at most "
                            f"{_MAX_NDIM} dims); verify, local_shape and to_hlo_sharding work on any mesh")


def symbol_name(name: str) -> str:
    """`@name` as MLIR prints a symbol reference: bare when it is an identifier, else quoted."""
    if name and (name[0].isascii() and (name[0].isalpha() or name[0] == "_")) and all(
        c.isascii() and (c.isalnum() or c in "_$.") for c in name
    ):
        return "@" + name
    return "@" + quote(name)


@dataclass(frozen=True, slots=True)
class MeshAxis:
    """One named mesh axis, e.g. `"x"=4`."""

    name: str
    size: int
    """Number of devices along the axis; 1 is allowed (and can shard a dim)."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ShardingError(f"expected a str mesh axis name, got: {shown(self.name)}")
        object.__setattr__(self, "size", as_int(self.size, f"size of mesh axis {quote(self.name)}"))

    def __str__(self) -> str:
        return f"{quote(self.name)}={self.size}"


@dataclass(frozen=True, slots=True)
class Mesh:
    """A Shardy mesh: axes (major to minor) and an optional device order.

    `device_ids` empty means iota. Like Shardy's attribute builder, an iota `device_ids` given
    for a mesh with axes is dropped, so `Mesh(axes, (0, 1, 2, 3))` equals `Mesh(axes)`.
    `<[]>` is the *empty* mesh; `<[], device_ids=[3]>` a *maximal* mesh (one device).
    """

    axes: tuple[MeshAxis, ...] = ()
    device_ids: tuple[int, ...] = ()
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    __hash__ = kept_hash  # (a dict and cache key in every pass)
    __getstate__ = state_without_hash

    def __post_init__(self) -> None:
        for name in ("axes", "device_ids"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, as_tuple(value, name))
        for axis in self.axes:
            if not isinstance(axis, MeshAxis):
                raise ShardingError(f"expected MeshAxis values in a Mesh's axes, got: {shown(axis)}")
        ids = self.device_ids
        if not all(type(i) is int for i in ids) or (ids and not INT64_MIN <= min(ids) <= max(ids) <= INT64_MAX):
            object.__setattr__(self, "device_ids", tuple(as_int(i, "device id") for i in ids))
        ids = self.device_ids
        if self.axes and ids and ids[0] == 0 and ids == tuple(range(len(ids))) and len(ids) == self.total_size:
            object.__setattr__(self, "device_ids", ())

    @classmethod
    def of(cls, device_ids: tuple[int, ...] = (), **sizes: int) -> Mesh:
        """`Mesh.of(x=2, y=4)`: a mesh from keyword sizes (major to minor)."""
        return cls(tuple(MeshAxis(n, s) for n, s in sizes.items()), device_ids)

    @classmethod
    def parse(cls, text: str) -> Mesh:
        """Parses `#sdy.mesh<...>`, `mesh<...>` or a bare `<...>` body; verifies it like Shardy."""
        return PARSERS["mesh"](text)

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.axes)

    @property
    def total_size(self) -> int:
        """Number of devices: the product of the axis sizes (1 for the empty/maximal mesh)."""
        return math.prod(a.size for a in self.axes)

    @property
    def is_empty(self) -> bool:
        """No axes and no device ids: `<[]>`, a placeholder."""
        return not self.axes and not self.device_ids

    @property
    def is_maximal(self) -> bool:
        """No axes and exactly one device id: `<[], device_ids=[3]>`."""
        return not self.axes and len(self.device_ids) == 1

    @property
    def maximal_device_id(self) -> int | None:
        return self.device_ids[0] if self.is_maximal else None

    @property
    def devices(self) -> tuple[int, ...]:
        """Device id at each mesh position (row-major): `device_ids`, or iota.

        Refuses (`ShardingError`) meshes of more than `MAX_DEVICES` devices."""
        if self.device_ids:
            return self.device_ids
        check_devices(self.total_size)
        return tuple(range(self.total_size))

    def has_axis(self, name: str) -> bool:
        return any(a.name == name for a in self.axes)

    def axis_index(self, name: str) -> int | None:
        for i, a in enumerate(self.axes):
            if a.name == name:
                return i
        return None

    def axis_size(self, name: str) -> int:
        if not isinstance(name, str):
            raise ShardingError(f"expected an axis name (str), got: {shown(name)}")
        for a in self.axes:
            if a.name == name:
                return a.size
        raise ShardingError(f'unknown axis name: "{name}"')

    def __str__(self) -> str:
        return "#sdy.mesh" + self.body()

    def __repr__(self) -> str:
        return f"Mesh({str(self)!r})"

    def body(self) -> str:
        """The bare form used after `sdy.mesh @m =` and `mesh`: `<["x"=2]>`."""
        text = "<[" + ", ".join(map(str, self.axes)) + "]"
        if self.device_ids:
            text += ", device_ids=[" + ", ".join(map(str, self.device_ids)) + "]"
        return text + ">"


@dataclass(frozen=True, slots=True)
class MeshTable:
    """Named meshes, as the `sdy.mesh @name = <...>` ops of a module.

    Several meshes may describe the same devices (e.g. `<["a"=4, "b"=2]>` and
    `<["x"=2, "y"=2, "z"=2]>`); shardings name the one they use.
    """

    meshes: tuple[tuple[str, Mesh], ...] = ()
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    __hash__ = kept_hash  # (a dict and cache key in every pass)
    __getstate__ = state_without_hash

    def __post_init__(self) -> None:
        meshes = as_tuple(self.meshes, "(name, Mesh) pairs")
        for entry in meshes:
            if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str)
                    and isinstance(entry[1], Mesh)):
                raise ShardingError(f"expected (name, Mesh) pairs in a MeshTable, got: {shown(entry)}")
        object.__setattr__(self, "meshes", meshes)
        seen: set[str] = set()
        for name, _ in meshes:
            if name in seen:
                raise ShardingError(f"redefinition of symbol named '{name}'")
            seen.add(name)

    @classmethod
    def of(cls, **meshes: Mesh) -> MeshTable:
        return cls(tuple(meshes.items()))

    @classmethod
    def parse(cls, text: str) -> MeshTable:
        """Parses `sdy.mesh @name = <...>` ops (one after another, any whitespace)."""
        return PARSERS["mesh_table"](text)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.meshes)

    def get(self, name: str) -> Mesh | None:
        for n, m in self.meshes:
            if n == name:
                return m
        return None

    def __getitem__(self, name: str) -> Mesh:
        if not isinstance(name, str):
            raise ShardingError(f"expected a mesh name (str), got: {shown(name)}")
        mesh = self.get(name)
        if mesh is None:
            raise ShardingError(f"unknown mesh: {symbol_name(name)}")
        return mesh

    def __contains__(self, name: object) -> bool:
        return any(n == name for n, _ in self.meshes)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.meshes)

    def same_devices(self, a: str, b: str) -> bool:
        """Whether meshes `a` and `b` put the same devices at the same positions (any size:
        iota `device_ids` are never stored, so the lists compare as they are)."""
        return device_order(self[a]) == device_order(self[b])

    def __str__(self) -> str:
        return "\n".join(f"sdy.mesh {symbol_name(n)} = {m.body()}" for n, m in self.meshes)


def device_order(mesh: Mesh) -> tuple[int, tuple[int, ...]]:
    """`(size, stored device ids)`: equal for two meshes exactly when they put the same devices at
    the same positions, without listing iota ids (never stored), so for meshes of any size."""
    return mesh.total_size, (() if mesh.device_ids == (0,) else mesh.device_ids)


def same_device_set(a: Mesh, b: Mesh) -> bool:
    """Whether meshes `a` and `b` hold the same devices, in any order (lists only stored ids)."""
    (na, ia), (nb, ib) = device_order(a), device_order(b)
    return na == nb and (ia == ib or sorted(ia or range(na)) == sorted(ib or range(nb)))


def mesh_verifier_error(axes, device_ids) -> str | None:
    """Shardy's `MeshAxisAttr::verify` + `MeshAttr::verify` message, or `None` (rules M1-M6)."""
    for axis in axes:
        if axis.size <= 0:
            return f"axis size must be at least 1, got: {axis.size}"
    for device_id in device_ids:
        if device_id < 0:
            return f"device id must be non-negative, got: {device_id}"
    if not axes:
        if len(device_ids) > 1:
            return "axes is empty and device_ids has more than one element"
        return None
    seen: set[str] = set()
    for axis in axes:
        if axis.name in seen:
            return f'duplicate axis name: "{axis.name}"'
        seen.add(axis.name)
    if not device_ids:
        return None
    # Shardy accumulates the product in a 32-bit int (std::accumulate with init `1`).
    total = 1
    for axis in axes:
        total = ((total * axis.size + 2**31) % 2**32) - 2**31
    if total != len(device_ids):
        return (
            "total product of axis sizes must match total number of device ids, "
            f"got: {total} != {len(device_ids)}"
        )
    ordered = sorted(device_ids)
    if ordered != list(range(len(device_ids))):
        return "sorted device ids must be iota(product(axes)), got: " + ", ".join(map(str, ordered))
    if list(device_ids) == ordered:
        return (
            "if the ordered device ids are the same as iota(product(axes)), "
            "no need to specify them for simplicity"
        )
    return None
