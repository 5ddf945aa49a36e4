"""Shardy's verifier for meshes and tensor shardings, with Shardy's messages, in Shardy's order.

`verify(sharding, mesh=..., shape=...)` raises `InvalidShardingError` with the message jaxlib's
Shardy prints after its location prefix (`'func.func' op arg 0 - `); `verify_mesh(mesh)` raises
`InvalidMeshError`. The checks follow `verifyTensorShardingAttr` (spec §3.3, rules T1-T20).
"""

from __future__ import annotations

import re
from typing import Sequence, Union

from .axes import AxisRef, is_sorted, mesh_sort_key
from ._mlir_lexer import to_int
from .errors import INT64_MAX, InvalidMeshError, InvalidShardingError, ShardingError, as_shape, as_tuple, shown
from .mesh import Mesh, MeshTable, symbol_name
from .mesh import mesh_verifier_error
from .tensor_sharding import TensorSharding, as_mesh, as_sharding

__all__ = ["verify", "verify_mesh", "sharding_errors", "NO_TYPE"]

NO_TYPE = "<<NULL TYPE>>"
"""`shape=NO_TYPE` verifies like Shardy does for a sharding without a value type (the single
sharding of an op with no results): a maximal or fully replicated sharding must have rank 0 and
no replicated or unreduced axes."""

Shape = Union[Sequence[Union[int, None]], str, None]
"""A tensor's global shape (ints; `verify` takes dynamic dims only in a type string), a type
string (`"tensor<8x?xf32>"`, or for non-tensor values `"!stablehlo.token"` and unranked tensors
`"tensor<*xf32>"`), `NO_TYPE`, or `None` (the type is unknown: only the checks that do not need
it). `sharding_errors` also takes `None` entries for dynamic dims."""


def _i64(x: int) -> int:
    # Shardy computes sizes in int64_t; keep its wrap-around so messages match.
    return ((x + 2**63) % 2**64) - 2**63


def verify_mesh(mesh: Mesh | str) -> None:
    """Raises `InvalidMeshError` for a mesh Shardy rejects (rules M1-M7). Takes its text too."""
    if isinstance(mesh, str):
        mesh = Mesh.parse(mesh)
    if not isinstance(mesh, Mesh):
        raise ShardingError(f"expected a Mesh or mesh text, got: {type(mesh).__name__}")
    message = mesh_verifier_error(mesh.axes, mesh.device_ids)
    if message:
        raise InvalidMeshError(message)


def verify(
    sharding: TensorSharding,
    *,
    mesh: Mesh | MeshTable,
    shape: Shape = None,
    check_divisibility: bool = False,
    manual_axes: Sequence[str] = (),
) -> None:
    """Raises `InvalidShardingError` (Shardy's message) unless Shardy accepts `sharding`.

    `sharding` is a `TensorSharding` or its text. `mesh` is the mesh a `@name` reference
    resolves to, or a `MeshTable` to look it up in (an inlined mesh is used as is). `shape` is
    the tensor's global shape or type (see `Shape`); `None` skips the checks against the type. `check_divisibility` is Shardy's `checkDivisibility`
    (off for func args, op results and constraints). `manual_axes` are the axes bound by
    enclosing `sdy.manual_computation` ops. The sharding and the mesh may be given as text.
    """
    sharding = as_sharding(sharding)
    if mesh is not None or not isinstance(sharding.mesh_or_ref, Mesh):
        mesh = as_mesh(mesh)  # mesh text parsed; a `@name` needs a Mesh or a MeshTable (an inlined mesh none)
    if not isinstance(check_divisibility, bool):
        raise ShardingError(f"expected a bool check_divisibility, got: {shown(check_divisibility)}")
    manual_axes = as_tuple(manual_axes, "manual axis names")
    if not all(isinstance(a, str) for a in manual_axes):
        raise ShardingError(f"expected manual axis names (a sequence of str), got: {shown(manual_axes)}")
    errors = sharding_errors(
        sharding, mesh=mesh, shape=_checked_shape(shape), check_divisibility=check_divisibility,
        manual_axes=manual_axes,
    )
    if errors:
        raise InvalidShardingError(errors[0])


_TENSOR_TYPE = re.compile(r"tensor<(?!\*)((?:(?:[0-9]+|\?)x)*)([^<>]+(?:<[^<>]*>)?)>")


def _checked_shape(shape: Shape) -> Shape:
    """A public `shape` argument: `None`, a type string (a ranked `tensor<...>` type becomes its
    dims, `?` a dynamic `None`), or a sequence of non-negative int64 dims."""
    if shape is None or (isinstance(shape, str) and shape == NO_TYPE):
        return shape
    if isinstance(shape, str):
        m = _TENSOR_TYPE.fullmatch(shape.strip())
        if m is None:
            return shape
        dims = [None if d == "?" else to_int(d) for d in m.group(1).split("x")[:-1]]
        if any(d is not None and d > INT64_MAX for d in dims):
            raise ShardingError(f"expected dims that fit in int64 in {shown(shape)}")
        return tuple(dims)
    return as_shape(shape)


def sharding_errors(
    sharding: TensorSharding,
    *,
    mesh: Mesh | MeshTable,
    shape: Shape = None,
    check_divisibility: bool = False,
    manual_axes: Sequence[str] = (),
) -> tuple[str, ...]:
    """The message Shardy reports for `sharding`, or `()` when it is valid.

    Shardy checks the sub-axes of each axis name in hash-map order, so when several axis
    names have bad sub-axes any of their messages may come first: all of them are returned
    (the first is the one `verify` raises).
    """
    sharding = as_sharding(sharding)
    if mesh is not None or not isinstance(sharding.mesh_or_ref, Mesh):
        mesh = as_mesh(mesh)
    if isinstance(sharding.mesh_or_ref, Mesh):
        resolved = sharding.mesh_or_ref
    elif isinstance(mesh, MeshTable):
        found = mesh.get(sharding.mesh_or_ref)
        if found is None:
            return (f"unknown mesh: {symbol_name(sharding.mesh_or_ref)}",)
        resolved = found
    else:
        resolved = mesh
    mesh_message = mesh_verifier_error(resolved.axes, resolved.device_ids)
    if mesh_message:
        raise InvalidMeshError(mesh_message)
    return _tensor_sharding_errors(sharding, resolved, shape, check_divisibility, manual_axes)


def _tensor_sharding_errors(
    sharding: TensorSharding, mesh: Mesh, shape: Shape, check_divisibility: bool, manual_axes: Sequence[str]
) -> tuple[str, ...]:
    rank0_only = (
        sharding.rank != 0 or sharding.replicated_axes or sharding.unreduced_axes
    )
    if mesh.is_maximal or (shape == NO_TYPE and sharding.is_fully_replicated):
        if rank0_only:
            return ("a maximal sharding can only have a sharding with rank 0 and no replicated or unreduced axes.",)
        return ()
    dims: Sequence[int | None] | None
    if isinstance(shape, str):
        if shape.startswith(("tensor<*", "memref<*")):
            return (f"only ranked tensors can have a sharding. type: '{shape}'",)
        if rank0_only:
            return (
                "non-shaped tensors can only have a sharding with rank 0 and no replicated or "
                f"unreduced axes. type: '{shape}', sharding: {sharding}",
            )
        return ()
    dims = None if shape is None else tuple(shape)
    if dims is not None and sharding.rank != len(dims):
        return (f"sharding doesn't match tensor rank: {sharding.rank} != {len(dims)}",)

    sizes = {a.name: a.size for a in mesh.axes}
    seen: set[AxisRef] = set()
    sub_axes: dict[str, list[AxisRef]] = {}

    for d, dim in enumerate(sharding.dim_shardings):
        if dim.priority is not None:
            if dim.priority < 0:
                return (f"dim {d} has a negative priority",)
            if dim.is_closed and not dim.axes:
                return (f"dim {d} is empty and closed but has a priority",)
        message = _axis_ref_list_error(dim.axes, sizes, seen, sub_axes)
        if message:
            return (message,)
        size = None if dims is None else dims[d]
        if check_divisibility and size is not None and size >= 0:
            sharded = 1
            for ref in dim.axes:
                sharded = _i64(sharded * (ref.sub_axis_info.size if ref.sub_axis_info else sizes[ref.name]))
            if sharded != 0 and size % sharded != 0:
                return (f"dim {d} with size {size} is not divisible by its sharded size {sharded}",)

    for kind, refs in (("replicated", sharding.replicated_axes), ("unreduced", sharding.unreduced_axes)):
        if not is_sorted(refs, mesh):
            return (f"{kind} axes are not ordered w.r.t. mesh",)
        message = _axis_ref_list_error(refs, sizes, seen, sub_axes)
        if message:
            return (message,)

    candidates = []
    for name, subs in sub_axes.items():
        message = _sub_axes_error(name, sorted(subs, key=lambda r: mesh_sort_key(r, mesh)), sizes[name], seen)
        if message:
            candidates.append(message)
    if candidates:
        return tuple(candidates)

    if manual_axes:
        bound = set(manual_axes)
        for ref in sharding.axis_refs():
            if ref.name in bound:
                return (f'operates on axis "{ref.name}" which is already bound by a parent sdy.manual_computation op',)
    return ()


def _axis_ref_list_error(
    refs: Sequence[AxisRef], sizes: dict[str, int], seen: set[AxisRef], sub_axes: dict[str, list[AxisRef]]
) -> str | None:
    """`verifyAxisRefList`: known names, no duplicates, no mergeable neighbouring sub-axes."""
    prev: AxisRef | None = None
    for ref in refs:
        if ref.name not in sizes:
            return f'unknown axis name: "{ref.name}"'
        if ref in seen:
            return f"duplicate axis ref: {ref}"
        seen.add(ref)
        info = ref.sub_axis_info
        if info is None:
            prev = ref
            continue
        sub_axes.setdefault(ref.name, []).append(ref)
        p = prev.sub_axis_info if prev is not None else None
        if p is not None and prev.name == ref.name and _i64(p.pre_size * p.size) == info.pre_size:  # type: ignore[union-attr]
            return f"two consecutive sub-axes can be merged: {prev}, {ref}"
        prev = ref
    return None


def _sub_axes_error(name: str, subs: list[AxisRef], axis_size: int, seen: set[AxisRef]) -> str | None:
    """`verifySubAxes` for one axis name (`subs` sorted in mesh order)."""
    if AxisRef(name) in seen:
        return f'both sub-axis and full-axis are used for axis name: "{name}"'
    prev_next = 1
    prev: AxisRef | None = None
    for ref in subs:
        info = ref.sub_axis_info
        assert info is not None
        if info.pre_size < 1:
            return f"sub-axis pre-size must be at least 1: {ref}"
        if info.size <= 1:
            return f"sub-axis sizes must be greater than 1: {ref}"
        next_pre = _i64(info.pre_size * info.size)
        if next_pre == 0 or axis_size % next_pre != 0:
            return f"sub-axis next pre-size {next_pre} doesn't divide the size of the full axis {axis_size}: {ref}"
        if info.size == axis_size:
            return f"sub-axis size is equal to the full axis size: {ref}"
        if prev_next > info.pre_size:
            return f"overlapping sub-axes: {prev}, {ref}"
        prev, prev_next = ref, next_pre
    return None
