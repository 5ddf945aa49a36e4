"""`sdy-populate-op-sharding-rules` (func pass): every op gets its `sdy.sharding_rule`.

Shardy's `populate_op_sharding_rules.cc`: ops are visited in post-order (nested ops first); an
op that has a rule keeps it, any other gets the registry's (`sdy_passes.op_sharding_rules`),
built with `conservative-propagation` as given.

Most rules depend only on the op's name, types and inherent attributes, so one run builds each
distinct rule once (`CONTEXT_DEPENDENT` ops, whose rules also look at neighbouring ops or a
region, are built every time).
"""

from __future__ import annotations

from sdy_passes.attributes import OpShardingRule
from sdy_passes.imports.constant_or_scalar_splitter import gc_paused
from sdy_passes.op_sharding_rules import SHARDING_RULE, create_op_sharding_rule
from sdy_passes.pass_manager import FUNC, Pass

CONTEXT_DEPENDENT = frozenset({
    "stablehlo.concatenate",          # are the operands slices?
    "stablehlo.dynamic_update_slice",  # are the start indices constants?
    "stablehlo.custom_call",          # X64Combine looks at its users; unknown targets warn
    "stablehlo.scatter",              # the update computation decides the batch factor kind
})


class PopulateOpShardingRulesPass(Pass):
    name = "sdy-populate-op-sharding-rules"
    summary = "Attaches to every op the sharding rule Shardy's registry gives it."
    anchor = FUNC
    options = {"conservative-propagation": False}

    def run(self, func) -> None:
        conservative = self.options["conservative-propagation"]
        cache: dict = {}
        with gc_paused():  # many small values: the cyclic GC would dominate on large funcs
            for op in func.walk(post_order=True):
                attributes = op.attributes
                if isinstance(attributes.get(SHARDING_RULE), OpShardingRule):
                    continue
                if op.name in CONTEXT_DEPENDENT:
                    rule = create_op_sharding_rule(op, conservative)
                else:
                    key = (op.name, tuple(v.type for v in op.operands),
                           tuple(r.type for r in op.results), tuple(op.properties.items()))
                    rule = cache.get(key, cache)
                    if rule is cache:
                        rule = cache[key] = create_op_sharding_rule(op, conservative)
                if rule is not None:
                    attributes[SHARDING_RULE] = rule
