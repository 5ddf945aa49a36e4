"""`sdy-remove-all-gather-reduce-scatter-for-cmv1`: around each dot, a single-use `sdy.all_gather`
operand or, failing that, the dot's only user when it is an `sdy.reduce_scatter` is removed; the
dot then takes the reduce-scatter's sharding (Shardy's `export/remove_ag_rs_for_cmv1.cc`)."""

from __future__ import annotations

from sdy_passes.common._value_shardings import SHARDING, get_sharding
from sdy_passes.ir import Operation, OpResult
from sdy_passes.pass_manager import FUNC, Pass
from sharding import TensorShardingPerValue

__all__ = ["RemoveAllGatherReduceScatterForCmv1Pass"]

DOTS = ("stablehlo.dot", "stablehlo.dot_general")


class RemoveAllGatherReduceScatterForCmv1Pass(Pass):
    name = "sdy-remove-all-gather-reduce-scatter-for-cmv1"
    summary = "Removes all-gathers feeding dots and reduce-scatters following them (CMV1)."
    anchor = FUNC

    def run(self, func: Operation) -> None:
        replace: list[Operation] = []
        for dot in func.walk(post_order=True):
            if dot.name not in DOTS:
                continue
            gathers = [v.owner for v in dot.operands if isinstance(v, OpResult)
                       and v.owner.name == "sdy.all_gather" and v.owner.results[0].has_one_use]
            replace.extend(gathers)
            if gathers or not dot.results[0].has_one_use:
                continue
            user = dot.results[0].uses[0].operation
            sharding = get_sharding(dot.results[0])
            if user.name == "sdy.reduce_scatter" and not (sharding and sharding.unreduced_axes):
                dot.attributes[SHARDING] = TensorShardingPerValue((get_sharding(user.results[0]),))
                replace.append(user)
        for op in replace:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
