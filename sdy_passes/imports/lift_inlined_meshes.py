"""`sdy-lift-inlined-meshes`: one `sdy.mesh` op per distinct mesh, no inlined meshes.

Shardy's `lift_inlined_meshes.cc` (spec/sdy_passes.md §7):

1. Duplicate `sdy.mesh` ops (same axes and device ids) are erased; references to them are
   remapped to the first identical one.
2. Every sharding with an inlined mesh refers instead to an `sdy.mesh` with that mesh (an
   existing one, or a new one named `mesh`, `empty_mesh` or `maximal_mesh_<id>`, uniqued with one
   counter per run against the whole symbol table), inserted after the last kept mesh op.
3. The same for `#stablehlo.replica_group_mesh_axes` of collectives; an inlined
   `#stablehlo.mesh` gets its own `mesh*` op (not shared with an identical `sdy.mesh`).
4. Every `sdy.mesh` gets the discardable `stablehlo.mesh` dictionary.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import replace

from sharding import Mesh, MeshAxis, TensorSharding, TensorShardingPerValue

from sdy_passes.common import _value_shardings as vs
from sdy_passes.attributes import (
    ArrayAttr, DenseElementsAttr, DictionaryAttr, IntegerAttr, OpaqueAttr, RankedTensorType, I64,
    StringAttr, print_symbol_name,
)
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Module, Operation, symbol_name
from sdy_passes.pass_manager import Pass

_COLLECTIVES = ("stablehlo.all_gather", "stablehlo.all_reduce", "stablehlo.reduce_scatter",
                "stablehlo.all_to_all", "stablehlo.collective_broadcast")
_REPLICA_GROUPS_HEAD = re.compile(r"#stablehlo\.replica_group_mesh_axes\s*<\s*mesh\s*=\s*")
_SHLO_MESH_AXIS = re.compile(r'name\s*=\s*"((?:[^"\\]|\\.)*)"\s*,\s*size\s*=\s*(\d+)')
_BARE_SYMBOL = re.compile(r"@[A-Za-z_][A-Za-z0-9_$.]*")


class LiftInlinedMeshesPass(Pass):
    name = "sdy-lift-inlined-meshes"
    summary = "Lifts inlined meshes and deduplicates `sdy.mesh` ops."

    def run(self, module: Module) -> None:
        _Lifter(module).run()


class _Lifter:
    def __init__(self, module: Module):
        self.module = module
        self.table = module.symbol_table()
        self.counter = itertools.count()
        # ("ref", name) of an erased duplicate, a `Mesh`, or ("shlo", axes, ids) -> mesh name.
        self.new_name: dict[object, str] = {}
        self.anchor: Operation | None = None  # new mesh ops go right after this one

    def run(self) -> None:
        for op in list(self.module.meshes()):
            mesh, name = op.properties["mesh"], symbol_name(op)
            if mesh in self.new_name:
                self.new_name[("ref", name)] = self.new_name[mesh]
                self.table.erase(op)
            else:
                self.new_name[mesh] = name
                self.anchor = op
        self._transform_shardings()
        for kind in _COLLECTIVES:
            for op in self.module.walk(post_order=True):
                if op.name == kind:
                    self._lift_replica_groups(op)
        for op in self.module.meshes():
            if "stablehlo.mesh" not in op.attributes:
                op.attributes["stablehlo.mesh"] = _stablehlo_mesh_dict(op.properties["mesh"])

    # -- new mesh ops ---------------------------------------------------------------------------
    def _create_mesh(self, mesh: Mesh, base: str, location) -> str:
        op = Operation.create("sdy.mesh", properties={"mesh": mesh}, location=location)
        if self.anchor is not None:
            name = self.table.insert(op, base, self.counter, after=self.anchor)
        elif self.module.ops:
            name = self.table.insert(op, base, self.counter, before=self.module.ops[0])
        else:
            name = self.table.insert(op, base, self.counter)
        self.anchor = op
        return name

    def _lift(self, sharding: TensorSharding) -> TensorSharding:
        mesh_or_ref = sharding.mesh_or_ref
        key = ("ref", mesh_or_ref) if isinstance(mesh_or_ref, str) else mesh_or_ref
        name = self.new_name.get(key)
        if name is None and isinstance(mesh_or_ref, Mesh):
            if mesh_or_ref.is_maximal:
                base = f"maximal_mesh_{mesh_or_ref.maximal_device_id}"
            elif not mesh_or_ref.axes:
                base = "empty_mesh"
            else:
                base = "mesh"
            name = self.new_name[key] = self._create_mesh(mesh_or_ref, base, self.module.op.location)
        return sharding if name is None else replace(sharding, mesh_or_ref=name)

    # -- the sharding walk (Shardy's `transformShardings`) --------------------------------------
    def _lift_list(self, owner: dict, key: str) -> None:
        attr = owner.get(key)
        if isinstance(attr, TensorShardingPerValue) and attr.shardings:
            owner[key] = TensorShardingPerValue(tuple(map(self._lift, attr.shardings)))

    def _lift_single(self, owner: dict, key: str) -> None:
        attr = owner.get(key)
        if isinstance(attr, TensorSharding):
            owner[key] = self._lift(attr)

    def _transform_shardings(self) -> None:
        for op in self.module.walk():
            if op.name == "func.func":
                for key in ("arg_attrs", "res_attrs"):
                    self._lift_func_attrs(op, key)
            elif op.name in (vs.MANUAL_COMPUTATION, vs.NAMED_COMPUTATION):
                self._lift_list(op.properties, "in_shardings")
                self._lift_list(op.properties, "out_shardings")
            elif op.name in vs.SINGLE_SHARDING_OPS:
                self._lift_single(op.properties, "sharding")
            elif op.name in vs.COLLECTIVE_OPS:
                self._lift_single(op.properties, "out_sharding")
            else:
                self._lift_list(op.attributes, vs.SHARDING)

    def _lift_func_attrs(self, func: Operation, key: str) -> None:
        attrs = func.properties.get(key)
        if not isinstance(attrs, ArrayAttr):
            return
        entries = []
        for entry in attrs:
            sharding = entry.get(vs.SHARDING) if isinstance(entry, DictionaryAttr) else None
            if isinstance(sharding, TensorSharding):
                new = self._lift(sharding)
                if new != sharding:
                    entry = DictionaryAttr.from_dict({**entry.as_dict(), vs.SHARDING: new})
            entries.append(entry)
        func.properties[key] = ArrayAttr(tuple(entries))

    # -- replica groups -------------------------------------------------------------------------
    def _lift_replica_groups(self, op: Operation) -> None:
        where = op.properties if "replica_groups" in op.properties else op.attributes
        attr = where.get("replica_groups")
        if not isinstance(attr, OpaqueAttr):
            return
        head = _REPLICA_GROUPS_HEAD.match(attr.text)
        if head is None:
            return
        start = head.end()
        end = _mesh_end(attr.text, start, op)
        mesh_text = attr.text[start:end]
        if mesh_text.startswith("@"):
            name = self.new_name.get(("ref", _symbol(mesh_text)))
        else:
            axes = tuple(MeshAxis(_unquote(n), int(s)) for n, s in _SHLO_MESH_AXIS.findall(mesh_text))
            key = ("shlo", axes, mesh_text.partition("device_ids")[2].replace(" ", ""))
            name = self.new_name.get(key)
            if name is None:
                # An inlined stablehlo mesh becomes a plain `mesh*` op; its device ids are dropped.
                name = self.new_name[key] = self._create_mesh(Mesh(axes), "mesh", op.location)
        if name is not None:
            where["replica_groups"] = OpaqueAttr(
                attr.text[:start] + print_symbol_name(name) + attr.text[end:])


def _mesh_end(text: str, pos: int, op: Operation) -> int:
    """End of the mesh value (`@name` or `#stablehlo.mesh<...>`) starting at `pos`."""
    if text.startswith('@"', pos):
        i = pos + 2
        while i < len(text) and text[i] != '"':
            i += 2 if text[i] == "\\" else 1
        return i + 1
    if text.startswith("@", pos):
        m = _BARE_SYMBOL.match(text, pos)
        return m.end()
    depth, i, in_string = 0, pos, False
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise PassFailedError(f"cannot read the mesh of replica_groups: {text}", op.location)


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s)


def _symbol(text: str) -> str:
    return _unquote(text[2:-1]) if text.startswith('@"') else text[1:]


def _stablehlo_mesh_dict(mesh: Mesh) -> DictionaryAttr:
    """`{axes = [{name = "x", size = 2 : i64}], device_ids = dense<[1, 0]> : tensor<2xi64>}`."""
    axes = ArrayAttr(tuple(
        DictionaryAttr.from_dict({"name": StringAttr(a.name), "size": IntegerAttr(a.size, I64)})
        for a in mesh.axes))
    entries = {"axes": axes}
    ids = mesh.device_ids
    if ids:
        entries["device_ids"] = DenseElementsAttr.of_ints(list(ids), RankedTensorType((len(ids),), I64))
    return DictionaryAttr.from_dict(entries)
