"""`symbol-dce`: MLIR's symbol dead-code elimination on the module's top-level symbols.

A private symbol (`sym_visibility = "private"`, e.g. a private func) is erased when no live op
refers to it. Live ops are the non-symbol ops and public symbols, and, transitively, every
symbol a live op refers to (`@name` anywhere in its attributes or those of ops nested in it).
"""

from __future__ import annotations

import re

from sharding import TensorSharding, TensorShardingPerValue

from sdy_passes.attributes import ArrayAttr, DictionaryAttr, OpaqueAttr, StringAttr, SymbolRefAttr
from sdy_passes.ir import Module, Operation, replace_ops, symbol_name
from sdy_passes.pass_manager import Pass

_OPAQUE_REF = re.compile(r'@(?:"((?:[^"\\]|\\.)*)"|([A-Za-z_.$][\w.$-]*))')


class SymbolDCEPass(Pass):
    name = "symbol-dce"
    summary = "Erases private symbols (funcs) nothing refers to."

    def run(self, module: Module) -> None:
        symbols = {name: op for op in module.ops if (name := symbol_name(op)) is not None}
        live: set[int] = set()
        worklist = [op for op in module.ops if not _is_private(op)]
        live.update(id(op) for op in worklist)
        while worklist:
            for name in _references(worklist.pop()):
                target = symbols.get(name)
                if target is not None and id(target) not in live:
                    live.add(id(target))
                    worklist.append(target)
        dead = [op for op in module.ops if _is_private(op) and id(op) not in live]
        replace_ops({op: () for op in dead})  # the module's op list rebuilt once
        for op in dead:
            op.erase(drop_uses=True)


def _is_private(op: Operation) -> bool:
    visibility = op.properties.get("sym_visibility")
    return (symbol_name(op) is not None and isinstance(visibility, StringAttr)
            and visibility.value == "private")


def _references(op: Operation) -> set[str]:
    """Names of the top-level symbols `op` (and ops nested in it) refer to."""
    names: set[str] = set()
    for nested in op.walk():
        for attrs in (nested.properties, nested.attributes):
            for key, attr in attrs.items():
                if type(attr) in _HOLDERS and key != "sym_name":  # (most attributes hold none)
                    _attr_references(attr, names)
    return names


def _attr_references(attr, names: set[str]) -> None:
    if isinstance(attr, SymbolRefAttr):
        names.add(attr.root)
    elif isinstance(attr, ArrayAttr):
        for element in attr:
            _attr_references(element, names)
    elif isinstance(attr, DictionaryAttr):
        for element in attr.as_dict().values():
            _attr_references(element, names)
    elif isinstance(attr, TensorSharding):
        if isinstance(attr.mesh_or_ref, str):
            names.add(attr.mesh_or_ref)
    elif isinstance(attr, TensorShardingPerValue):
        for sharding in attr.shardings:
            _attr_references(sharding, names)
    elif isinstance(attr, OpaqueAttr) and "@" in attr.text:
        for quoted, bare in _OPAQUE_REF.findall(attr.text):
            names.add(quoted or bare)


_HOLDERS = frozenset((SymbolRefAttr, ArrayAttr, DictionaryAttr, TensorSharding, TensorShardingPerValue, OpaqueAttr))
"""The attribute classes that can name a symbol (none has subclasses)."""
