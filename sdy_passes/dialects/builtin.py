"""The `builtin` dialect: `builtin.module`."""

from __future__ import annotations

from sdy_passes.attributes import StringAttr, print_attr_dict, print_symbol_name
from sdy_passes.dialects._base import NO_RULE, attr_dict_for, fail, op


def _parse_module(p, op, n):
    name = p.parse_optional_symbol()
    if name is not None:
        op.properties["sym_name"] = StringAttr(name)
    if p.parse_optional_keyword("attributes"):
        p.set_attrs(op, p.parse_attr_dict())
    op.add_region(p.parse_region(entry_args=[]))


def _print_module(pr, op, indent):
    attrs = attr_dict_for(op, ("sym_name",))
    region = op.regions[0] if len(op.regions) == 1 else None
    if attrs is None or region is None or len(region.blocks) != 1 or region.block.arguments or op.results:
        return False
    out = pr.out
    out.append("module")
    if "sym_name" in op.properties:
        out.append(" " + print_symbol_name(op.properties["sym_name"].value))
    if attrs:
        out.append(" attributes " + print_attr_dict(attrs))
    out.append(" ")
    pr.print_region(region, indent, print_entry_args=False, print_empty_block=False)
    return True


def _verify_module(op, ctx) -> None:
    """MLIR's `ModuleOp::verify`: discardable attributes (sorted, as MLIR keeps them) are dialect-prefixed."""
    for name in sorted(op.attributes):
        if "." not in name:
            fail(op, f"can only contain attributes with dialect-prefixed names, found: '{name}'")


OPS = (
    op("builtin.module", "0 0 1", "sym_name sym_visibility", syntax=(_parse_module, _print_module), verify=_verify_module,
       traits="IsolatedFromAbove SymbolTable NoTerminator", rule=NO_RULE),
    op("builtin.unrealized_conversion_cast", "* * *", traits="NoMemoryEffect"),  # generic form only
)
