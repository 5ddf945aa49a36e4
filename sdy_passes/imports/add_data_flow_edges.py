"""`sdy-add-data-flow-edges`: an `sdy.data_flow_edge` on every data-flow owner.

Shardy's `add_data_flow_edges.cc` (spec/sdy_passes.md §4). For each op implementing
`ShardableDataFlowOpInterface` (while, case, optimization_barrier, named and manual
computations), in post-order, each owner with a statically shaped tensor type (block arguments
of named/manual computation bodies, then results) gets an edge carrying its current sharding
(a manual computation's body argument sees its in-sharding without the manual axes); every
other use of the owner then uses the edge. Body-argument edges open the body in argument
order; result edges follow the op in result order. Func arguments and call results are left to
`sdy-add-func-data-flow-edges`.
"""

from __future__ import annotations

from sdy_passes.common._value_shardings import (
    DATA_FLOW_EDGE, DATA_FLOW_OPS, block_arg_edge_owners, get_sharding, is_static_shaped,
)
from sdy_passes.ir import BlockArgument, Module, Operation, Value, replace_ops
from sdy_passes.pass_manager import Pass


class AddDataFlowEdgesPass(Pass):
    name = "sdy-add-data-flow-edges"
    summary = "Inserts `sdy.data_flow_edge` ops for the owners of data-flow ops."

    def run(self, module: Module) -> None:
        placed: dict[Operation, list[Operation]] = {}
        for op in module.walk(post_order=True):
            if op.name in DATA_FLOW_OPS:
                add_edges(block_arg_edge_owners(op), placed)
                add_edges(op.results, placed)
        replace_ops(placed)


def add_edges(owners, placed: dict[Operation, list[Operation]]) -> None:
    """Shardy's `addDataFlowEdges`: owners visited last to first, each edge placed right after
    its owner, so the edges end up in owner order. Body-argument edges go in at once; result
    edges are recorded in `placed` (`op: [op, *edges]`) for one `ir.replace_ops` per pass, as
    inserting them op by op into a block of many data-flow ops would be quadratic."""
    edges: list[Operation] = []
    for owner in reversed(list(owners)):
        if is_static_shaped(owner.type):
            edge = _edge_for(owner)
            owner.replace_all_uses_except(edge.result, [edge])
            edges.append(edge)
    if not edges:
        return
    edges.reverse()
    owner = edges[0].operands[0]
    if isinstance(owner, BlockArgument):
        owner.owner.set_ops(edges + owner.owner.ops)
    else:
        placed[owner.owner] = [owner.owner, *edges]


def _edge_for(owner: Value) -> Operation:
    sharding = get_sharding(owner)
    location = owner.location if isinstance(owner, BlockArgument) else owner.owner.location
    return Operation.create(DATA_FLOW_EDGE, [owner], [owner.type],
                            properties={} if sharding is None else {"sharding": sharding},
                            location=location)
