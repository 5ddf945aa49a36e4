"""`sdy-drop-sharding-rules`: every `sdy.sharding_rule` that is not `custom` goes (Shardy's
`export/drop_sharding_rules.cc`)."""

from __future__ import annotations

from sdy_passes.attributes import OpShardingRule
from sdy_passes.ir import Operation
from sdy_passes.pass_manager import FUNC, Pass

__all__ = ["DropShardingRulesPass"]

RULE = "sdy.sharding_rule"


class DropShardingRulesPass(Pass):
    name = "sdy-drop-sharding-rules"
    summary = "Removes the sdy.sharding_rule of every op whose rule is not custom."
    anchor = FUNC

    def run(self, func: Operation) -> None:
        for op in func.walk():
            rule = op.attributes.get(RULE)
            if isinstance(rule, OpShardingRule) and not rule.is_custom_rule:
                del op.attributes[RULE]
