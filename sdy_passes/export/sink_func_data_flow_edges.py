"""`sdy-sink-func-data-flow-edges`: each `sdy.func_data_flow_edge`'s sharding moves to its
operand (a func argument or call result) and the edge goes.

Shardy's `export/sink_func_data_flow_edges.cc`, a func pass
(`builtin.module(func.func(sdy-sink-func-data-flow-edges))`). Edges are visited in pre-order.
The operand takes the edge's sharding; when the edge has none, an operand sharding becomes fully
open on its mesh. The edge's uses then take the operand.
"""

from __future__ import annotations

from sharding import TensorSharding

from sdy_passes.common._value_shardings import get_sharding, op_shardings, set_sharding
from sdy_passes.imports.add_func_data_flow_edges import FUNC_DATA_FLOW_EDGE
from sdy_passes.ir import Operation, erase_ops
from sdy_passes.pass_manager import FUNC, Pass


class SinkFuncDataFlowEdgesPass(Pass):
    name = "sdy-sink-func-data-flow-edges"
    summary = "Moves func data-flow edge shardings to func arguments and call results."
    anchor = FUNC

    def run(self, func: Operation) -> None:
        edges = []
        for edge in [op for op in func.walk() if op.name == FUNC_DATA_FLOW_EDGE]:
            operand = edge.operands[0]
            shardings = op_shardings(edge)
            current = get_sharding(operand)
            if shardings:
                set_sharding(operand, shardings[0])
            elif current is not None:
                set_sharding(operand, TensorSharding.replicated(
                    current.mesh_or_ref, current.rank, is_closed=False))
            edge.result.replace_all_uses_with(operand)
            edges.append(edge)
        erase_ops(edges)  # each block's op list rebuilt once
