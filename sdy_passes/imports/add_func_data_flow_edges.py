"""`sdy-add-func-data-flow-edges`: `sdy.func_data_flow_edge` on func arguments and call results.

Shardy's `add_func_data_flow_edges.cc`. The main func is the only func if there is one, else
`@main`. Every other func gets an edge per statically shaped argument at the start of its body
(at the func's location); every `func.call` gets one per statically shaped result, right after
it. Each edge carries the value's sharding in `sdy.sharding` and takes over its other uses.
"""

from __future__ import annotations

from sharding import TensorShardingPerValue

from sdy_passes.common._value_shardings import SHARDING, get_sharding, is_static_shaped
from sdy_passes.ir import Module, Operation, replace_ops
from sdy_passes.pass_manager import Pass
from sdy_passes.imports.propagate_sharding_from_func_to_call import main_func

FUNC_DATA_FLOW_EDGE = "sdy.func_data_flow_edge"


class AddFuncDataFlowEdgesPass(Pass):
    name = "sdy-add-func-data-flow-edges"
    summary = "Inserts `sdy.func_data_flow_edge` ops on func arguments and call results."

    def run(self, module: Module) -> None:
        main = main_func(module)
        for func in module.funcs():
            if func is main or not func.regions or func.regions[0].is_empty:
                continue
            block = func.regions[0].block
            edges = [_edge(arg, func.location) for arg in block.arguments if is_static_shaped(arg.type)]
            block.set_ops(edges + block.ops)
        placed: dict[Operation, list[Operation]] = {}  # each block's op list is rebuilt once
        for call in module.walk(post_order=True):
            if call.name == "func.call":
                placed[call] = [call, *(_edge(r, call.location) for r in call.results
                                        if is_static_shaped(r.type))]
        replace_ops(placed)


def _edge(value, location) -> Operation:
    sharding = get_sharding(value)
    edge = Operation.create(FUNC_DATA_FLOW_EDGE, [value], [value.type], location=location,
                            attributes={} if sharding is None
                            else {SHARDING: TensorShardingPerValue((sharding,))})
    value.replace_all_uses_except(edge.result, [edge])
    return edge
