"""The `arith` dialect: `arith.constant`, which Shardy's tests and some JAX code use."""

from __future__ import annotations

from sdy_passes.attributes import BoolAttr, IntegerAttr, IntegerType
from sdy_passes.dialects._base import op, parse_constant, print_constant


def _constant_names(op) -> tuple[str, ...] | None:
    """MLIR's `arith.constant` names: `%true`/`%false`, `%c3_i32`, `%c0` (index), `%cst`."""
    value = op.properties.get("value")
    if isinstance(value, BoolAttr):
        return ("true" if value.value else "false",)
    if isinstance(value, IntegerAttr):
        t = value.type
        return (f"c{value.value}_{t}" if isinstance(t, IntegerType) else f"c{value.value}",)
    return ("cst",)


OPS = (
    op("arith.constant", "0 1 0", "value!", syntax=(parse_constant, print_constant), traits="ConstantLike NoMemoryEffect",
       result_names=_constant_names, evaluator="movement:constant"),
)
