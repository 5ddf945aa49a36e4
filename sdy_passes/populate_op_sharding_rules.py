"""`sdy-populate-op-sharding-rules` (func pass): every op gets its `sdy.sharding_rule`.

Shardy's `populate_op_sharding_rules.cc`: ops are visited in post-order (nested ops first); an
op that has a rule keeps it, any other gets the registry's (`sdy_passes.op_sharding_rules`),
built with `conservative-propagation` as given.
"""

from __future__ import annotations

from sdy_passes.op_sharding_rules import get_or_create_sharding_rule
from sdy_passes.pass_manager import FUNC, Pass


class PopulateOpShardingRulesPass(Pass):
    name = "sdy-populate-op-sharding-rules"
    summary = "Attaches to every op the sharding rule Shardy's registry gives it."
    anchor = FUNC
    options = {"conservative-propagation": False}

    def run(self, func) -> None:
        conservative = self.options["conservative-propagation"]
        for op in func.walk(post_order=True):
            get_or_create_sharding_rule(op, conservative, set_on_op=True)
