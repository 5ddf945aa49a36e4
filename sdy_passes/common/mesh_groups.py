"""Device groups along mesh axes: the `replica_groups` a collective over (sub-)axes uses, as
dense device ids or as StableHLO's `#stablehlo.replica_group_mesh_axes<mesh = M, axes = [...]>`
(ReplicaGroupV3, what `sdy-convert-global-to-local{enable-rgv3=true}` emits)."""

from __future__ import annotations

import re

import numpy as np

from sharding import AxisRef, SubAxisInfo

from sdy_passes._sdy_syntax import ShardingParseError, parse_attribute

__all__ = ["device_coords", "sub_coordinate", "replica_groups", "mesh_axes_text", "parse_mesh_axes"]

MESH_AXES = "#stablehlo.replica_group_mesh_axes<"
_AXIS = re.compile(r'#sdy<axis_ref"((?:[^"\\]|\\.)*)"(?::\((\d+)\)(\d+))?>')


def device_coords(mesh) -> dict:
    """`{device id: {axis: coordinate}}` in the mesh's row-major order."""
    names, sizes = mesh.axis_names, mesh.shape
    return {int(d): dict(zip(names, (int(c) for c in np.unravel_index(p, sizes))))
            for p, d in enumerate(mesh.devices)}


def sub_coordinate(ref, coords, mesh) -> tuple[int, int]:
    """(coordinate, size) of a device along a (sub-)axis."""
    full = mesh.axis_size(ref.name)
    if ref.sub_axis_info is None:
        return coords[ref.name], full
    pre, size = ref.sub_axis_info.pre_size, ref.sub_axis_info.size
    return (coords[ref.name] // (full // (pre * size))) % size, size


def replica_groups(mesh, axes) -> np.ndarray:
    """Device ids grouped by the (sub-)axes `axes`: devices of a group differ only in those
    coordinates; members ordered by the mixed-radix index over `axes` (first major)."""
    groups: dict = {}
    for d, coords in device_coords(mesh).items():
        index, rest = 0, dict(coords)
        for ref in axes:
            c, size = sub_coordinate(ref, coords, mesh)
            index = index * size + c
            full = mesh.axis_size(ref.name)
            inner = full // (ref.sub_axis_info.pre_size * ref.sub_axis_info.size) if ref.sub_axis_info else 1
            rest[ref.name] = rest[ref.name] - c * inner  # the coordinate without this (sub-)axis
        groups.setdefault(tuple(sorted(rest.items())), {})[index] = d
    return np.array([[g[i] for i in sorted(g)] for g in groups.values()], np.int64)


def mesh_axes_text(mesh_or_ref, axes) -> str:
    """`#stablehlo.replica_group_mesh_axes<...>` of full axes (sub-axes have no such form)."""
    mesh = f"@{mesh_or_ref}" if isinstance(mesh_or_ref, str) else str(mesh_or_ref)
    refs = ", ".join(f'#sdy<axis_ref"{ref.name}">' for ref in axes)
    return f"{MESH_AXES}mesh = {mesh}, axes = [{refs}]>"


def parse_mesh_axes(text: str, lookup):
    """(mesh, axes) of a `#stablehlo.replica_group_mesh_axes<...>` text; `lookup(name)` gives
    the mesh of `@name`. None when the text is not one or cannot be read."""
    if not text.startswith(MESH_AXES + "mesh = "):
        return None
    pos = len(MESH_AXES) + len("mesh = ")
    if text.startswith("@", pos):
        m = re.compile(r'@("(?:[^"\\]|\\.)*"|[\w$.-]+)').match(text, pos)
        mesh, pos = lookup(m.group(1).strip('"')), m.end()
    else:
        try:
            mesh, pos = parse_attribute(text, pos)
        except ShardingParseError:
            return None
    rest = text[pos:]
    if mesh is None or not rest.startswith(", axes = ["):
        return None
    axes = [AxisRef(n, SubAxisInfo(int(p), int(s)) if p else None) for n, p, s in _AXIS.findall(rest)]
    return mesh, axes
