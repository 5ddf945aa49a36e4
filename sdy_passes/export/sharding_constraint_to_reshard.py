"""`sdy-sharding-constraint-to-reshard`: each `sdy.sharding_constraint` becomes an `sdy.reshard`
to the same sharding, keeping the constraint's discardable attributes (Shardy's
`export/sharding_constraint_to_reshard.cc`)."""

from __future__ import annotations

from sdy_passes.ir import Operation
from sdy_passes.pass_manager import FUNC, Pass

__all__ = ["ShardingConstraintToReshardPass"]


class ShardingConstraintToReshardPass(Pass):
    name = "sdy-sharding-constraint-to-reshard"
    summary = "Replaces every sdy.sharding_constraint by an sdy.reshard."
    anchor = FUNC

    def run(self, func: Operation) -> None:
        for op in func.walk():
            if op.name == "sdy.sharding_constraint":
                reshard = Operation.create("sdy.reshard", op.operands, op.result_types,
                                           dict(op.properties), dict(op.attributes),
                                           location=op.location)
                op.replace_with(reshard)
                op.result.replace_all_uses_with(reshard.result)
                op.erase()
