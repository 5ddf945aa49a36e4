"""`sdy-sink-data-flow-edges`: each data-flow edge's sharding moves to its owner and the edge goes
(`export/sink_data_flow_edges.cc`, spec/propagation.md §5.1).

A func pass (`builtin.module(func.func(sdy-sink-data-flow-edges))`). For each data-flow op, when any
of its block-argument (or result) owners has an edge with a sharding, the owners' shardings are
set together, owners without one getting a fully open sharding on the same mesh.
`sink-debug-sharding-origins` / `sink-debug-propagation-edge-sharding` also move the edges'
`sdy.sharding_origins` / `sdy.propagation_edges` to the owner, as `sdy.block_arg_*` and
`sdy.result_*` arrays (`source_sharding.save_data_flow_debug_info`).
"""

from __future__ import annotations

from sharding import TensorShardingPerValue

from sdy_passes.common._value_shardings import (
    DATA_FLOW_EDGE, DATA_FLOW_OPS, MANUAL_COMPUTATION, NAMED_COMPUTATION, _add_manual_axes,
    block_arg_edge_owners, data_flow_edge_of, open_sharding,
)
from sdy_passes.ir import Operation
from sdy_passes.pass_manager import FUNC, Pass
from sdy_passes.propagation.source_sharding import save_data_flow_debug_info

__all__ = ["SinkDataFlowEdgesPass"]


def _edge_shardings(owners):
    shardings, mesh = [], None
    for owner in owners:
        edge = data_flow_edge_of(owner)
        s = edge.properties.get("sharding") if edge is not None else None
        if s is not None and mesh is None:
            mesh = s.mesh_or_ref
        shardings.append(s)
    if mesh is None:
        return None
    return tuple(s if s is not None else open_sharding(mesh, o.type) for s, o in zip(shardings, owners))


def _sink(op: Operation, origins: bool, edges: bool) -> None:
    save_data_flow_debug_info(block_arg_edge_owners(op), op, origins, edges, "block_arg")
    save_data_flow_debug_info(op.results, op, origins, edges, "result")
    if op.name in (NAMED_COMPUTATION, MANUAL_COMPUTATION):
        shardings = _edge_shardings(block_arg_edge_owners(op))
        if shardings is not None:
            if op.name == MANUAL_COMPUTATION:
                outer = op.properties["in_shardings"].shardings
                manual = op.properties["manual_axes"].names
                shardings = tuple(_add_manual_axes(o, s, manual) for o, s in zip(outer, shardings))
            op.properties["in_shardings"] = TensorShardingPerValue(shardings)
        shardings = _edge_shardings(op.results)
        if shardings is not None:
            op.properties["out_shardings"] = TensorShardingPerValue(shardings)
        return
    shardings = _edge_shardings(op.results)
    if shardings is not None:
        op.attributes["sdy.sharding"] = TensorShardingPerValue(shardings)


class SinkDataFlowEdgesPass(Pass):
    name = "sdy-sink-data-flow-edges"
    summary = "Moves data-flow edge shardings to their owners and erases the edges."

    anchor = FUNC
    options = {"sink-debug-sharding-origins": False, "sink-debug-propagation-edge-sharding": False}

    def run(self, func: Operation) -> None:
        self._walk(func)

    def _walk(self, op: Operation) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in list(block.ops):
                    if inner.name == DATA_FLOW_EDGE:
                        inner.result.replace_all_uses_with(inner.operands[0])
                        inner.erase()
                        continue
                    if inner.name in DATA_FLOW_OPS:
                        _sink(inner, self.options["sink-debug-sharding-origins"],
                              self.options["sink-debug-propagation-edge-sharding"])
                    self._walk(inner)
