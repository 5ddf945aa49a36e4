"""`sdy-export-named-computations`: each `sdy.named_computation` becomes a call of a new func.

Shardy's `export/export_named_computations.cc`. Named computations are visited in post-order
(nested ones first). Each takes the shardings of its data-flow edges as in/out shardings (when
an edge has one; the other owners get fully open ones), then its body moves into a new private
func appended to the module, named after the computation (uniqued `name_N`, one counter per run)
with `sdy.original_func_name`, the in-shardings on its arguments and the computation's
`execution_thread`. The edges on the func's arguments go. A `func.call` replaces the
computation, keeping its other discardable attributes, with the out-shardings as `sdy.sharding`;
at the end the edges on the calls' results go too. Func results get no shardings here
(`sdy-propagate-to-func-results` sets them).
"""

from __future__ import annotations

import itertools

from sharding import TensorShardingPerValue

from sdy_passes.common._value_shardings import (
    DATA_FLOW_EDGE, NAMED_COMPUTATION, SHARDING, block_arg_edge_owners,
)
from sdy_passes.attributes import (
    ArrayAttr, DictionaryAttr, FunctionType, StringAttr, SymbolRefAttr, TypeAttr,
)
from sdy_passes.imports.constant_or_scalar_splitter import ORIGINAL_FUNC_NAME
from sdy_passes.imports.import_func_calls import EXECUTION_THREAD
from sdy_passes.ir import Module, Operation, SymbolTable, erase_ops, replace_ops
from sdy_passes.pass_manager import Pass
from sdy_passes.export.sink_data_flow_edges import _edge_shardings


class ExportNamedComputationsPass(Pass):
    name = "sdy-export-named-computations"
    summary = "Turns named computations into calls of new private funcs."

    def run(self, module: Module) -> None:
        table = module.symbol_table()
        counter = itertools.count()
        calls: dict[Operation, list[Operation]] = {}
        doomed: list[Operation] = []
        for op in module.walk(post_order=True):
            if op.name == NAMED_COMPUTATION:
                calls[op] = [_export(op, table, counter, doomed)]
        # Ops are replaced and edges erased at the end, each block's op list rebuilt once.
        doomed.extend(_edges([r for call, in calls.values() for r in call.results]))
        replace_ops(calls)
        for op in calls:
            op.erase()
        erase_ops(doomed)


def _edges(values) -> list[Operation]:
    """Shardy's `removeDataFlowEdges`: a value used by an edge (its only use) takes over the
    edge's uses; the edges are returned, to be erased."""
    edges = []
    for value in values:
        if value.has_one_use and value.uses[0].operation.name == DATA_FLOW_EDGE:
            edge = value.uses[0].operation
            edge.result.replace_all_uses_with(value)
            edges.append(edge)
    return edges


def _export(op: Operation, table: SymbolTable, counter, doomed: list[Operation]) -> Operation:
    """The call replacing `op` (which keeps its place until the end of the pass)."""
    for key, owners in (("in_shardings", block_arg_edge_owners(op)), ("out_shardings", op.results)):
        shardings = _edge_shardings(owners)  # Shardy's getShardingsFromDataFlowEdges
        if shardings is not None:
            op.properties[key] = TensorShardingPerValue(shardings)
    in_shardings = op.properties.get("in_shardings")
    out_shardings = op.properties.get("out_shardings")
    name = op.properties["name"].value

    body = op.regions[0]
    op.regions.clear()
    body.parent = None
    arg_types = body.block.arg_types
    for block in body.blocks:
        ret = block.terminator
        block.append(Operation.create("func.return", ret.operands, location=ret.location))
        ret.erase()
    properties = {"sym_name": StringAttr(name),
                  "function_type": TypeAttr(FunctionType(arg_types, tuple(op.result_types))),
                  "sym_visibility": StringAttr("private")}
    attributes = {ORIGINAL_FUNC_NAME: StringAttr(name)}
    if EXECUTION_THREAD in op.attributes:
        attributes[EXECUTION_THREAD] = op.attributes[EXECUTION_THREAD]
    func = Operation.create("func.func", properties=properties, attributes=attributes,
                            regions=[body], location=op.location)
    doomed.extend(_edges(body.block.arguments))
    if in_shardings is not None and in_shardings.shardings:
        func.properties["arg_attrs"] = ArrayAttr(tuple(
            DictionaryAttr.from_dict({SHARDING: s}) for s in in_shardings.shardings))
    func_name = table.insert(func, name, counter)

    attributes = {k: v for k, v in op.attributes.items() if k != EXECUTION_THREAD}
    if out_shardings is not None:
        attributes[SHARDING] = out_shardings
    call = Operation.create("func.call", op.operands, op.result_types,
                            properties={"callee": SymbolRefAttr(func_name)},
                            attributes=attributes, location=op.location)
    for old, new in zip(op.results, call.results):
        old.replace_all_uses_with(new)
    return call
