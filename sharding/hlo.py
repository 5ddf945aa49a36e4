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

import dataclasses
import math
import re
import sys
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from ._mlir_lexer import to_int
from ._placement import _ref_bounds, place, resolve
from .axes import AxisRef, overlaps, sort_axis_refs
from .errors import ShardingError, ShardingParseError, as_int, as_tuple, int_text, shown
from .mesh import Mesh, MeshAxis, check_devices, mesh_verifier_error
from .tensor_sharding import DimensionSharding, ManualAxes, TensorSharding, as_sharding
from .verify import sharding_errors

__all__ = ["HloSharding", "to_hlo_sharding", "from_hlo_sharding", "to_named_sharding", "from_named_sharding",
           "mesh_from_jax", "is_named_sharding", "to_sdy"]

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
    """A GSPMD `HloSharding` in its text form, canonical as XLA keeps it.

    `kind` is `replicated`, `manual`, `unknown`, `unreduced`, `maximal` (on `maximal_device`),
    `tiled`, `tuple` (of `elements`), or XLA's mesh forms `named` and `maximal_mesh`. A tiled sharding has `tile_dims` (tensor dims, then one
    dim per entry of `subgroups`, each `manual`, `unreduced` or `replicated`) and devices either
    explicit (`device_list`) or as an iota `arange(N).reshape(iota_reshape).transpose(iota_perm)`
    (`device_list` empty). Build tiled shardings with `HloSharding.tiled`, which canonicalizes
    as XLA's `HloSharding::Subgroup` does.
    """

    kind: str
    tile_dims: tuple[int, ...] = ()
    device_list: tuple[int, ...] = ()
    iota_reshape: tuple[int, ...] = ()
    iota_perm: tuple[int, ...] = ()
    subgroups: tuple[str, ...] = ()
    maximal_device: int | None = None
    elements: tuple[HloSharding, ...] = ()
    mesh: Mesh | None = None
    """`kind == "named"` (XLA's mesh form, `{mesh["x"=2], [{"x"}]}`): the mesh, device ids explicit;
    an iota `device_ids=([...]T(...))` is also kept in `iota_reshape` / `iota_perm`."""
    named: TensorSharding | None = None
    """`kind == "named"`: dims, replicated and unreduced axes, with `mesh` inlined."""
    manual_axes: tuple[AxisRef, ...] = ()
    """`kind == "named"`: the `manual={...}` axes."""
    shard_group: tuple[str, int] | None = None
    """`("shard_as", n)` or `("shard_like", n)`: XLA's shard group, printed after the sharding."""
    metadata: tuple[tuple[tuple[str, object], ...], ...] = dataclasses.field(default=(), compare=False)
    """XLA's `OpMetadata` entries (`metadata={op_name="a"}`), each as `(attribute, value)` pairs;
    like XLA's `ToString()` and `==`, printing and comparing leave them out."""
    uncollapsed: HloSharding | None = dataclasses.field(default=None, compare=False)
    """The tiled sharding a text gave before XLA collapsed it to `{replicated}`, `{unreduced}` or
    `{manual}` (`{devices=[1,4]<=[4] last_tile_dim_replicate}`, any device list): XLA prints and
    compares without it, and so does this class; `from_hlo_sharding` takes the tensor's rank and
    its devices from it (XLA replicates over all of them)."""

    @classmethod
    def parse(cls, text: str) -> HloSharding:
        """Parses XLA's text: `{replicated}`, `{manual}`, `{unknown}`, `{unreduced}`,
        `{maximal device=N}`, `{devices=[...]...}`, the mesh forms `{mesh[...], [...]}` and
        `{maximal_mesh[device_id=N]}`, tuples `{{...}, {...}}`, ` shard_as N` / ` shard_like N`
        and `metadata={...}`; like XLA's parser it takes the words of a sharding in any order."""
        fast = _fast_tiled(text) if isinstance(text, str) else None
        return fast if fast is not None else _HloParser(text).sharding()

    @classmethod
    def tiled(cls, tile_dims, device_list=(), iota_reshape=(), iota_perm=(), subgroups=()) -> HloSharding:
        """A tiled sharding in XLA's canonical form (`HloSharding::Subgroup` / `PartialTile`).

        Devices are `device_list` (row-major over `tile_dims`) or the iota
        `arange(N).reshape(iota_reshape).transpose(iota_perm)` (default `<=[N]`); `subgroups`
        name the trailing tile dims (`manual`, `unreduced`, `replicated`).
        Subgroup dims of size 1 are dropped, the others ordered manual, unreduced, replicated
        (the devices transposed with them) and merged per kind; a sharding whose tensor dims
        are all 1 and whose subgroups are of one kind becomes `{manual}`, `{unreduced}` or
        `{replicated}`; devices are sorted within each replication group (an iota stays an
        iota where XLA keeps one).
        """
        dims = tuple(as_int(d, "tile dim", 0) for d in as_tuple(tile_dims, "tile dims"))
        devices = tuple(as_int(d, "device id", 0) for d in as_tuple(device_list, "device ids"))
        reshape = tuple(as_int(d, "iota dim", 0) for d in as_tuple(iota_reshape, "iota dims"))
        perm = tuple(as_int(d, "iota transpose dim", 0) for d in as_tuple(iota_perm, "iota transpose dims"))
        groups = as_tuple(subgroups, "subgroup types")
        n = math.prod(dims)
        if n > _INT64_MAX:
            raise ShardingError(f"the tile dims {list(dims)} hold more than 2**63-1 devices")
        for kind in groups:
            if kind not in _SUBGROUPS:
                raise ShardingError(f"expected subgroup types {', '.join(_SUBGROUPS)}, got: {shown(kind)}")
        if len(groups) > len(dims):
            raise ShardingError(f"expected at least {len(groups)} tile dims for {len(groups)} subgroups, got {len(dims)}")
        if devices and (reshape or perm):
            raise ShardingError("expected a device list or an iota, not both")
        if devices and len(devices) != n:
            raise ShardingError(f"expected {n} devices for tile dims {list(dims)}, got {len(devices)}")
        if not devices:
            reshape, perm = reshape or (n,), perm or tuple(range(len(reshape or (n,))))
            if math.prod(reshape) != n or sorted(perm) != list(range(len(reshape))):
                raise ShardingError(f"expected an iota of the {n} devices, got <=[{list(reshape)}]T({list(perm)})")
        return cls._tiled(dims, devices, reshape, perm, groups)

    @classmethod
    def _tiled(cls, tile_dims, device_list=(), iota_reshape=(), iota_perm=(), subgroups=()) -> HloSharding:
        """`tiled` on arguments the parser or the conversions already checked."""
        dims, groups = list(tile_dims), list(subgroups)
        devices = _Devices(tuple(dims), tuple(device_list), *_canonical_iota(iota_reshape, iota_perm))
        given = cls("tiled", tuple(dims), devices.explicit, devices.reshape, devices.perm, tuple(groups))
        rank = len(dims) - len(groups)
        if groups and len(set(groups)) == 1 and math.prod(dims[:rank]) == 1:
            return cls(groups[0], uncollapsed=given)
        removed = [rank + k for k in range(len(groups)) if dims[rank + k] == 1]
        kinds = [g for k, g in enumerate(groups) if rank + k not in removed]
        if removed or len(kinds) > len(set(kinds)) or len(set(kinds)) > 1:
            kinds, order, merged_dims, groups = groups, list(range(rank)), dims[:rank], []
            for kind in _SUBGROUPS:
                ks = [rank + k for k, g in enumerate(kinds) if g == kind and rank + k not in removed]
                if ks:
                    order += ks
                    merged_dims.append(math.prod(dims[k] for k in ks))
                    groups.append(kind)
            devices = devices.transpose(order + removed).with_dims(tuple(merged_dims))
            dims = merged_dims
        if groups == ["manual"] and math.prod(dims) == dims[-1]:
            return cls("manual", uncollapsed=given)
        if groups and groups[-1] == "replicated":  # (no subgroup dim is 1 any more)
            if len(dims) == 1 or dims[-1] == math.prod(dims):
                return cls("replicated", uncollapsed=given)
            devices = devices.sort_groups()
        if devices.explicit:
            return cls("tiled", tuple(dims), devices.explicit, subgroups=tuple(groups))
        return cls("tiled", tuple(dims), (), devices.reshape, devices.perm, tuple(groups))

    @property
    def num_devices(self) -> int:
        return math.prod(self.tile_dims) if self.kind == "tiled" else 1

    @property
    def rank(self) -> int | None:
        """Number of tensor dims (`None` when the text does not say)."""
        return len(self.tile_dims) - len(self.subgroups) if self.kind == "tiled" else None

    def tile_assignment(self) -> np.ndarray:
        """Device ids shaped like `tile_dims` (refused for more than `MAX_DEVICES` devices)."""
        check_devices(self.num_devices, len(self.tile_dims))
        if self.device_list:
            return np.asarray(self.device_list, dtype=np.int64).reshape(self.tile_dims)
        check_devices(self.num_devices, len(self.iota_reshape))
        ids = np.arange(self.num_devices, dtype=np.int64).reshape(self.iota_reshape).transpose(self.iota_perm)
        return ids.reshape(self.tile_dims)

    def __str__(self) -> str:
        if self.shard_group is not None:
            kind, group = self.shard_group
            return str(dataclasses.replace(self, shard_group=None))[:-1] + f" {kind} {group}}}"
        if self.kind == "tuple":
            return "{" + ", ".join(map(str, self.elements)) + "}"
        if self.kind == "maximal":
            return f"{{maximal device={self.maximal_device}}}"
        if self.kind == "maximal_mesh":
            return f"{{maximal_mesh[device_id={self.maximal_device}]}}"
        if self.kind == "named":
            return self._named_text()
        if self.kind != "tiled":
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

    def _named_text(self) -> str:
        mesh, named = self.mesh, self.named
        text = "{mesh[" + ",".join(f"'{a.name}'={a.size}" for a in mesh.axes) + "]"
        if self.iota_reshape:
            reshape, perm = self.iota_reshape, self.iota_perm
            text += f", device_ids=([{','.join(map(str, reshape))}]T({','.join(map(str, perm))}))"
        elif mesh.device_ids:
            text += ", device_ids=(" + ",".join(map(str, mesh.device_ids)) + ")"
        if not named.dim_shardings:  # XLA's whole forms: unreduced or manual over every device, or nothing
            for word, axes in (("unreduced", named.unreduced_axes), ("manual", self.manual_axes)):
                if axes and math.prod(r.size(mesh) for r in axes) == mesh.total_size:
                    return text + ", " + word + "}"
            if not (named.replicated_axes or named.unreduced_axes or self.manual_axes):
                return text + ", replicated}"

        def refs(axes):
            return ", ".join(f"'{r.name}'" + ("" if r.sub_axis_info is None else str(r.sub_axis_info)).replace(
                "(", ":(", 1) for r in axes)

        dims = ", ".join("{" + refs(d.axes) + ("" if d.is_closed else ", ?" if d.axes else "?") + "}"
                         for d in named.dim_shardings)
        text += f", [{dims}]"
        for word, axes in (("replicated", named.replicated_axes), ("unreduced", named.unreduced_axes),
                           ("manual", self.manual_axes)):
            if axes:
                text += f", {word}={{{refs(axes)}}}"
        return text + "}"

    def v3_to_v2_sharding(self) -> HloSharding:
        """The tiled (V2) form of XLA's mesh forms, as XLA's `HloSharding::V3ToV2Sharding` gives
        it: `maximal_mesh` becomes `maximal`, a `named` sharding the tile assignment of its
        dims, manual, unreduced and replicated axes; anything else is returned as it is."""
        if self.kind == "tuple":
            return dataclasses.replace(self, elements=tuple(e.v3_to_v2_sharding() for e in self.elements))
        if self.kind == "maximal_mesh":
            return dataclasses.replace(self, kind="maximal")
        if self.kind != "named":
            return self
        iota = (self.iota_reshape, self.iota_perm) if self.iota_reshape else None
        v2 = _to_hlo(self.named, self.mesh, self.manual_axes, iota, unit_subgroups=True)
        return dataclasses.replace(v2, shard_group=self.shard_group, metadata=self.metadata)

    def __repr__(self) -> str:
        return f"HloSharding({str(self)!r})"


@dataclass(frozen=True, slots=True)
class _Devices:
    """A tile assignment: `explicit` ids, or `arange(N).reshape(reshape).transpose(perm)`."""

    dims: tuple[int, ...]
    explicit: tuple[int, ...] = ()
    reshape: tuple[int, ...] = ()
    perm: tuple[int, ...] = ()

    def with_dims(self, dims: tuple[int, ...]) -> _Devices:
        """The same devices in row-major order, seen as tile dims `dims` (same count)."""
        return _Devices(dims, self.explicit, self.reshape, self.perm)

    def materialize(self) -> _Devices:
        check_devices(math.prod(self.dims), len(self.reshape))
        ids = np.arange(math.prod(self.dims), dtype=np.int64).reshape(self.reshape).transpose(self.perm)
        return _Devices(self.dims, tuple(ids.reshape(-1).tolist()))

    def transpose(self, order: list[int]) -> _Devices:
        """The assignment with its tile dims permuted; an iota stays an iota when the cuts of
        its dims and of the tile dims line up."""
        dims = tuple(self.dims[k] for k in order)
        moved = [k for k in order if self.dims[k] != 1]
        if 0 in self.dims or moved == sorted(moved):  # only size-1 dims move: the same devices
            return _Devices(dims, self.explicit, self.reshape, self.perm)
        if self.explicit:
            ids = np.asarray(self.explicit, dtype=np.int64).reshape(self.dims).transpose(order)
            return _Devices(dims, tuple(ids.reshape(-1).tolist()))
        # Common pieces `(i, j, size)` of the iota's transposed dims and the tile dims; each is
        # a slice of reshape dim perm[i], so permuting pieces gives a finer iota.
        pieces = _refine([self.reshape[k] for k in self.perm], list(self.dims))
        if pieces is None:
            return self.materialize().transpose(order)
        fine = sorted(range(len(pieces)), key=lambda q: (self.perm[pieces[q][0]], q))
        where = {q: n for n, q in enumerate(fine)}
        perm = tuple(where[q] for k in order for q in range(len(pieces)) if pieces[q][1] == k)
        return _Devices(dims, (), tuple(pieces[q][2] for q in fine), perm)

    def sort_groups(self) -> _Devices:
        """Devices sorted within each group of the last tile dim, as XLA's `PartialTile` does:
        an iota's minor dims making up the group are put in reshape order (cutting one dim in
        two where needed); an iota that does not allow it becomes an explicit list."""
        group = self.dims[-1]
        if not self.explicit and 0 not in self.dims:
            reshape, perm = list(self.reshape), list(self.perm)
            if reshape[perm[-1]] == group:
                return self
            grouped, split, left = 0, None, group
            for dim in reversed(perm):
                grouped += 1
                if reshape[dim] <= left:
                    if left % reshape[dim]:
                        break
                    left //= reshape[dim]
                    continue
                if reshape[dim] % left == 0:
                    split = (dim, reshape[dim] // left)
                    left = 1
                break
            if left == 1:
                if split is not None:
                    d, major = split
                    reshape[d: d + 1] = [major, reshape[d] // major]
                    perm = [q for p in perm for q in ((p, p + 1) if p == d else (p + (p > d),))]
                perm[len(perm) - grouped:] = sorted(perm[len(perm) - grouped:])
                return _Devices(self.dims, (), *_canonical_iota(tuple(reshape), tuple(perm)))
        if not self.explicit:
            return self.materialize().sort_groups()
        ids = np.sort(np.asarray(self.explicit, dtype=np.int64).reshape(-1, group), axis=1)
        return _Devices(self.dims, tuple(ids.reshape(-1).tolist()))


_INT64_MAX = 2**63 - 1
# OpMetadata attributes jaxlib 0.10.2's parser reads, and ProfileType's values.
_METADATA = {"op_type": str, "op_name": str, "source_file": str, "source_line": int, "profile_type": tuple,
             "deduplicated_name": str, "stack_frame_id": int, "scheduling_name": str, "source_end_line": int,
             "source_column": int, "source_end_column": int}
_PROFILE_TYPES = {0, 1, 2, 3}
_ESCAPE = re.compile(r"""\\(?:([ntr\\"'?abfv])|([0-7]{1,3})|x([0-9a-fA-F]+)|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|)""")
_QUOTED = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'""", re.S)
_ESCAPED = dict(zip("ntr\\\"'?abfv", "\n\t\r\\\"'?\a\b\f\v"))
_SPACE = " \t\n\r"  # XLA's lexer skips only these
_SPACES = re.compile("[ \t\n\r]*")
_WORD = re.compile("[A-Za-z0-9_.]*")
_INT = re.compile("-?[0-9]+")
_DIGITS = re.compile("[0-9]+")
_INTS = re.compile("-?[0-9]+(?:[ \t\n\r]*,[ \t\n\r]*-?[0-9]+)*")


_N = "[0-9]{1,18}"
_FAST = re.compile(rf"\{{devices=\[({_N}(?:,{_N})*)\](?:<=\[({_N}(?:,{_N})+)\]T\(([0-9]{{1,2}}(?:,[0-9]{{1,2}})+)\)"
                   rf"|<=\[({_N})\]|({_N}(?:,{_N})+))"
                   r"(?: (last_tile_dim_replicate)| last_tile_dims=\{((?:manual|unreduced|replicated)"
                   r"(?:, (?:manual|unreduced|replicated))*)\})?\}")


def _fast_tiled(text: str) -> HloSharding | None:
    """The tiled text as XLA prints it, in one regex; `None` sends anything else (or anything
    wrong) to the precise parser, which has the messages."""
    m = _FAST.fullmatch(text)
    if m is None:
        return None
    dims, reshape, perm, flat, listed, replicate, kinds = m.groups()
    dims = [to_int(d) for d in dims.split(",")]
    n = math.prod(dims)
    subgroups = ["replicated"] if replicate else kinds.split(", ") if kinds else []
    if n > _INT64_MAX or len(subgroups) > len(dims):
        return None
    if listed:
        devices = [to_int(d) for d in listed.split(",")]
        if len(devices) != n:
            return None
        return HloSharding._tiled(dims, devices, subgroups=subgroups)
    reshape = [to_int(flat)] if flat else [to_int(d) for d in reshape.split(",")]
    perm = [0] if flat else [to_int(p) for p in perm.split(",")]
    if math.prod(reshape) != n or sorted(perm) != list(range(len(reshape))):
        return None
    return HloSharding._tiled(dims, (), reshape, perm, subgroups)


class _HloParser:
    """XLA's `HloParser::ParseSharding` grammar with `ShardingParseError`s (position, caret)."""

    def __init__(self, text):
        if not isinstance(text, str):
            raise ShardingError(f"expected HloSharding text, got: {type(text).__name__}")
        self.text = text
        self.pos = 0

    def error(self, message: str, pos: int | None = None) -> ShardingParseError:
        return ShardingParseError(message, self.text, self.pos if pos is None else pos)

    def skip(self) -> None:
        self.pos = _SPACES.match(self.text, self.pos).end()

    def peek(self, token: str) -> bool:
        self.skip()
        return self.text.startswith(token, self.pos)

    def optional(self, token: str) -> bool:
        if self.peek(token):
            self.pos += len(token)
            return True
        return False

    def expect(self, token: str, what: str | None = None) -> None:
        if not self.optional(token):
            raise self.error(f"expected {what or repr(token)}")

    def word(self) -> str:
        self.skip()
        return _WORD.match(self.text, self.pos).group()

    def keyword(self, word: str) -> bool:
        """`word` as a whole identifier (`devices=` counts as `devices` followed by `=`)."""
        if self.word() == word:
            self.pos += len(word)
            return True
        return False

    def integer(self, what: str = "integer") -> int:
        self.skip()
        m = _INT.match(self.text, self.pos)
        if m is None:
            raise self.error(f"expected {what}")
        self.pos = m.end()
        return self._int64(m.group(), m.start(), what)

    def _int64(self, digits: str, start: int, what: str) -> int:
        value = -to_int(digits[1:]) if digits.startswith("-") else to_int(digits)
        if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
            raise self.error(f"{what} does not fit in int64", start)
        return value

    def ints(self, what: str) -> list[int]:
        self.skip()
        m = _INTS.match(self.text, self.pos)  # the common case in one step
        if m is None:
            return [self.integer(what)]
        out = [self._int64(d.group(), d.start(), what) for d in _INT.finditer(self.text, m.start(), m.end())]
        self.pos = m.end()
        while self.optional(","):  # only after a bad element: its error comes from here
            out.append(self.integer(what))
        return out

    def sharding(self) -> HloSharding:
        self.expect("{", "'{' to start sharding attribute")
        if self.peek("}") or self.peek("{"):
            elements = []
            if not self.peek("}"):
                elements.append(self.single())
                while self.optional(","):
                    elements.append(self.single())
            value = HloSharding("tuple", elements=tuple(elements))
        else:
            value = self.body()
        self.expect("}", "'}' to end sharding attribute")
        self.skip()
        if self.pos != len(self.text):
            raise self.error("unexpected text after the sharding")
        return value

    def single(self) -> HloSharding:
        self.expect("{", "'{' to start a sharding")
        value = self.body()
        self.expect("}", "'}' to end a sharding")
        return value

    def attribute(self, name: str) -> bool:
        """`name=`, which XLA's lexer reads as one token (no space before `=`)."""
        if self.word() == name and self.text.startswith("=", self.pos + len(name)):
            self.pos += len(name) + 1
            return True
        return False

    def device_id(self, start: int) -> int:
        device = self.integer("device id")
        if device < 0:
            raise self.error(f"expected a non-negative device id, got: {device}", start)
        return device

    def body(self) -> HloSharding:
        start = self.pos
        if self.keyword("mesh"):
            return self.named(start)
        if self.keyword("maximal_mesh"):
            self.expect("[", "'[' after maximal_mesh")
            if not self.attribute("device_id"):
                raise self.error("expected device_id= attribute in maximal_mesh")
            device = self.device_id(start)
            self.expect("]", "']' to end maximal_mesh")
            return HloSharding("maximal_mesh", maximal_device=device, metadata=self.named_metadata())
        # XLA reads the words of a sharding in any order, then decides what they make.
        kinds: set[str] = set()
        devices: list[int] = []
        tile: tuple | None = None
        subgroups: list[str] = []
        replicate_last = False
        group: tuple[str, int] | None = None
        metadata: list = []
        while not self.peek("}"):
            at = self.pos
            word = self.word()
            if word in ("maximal", "replicated", "manual", "unknown", "unreduced"):
                self.pos += len(word)
                kinds.add(word)
            elif self.attribute("device"):
                devices = [self.device_id(at)]
            elif self.attribute("devices"):
                if tile is not None:
                    raise self.error("devices= given twice", at)
                tile = self.tile_assignment()
                devices = devices + tile[1]
            elif self.attribute("metadata"):
                metadata += self.metadata()
            elif self.attribute("last_tile_dims"):
                subgroups += self.subgroup_types()
            elif self.keyword("last_tile_dim_replicate"):
                replicate_last = True
            elif word in ("shard_as", "shard_like"):
                self.pos += len(word)
                # With both, XLA keeps shard_as and the last id.
                kind = "shard_as" if word == "shard_as" or (group and group[0] == "shard_as") else word
                group = (kind, self.integer("shard group id"))
            else:
                raise self.error("expected a sharding: replicated, manual, unknown, unreduced, maximal, device=N, "
                                 "devices=[...], last_tile_dim_replicate, last_tile_dims={...}, metadata={...}, "
                                 "shard_as N or shard_like N")
        for kind in ("replicated", "maximal", "manual", "unknown", "unreduced"):  # XLA's precedence
            if kind not in kinds:
                continue
            if kind == "maximal" and len(devices) != 1:
                raise self.error("maximal shardings should have exactly one device assigned", start)
            if kind != "maximal" and devices:
                raise self.error(f"{kind} shardings should not have any devices assigned", start)
            value = HloSharding(kind, maximal_device=devices[0] if kind == "maximal" else None)
            break
        else:
            if tile is None:
                raise self.error("non-maximal shardings must have a tile assignment list including dimensions", start)
            if replicate_last:
                if subgroups:  # (an assertion failure in XLA)
                    raise self.error("last_tile_dim_replicate and last_tile_dims={...} together", start)
                subgroups = ["replicated"]
            dims, _, reshape, perm = tile
            if reshape and devices:  # (an assertion failure in XLA)
                raise self.error("device= and an iota tile assignment together", start)
            value = self.tiled(start, dims, devices, reshape, perm, subgroups)
        return dataclasses.replace(value, shard_group=group, metadata=tuple(metadata))

    def metadata(self) -> list[tuple[tuple[str, object], ...]]:
        """XLA's `OpMetadata` text: one `{name=value ...}` or a list `{{...}, {...}}`."""
        self.skip()
        at = self.pos
        self.expect("{", "'{' to start metadata")
        if not self.peek("{"):
            self.pos = at
            return [self.op_metadata()]
        out = [self.op_metadata()]
        while self.optional(","):
            out.append(self.op_metadata())
        self.expect("}", "'}' to end the metadata list")
        return out

    def op_metadata(self) -> tuple[tuple[str, object], ...]:
        self.expect("{", "'{' to start metadata")
        fields: dict[str, object] = {}
        while not self.peek("}"):
            self.optional(",")  # XLA takes a comma before each attribute, none after the last
            at = self.pos
            name = self.word()
            if not self.attribute(name) or name not in _METADATA:
                raise self.error(f"expected a metadata attribute ({'=, '.join(_METADATA)}=)", at)
            if name in fields:
                raise self.error(f"attribute {name} already exists", at)
            kind = _METADATA[name]
            if kind is str:
                fields[name] = self.quoted()
            elif kind is int:
                value = self.integer(name)
                if not -2**31 <= value < 2**31:
                    raise self.error(f"{name} does not fit in int32", at)
                fields[name] = value
            else:  # profile_type: a braced list of ProfileType values
                self.expect("{", "'{' to start profile_type")
                values = [] if self.peek("}") else self.ints("profile type")
                if any(v not in _PROFILE_TYPES for v in values):
                    raise self.error(f"expected profile types {sorted(_PROFILE_TYPES)}, got: {values}", at)
                self.expect("}", "'}' to end profile_type")
                fields[name] = tuple(values)
        self.expect("}", "'}' to end metadata")
        return tuple(fields.items())

    def quoted(self) -> str:
        """A string of XLA's lexer: in double or single quotes, with C escapes."""
        self.skip()
        quoted = _QUOTED.match(self.text, self.pos)
        if quoted is None:
            raise self.error("expected a string in quotes")
        end = quoted.end() - 1
        out, at = [], self.pos + 1
        for m in _ESCAPE.finditer(self.text, at, end):
            out.append(self.text[at: m.start()])
            simple, octal, hexa, u4, u8 = m.groups()
            if simple is None and octal is None and hexa is None and u4 is None and u8 is None:
                raise self.error("unknown escape sequence in the string", m.start())
            out.append(_ESCAPED[simple] if simple else chr(int(octal or hexa or u4 or u8, 8 if octal else 16) % 0x110000))
            at = m.end()
        out.append(self.text[at: end])
        self.pos = end + 1
        return "".join(out)

    def named(self, start: int) -> HloSharding:
        """XLA's mesh form: `mesh[axes] [, device_ids=(...)] , body` (commas optional)."""
        self.expect("[", "'[' after mesh")
        axes: list[MeshAxis] = []
        if not self.peek("]"):
            while True:
                at = self.pos
                name = self.quoted()
                self.expect("=", "'=' after axis name")
                size = self.integer("axis size")
                if size < 1:
                    raise self.error(f"axis size must be at least 1, got: {size}", at)
                axes.append(MeshAxis(name, size))
                if not self.optional(","):
                    break
        self.expect("]", "']' to end mesh axes")
        self.optional(",")
        ids: tuple[int, ...] = ()
        reshape: tuple[int, ...] = ()
        perm: tuple[int, ...] = ()
        ids_at = self.pos
        if self.attribute("device_ids"):
            self.expect("(", "'(' for device_ids")
            n = math.prod(a.size for a in axes)
            if self.optional("["):
                reshape = tuple(self.ints("iota dim"))
                self.expect("]")
                perm = tuple(range(len(reshape)))
                if len(reshape) > 1:
                    self.expect("T", "'T(' to start the iota transpose")
                    self.expect("(", "'T(' to start the iota transpose")
                    perm = tuple(self.ints("transpose dim"))
                    self.expect(")")
                if math.prod(reshape) != n or sorted(perm) != list(range(len(reshape))):
                    raise self.error(f"expected an iota of the mesh's {n} devices", ids_at)
                reshape, perm = _canonical_iota(reshape, perm)
                if len(perm) > 1:
                    check_devices(n, len(reshape))
                    grid = np.arange(n, dtype=np.int64).reshape(reshape).transpose(perm)
                    ids = tuple(grid.reshape(-1).tolist())
                else:
                    reshape = perm = ()
            else:
                ids = tuple(self.ints("device id"))
                if len(ids) != n:
                    raise self.error(f"expected {n} device_ids based on mesh axes, got {len(ids)}", ids_at)
                if list(ids) == list(range(n)):
                    raise self.error("a non-iota device assignment has the iota device id list", ids_at)
            self.expect(")", "')' to end device_ids")
            self.optional(",")
        message = mesh_verifier_error(axes, ids)
        if message:
            raise self.error(message, start)
        mesh = Mesh(tuple(axes), ids)
        every = tuple(AxisRef(a.name) for a in axes)
        dims: list[DimensionSharding] = []
        clauses = {"replicated": (), "unreduced": (), "manual": ()}
        body_at = self.pos
        metadata: list = []
        if self.keyword("replicated"):
            metadata = self.named_metadata()
        elif self.keyword("unreduced"):
            clauses["unreduced"] = every
            metadata = self.named_metadata()
        elif self.keyword("manual"):
            clauses["manual"] = every
            metadata = self.named_metadata()
        else:
            self.expect("[", "a list of dim shardings starting with '['")
            if not self.peek("]"):
                dims.append(self.dim(mesh))
                while self.optional(","):
                    dims.append(self.dim(mesh))
            self.expect("]", "']' to end the dim shardings")
            while self.optional(","):
                if self.attribute("metadata"):
                    metadata += self.metadata()
                    continue
                word = self.word()
                if word not in clauses:
                    raise self.error("expected replicated=, unreduced=, manual= or metadata=")
                self.pos += len(word)
                self.expect("=")
                self.expect("{")
                refs: list[AxisRef] = []
                if not self.peek("}"):
                    refs.append(self.axis_ref(mesh))
                    while self.optional(","):
                        refs.append(self.axis_ref(mesh))
                self.expect("}")
                clauses[word] = tuple(refs)
        named = TensorSharding(mesh, tuple(dims), clauses["replicated"], clauses["unreduced"])
        self._verify_named(named, mesh, clauses["manual"], body_at)
        return HloSharding("named", iota_reshape=reshape, iota_perm=perm, mesh=mesh, named=named,
                           manual_axes=clauses["manual"], metadata=tuple(metadata))

    def named_metadata(self) -> tuple:
        """`, metadata={...}` after a whole-mesh form of XLA's mesh sharding, if present."""
        if not self.optional(","):
            return ()
        if not self.attribute("metadata"):
            raise self.error("expected metadata= after ','")
        return tuple(self.metadata())

    def _verify_named(self, named: TensorSharding, mesh: Mesh, manual: tuple[AxisRef, ...], at: int) -> None:
        # XLA checks what Shardy's verifier does (and aborts jaxlib 0.10.2 on a violation); the
        # manual axes are one more list of the same kind, sharing no devices with the others.
        errors = sharding_errors(named, mesh=mesh)
        if not errors and manual:
            errors = tuple(e.replace("replicated axes", "manual axes")
                           for e in sharding_errors(TensorSharding(mesh, (), manual), mesh=mesh))
            used = list(named.axis_refs())
            errors += tuple(f"duplicate axis ref: {m}" for m in manual if any(overlaps(m, u) for u in used))
        if errors:
            raise self.error(errors[0], at)

    def dim(self, mesh: Mesh) -> DimensionSharding:
        self.expect("{")
        refs: list[AxisRef] = []
        is_closed = True
        if not self.peek("}"):
            while True:
                if self.optional("?"):
                    is_closed = False
                    if self.peek(","):
                        raise self.error("saw an axis ref after '?'")
                    break
                refs.append(self.axis_ref(mesh))
                if not self.optional(","):
                    break
        self.expect("}")
        return DimensionSharding(tuple(refs), is_closed)

    def axis_ref(self, mesh: Mesh) -> AxisRef:
        at = self.pos
        name = self.quoted()
        if not mesh.has_axis(name):  # XLA also takes an axis by its index
            if not (_DIGITS.fullmatch(name) and to_int(name) < len(mesh.axes)):
                raise self.error(f"axis {shown(name)} is not a valid axis name or index in mesh {mesh.body()}", at)
            name = mesh.axes[to_int(name)].name
        if not self.optional(":"):
            return AxisRef(name)
        self.expect("(", "'(' before pre_size in sub axis")
        pre = self.integer("pre-size")
        self.expect(")", "')' after pre_size in sub axis")
        size = self.integer("sub-axis size")
        if pre * size > _INT64_MAX:  # (Shardy's verifier wraps to int64 and may pass it; XLA aborts)
            raise self.error(f"sub-axis next pre-size {int_text(pre * size)} doesn't divide the size of the full "
                             f"axis {mesh.axis_size(name)}", at)
        return AxisRef.sub(name, pre, size)

    def tile_assignment(self) -> tuple[list[int], list[int], list[int], list[int]]:
        """`[dims]` then devices or an iota `<=[reshape]T(perm)`: (dims, devices, reshape, perm)."""
        self.expect("[")
        dims_at = self.pos
        dims = self.ints("tile dim")
        self.expect("]")
        if any(d < 0 for d in dims):
            raise self.error(f"expected non-negative tile dims, got: {dims}", dims_at)
        n = 1
        for d in dims:
            n *= d
            if n > _INT64_MAX:
                raise self.error(f"the tile dims {dims} hold more than 2**63-1 devices", dims_at)
        devices: list[int] = []
        reshape: list[int] = []
        perm: list[int] = []
        devices_at = self.pos
        if self.optional("<="):
            self.expect("[")
            reshape = self.ints("iota dim")
            self.expect("]")
            perm = list(range(len(reshape)))
            if len(reshape) > 1:  # XLA requires T(...) after an iota of several dims, reads none after one
                self.expect("T", "'T(' to start sharding devices iota_transpose_perm")
                self.expect("(", "'T(' to start sharding devices iota_transpose_perm")
                perm = self.ints("transpose dim")
                self.expect(")")
            if any(d < 0 for d in reshape) or math.prod(reshape) != n:
                raise self.error(f"expected the iota dims {reshape} to hold the {n} devices of tile dims {dims}",
                                 devices_at)
            if sorted(perm) != list(range(len(reshape))):
                raise self.error(f"expected T(...) to be a permutation of 0..{len(reshape) - 1}, got: {perm}",
                                 devices_at)
        else:
            devices = self.ints("device id")
            if len(devices) > 1 and len(devices) != n:
                raise self.error(f"expected {n} devices for tile dims {dims}, got {len(devices)}", devices_at)
            if any(d < 0 for d in devices):
                raise self.error(f"expected non-negative device ids, got: {min(devices)}", devices_at)
        return dims, devices, reshape, perm

    def subgroup_types(self) -> list[str]:
        subgroups: list[str] = []
        self.expect("{")
        if not self.peek("}"):
            while True:
                at = self.pos
                kind = self.word()
                if kind not in _SUBGROUPS:
                    raise self.error(f"expected a subgroup type ({', '.join(_SUBGROUPS)}), got: {shown(kind)}", at)
                self.pos += len(kind)
                subgroups.append(kind)
                if not self.optional(","):
                    break
        self.expect("}")
        return subgroups

    def tiled(self, start: int, dims, devices, reshape, perm, subgroups) -> HloSharding:
        if not reshape and len(devices) <= 1:
            raise self.error("non-maximal shardings must have more than one device assigned", start)
        if len(subgroups) > len(dims):
            raise self.error(f"expected at least {len(subgroups)} tile dims for {len(subgroups)} subgroups, "
                             f"got {len(dims)}", start)
        return HloSharding._tiled(dims, devices, reshape, perm, subgroups)


# -- sdy -> HloSharding ------------------------------------------------------------------------


def _manual_refs(manual_axes) -> tuple[AxisRef, ...]:
    if isinstance(manual_axes, ManualAxes):
        manual_axes = manual_axes.names
    return tuple(r if isinstance(r, AxisRef) else AxisRef(r) for r in as_tuple(manual_axes, "manual axes"))


def to_hlo_sharding(sharding: TensorSharding, mesh=None, *,
                    manual_axes: ManualAxes | Iterable[str | AxisRef] = ()) -> str:
    """The GSPMD HloSharding text XLA's Shardy export prints for `sharding`.

    `mesh` is the `Mesh` (or a `MeshTable`) the sharding names; not needed for an inlined mesh.
    `manual_axes` are the axes made manual by enclosing `sdy.manual_computation`s (names), or
    the `manual={...}` axis refs of XLA's mesh form, which may be sub-axes.
    Mesh `device_ids` give an explicit device list (each replication group sorted, as XLA's
    `PartialTile` does); otherwise the iota form, canonicalized.
    """
    return str(_to_hlo(sharding, mesh, _manual_refs(manual_axes)))


def _to_hlo(sharding: TensorSharding, mesh, manual: tuple[AxisRef, ...],
            device_iota: tuple[tuple[int, ...], tuple[int, ...]] | None = None, unit_subgroups: bool = False
            ) -> HloSharding:
    """`to_hlo_sharding`; `device_iota` is the mesh's device order as an iota `(reshape, perm)`
    (XLA's mesh form keeps one, and XLA's conversion keeps the result an iota where it can).
    `unit_subgroups`: as XLA's `V3ToV2Sharding`, a manual or unreduced subgroup dim is added
    whenever the sharding lists such axes, even of size 1, and `HloSharding::Subgroup` decides
    (`{mesh['a'=1], [{}], unreduced={'a'}}` is `{unreduced}`); the Shardy export keeps none."""
    sharding = as_sharding(sharding)
    m = resolve(sharding, mesh)
    if m.is_empty:
        return HloSharding("replicated")
    if m.is_maximal:
        place(sharding, m, None)
        return HloSharding("maximal", maximal_device=m.maximal_device_id)
    for ref in manual:
        if not m.has_axis(ref.name):
            raise ShardingError(f'unknown manual axis: "{ref.name}"')
    if manual and math.prod(r.size(m) for r in set(manual)) == m.total_size and not unit_subgroups:
        place(sharding, m, None)
        return HloSharding("manual")
    p = place(sharding, m, None, cuts=manual)
    order = [i for dims in p.dim_pieces for i in dims]
    tile_dims = list(p.num_tiles)
    subgroups = []
    used = set(order) | set(p.unreduced_pieces)
    manual_pieces = [i for i, pc in enumerate(p.pieces) if i not in used and any(
        r.name == pc.name and _ref_bounds(r, m)[0] <= pc.pre_size and pc.pre_size * pc.size <= _ref_bounds(r, m)[1]
        for r in manual)]
    for kind, group in (("manual", manual_pieces), ("unreduced", list(p.unreduced_pieces))):
        size = math.prod(p.pieces[i].size for i in group)
        if size > 1 or (unit_subgroups and (manual if kind == "manual" else sharding.unreduced_axes)):
            order += group
            tile_dims.append(size)
            subgroups.append(kind)
    rest = [i for i in range(len(p.pieces)) if i not in set(order)]
    order += rest
    replicas = math.prod(p.pieces[i].size for i in rest)
    if replicas > 1:
        tile_dims.append(replicas)
        subgroups.append("replicated")
    if subgroups in ([], ["replicated"]) and all(t == 1 for t in p.num_tiles) and not (
            unit_subgroups and (manual or sharding.unreduced_axes)):
        return HloSharding("replicated")  # also a one-device mesh (checked with jaxlib)
    if not m.device_ids:
        return HloSharding._tiled(tile_dims, (), p.piece_sizes, order, subgroups)
    if device_iota is not None:
        d = _Devices(p.piece_sizes, (), *device_iota).transpose(order)
        return HloSharding._tiled(tile_dims, d.explicit, d.reshape, d.perm, subgroups)
    # Size-1 pieces do not move devices; leaving them out keeps numpy under its 64 dims.
    big = [i for i in order if p.pieces[i].size > 1]
    sizes = [pc.size for pc in p.pieces if pc.size > 1]
    rank = sorted(big)
    check_devices(0, len(sizes))
    grid = np.asarray(m.device_ids, dtype=np.int64).reshape(sizes)
    devices = grid.transpose([rank.index(i) for i in big]).reshape(-1)
    return HloSharding._tiled(tile_dims, tuple(devices.tolist()), subgroups=subgroups)


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
        if a == 0 or b == 0 or (a % b and b % a):
            return None
        size = min(a, b)
        pieces.append((i, j, size))
        a //= size
        b //= size
    return pieces


_MAX_RANK = 64
"""The most dims of an array (numpy's and so JAX's limit)."""
_MAX_MESH_DEVICES = 2**31
"""The most devices of a mesh a tensor can be placed on: PjRt's global device ids are int32."""


def from_hlo_sharding(text: str | HloSharding, *, rank: int | None = None, num_devices: int | None = None,
                      mesh_name: str = "mesh") -> tuple[Mesh, TensorSharding]:
    """A Shardy mesh and sharding with the same placement as a GSPMD HloSharding.

    The mesh is factored from the tile assignment: an iota `<=[r...]T(p...)` gives one axis per
    reshape dim (`axis_0`, ...), cut into sub-axes where the tile dims need it, so no
    `device_ids` are needed; an explicit device list (or an iota that is no simple transpose)
    gives one axis per tile dim with `device_ids`. Replicated subgroups stay implicit;
    unreduced ones become `unreduced`. `{maximal device=N}` gives the maximal mesh
    `<[], device_ids=[N]>`. A tiled text that XLA collapses to `{replicated}` or `{unreduced}`
    (`{devices=[1,4]<=[4] last_tile_dim_replicate}`) keeps its rank and its devices, as XLA
    replicates over all of them. `rank` is required for a bare `{replicated}` (the text does
    not carry it) and checked otherwise; `num_devices` sizes the mesh of a bare `{replicated}`
    (else the empty mesh `<[]>`) and is checked otherwise. The sharding names `@mesh_name`.
    Arrays have at most 64 dims and meshes at most 2**31 devices (PjRt's device ids are int32).
    """
    hlo = text if isinstance(text, HloSharding) else HloSharding.parse(text)
    if not isinstance(mesh_name, str):
        raise ShardingError(f"expected a str mesh_name, got: {shown(mesh_name)}")
    if rank is not None:
        rank = as_int(rank, "rank", 0, _MAX_RANK)
    if num_devices is not None:
        num_devices = as_int(num_devices, "num_devices", 1, _MAX_MESH_DEVICES)
    if hlo.kind in ("tuple", "unknown"):
        raise ShardingError(f"expected a single known HloSharding (convert the elements of a tuple one by one), "
                            f"got: {hlo}")
    if hlo.kind == "manual" or "manual" in hlo.subgroups:
        raise ShardingError("a manual HloSharding is the inside of an sdy.manual_computation, not a tensor "
                            f"sharding: {hlo}")
    if hlo.kind in ("maximal", "maximal_mesh"):
        mesh = Mesh((), (hlo.maximal_device,))
        return mesh, TensorSharding(mesh_name, ())
    if hlo.kind == "named":  # XLA's mesh form is Shardy's sharding already
        if hlo.manual_axes:
            raise ShardingError(f"manual axes are the inside of an sdy.manual_computation, not a tensor sharding: {hlo}")
        named = hlo.named
        _check_size(hlo, named.rank, hlo.mesh.total_size)
        if rank is not None and named.rank and rank != named.rank:
            raise ShardingError(f"expected {named.rank} tensor dims in {hlo}, got rank={rank}")
        if num_devices is not None and num_devices != hlo.mesh.total_size:
            raise ShardingError(f"expected num_devices={hlo.mesh.total_size} for {hlo}, got {num_devices}")
        dims = named.dim_shardings
        if not dims and rank:  # `replicated`, `unreduced` and `[]` are printed for any rank
            dims = TensorSharding.replicated(mesh_name, rank).dim_shardings
        return hlo.mesh, TensorSharding(mesh_name, dims, named.replicated_axes, named.unreduced_axes)
    if hlo.kind in ("replicated", "unreduced"):
        given = hlo.uncollapsed
        if given is not None:  # the text's tile dims and devices, which XLA's value forgets
            _check_size(given, given.rank, given.num_devices)
            _check_devices(given)
            if rank is not None and rank != given.rank:
                raise ShardingError(f"expected {given.rank} tensor dims in {given} (tile dims minus subgroups), "
                                    f"got rank={rank}")
            if num_devices is not None and num_devices != given.num_devices:
                raise ShardingError(f"expected num_devices={given.num_devices} for {given}, got {num_devices}")
            rank, num_devices = given.rank, given.num_devices
        if rank is None:
            raise ShardingError(f"expected rank= for {hlo}: the text does not say the tensor's rank")
        if hlo.kind == "unreduced" and num_devices is None:
            raise ShardingError("expected num_devices= for {unreduced}: the text does not say how many devices "
                                "hold partial results")
        mesh = Mesh((MeshAxis("axis_0", num_devices),)) if num_devices and num_devices > 1 else Mesh()
        # (the partial result of one device is the value: nothing is unreduced)
        unreduced = (AxisRef("axis_0"),) if hlo.kind == "unreduced" and mesh.axes else ()
        return mesh, TensorSharding(mesh_name, TensorSharding.replicated(mesh_name, rank).dim_shardings, (), unreduced)
    _check_size(hlo, hlo.rank, hlo.num_devices)
    if rank is not None and rank != hlo.rank:
        raise ShardingError(f"expected {hlo.rank} tensor dims in {hlo} (tile dims minus subgroups), got rank={rank}")
    if num_devices is not None and num_devices != hlo.num_devices:
        raise ShardingError(f"expected num_devices={hlo.num_devices} for {hlo}, got {num_devices}")
    if hlo.num_devices == 0:
        raise ShardingError(f"{hlo} has no devices; a Shardy mesh has at least one")
    _check_devices(hlo)
    pieces = None
    if not hlo.device_list:
        reshape, perm = _canonical_iota(hlo.iota_reshape, hlo.iota_perm)
        pieces = _refine([reshape[k] for k in perm], list(hlo.tile_dims))
    if pieces is None:
        devices = hlo.device_list or tuple(hlo.tile_assignment().reshape(-1).tolist())
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


def _check_size(hlo: HloSharding, rank: int, devices: int) -> None:
    if rank > _MAX_RANK:
        raise ShardingError(f"{_short(hlo)} shards {rank} tensor dims; arrays have at most {_MAX_RANK}")
    if devices > _MAX_MESH_DEVICES:
        raise ShardingError(f"{_short(hlo)} holds {int_text(devices)} devices; a mesh has at most 2**31 "
                            "(PjRt's device ids are int32)")


def _check_devices(hlo: HloSharding) -> None:
    if hlo.device_list and sorted(hlo.device_list) != list(range(hlo.num_devices)):
        raise ShardingError(f"expected the devices of {_short(hlo)} to be 0..{hlo.num_devices - 1} once each")


def _short(hlo: HloSharding) -> str:
    text = str(hlo)
    return text if len(text) <= 200 else text[:160] + " ... " + text[-30:]


def _explicit(hlo: HloSharding, devices: tuple[int, ...], mesh_name: str) -> tuple[Mesh, TensorSharding]:
    axes, per_tile = [], []
    for size in hlo.tile_dims:
        if size > 1:
            axes.append(MeshAxis(f"axis_{len(axes)}", size))
            per_tile.append([AxisRef(axes[-1].name)])
        else:
            per_tile.append([])
    mesh = Mesh(tuple(axes), devices)
    return mesh, _sharding(hlo, per_tile, mesh, mesh_name)


def _sharding(hlo: HloSharding, per_tile: list[list[AxisRef]], mesh: Mesh, mesh_name: str) -> TensorSharding:
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
    explicit `replicated` axes need nothing in JAX (open dims stay closed: `device_put` refuses
    `P.UNCONSTRAINED`); unreduced axes become `P(..., unreduced=...)` on mesh axes of type
    `Explicit` (JAX allows them nowhere else), the other axes stay `Auto`. Needs jax imported.
    """
    sharding = as_sharding(sharding)
    m = resolve(sharding, mesh)
    if m.is_empty or m.is_maximal:
        raise ShardingError(f"mesh {m.body()} has no axes; a NamedSharding needs a mesh with axes "
                            "(use jax.sharding.SingleDeviceSharding for one device)")
    p = place(sharding, m, None)
    jax = sys.modules.get("jax")  # never imported here: jax stays optional, imports stay at import time
    if jax is None:
        raise ShardingError("to_named_sharding builds JAX objects: import jax first (pip install jax)")
    JaxMesh, NamedSharding, PartitionSpec = jax.sharding.Mesh, jax.sharding.NamedSharding, jax.sharding.PartitionSpec
    pool = jax.devices() if devices is None else as_tuple(devices, "jax devices")
    if max(m.devices) >= len(pool):
        raise ShardingError(f"mesh {m.body()} needs {max(m.devices) + 1} devices, found {len(pool)}")
    names = tuple(pc.name if pc.is_full else f"{pc.name}_{pc.pre_size}_{pc.size}" for pc in p.pieces)
    grid = np.empty(len(m.devices), dtype=object)
    grid[:] = [pool[i] for i in m.devices]
    unreduced = frozenset(names[i] for i in p.unreduced_pieces)
    if unreduced:
        kind = jax.sharding.AxisType
        types = tuple(kind.Explicit if n in unreduced else kind.Auto for n in names)
        jmesh = JaxMesh(grid.reshape(p.piece_sizes), names, axis_types=types)
    else:
        jmesh = JaxMesh(grid.reshape(p.piece_sizes), names)
    spec = []
    for dims in p.dim_pieces:
        refs = [names[i] for i in dims]
        spec.append(None if not refs else refs[0] if len(refs) == 1 else tuple(refs))
    return NamedSharding(jmesh, PartitionSpec(*spec, unreduced=unreduced))


# -- JAX -> sdy --------------------------------------------------------------------------------
# Duck-typed on JAX's public attributes: this module never imports jax.


def is_named_sharding(value) -> bool:
    """Whether `value` is a `jax.sharding.NamedSharding` (without importing jax)."""
    return type(value).__name__ == "NamedSharding" and hasattr(value, "spec") and hasattr(value, "mesh")


def mesh_from_jax(jax_mesh, logical_device_ids=None) -> Mesh:
    """The Shardy mesh of a `jax.sharding.Mesh` (or `AbstractMesh`): the same axis names and
    sizes, and the devices in the mesh's order as `device_ids`.

    JAX's device ids are kept when they are 0..N-1 (CPU devices, one host); otherwise (a mesh on
    part of the devices) each device gets its rank among the mesh's ids, in the same order. An
    `AbstractMesh` has no devices: iota. `logical_device_ids` (NamedSharding's private
    `_logical_device_ids`) reorder the positions as JAX's lowering does.
    """
    try:
        shape = tuple(jax_mesh.shape_tuple)
    except AttributeError:
        raise ShardingError(f"expected a jax.sharding.Mesh, got: {type(jax_mesh).__name__}") from None
    for name, _ in shape:
        if not isinstance(name, str):
            raise ShardingError(f"expected str mesh axis names (Shardy's axes are named by strings), got: {shown(name)}")
    axes = tuple(MeshAxis(name, size) for name, size in shape)
    count = math.prod(a.size for a in axes)
    check_devices(count)
    if type(jax_mesh).__name__ == "AbstractMesh":
        ids = list(range(count))
    else:
        ids = [device.id for device in jax_mesh.devices.flat]
        if sorted(ids) != list(range(len(ids))):
            rank = {i: r for r, i in enumerate(sorted(ids))}
            ids = [rank[i] for i in ids]
    if logical_device_ids is not None:
        logical = [as_int(i, "logical device id", 0, count - 1) for i in logical_device_ids]
        if sorted(logical) != list(range(count)):
            raise ShardingError(f"expected the logical device ids to be 0..{count - 1} once each, got: {logical}")
        ids = [ids[i] for i in logical]
    return Mesh(axes, tuple(ids))


def from_named_sharding(named_sharding, ndim: int, *, mesh_name: str = "mesh",
                        modify_wrt_axis_types: bool = False) -> tuple[Mesh, TensorSharding]:
    """The Shardy mesh and sharding of a `jax.sharding.NamedSharding` for an array of `ndim` dims,
    as JAX's `NamedSharding._to_sdy_sharding(ndim)` lowers it, with the mesh's device order (see
    `mesh_from_jax`) kept in `device_ids`.

    A `PartitionSpec` entry gives a dim's axes (`None`: none, `P.UNCONSTRAINED`: an open dim),
    missing entries are replicated dims, `unreduced` axes stay unreduced (JAX allows them on
    `Explicit` axes only) and `reduced` ones are replicated data. `modify_wrt_axis_types=True`
    is JAX's lowering inside `jit` on a mesh with an `Auto` axis: every dim open, and the
    `Explicit` axes the spec leaves unused explicitly `replicated`. The sharding names
    `@mesh_name`. Needs no jax import (it reads the objects' attributes).
    """
    if not is_named_sharding(named_sharding):
        raise ShardingError(f"expected a jax.sharding.NamedSharding, got: {type(named_sharding).__name__}")
    ndim = as_int(ndim, "ndim", 0, _MAX_RANK)
    if not isinstance(mesh_name, str):
        raise ShardingError(f"expected a str mesh_name, got: {shown(mesh_name)}")
    if not isinstance(modify_wrt_axis_types, bool):
        raise ShardingError(f"expected a bool modify_wrt_axis_types, got: {shown(modify_wrt_axis_types)}")
    jax_mesh, spec = named_sharding.mesh, named_sharding.spec
    mesh = mesh_from_jax(jax_mesh, getattr(named_sharding, "_logical_device_ids", None))
    entries = tuple(getattr(spec, "partitions", spec))
    if len(entries) > ndim:
        raise ShardingError(f"the PartitionSpec {spec} has {len(entries)} entries, more than the array's {ndim} dims")
    unconstrained = getattr(type(spec), "UNCONSTRAINED", None)
    dims = []
    for entry in entries + (None,) * (ndim - len(entries)):
        if entry is not None and entry is unconstrained:
            dims.append(DimensionSharding((), False))
            continue
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        dims.append(DimensionSharding(tuple(AxisRef(_axis_name(n)) for n in names)))
    unreduced = frozenset(getattr(spec, "unreduced", ()))
    replicated: frozenset = frozenset()
    types = tuple(getattr(t, "name", str(t)) for t in getattr(jax_mesh, "axis_types", ()))
    if modify_wrt_axis_types and "Auto" in types:
        dims = [DimensionSharding(d.axes, False) for d in dims]
        used = {r.name for d in dims for r in d.axes} | unreduced | frozenset(getattr(spec, "reduced", ()))
        replicated = frozenset(n for n, t in zip(mesh.axis_names, types) if t == "Explicit" and n not in used)
    in_mesh_order = [AxisRef(n) for n in mesh.axis_names]
    sharding = TensorSharding(mesh_name, tuple(dims), tuple(r for r in in_mesh_order if r.name in replicated),
                              tuple(r for r in in_mesh_order if r.name in unreduced))
    unknown = sorted(map(str, unreduced - set(mesh.axis_names)))
    if unknown:
        raise ShardingError(f"unreduced axes {unknown} are not axes of the mesh {mesh.body()}")
    errors = sharding_errors(sharding, mesh=mesh)
    if errors:
        raise ShardingError(f"{spec} on mesh {mesh.body()}: {errors[0]}")
    return mesh, sharding


def _axis_name(name) -> str:
    if not isinstance(name, str):
        raise ShardingError(f"expected str axis names in the PartitionSpec, got: {shown(name)}")
    return name


def to_sdy(value, ndim: int) -> TensorSharding:
    """A `TensorSharding` from one, from its text, or from a JAX `NamedSharding` for an array of
    `ndim` dims (its mesh inlined, so it carries its devices)."""
    if is_named_sharding(value):
        mesh, sharding = from_named_sharding(value, ndim)
        return dataclasses.replace(sharding, mesh_or_ref=mesh)
    return as_sharding(value)
