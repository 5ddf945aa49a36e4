"""`sdy-insert-func-call-reshards`: each call takes its callee's result shardings, and a
`sdy.reshard` after it restores the sharding the call's users expect.

Shardy's `export/insert_func_call_reshards.cc` (`insertReshardsOnFuncResults`). For each call
(module order): the callee's result shardings (fully open where missing, on the mesh of the
first non-maximal one); with none, a call with `sdy.sharding` uses fully closed shardings like
its own, and a call without is left alone. A result whose sharding is not equivalent to the
callee's gets a reshard right after the call (so a later result's comes first) to its old
sharding, or fully closed when it had none; then the call's `sdy.sharding` becomes the callee's.
Equivalence is `isEquivalent` as jaxlib 0.10.2 has it (`sharding.reshard.equivalent_shardings`):
the same axes per dim on the same mesh, unreduced axes aside (jaxlib inserts no reshard for a
call sharded `[{}, {}]` of a func returning `[{}, {}], unreduced={"x"}`).
"""

from __future__ import annotations

from sharding import TensorSharding, TensorShardingPerValue
from sharding.reshard import equivalent_shardings

from sdy_passes.common._value_shardings import SHARDING, get_sharding
from sdy_passes.ir import Module, Operation, replace_ops
from sdy_passes.pass_manager import Pass
from sdy_passes.imports.propagate_sharding_from_func_to_call import callee, func_result_shardings


class InsertFuncCallReshardsPass(Pass):
    name = "sdy-insert-func-call-reshards"
    summary = "Reshards call results from their callee's result shardings to the call's."

    def run(self, module: Module) -> None:
        table = module.symbol_table()
        placed: dict[Operation, list[Operation]] = {}  # each block's op list is rebuilt once
        for call in [op for op in module.walk() if op.name == "func.call"]:
            shardings = func_result_shardings(callee(call, table), table)
            if shardings is None:
                own = call.attributes.get(SHARDING)
                if not isinstance(own, TensorShardingPerValue):
                    continue
                shardings = TensorShardingPerValue(tuple(
                    TensorSharding.replicated(s.mesh_or_ref, s.rank) for s in own.shardings))
            reshards = []
            for wanted, result in zip(shardings.shardings, call.results):
                current = get_sharding(result)
                if not equivalent_shardings(current, wanted):
                    if current is None:
                        current = TensorSharding.replicated(wanted.mesh_or_ref, wanted.rank)
                    reshard = _reshard(result, current, call.location)
                    reshards.insert(0, reshard)
                    result.replace_all_uses_except(reshard.result, [reshard])
            call.attributes[SHARDING] = shardings
            if reshards:
                placed[call] = [call, *reshards]
        replace_ops(placed)


def _reshard(value, sharding: TensorSharding, location):
    return Operation.create("sdy.reshard", [value], [value.type],
                            properties={"sharding": sharding}, location=location)
