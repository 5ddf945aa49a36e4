"""Shardy's op sharding rule registry (`op_sharding_rule_registry.cc`) as jaxlib 0.10.2 has it.

One module per op family defines the rule functions `(op, conservative) -> OpShardingRule |
None`; each op's `OpDef.sharding_rule` (the one op table, `sdy_passes.dialects`) names its
function as "module:function" (resolved on first use), or `NO_RULE` for the ops Shardy gives none on purpose (constants, tokens,
edges, ...). `create_op_sharding_rule(op)` asks the op's OpDef; `ShardableDataFlowOpInterface`
ops and terminators get none too; any other op without a rule gets none and Shardy's
once-per-process warning.
"""

from __future__ import annotations

from sdy_passes.attributes import OpShardingRule
from sdy_passes.errors import PassFailedError, SdyError, expect
from sdy_passes.dialects._base import facet, has_trait, lookup
from sdy_passes.ir import Operation
from sdy_passes.errors import emit_warning_once

__all__ = ["SHARDING_RULE", "create_op_sharding_rule", "get_or_create_sharding_rule"]

SHARDING_RULE = "sdy.sharding_rule"


def create_op_sharding_rule(op, conservative: bool = False) -> OpShardingRule | None:
    """The rule Shardy's registry builds for `op` (None: no rule)."""
    opdef = lookup(expect(op, (Operation,), "an Operation", "create_op_sharding_rule").name)
    name = opdef.sharding_rule if opdef is not None else None
    if name is not None:
        try:
            return facet(name)(op, conservative)
        except (IndexError, KeyError, ValueError, TypeError, ZeroDivisionError) as e:
            if isinstance(e, SdyError):
                raise
            # types and attributes that do not fit together (MLIR's verifier refuses such ops)
            raise PassFailedError(f"'{op.name}' op: cannot build its sharding rule from its "
                                  f"types and attributes ({type(e).__name__}: {e})", op.location) from None
    if not (has_trait(op, "ShardableDataFlowOpInterface") or has_trait(op, "Terminator")):
        emit_warning_once("op sharding rules: unknown op",
                          f"op '{op.name}' is unknown to SDY sharding rule registry", op.location)
    return None


def get_or_create_sharding_rule(op, conservative: bool = False, set_on_op: bool = False):
    """The op's `sdy.sharding_rule` if it has one, else the registry's (attached if asked)."""
    rule = op.attributes.get(SHARDING_RULE)
    if isinstance(rule, OpShardingRule):
        return rule
    rule = create_op_sharding_rule(op, conservative)
    if set_on_op and rule is not None:
        op.attributes[SHARDING_RULE] = rule
    return rule
