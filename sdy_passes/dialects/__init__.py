"""Op definitions, one module per dialect, and the one table the parser, printer and verifier
look ops up in: `lookup("stablehlo.add")` gives its `OpDef`. Adding an op is one entry in its
dialect's `OPS`.
"""

from __future__ import annotations

from sdy_passes.dialects import arith, builtin, chlo, func, interpreter, sdy, sdy_collectives, stablehlo
from sdy_passes.dialects._base import OPS, OpDef, VerifyContext, lookup
from sdy_passes.dialects import sdy_attributes, stablehlo_attributes

__all__ = ["OPS", "OpDef", "VerifyContext", "lookup", "ATTRIBUTES", "DEFAULT_DIALECT", "JAXLIB_DIALECTS",
           "COMPLETE_DIALECTS"]

for _module in (builtin, func, sdy, sdy_collectives, stablehlo, chlo, arith, interpreter):
    for _opdef in _module.OPS:
        assert _opdef.name not in OPS, _opdef.name
        OPS[_opdef.name] = _opdef

ATTRIBUTES = {**stablehlo_attributes.ATTRIBUTES, **sdy_attributes.ATTRIBUTES}
"""Dialect attribute text prefix -> parser of the rest (given the MLIR parser)."""

DEFAULT_DIALECT = {"func.func": "func", "builtin.module": "builtin"}
"""Op -> the dialect MLIR tries for unprefixed op names in its regions (`OpAsmOpInterface::
getDefaultDialect`; `builtin` at top level). Other pretty-form ops set none; generic-form ops
keep their parent's."""

JAXLIB_DIALECTS = frozenset(
    "affine arith builtin cf chlo complex func gpu llvm math memref mhlo nvgpu nvvm scf sdy shape "
    "stablehlo tensor ub vector vhlo".split())
"""The dialects jaxlib 0.10.2's context registers (another prefix is `Dialect `d' not found`)."""

COMPLETE_DIALECTS = frozenset("builtin chlo func sdy stablehlo".split())
"""Dialects whose every op jaxlib 0.10.2 registers is in `OPS`: another name there is unknown."""
