"""Axis references (`"x"`, `"x":(2)4`) and the axis algebra the passes use.

A sub-axis `"x":(m)k` views axis `x` (size `n`) as `[m, k, n/(m*k)]` and takes the middle
part: `m` is its pre-size, `k` its size and `m*k` its next pre-size. A full axis behaves like
`"x":(1)n`. Functions that need the size of a full axis take the `Mesh`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from .errors import INT64_MAX, INT64_MIN, ShardingError, as_int, shown

if TYPE_CHECKING:
    from .mesh import Mesh

PARSERS: dict = {}
"""The text parsers behind the values' `parse` methods (`axis_ref`, `mesh`, `mesh_table`,
`tensor_sharding`, `tensor_sharding_per_value`, `manual_axes`), filled by `sharding.syntax` when
it loads: the parser sits above the values it builds, so no import circle and no import inside
a function (a child forked during an import would wait on the import lock forever)."""

__all__ = [
    "SubAxisInfo", "AxisRef", "quote", "mesh_sort_key", "sort_axis_refs", "overlaps", "contains",
    "can_coexist", "can_merge", "merge", "overlap", "prefix_without_overlap",
    "suffix_without_overlap", "sort_and_merge", "difference", "canonicalize",
]


def quote(name: str) -> str:
    """Quotes a string as MLIR prints it: printable ASCII as is, `\\\\`, other bytes `\\XX`."""
    if name.isascii() and name.isprintable() and '"' not in name and "\\" not in name:
        return f'"{name}"'
    out = []
    for b in name.encode("utf-8", "surrogateescape"):
        if b == 0x5C:
            out.append("\\\\")
        elif 0x20 <= b < 0x7F and b != 0x22:
            out.append(chr(b))
        else:
            out.append(f"\\{b:02X}")
    return '"' + "".join(out) + '"'


@dataclass(frozen=True, slots=True)
class SubAxisInfo:
    """How a sub-axis is cut from its full axis: `(pre_size)size`."""

    pre_size: int
    """Product of the sizes of the sub-axes major to this one."""
    size: int
    """Size of this sub-axis."""

    def __post_init__(self) -> None:
        pre, size = self.pre_size, self.size
        if not (type(pre) is int and type(size) is int and INT64_MIN <= pre <= INT64_MAX and INT64_MIN <= size <= INT64_MAX):
            object.__setattr__(self, "pre_size", as_int(pre, "sub-axis pre-size"))
            object.__setattr__(self, "size", as_int(size, "sub-axis size"))

    @property
    def next_pre_size(self) -> int:
        return self.pre_size * self.size

    def __str__(self) -> str:
        return f"({self.pre_size}){self.size}"


@dataclass(frozen=True, slots=True)
class AxisRef:
    """A full mesh axis (`"x"`) or a sub-axis of one (`"x":(2)4`)."""

    name: str
    """Name of the (full) mesh axis."""
    sub_axis_info: SubAxisInfo | None = None
    """`None` for the full axis."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ShardingError(f"expected a str axis name, got: {shown(self.name)}")
        if self.sub_axis_info is not None and not isinstance(self.sub_axis_info, SubAxisInfo):
            raise ShardingError(f"expected a SubAxisInfo or None, got: {shown(self.sub_axis_info)}")

    @classmethod
    def sub(cls, name: str, pre_size: int, size: int) -> AxisRef:
        """`AxisRef.sub("x", 2, 4)` is `"x":(2)4`."""
        return cls(name, SubAxisInfo(pre_size, size))

    @classmethod
    def parse(cls, text: str) -> AxisRef:
        """Parses `"x"` or `"x":(2)4`."""
        return PARSERS["axis_ref"](text)

    @property
    def is_sub_axis(self) -> bool:
        return self.sub_axis_info is not None

    @property
    def pre_size(self) -> int:
        """Pre-size of a sub-axis, 1 for a full axis."""
        return 1 if self.sub_axis_info is None else self.sub_axis_info.pre_size

    def size(self, mesh: Mesh) -> int:
        """Number of devices along this axis ref."""
        if self.sub_axis_info is not None:
            return self.sub_axis_info.size
        if not hasattr(mesh, "axis_size"):
            raise ShardingError(f"expected a Mesh, got: {type(mesh).__name__}")
        return mesh.axis_size(self.name)

    def next_pre_size(self, mesh: Mesh) -> int:
        """`pre_size * size` of a sub-axis, the axis size for a full axis."""
        if self.sub_axis_info is not None:
            return self.sub_axis_info.next_pre_size
        return mesh.axis_size(self.name)

    def __str__(self) -> str:
        if self.sub_axis_info is None:
            return quote(self.name)
        return f"{quote(self.name)}:{self.sub_axis_info}"


# -- ordering --------------------------------------------------------------------------------


def _same_name_key(ref: AxisRef) -> tuple[int, int, int]:
    # "a":(1)k < "a" < "a":(m)k (m > 1); sub-axes by (pre_size, size).
    info = ref.sub_axis_info
    if info is None:
        return (1, 0, 0)
    return (0 if info.pre_size <= 1 else 2, info.pre_size, info.size)


def mesh_sort_key(ref: AxisRef, mesh: Mesh) -> tuple[int, tuple[int, int, int]]:
    """Sort key of Shardy's mesh order: axis position in the mesh, then sub-axis order.

    Names that are not in the mesh sort after all mesh axes.
    """
    index = mesh.axis_index(ref.name)
    return (len(mesh.axes) if index is None else index, _same_name_key(ref))


def _less_same_name(a: AxisRef, b: AxisRef) -> bool:
    # Shardy's `AxisRefAttr::operator<` for one name. With a pre-size < 1 (invalid, but it
    # reaches the order check) a sub-axis and the full axis are unordered, as in Shardy.
    ia, ib = a.sub_axis_info, b.sub_axis_info
    if ia is None:
        return ib is not None and ib.pre_size > 1
    if ib is None:
        return ia.pre_size == 1
    return (ia.pre_size, ia.size) < (ib.pre_size, ib.size)


def mesh_less(a: AxisRef, b: AxisRef, mesh: Mesh) -> bool:
    """Shardy's `AxisRefAttr::getMeshComparator(mesh)(a, b)`.

    A name not in the mesh is greater than every mesh axis (Shardy's comparator stops at the
    first mesh axis it recognises); two different unknown names are unordered here (undefined
    behaviour in Shardy).
    """
    if a.name == b.name:
        return _less_same_name(a, b)
    ia, ib = mesh.axis_index(a.name), mesh.axis_index(b.name)
    if ia is None:
        return False
    return ib is None or ia < ib


def is_sorted(refs: Sequence[AxisRef], mesh: Mesh) -> bool:
    """Whether `refs` are in mesh order (as `llvm::is_sorted` with the mesh comparator)."""
    return not any(mesh_less(refs[i + 1], refs[i], mesh) for i in range(len(refs) - 1))


def sort_axis_refs(refs: Iterable[AxisRef], mesh: Mesh) -> tuple[AxisRef, ...]:
    return tuple(sorted(refs, key=lambda r: mesh_sort_key(r, mesh)))


# -- relations -------------------------------------------------------------------------------


def overlaps(a: AxisRef, b: AxisRef) -> bool:
    """Same axis and (one is full, or the `[pre, next_pre)` ranges intersect)."""
    if a.name != b.name:
        return False
    ia, ib = a.sub_axis_info, b.sub_axis_info
    if ia is None or ib is None:
        return True
    return ia.pre_size < ib.next_pre_size and ib.pre_size < ia.next_pre_size


def contains(a: AxisRef, b: AxisRef) -> bool:
    """Whether `a` equals `b` or can be split so that one piece is `b`."""
    if a.name != b.name:
        return False
    ia, ib = a.sub_axis_info, b.sub_axis_info
    if ia is None:
        return True
    if ib is None:
        return False
    return ia.pre_size <= ib.pre_size and ia.next_pre_size >= ib.next_pre_size


def _sub_bounds(a: AxisRef, b: AxisRef) -> tuple[int, int, int, int] | None:
    ia, ib = a.sub_axis_info, b.sub_axis_info
    if ia is None or ib is None:
        return None
    lo_pre, hi_pre = sorted((ia.pre_size, ib.pre_size))
    lo_next, hi_next = sorted((ia.next_pre_size, ib.next_pre_size))
    return lo_pre, hi_pre, lo_next, hi_next


def can_coexist(a: AxisRef, b: AxisRef) -> bool:
    """Whether both refs can be cut from one axis (overlapping and leftover parts valid)."""
    if a.name != b.name:
        return True
    bounds = _sub_bounds(a, b)
    if bounds is None:
        return True
    lo_pre, hi_pre, lo_next, hi_next = bounds
    if lo_next > hi_pre:
        return lo_next % hi_pre == 0 and hi_pre % lo_pre == 0 and hi_next % lo_next == 0
    return hi_pre % lo_next == 0


def overlap(a: AxisRef, b: AxisRef) -> AxisRef | None:
    """The part `a` and `b` share, or `None` (also when they cannot coexist)."""
    if a.name != b.name:
        return None
    if a.sub_axis_info is None:
        return b
    if b.sub_axis_info is None:
        return a
    lo_pre, hi_pre, lo_next, _ = _sub_bounds(a, b)  # type: ignore[misc]
    if lo_next <= hi_pre or not can_coexist(a, b):
        return None
    return AxisRef.sub(a.name, hi_pre, lo_next // hi_pre)


def prefix_without_overlap(a: AxisRef, b: AxisRef) -> AxisRef | None:
    """The largest major part of `a` that does not overlap `b`."""
    if not can_coexist(a, b):
        return None
    if not overlaps(a, b):
        return a
    if a.pre_size >= b.pre_size:
        return None
    return AxisRef.sub(a.name, a.pre_size, b.pre_size // a.pre_size)


def suffix_without_overlap(a: AxisRef, b: AxisRef, mesh: Mesh) -> AxisRef | None:
    """The largest minor part of `a` that does not overlap `b`."""
    if not can_coexist(a, b):
        return None
    if not overlaps(a, b):
        return a
    a_next, b_next = a.next_pre_size(mesh), b.next_pre_size(mesh)
    if a_next <= b_next:
        return None
    return AxisRef.sub(a.name, b_next, a_next // b_next)


def can_merge(a: AxisRef, b: AxisRef) -> bool:
    """Whether `a` then `b` are consecutive sub-axes of one axis (`a` major)."""
    ia, ib = a.sub_axis_info, b.sub_axis_info
    return a.name == b.name and ia is not None and ib is not None and ia.next_pre_size == ib.pre_size


def merge(a: AxisRef, b: AxisRef, mesh: Mesh) -> AxisRef:
    """`a` and `b` joined; the full axis when they cover it."""
    if not can_merge(a, b):
        raise ShardingError(f"cannot merge {a} and {b}: not consecutive sub-axes of one axis")
    size = a.sub_axis_info.size * b.sub_axis_info.size  # type: ignore[union-attr]
    if a.pre_size == 1 and size == mesh.axis_size(a.name):
        return AxisRef(a.name)
    return AxisRef.sub(a.name, a.pre_size, size)


def canonicalize(ref: AxisRef, mesh: Mesh) -> AxisRef:
    """`"x":(1)n` on an axis of size `n` is written `"x"`."""
    info = ref.sub_axis_info
    if info is not None and info.pre_size == 1 and info.size == mesh.axis_size(ref.name):
        return AxisRef(ref.name)
    return ref


def sort_and_merge(refs: Iterable[AxisRef], mesh: Mesh) -> tuple[AxisRef, ...]:
    """Sorts by mesh order and merges neighbouring consecutive sub-axes."""
    out: list[AxisRef] = []
    for ref in sort_axis_refs(refs, mesh):
        if out and can_merge(out[-1], ref):
            out[-1] = merge(out[-1], ref, mesh)
        else:
            out.append(ref)
    return tuple(out)


def difference(refs: Iterable[AxisRef], remove: Iterable[AxisRef], mesh: Mesh) -> tuple[AxisRef, ...]:
    """`refs` minus the devices `remove` covers; `"y"` minus `"y":(2)2` is `"y":(1)2, "y":(4)2`.

    `remove` must not overlap itself. Each ref of `refs` is cut around every ref of `remove` it
    overlaps (taken in mesh order); the pieces keep the order of `refs`.
    """
    ordered = sort_axis_refs(remove, mesh)
    out: list[AxisRef] = []
    for ref in refs:
        rest: AxisRef | None = ref
        for cut in ordered:
            if rest is None:
                break
            if not overlaps(rest, cut):
                continue
            before = prefix_without_overlap(rest, cut)
            if before is not None:
                out.append(canonicalize(before, mesh))
            rest = suffix_without_overlap(rest, cut, mesh)
        if rest is not None:
            out.append(canonicalize(rest, mesh))
    return tuple(out)
