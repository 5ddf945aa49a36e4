"""Conversions to the peer systems: GSPMD `HloSharding` text and JAX `NamedSharding`.

>>> from sharding import Mesh, TensorSharding, to_hlo_sharding, from_hlo_sharding
>>> mesh = Mesh.parse('<["x"=8]>')
>>> to_hlo_sharding(TensorSharding.parse('#sdy.sharding<@m, [{"x":(2)2}, {"x":(1)2}]>'), mesh)
'{devices=[2,2,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}'
>>> m, s = from_hlo_sharding('{devices=[4,2]<=[2,4]T(1,0)}')
>>> print(m.body(), s)
<["axis_0"=2, "axis_1"=4]> #sdy.sharding<@mesh, [{"axis_1"}, {"axis_0"}]>

`to_hlo_sharding` follows XLA's Shardy export (`convertToHloSharding`, spec §7.1);
`HloSharding` parses and prints the text forms of `xla/hlo/ir/hlo_sharding.cc`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ._placement import place, resolve
from .axes import AxisRef
from .errors import ShardingError
from .mesh import Mesh, MeshAxis
from .tensor_sharding import DimensionSharding, ManualAxes, TensorSharding

__all__ = ["HloSharding", "to_hlo_sharding", "from_hlo_sharding", "to_named_sharding"]

_SUBGROUPS = ("manual", "unreduced", "replicated")


def _canonical_iota(reshape: tuple[int, ...], perm: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """XLA's canonical iota: drop size-1 dims, merge dims that stay adjacent and in order."""
    keep = [i for i in range(len(reshape)) if reshape[i] != 1]
    renum = {old: new for new, old in enumerate(keep)}
    dims = [reshape[i] for i in keep]
    order = [renum[i] for i in perm if i in renum]
    merged = True
    while merged:
        merged = False
        for k in range(len(order) - 1):
            a, b = order[k], order[k + 1]
            if b == a + 1:
                dims[a] *= dims[b]
                del dims[b]
                del order[k + 1]
                order = [i - 1 if i > b else i for i in order]
                merged = True
                break
    if not dims:
        return (1,), (0,)
    return tuple(dims), tuple(order)


@dataclass(frozen=True, slots=True)
class HloSharding:
    """A non-tuple GSPMD `HloSharding` in its text form.

    `kind` is `replicated`, `manual`, `maximal` (on `maximal_device`) or `tiled`. A tiled
    sharding has `tile_dims` (tensor dims, then one dim per entry of `subgroups`, each
    `manual`, `unreduced` or `replicated`) and devices either explicit (`device_list`) or as an
    iota `arange(N).reshape(iota_reshape).transpose(iota_perm)` (`device_list` empty).
    """

    kind: str
    tile_dims: tuple[int, ...] = ()
    device_list: tuple[int, ...] = ()
    iota_reshape: tuple[int, ...] = ()
    iota_perm: tuple[int, ...] = ()
    subgroups: tuple[str, ...] = ()
    maximal_device: int | None = None

    @classmethod
    def parse(cls, text: str) -> HloSharding:
        """Parses `{replicated}`, `{manual}`, `{maximal device=N}`, `{devices=[...]...}`."""
        return _parse_hlo(text)

    @property
    def num_devices(self) -> int:
        return math.prod(self.tile_dims) if self.kind == "tiled" else 1

    @property
    def rank(self) -> int | None:
        """Number of tensor dims (`None` when the text does not say)."""
        return len(self.tile_dims) - len(self.subgroups) if self.kind == "tiled" else None

    def tile_assignment(self) -> np.ndarray:
        """Device ids shaped like `tile_dims`."""
        if self.device_list:
            return np.asarray(self.device_list, dtype=np.int64).reshape(self.tile_dims)
        ids = np.arange(self.num_devices, dtype=np.int64).reshape(self.iota_reshape).transpose(self.iota_perm)
        return ids.reshape(self.tile_dims)

    def __str__(self) -> str:
        if self.kind == "maximal":
            return f"{{maximal device={self.maximal_device}}}"
        if self.kind in ("replicated", "manual"):
            return f"{{{self.kind}}}"
        dims = ",".join(map(str, self.tile_dims))
        if self.device_list:
            devices = ",".join(map(str, self.device_list))
        else:
            reshape, perm = _canonical_iota(self.iota_reshape, self.iota_perm)
            devices = f"<=[{','.join(map(str, reshape))}]"
            if len(perm) > 1:
                devices += f"T({','.join(map(str, perm))})"
        tail = ""
        if self.subgroups == ("replicated",):
            tail = " last_tile_dim_replicate"
        elif self.subgroups:
            tail = " last_tile_dims={" + ", ".join(self.subgroups) + "}"
        return f"{{devices=[{dims}]{devices}{tail}}}"


_INTS = r"\d+(?:\s*,\s*\d+)*"
_TILED = re.compile(
    rf"\{{\s*devices\s*=\s*\[(?P<dims>{_INTS})\]\s*"
    rf"(?:<=\s*\[(?P<reshape>{_INTS})\]\s*(?:T\s*\((?P<perm>{_INTS})\))?|(?P<list>{_INTS}))"
    r"(?P<tail>(?:\s+last_tile_dim_replicate|\s+last_tile_dims\s*=\s*\{[a-z_,\s]*\})?)\s*\}"
)


def _ints(text: str | None) -> tuple[int, ...]:
    return tuple(int(t) for t in text.split(",")) if text else ()


def _parse_hlo(text: str) -> HloSharding:
    if not isinstance(text, str):
        raise ShardingError(f"expected HloSharding text, got: {type(text).__name__}")
    body = text.strip()
    simple = re.fullmatch(r"\{\s*(replicated|manual)\s*\}", body)
    if simple:
        return HloSharding(simple[1])
    maximal = re.fullmatch(r"\{\s*maximal\s+device\s*=\s*(\d+)\s*\}", body)
    if maximal:
        return HloSharding("maximal", maximal_device=int(maximal[1]))
    if re.fullmatch(r"\{\s*\{.*\}\s*\}", body, re.S):
        raise ShardingError(f"expected a single (non-tuple) HloSharding; convert the elements of a tuple "
                            f"sharding one by one, found: {text}")
    m = _TILED.fullmatch(body)
    if not m:
        raise ShardingError("expected HloSharding text such as '{replicated}', '{maximal device=3}' or "
                            f"'{{devices=[2,4]<=[8]}}', found: {text}")
    dims = _ints(m["dims"])
    n = math.prod(dims)
    tail = m["tail"].strip()
    if tail == "last_tile_dim_replicate":
        subgroups: tuple[str, ...] = ("replicated",)
    elif tail:
        inner = tail[tail.index("{") + 1: -1]
        subgroups = tuple(s.strip() for s in inner.split(",") if s.strip())
        bad = [s for s in subgroups if s not in _SUBGROUPS]
        if bad or not subgroups:
            raise ShardingError(f"expected last_tile_dims made of {', '.join(_SUBGROUPS)}, found: {tail}")
    else:
        subgroups = ()
    if len(subgroups) > len(dims):
        raise ShardingError(f"expected at least {len(subgroups)} tile dims for {tail}, found {len(dims)}: {text}")
    if m["list"] is not None:
        devices = _ints(m["list"])
        if len(devices) != n:
            raise ShardingError(f"expected {n} devices for tile dims {list(dims)}, found {len(devices)}: {text}")
        return HloSharding("tiled", dims, devices, subgroups=subgroups)
    reshape = _ints(m["reshape"])
    perm = _ints(m["perm"]) if m["perm"] else tuple(range(len(reshape)))
    if math.prod(reshape) != n:
        raise ShardingError(f"expected the iota reshape {list(reshape)} to hold {n} devices: {text}")
    if sorted(perm) != list(range(len(reshape))):
        raise ShardingError(f"expected T(...) to be a permutation of 0..{len(reshape) - 1}, found {list(perm)}: {text}")
    return HloSharding("tiled", dims, (), reshape, perm, subgroups)


# -- sdy -> HloSharding ------------------------------------------------------------------------


def _manual_names(manual_axes) -> tuple[str, ...]:
    if isinstance(manual_axes, ManualAxes):
        return manual_axes.names
    return tuple(manual_axes)


def to_hlo_sharding(sharding: TensorSharding, mesh=None, *, manual_axes: ManualAxes | Iterable[str] = ()) -> str:
    """The GSPMD HloSharding text XLA's Shardy export prints for `sharding`.

    `mesh` is the `Mesh` (or a `MeshTable`) the sharding names; not needed for an inlined mesh.
    `manual_axes` are the axes made manual by enclosing `sdy.manual_computation`s.
    Mesh `device_ids` give an explicit device list (each replication group sorted, as XLA's
    `PartialTile` does); otherwise the iota form, canonicalized.
    """
    m = resolve(sharding, mesh)
    manual = _manual_names(manual_axes)
    if m.is_empty:
        return "{replicated}"
    if m.is_maximal:
        place(sharding, m, None)
        return f"{{maximal device={m.maximal_device_id}}}"
    for name in manual:
        if not m.has_axis(name):
            raise ShardingError(f'unknown manual axis: "{name}"')
    if manual and set(manual) == set(m.axis_names):
        place(sharding, m, None)
        return "{manual}"
    p = place(sharding, m, None)
    order = [i for dims in p.dim_pieces for i in dims]
    tile_dims = list(p.num_tiles)
    subgroups = []
    used = set(order) | set(p.unreduced_pieces)
    manual_pieces = [i for i, pc in enumerate(p.pieces) if pc.name in manual and i not in used]
    for kind, group in (("manual", manual_pieces), ("unreduced", list(p.unreduced_pieces))):
        size = math.prod(p.pieces[i].size for i in group)
        if size > 1:  # XLA keeps no subgroup dim of size 1
            order += group
            tile_dims.append(size)
            subgroups.append(kind)
    rest = [i for i in range(len(p.pieces)) if i not in set(order)]
    order += rest
    replicas = math.prod(p.pieces[i].size for i in rest)
    if replicas > 1:
        tile_dims.append(replicas)
        subgroups.append("replicated")
    if subgroups in ([], ["replicated"]) and all(t == 1 for t in p.num_tiles):
        return "{replicated}"  # also a one-device mesh (checked with jaxlib)
    if m.device_ids:
        devices = p.device_grid().transpose(order).reshape(-1)
        if subgroups and subgroups[-1] == "replicated":
            devices = np.sort(devices.reshape(-1, replicas), axis=1).reshape(-1)
        hlo = HloSharding("tiled", tuple(tile_dims), tuple(int(d) for d in devices), subgroups=tuple(subgroups))
    else:
        hlo = HloSharding("tiled", tuple(tile_dims), (), p.piece_sizes, tuple(order), tuple(subgroups))
    return str(hlo)


# -- HloSharding -> sdy ------------------------------------------------------------------------


def _refine(outer: list[int], inner: list[int]) -> list[tuple[int, int, int]] | None:
    """Common refinement of two factorizations of N (both major to minor).

    Returns `(i, j, size)` pieces (`i` indexes `outer`, `j` `inner`), or `None` when a size does
    not divide the other (the two shapes are not related by splitting dims).
    """
    pieces, i, j = [], 0, 0
    a = outer[0] if outer else 1
    b = inner[0] if inner else 1
    while i < len(outer) and j < len(inner):
        if a == 1:
            i += 1
            a = outer[i] if i < len(outer) else 1
            continue
        if b == 1:
            j += 1
            b = inner[j] if j < len(inner) else 1
            continue
        if a % b and b % a:
            return None
        size = min(a, b)
        pieces.append((i, j, size))
        a //= size
        b //= size
    return pieces


def from_hlo_sharding(text: str | HloSharding, *, rank: int | None = None, num_devices: int | None = None,
                      mesh_name: str = "mesh") -> tuple[Mesh, TensorSharding]:
    """A Shardy mesh and sharding with the same placement as a GSPMD HloSharding.

    The mesh is factored from the tile assignment: an iota `<=[r...]T(p...)` gives one axis per
    reshape dim (`axis_0`, ...), cut into sub-axes where the tile dims need it, so no
    `device_ids` are needed; an explicit device list (or an iota that is no simple transpose)
    gives one axis per tile dim with `device_ids`. Replicated subgroups stay implicit;
    unreduced ones become `unreduced`. `{maximal device=N}` gives the maximal mesh
    `<[], device_ids=[N]>`. `rank` is required for `{replicated}` (the text does not carry it)
    and checked otherwise; `num_devices` sizes the mesh of `{replicated}` (else the empty mesh
    `<[]>`) and is checked otherwise. The sharding names `@mesh_name`.
    """
    hlo = text if isinstance(text, HloSharding) else HloSharding.parse(text)
    if hlo.kind == "manual" or "manual" in hlo.subgroups:
        raise ShardingError("a manual HloSharding is the inside of an sdy.manual_computation, not a tensor "
                            f"sharding: {hlo}")
    if hlo.kind == "maximal":
        mesh = Mesh((), (hlo.maximal_device,))
        return mesh, TensorSharding(mesh_name, ())
    if hlo.kind == "replicated":
        if rank is None:
            raise ShardingError("expected rank= for {replicated}: the text does not say the tensor's rank")
        mesh = Mesh((MeshAxis("axis_0", num_devices),)) if num_devices and num_devices > 1 else Mesh()
        return mesh, TensorSharding.replicated(mesh_name, rank)
    if rank is not None and rank != hlo.rank:
        raise ShardingError(f"expected {hlo.rank} tensor dims in {hlo} (tile dims minus subgroups), got rank={rank}")
    if num_devices is not None and num_devices != hlo.num_devices:
        raise ShardingError(f"expected num_devices={hlo.num_devices} for {hlo}, got {num_devices}")
    devices = hlo.tile_assignment().reshape(-1)
    if sorted(devices.tolist()) != list(range(hlo.num_devices)):
        raise ShardingError(f"expected the devices of {hlo} to be 0..{hlo.num_devices - 1} once each")
    pieces = None
    if not hlo.device_list:
        reshape, perm = _canonical_iota(hlo.iota_reshape, hlo.iota_perm)
        pieces = _refine([reshape[k] for k in perm], list(hlo.tile_dims))
    if pieces is None:
        return _explicit(hlo, devices, mesh_name)
    axes = tuple(MeshAxis(f"axis_{r}", size) for r, size in enumerate(reshape))
    mesh = Mesh(axes)
    pre = [1] * len(reshape)
    per_tile: list[list[AxisRef]] = [[] for _ in hlo.tile_dims]
    for i, j, size in pieces:
        r = perm[i]
        ref = AxisRef(axes[r].name) if size == reshape[r] else AxisRef.sub(axes[r].name, pre[r], size)
        pre[r] *= size
        per_tile[j].append(ref)
    return mesh, _sharding(hlo, per_tile, mesh, mesh_name)


def _explicit(hlo: HloSharding, devices: np.ndarray, mesh_name: str) -> tuple[Mesh, TensorSharding]:
    axes, per_tile = [], []
    for size in hlo.tile_dims:
        if size > 1:
            axes.append(MeshAxis(f"axis_{len(axes)}", size))
            per_tile.append([AxisRef(axes[-1].name)])
        else:
            per_tile.append([])
    mesh = Mesh(tuple(axes), tuple(int(d) for d in devices))
    return mesh, _sharding(hlo, per_tile, mesh, mesh_name)


def _sharding(hlo: HloSharding, per_tile: list[list[AxisRef]], mesh: Mesh, mesh_name: str) -> TensorSharding:
    from .axes import sort_axis_refs

    rank = hlo.rank
    dims = tuple(DimensionSharding(tuple(refs)) for refs in per_tile[:rank])
    unreduced: list[AxisRef] = []
    for kind, refs in zip(hlo.subgroups, per_tile[rank:]):
        if kind == "unreduced":
            unreduced += refs
    return TensorSharding(mesh_name, dims, (), sort_axis_refs(unreduced, mesh))


# -- sdy -> JAX --------------------------------------------------------------------------------


def to_named_sharding(sharding: TensorSharding, mesh=None, *, devices=None):
    """A `jax.sharding.NamedSharding` with the same placement (needs jax).

    JAX meshes have no sub-axes: every mesh axis is cut at the sub-axes the dims use, and each
    cut becomes an axis named `x_<pre>_<size>` (full axes keep their names). Logical device `i`
    is `devices[i]` (default `jax.devices()`), so `device_ids` permute the mesh. Open dims and
    explicit `replicated` axes need nothing in JAX; unreduced axes are not supported (JAX allows
    them only on `Explicit` mesh axes).
    """
    m = resolve(sharding, mesh)
    if m.is_empty or m.is_maximal:
        raise ShardingError(f"mesh {m.body()} has no axes; a NamedSharding needs a mesh with axes "
                            "(use jax.sharding.SingleDeviceSharding for one device)")
    if sharding.unreduced_axes:
        raise ShardingError("unreduced axes have no NamedSharding form here: JAX allows them only on "
                            f"Explicit mesh axes, found unreduced={{{', '.join(map(str, sharding.unreduced_axes))}}}")
    p = place(sharding, m, None)
    try:
        import jax
        from jax.sharding import Mesh as JaxMesh, NamedSharding, PartitionSpec
    except ImportError:
        raise ShardingError("to_named_sharding needs jax (pip install jax)") from None
    pool = list(jax.devices() if devices is None else devices)
    if max(m.devices) >= len(pool):
        raise ShardingError(f"mesh {m.body()} needs {max(m.devices) + 1} devices, found {len(pool)}")
    names = tuple(pc.name if pc.is_full else f"{pc.name}_{pc.pre_size}_{pc.size}" for pc in p.pieces)
    grid = np.empty(len(m.devices), dtype=object)
    grid[:] = [pool[i] for i in m.devices]
    jmesh = JaxMesh(grid.reshape(p.piece_sizes), names)
    spec = []
    for dims in p.dim_pieces:
        refs = [names[i] for i in dims]
        spec.append(None if not refs else refs[0] if len(refs) == 1 else tuple(refs))
    return NamedSharding(jmesh, PartitionSpec(*spec))
