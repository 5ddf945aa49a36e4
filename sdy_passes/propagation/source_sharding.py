"""Propagation debugging: where each axis of a sharding came from (Shardy's
`propagation/debugging/source_sharding.{h,cc}`, spec/propagation.md §6).

`SourceShardingHandler(debug_sharding_origins, debug_propagation_edge_sharding)` is what
`sdy-apply-sharding-constraints` and the propagate passes run with their debug options:
`prepare(module)` seeds the origins (func arguments and results, sharding constraints, manual
computations) and names the constraints and manual computations (`sdy.sharding_origin_name`);
`record(...)` is called for every propagation step that changed a sharding and keeps, per
new axis, the operand/result it came from (an edge) and the user sharding it started at (an
origin); `save(module)` writes `sdy.sharding_origins` and `sdy.propagation_edges`.
`save_data_flow_debug_info` is `sdy-sink-data-flow-edges`' part (the edges' attributes move to
their owner as `sdy.block_arg_*` / `sdy.result_*` arrays).

With `trace=True` the handler also keeps, per (value, axis), the `Step` that first brought the
axis (op, factor, source value), which `sdy_passes.explain` follows back to the origin.
"""

from __future__ import annotations

from dataclasses import dataclass

from sharding import AxisRef, Mesh, TensorSharding
from sharding.axes import can_merge, contains, merge

from sdy_passes.common._value_shardings import (
    DATA_FLOW_EDGE, MANUAL_COMPUTATION, data_flow_edge_of, func_result_sharding, get_sharding,
    set_func_attr, shardable_value,
)
from sdy_passes.attributes import ArrayAttr, DictionaryAttr, StringAttr
from sdy_passes.dialects.sdy_attributes import (
    AxisToPropagationDetails, EdgeValueRef, PropagationEdges, PropagationOneStep,
)
from sdy_passes.ir import BlockArgument, Module, Operation, Value
from sdy_passes.propagation.sharding_projection import (
    FactorSharding, PrefixStatus, ShardingProjection, TensorFactorShardings, is_axis_list_prefix_of,
)

__all__ = ["OriginSharding", "UNKNOWN", "PropagationEdge", "Step", "SourceShardingHandler",
           "save_data_flow_debug_info", "SHARDING_ORIGINS", "PROPAGATION_EDGES",
           "SHARDING_ORIGIN_NAME"]

SHARDING_ORIGINS = "sdy.sharding_origins"
PROPAGATION_EDGES = "sdy.propagation_edges"
SHARDING_ORIGIN_NAME = "sdy.sharding_origin_name"
CONSTRAINT = "sdy.sharding_constraint"

INPUT, OUTPUT, CONSTRAINT_ORIGIN, MC_INPUT, MC_OUTPUT = "input", "output", "constraint", "mc_input", "mc_output"


@dataclass(frozen=True, slots=True)
class OriginSharding:
    """A user sharding an axis started at: func argument / result `index`, constraint
    `source_id`, or manual computation `source_id`'s in/out sharding `index`."""

    kind: str
    index: int
    source_id: int = 0

    def __str__(self) -> str:
        if self.kind == CONSTRAINT_ORIGIN:
            return f"constraint_{self.source_id}"
        if self.kind in (MC_INPUT, MC_OUTPUT):
            return f"mc_{self.source_id}_{self.kind[3:]}: {self.index}"
        return f"{self.kind}: {self.index}"


UNKNOWN = OriginSharding("", 0)
"""The origin of an axis no user sharding gave (an op's own `sdy.sharding`): jaxlib's lookup
has no entry, reads past its map, and prints `": 0"` (seen on every such module tried)."""


@dataclass(frozen=True, slots=True)
class PropagationEdge:
    """In one step, `source` (operand/result of the op) brought an axis to `target`."""

    source: EdgeValueRef
    target: EdgeValueRef
    step: int


@dataclass(frozen=True, slots=True)
class Step:
    """What first gave `target` an axis (kept with `trace=True`): propagation step `edge.step`
    through `op`, from `source` (dim `source_dim`) to `target` (dim `target_dim`) along factor
    `factor` (of size `factor_size`) of the rule it propagated with."""

    op: Operation
    edge: PropagationEdge
    factor: int
    factor_size: int
    source: Value
    target: Value
    source_dim: int
    target_dim: int


def _axis_key(axis: AxisRef):
    """Shardy's `AxisRefAttr::operator<`: by name, then the full axis sorts after sub-axes of
    pre-size 1 and before those of larger pre-size."""
    info = axis.sub_axis_info
    return (axis.name, (1, float("inf")) if info is None else (info.pre_size, info.size))


def _origin_key(axis: AxisRef) -> str:
    return str(axis).replace('"', "")


def _find_source(new_axes, factor: int, tensors) -> int | None:
    """The first tensor whose old axes along `factor` start with `new_axes`."""
    for i, tensor in enumerate(tensors):
        fs = tensor.factors.get(factor)
        if fs is not None and is_axis_list_prefix_of(new_axes, fs.axes) is not PrefixStatus.NOT_A_PREFIX:
            return i
    return None


def _new_axes_per_tensor(old: ShardingProjection, new: ShardingProjection, rule, mesh: Mesh, step: int):
    """Shardy's `createSourceMap`: per operand and result, new axis -> (edge, factor, dim)."""
    out = ([{} for _ in old.operands], [{} for _ in old.results])
    for kind, olds, news, mappings, side in (
            ("operand", old.operands, new.operands, rule.operand_mappings, out[0]),
            ("result", old.results, new.results, rule.result_mappings, out[1])):
        for index, (old_t, new_t) in enumerate(zip(olds, news)):
            found = side[index]
            for dim, factor_indices in enumerate(mappings[index]):
                previous = None
                for factor in factor_indices:
                    old_axes, new_axes = old_t.factors[factor].axes, new_t.factors[factor].axes
                    if old_axes == new_axes or not new_axes:
                        continue
                    last = new_axes[-1]
                    if previous is not None and can_merge(previous, last):
                        found.pop(previous, None)
                        last = merge(previous, last, mesh)
                    previous = new_axes[-1]
                    introduced = [*new_axes[:-1], last]
                    source = _find_source(new_axes, factor, old.operands)
                    source_kind = "operand"
                    if source is None:
                        source, source_kind = _find_source(new_axes, factor, old.results), "result"
                    if source is None:
                        continue
                    edge = PropagationEdge(EdgeValueRef(source_kind, source), EdgeValueRef(kind, index), step)
                    k = len(old_axes) - 1
                    if old_axes and old_axes[k] != introduced[k]:
                        found.setdefault(introduced[k], (edge, factor, dim))
                    for axis in introduced[len(old_axes):]:
                        found.setdefault(axis, (edge, factor, dim))
    return out


def copy_projection(projection: ShardingProjection) -> ShardingProjection:
    """A copy whose factor shardings the strategies' in-place expansion leaves alone."""
    def tensor(t: TensorFactorShardings) -> TensorFactorShardings:
        factors = {f: FactorSharding(list(fs.axes), fs.is_closed, fs.is_minor_most, list(fs.overflow_axes))
                   for f, fs in t.factors.items()}
        return TensorFactorShardings(factors, t.replicated_axes, t.unreduced_axes)
    return ShardingProjection([tensor(t) for t in projection.operands], [tensor(t) for t in projection.results])


class SourceShardingHandler:
    """One pass run's debug records (Shardy's `ShardingDebugMappings` and handler)."""

    def __init__(self, debug_sharding_origins: bool, debug_propagation_edge_sharding: bool,
                 trace: bool = False):
        self.origins_on = debug_sharding_origins
        self.edges_on = debug_propagation_edge_sharding
        self.origins: dict[Value, dict[AxisRef, OriginSharding]] = {}
        self.op_edges: dict[Operation, dict[AxisRef, list[PropagationEdge]]] = {}
        self.func_result_edges: dict[Operation, list[dict[AxisRef, list[PropagationEdge]]]] = {}
        self.trace: dict[tuple[Value, AxisRef], Step] | None = {} if trace else None
        self.step = 0

    @property
    def enabled(self) -> bool:
        return self.origins_on or self.edges_on

    # -- before the pass ---------------------------------------------------------------------
    def prepare(self, module: Module) -> None:
        steps = [s.step_index for op in module.walk()
                 if isinstance(e := op.attributes.get(PROPAGATION_EDGES), PropagationEdges) for s in e.steps]
        self.step = max(steps, default=-1) + 1
        if self.origins_on:
            self._seed_origins(module)
        if self.edges_on:
            for func in module.funcs():
                count = len(func.properties["function_type"].type.results)
                self.func_result_edges[func] = [{} for _ in range(count)]

    def _seed(self, sharding: TensorSharding | None, origin: OriginSharding, value: Value | None) -> None:
        value = shardable_value(value) if value is not None else None
        if sharding is None or value is None:
            return
        for dim in sharding.dim_shardings:
            for axis in dim.axes:
                self.origins.setdefault(value, {}).setdefault(axis, origin)

    def _seed_origins(self, module: Module) -> None:
        """`prepareShardingOriginsHandler`: constraints, then manual computations, then funcs
        (the first origin seeded for an axis of a value wins)."""
        walk = list(module.walk(post_order=True))
        constraints = [op for op in walk if op.name == CONSTRAINT]
        for k, op in enumerate(constraints):
            origin = OriginSharding(CONSTRAINT_ORIGIN, 0, k)
            self._seed(op.properties["sharding"], origin, op.result)
            op.attributes[SHARDING_ORIGIN_NAME] = StringAttr(str(origin))
            self._seed(get_sharding(op.operands[0]), origin, op.operands[0])
        manual = [op for op in walk if op.name == MANUAL_COMPUTATION]
        for k, op in enumerate(manual):
            args = op.regions[0].blocks[0].arguments
            for i, sharding in enumerate(op.properties["in_shardings"].shardings):
                edge = data_flow_edge_of(args[i]) if i < len(args) else None
                if edge is None:  # no data-flow edges added (jaxlib asserts there is one)
                    continue
                origin = OriginSharding(MC_INPUT, i, k)
                self._seed(sharding, origin, edge.result)
                self._seed(get_sharding(op.operands[i]), origin, op.operands[i])
            for i, sharding in enumerate(op.properties["out_shardings"].shardings):
                edge = data_flow_edge_of(op.results[i]) if i < len(op.results) else None
                if edge is not None:
                    self._seed(sharding, OriginSharding(MC_OUTPUT, i, k), edge.result)
            op.attributes[SHARDING_ORIGIN_NAME] = StringAttr(f"mc_{k}")
        for func in module.funcs():
            block = func.regions[0].blocks[0]
            for arg in block.arguments:
                self._seed(get_sharding(arg), OriginSharding(INPUT, arg.index), arg)
            terminator = block.terminator
            if terminator is not None and terminator.name == "func.return":
                for i, value in enumerate(terminator.operands):
                    self._seed(func_result_sharding(func, i), OriginSharding(OUTPUT, i), value)

    # -- during the pass ---------------------------------------------------------------------
    def record(self, op: Operation, operands, results, mesh: Mesh, rule,
               old: ShardingProjection, new: ShardingProjection) -> None:
        """A step through `op` (`operands`/`results`: its values, as propagated) changed a
        sharding: `old` and `new` are the projections before and after."""
        new_operands, new_results = _new_axes_per_tensor(old, new, rule, mesh, self.step)
        self.step += 1
        # A func's "result" is its result sharding, not a value: nothing to trace there.
        for values, per_tensor, traced in ((operands, new_operands, True),
                                           (results, new_results, op.name != "func.func")):
            for i, value in enumerate(values):
                for axis, (edge, factor, dim) in per_tensor[i].items():
                    source = (operands if edge.source.type == "operand" else results)[edge.source.index]
                    if self.edges_on:
                        edges = (self.func_result_edges[op][i] if op.name == "func.func"
                                 else self.op_edges.setdefault(op, {}))
                        edges.setdefault(axis, []).append(edge)
                    target = shardable_value(value)
                    if self.origins_on and target is not None:
                        self.origins.setdefault(target, {}).setdefault(axis, self.origin_of(source, axis))
                    if traced and self.trace is not None and target is not None and (target, axis) not in self.trace:
                        mapping = (rule.operand_mappings if edge.source.type == "operand"
                                   else rule.result_mappings)[edge.source.index]
                        source_dim = next(d for d, fs in enumerate(mapping) if factor in fs)
                        self.trace[target, axis] = Step(op, edge, factor, rule.factor_sizes[factor],
                                                        source, value, source_dim, dim)

    def origin_of(self, value: Value, axis: AxisRef) -> OriginSharding:
        """`lookUpValueOriginSharding`: the axis's origin on `value`, else that of an axis
        containing it or contained in it (split or merged by a reshape), else `UNKNOWN`."""
        found = self.origins.get(shardable_value(value), {})
        if axis in found:
            return found[axis]
        return next((o for a, o in found.items() if contains(a, axis) or contains(axis, a)), UNKNOWN)

    # -- after the pass ----------------------------------------------------------------------
    def save(self, module: Module) -> None:
        if self.origins_on:
            for value, axes in self.origins.items():
                _save_origins(value, DictionaryAttr(tuple((_origin_key(a), StringAttr(str(o)))
                                                          for a, o in axes.items())))
            _origins_to_self(module)
        if self.edges_on:
            for op, axes in self.op_edges.items():
                edges = _propagation_edges(axes)
                if edges.steps:
                    op.attributes[PROPAGATION_EDGES] = edges
            for func, per_result in self.func_result_edges.items():
                for i, axes in enumerate(per_result):
                    edges = _propagation_edges(axes)
                    if edges.steps:
                        set_func_attr(func, "res_attrs", i, len(per_result), PROPAGATION_EDGES, edges)


def _save_origins(value: Value, entries: DictionaryAttr) -> None:
    """`saveShardingOriginsOnModule` for one value: on its func argument, constraint or edge
    op (a dictionary) or its op (an array, one dictionary per result); a value the func
    returns also gives its func result the dictionary."""
    owner = value.owner.parent_op if isinstance(value, BlockArgument) else value.owner
    func = owner if owner.name == "func.func" else owner.parent_of_type("func.func")
    if func is not None:
        terminator = func.regions[0].blocks[0].terminator
        # MLIR's use lists run newest first: the last return operand that is this value.
        use = next((u for u in reversed(value.uses) if u.operation is terminator), None)
        if use is not None:
            set_func_attr(func, "res_attrs", use.index, len(terminator.operands), SHARDING_ORIGINS, entries)
    if owner.name == "func.func":
        set_func_attr(owner, "arg_attrs", value.index, len(value.owner.arguments), SHARDING_ORIGINS, entries)
    elif owner.name in (CONSTRAINT, DATA_FLOW_EDGE):
        owner.attributes[SHARDING_ORIGINS] = entries
    else:
        current = owner.attributes.get(SHARDING_ORIGINS)
        dicts = list(current) if isinstance(current, ArrayAttr) else [DictionaryAttr()] * len(owner.results)
        if value.index < len(dicts):  # a shorter array in the input stays as it is, as in jaxlib
            dicts[value.index] = entries
        owner.attributes[SHARDING_ORIGINS] = ArrayAttr(tuple(dicts))


def _to_self(entries, name: str):
    if not isinstance(entries, DictionaryAttr):
        return None
    return DictionaryAttr(tuple((k, StringAttr("self") if v == StringAttr(name) else v)
                                for k, v in entries.entries))


def _origins_to_self(module: Module) -> None:
    """`overrideOriginsToSelf`: a constraint's, func argument's/result's or manual
    computation edge's own axes say "self" instead of their own name. (A constraint without a
    name, one a sharding group's sync inserted after `prepare`, is left as it is; jaxlib
    segfaults on it.)"""
    for op in module.walk():
        name = op.attributes.get(SHARDING_ORIGIN_NAME)
        if op.name == CONSTRAINT and isinstance(name, StringAttr):
            if (new := _to_self(op.attributes.get(SHARDING_ORIGINS), name.value)) is not None:
                op.attributes[SHARDING_ORIGINS] = new
    for func in module.funcs():
        for key, kind in (("arg_attrs", INPUT), ("res_attrs", OUTPUT)):
            attrs = func.properties.get(key)
            for i, entry in enumerate(attrs if isinstance(attrs, ArrayAttr) else ()):
                new = _to_self(entry.get(SHARDING_ORIGINS), str(OriginSharding(kind, i)))
                if new is not None:
                    set_func_attr(func, key, i, len(attrs), SHARDING_ORIGINS, new)
    for op in module.walk():
        name = op.attributes.get(SHARDING_ORIGIN_NAME)
        if op.name != MANUAL_COMPUTATION or not isinstance(name, StringAttr):
            continue
        owners = [(a, "input") for a in op.regions[0].blocks[0].arguments] + [(r, "output") for r in op.results]
        for owner, side in owners:
            edge = data_flow_edge_of(owner)
            if edge is not None:
                new = _to_self(edge.attributes.get(SHARDING_ORIGINS), f"{name.value}_{side}: {owner.index}")
                if new is not None:
                    edge.attributes[SHARDING_ORIGINS] = new


def _propagation_edges(axes: dict[AxisRef, list[PropagationEdge]]) -> PropagationEdges:
    """`createPropagationEdges`: per (axis, source, target) the earliest step, grouped by step;
    entries sorted by axis (then source), targets by kind and index."""
    earliest: dict[tuple[AxisRef, EdgeValueRef, EdgeValueRef], int] = {}
    for axis, edges in axes.items():
        for e in edges:
            key = (axis, e.source, e.target)
            earliest[key] = min(earliest.get(key, e.step), e.step)
    per_step: dict[int, dict[tuple[AxisRef, EdgeValueRef], set[EdgeValueRef]]] = {}
    for (axis, source, target), step in earliest.items():
        per_step.setdefault(step, {}).setdefault((axis, source), set()).add(target)
    ref_key = lambda r: (r.type != "operand", r.index)  # noqa: E731  (operands first)
    steps = []
    for step in sorted(per_step):
        entries = sorted(per_step[step].items(), key=lambda e: (_axis_key(e[0][0]), ref_key(e[0][1])))
        steps.append(PropagationOneStep(step, tuple(
            AxisToPropagationDetails(axis, source, tuple(sorted(targets, key=ref_key)))
            for (axis, source), targets in entries)))
    return PropagationEdges(tuple(steps))


def save_data_flow_debug_info(owners, op: Operation, origins: bool, edges: bool, kind: str) -> None:
    """`saveDebugInfoDictsFromDataFlowEdges`: the owners' edges' debug attributes as arrays on
    `op` (`kind` "block_arg" or "result"). As in jaxlib, an edge without origins adds no entry
    (the array can be shorter than the owners), and the arrays are set even when empty."""
    if not origins and not edges:
        return
    origin_dicts, edge_lists = [], []
    for owner in owners:
        edge = data_flow_edge_of(owner)
        if edge is None:
            continue
        found = edge.attributes.get(SHARDING_ORIGINS)
        if origins and isinstance(found, DictionaryAttr):
            origin_dicts.append(found)
        found = edge.attributes.get(PROPAGATION_EDGES)
        if edges and isinstance(found, PropagationEdges) and found.steps:
            edge_lists.append(found)
    if origins:
        op.attributes[f"sdy.{kind}_sharding_origins"] = ArrayAttr(tuple(origin_dicts))
    if edges:
        op.attributes[f"sdy.{kind}_propagation_edges"] = ArrayAttr(tuple(edge_lists))
