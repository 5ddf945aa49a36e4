"""`sdy-constant-or-scalar-merger`: identical constants and scalar broadcasts of one region
become one (Shardy's `export/constant_or_scalar_merger.cc`, spec/export.md §2.2).

A func pass. One post-order walk keeps the first op of each key and replaces every later one:
a constant (`sdy.constant` or a `ConstantLike` op) is keyed by its whole attribute dictionary
(inherent and discardable, so `sdy.sharding` keeps differently sharded constants apart) and
its region; a `stablehlo.broadcast_in_dim` of a scalar also by its result type and operand.
"""

from __future__ import annotations

from sdy_passes.common._value_shardings import is_scalar
from sdy_passes.dialects._base import has_trait
from sdy_passes.ir import Operation, erase_ops
from sdy_passes.pass_manager import FUNC, Pass

__all__ = ["ConstantOrScalarMergerPass", "attr_dictionary"]


def attr_dictionary(op: Operation) -> tuple:
    """MLIR's `getAttrDictionary()` as a hashable value: inherent and discardable attributes,
    sorted by name."""
    return tuple(sorted({**op.properties, **op.attributes}.items()))


def _key(op: Operation):
    if op.name == "sdy.constant" or has_trait(op, "ConstantLike"):
        return ("constant", attr_dictionary(op), id(op.parent_region))
    if op.name == "stablehlo.broadcast_in_dim" and is_scalar(op.operands[0]):
        return ("broadcast", attr_dictionary(op), id(op.parent_region), op.results[0].type,
                id(op.operands[0]))
    return None


class ConstantOrScalarMergerPass(Pass):
    name = "sdy-constant-or-scalar-merger"
    summary = "Merges identical constants and scalar broadcasts within a region."
    anchor = FUNC

    def run(self, func: Operation) -> None:
        # ids are safe keys: every keyed op and region lives until the walk ends
        first: dict = {}
        merged = []
        for op in func.walk(post_order=True):
            key = _key(op)
            if key is None:
                continue
            kept = first.setdefault(key, op)
            if kept is not op:
                for old, new in zip(op.results, kept.results):
                    old.replace_all_uses_with(new)
                merged.append(op)
        erase_ops(merged)  # each block rebuilt once: erasing one by one is quadratic
