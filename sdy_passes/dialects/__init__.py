"""Op definitions, one module per dialect, and the one table the parser, printer and verifier
look ops up in: `lookup("stablehlo.add")` gives its `OpDef`. Adding an op is one entry in its
dialect's `OPS`.
"""

from __future__ import annotations

from sdy_passes.dialects import arith, builtin, chlo, func, interpreter, sdy, sdy_collectives, stablehlo
from sdy_passes.dialects._base import OPS, OpDef, VerifyContext, lookup
from sdy_passes.dialects import sdy_attributes, stablehlo_attributes

__all__ = ["OPS", "OpDef", "VerifyContext", "lookup", "ATTRIBUTES", "DEFAULT_DIALECT"]

for _module in (builtin, func, sdy, sdy_collectives, stablehlo, chlo, arith, interpreter):
    for _opdef in _module.OPS:
        assert _opdef.name not in OPS, _opdef.name
        OPS[_opdef.name] = _opdef

ATTRIBUTES = {**stablehlo_attributes.ATTRIBUTES, **sdy_attributes.ATTRIBUTES}
"""Dialect attribute text prefix -> parser of the rest (given the MLIR parser)."""

DEFAULT_DIALECT = {"return": "func.return", "call": "func.call", "module": "builtin.module",
                   "func": "func.func"}
"""Short names MLIR resolves without a dialect prefix (in `func.func` bodies and at top level)."""
