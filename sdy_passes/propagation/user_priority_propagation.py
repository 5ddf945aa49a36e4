"""`sdy-user-priority-propagate`: op-priority propagation once per user priority `pN`
(`user_priority_propagation.cc`, spec/propagation.md §4.5).

First every sharding (except those of values owned by a data-flow edge) is rewritten: dims with
priority 0 (or none) lose the `p0`; dims with a higher priority become closed and empty and
their axes move to `replicated` (sorted in mesh order). Op-priority propagation runs; then, for
each higher priority in ascending order, the dims of that priority get their axes back (leaving
`replicated`) and op-priority propagation runs again. With `module-dump-directory`, the module
before each later round is written there as `00.propagation_after_user_priority_<N>.mlir`
(Shardy's `saveModuleOp`, dump index 0 when the pass runs on its own).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from sharding import DimensionSharding, Mesh, TensorSharding
from sharding.axes import sort_axis_refs

from sdy_passes.common._value_shardings import (
    DATA_FLOW_OPS, MANUAL_COMPUTATION, NAMED_COMPUTATION, block_arg_edge_owners, data_flow_edge_of,
    func_arg_sharding, func_result_sharding, get_sharding, op_shardings, set_func_attr_sharding,
    set_sharding,
)
from sdy_passes.ir import Module, Operation, Value
from sdy_passes.propagation.op_priority_propagation import OpPriorityPropagationPass
from sdy_passes.printer import print_module
from sharding import TensorShardingPerValue

__all__ = ["UserPriorityPropagationPass"]


def _priority(dim: DimensionSharding) -> int:
    return dim.priority or 0


def _initialized(sharding: TensorSharding, mesh: Mesh) -> TensorSharding:
    dims, replicated = [], list(sharding.replicated_axes)
    for dim in sharding.dim_shardings:
        if _priority(dim) == 0:
            dims.append(replace(dim, priority=None))
        else:
            replicated.extend(dim.axes)
            dims.append(DimensionSharding((), True))
    return replace(sharding, dim_shardings=tuple(dims), replicated_axes=sort_axis_refs(replicated, mesh))


def _for_priority(current: TensorSharding, original: TensorSharding, priority: int) -> TensorSharding:
    dims, seen = list(current.dim_shardings), set()
    for i, orig in enumerate(original.dim_shardings):
        if _priority(orig) == priority:
            dims[i] = replace(orig, priority=None)
            seen.update(orig.axes)
    return replace(current, dim_shardings=tuple(dims),
                   replicated_axes=tuple(a for a in current.replicated_axes if a not in seen))


class _ValueRef:
    """Where a sharding the walk found lives, read and written as Shardy's `transformSharding`."""

    def __init__(self, value: Value | None = None, func: Operation | None = None, result: int = 0):
        self.value, self.func, self.result = value, func, result

    def get(self):
        if self.value is not None:
            return get_sharding(self.value)
        return func_result_sharding(self.func, self.result)

    def set(self, sharding: TensorSharding) -> None:
        if self.value is not None:
            set_sharding(self.value, sharding)
        else:
            count = len(self.func.properties["function_type"].type.results)
            set_func_attr_sharding(self.func, "res_attrs", self.result, count, sharding)


def _walk_shardings(module: Module, transform) -> None:
    """Shardy's `transformShardings`: every sharding in the module, in pre-order, replaced by
    `transform(sharding, ref)` (`ref` a `_ValueRef`)."""
    def per_value(shardings, values):
        values = list(values) or [None] * len(shardings)  # a maximal sharding of a result-less op
        return tuple(transform(s, _ValueRef(v)) for s, v in zip(shardings, values))

    for op in module.walk():
        if op.name == "func.func":
            block = op.regions[0].blocks[0]
            for i, arg in enumerate(block.arguments):
                s = func_arg_sharding(op, i)
                if s is not None and (new := transform(s, _ValueRef(arg))) != s:
                    set_func_attr_sharding(op, "arg_attrs", i, len(block.arguments), new)
            count = len(op.properties["function_type"].type.results)
            for i in range(count):
                s = func_result_sharding(op, i)
                if s is not None and (new := transform(s, _ValueRef(func=op, result=i))) != s:
                    set_func_attr_sharding(op, "res_attrs", i, count, new)
        elif op.name == MANUAL_COMPUTATION:
            body = op.regions[0].blocks[0].arguments
            for key, values in (("in_shardings", body), ("out_shardings", op.results)):
                shardings = op.properties[key].shardings
                if shardings:
                    op.properties[key] = TensorShardingPerValue(per_value(shardings, values))
        elif op.name in DATA_FLOW_OPS:
            if op.name == NAMED_COMPUTATION:
                for key, values in (("in_shardings", block_arg_edge_owners(op)), ("out_shardings", op.results)):
                    attr = op.properties.get(key)
                    if isinstance(attr, TensorShardingPerValue) and attr.shardings:
                        op.properties[key] = TensorShardingPerValue(per_value(attr.shardings, values))
            elif shardings := op_shardings(op):
                op.attributes["sdy.sharding"] = TensorShardingPerValue(per_value(shardings, op.results))
        elif len(op.results) == 1:
            s = get_sharding(op.result)
            if s is not None and (new := transform(s, _ValueRef(op.result))) != s:
                set_sharding(op.result, new)
        elif shardings := op_shardings(op):
            op.attributes["sdy.sharding"] = TensorShardingPerValue(per_value(shardings, op.results))


class UserPriorityPropagationPass(OpPriorityPropagationPass):
    name = "sdy-user-priority-propagate"
    summary = "Propagates shardings user priority by user priority (pN), then op priority."

    def propagate(self, module, groups, get_directions) -> None:
        meshes = {op.properties["sym_name"].value: op.properties["mesh"] for op in module.meshes()}
        references: dict[int, list[tuple[_ValueRef, TensorSharding]]] = {}

        def initialize(sharding: TensorSharding, ref: _ValueRef) -> TensorSharding:
            if ref.value is not None and data_flow_edge_of(ref.value) is not None:
                return sharding
            for priority in {_priority(d) for d in sharding.dim_shardings} - {0}:
                references.setdefault(priority, []).append((ref, sharding))
            mesh = sharding.mesh_or_ref if isinstance(sharding.mesh_or_ref, Mesh) else meshes[sharding.mesh_or_ref]
            return _initialized(sharding, mesh)

        _walk_shardings(module, initialize)
        super().propagate(module, groups, get_directions)
        previous = 0
        for priority in sorted(references):
            self._save(module, f"propagation_after_user_priority_{previous}")
            previous = priority
            for ref, original in references[priority]:
                current = ref.get()
                if current is not None:
                    new = _for_priority(current, original, priority)
                    if new != current:
                        ref.set(new)
            super().propagate(module, groups, get_directions)

    def _save(self, module: Module, name: str) -> None:
        """Shardy's saveModuleOp: a failed write is reported on stderr and the pass goes on."""
        directory = self.options["module-dump-directory"]
        if not directory:
            return
        path = os.path.join(directory, f"00.{name}.mlir")
        try:
            with open(path, "w") as f:
                f.write(print_module(module))
        except OSError as e:
            sys.stderr.write(f"error when writing file {path}: {e.strerror}\n")
