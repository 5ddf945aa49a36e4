"""`sdy-insert-explicit-reshards` (func pass): reshards and all-reduces that make every op's
operand and result shardings agree with its sharding rule.

Shardy's `export/insert_explicit_reshards.cc` and `explicit_reshards_util.cc` as jaxlib 0.10.2
has them (spec export.md §2.8; Shardy HEAD's single-device shardings are not in jaxlib). The
func is walked in post-order, terminators skipped:

* data-flow ops (`while`, `case`, `optimization_barrier`, named and manual computations): each
  edge source goes to its owner's sharding (*to target*, below), placed after the source;
* `func.call`: each operand goes to the callee's argument sharding;
* an `sdy.reshard` that adds unreduced axes becomes unreduced collectives;
* any other op: operands unreduced along axes the first result is not get an `sdy.all_reduce`;
  then, for an op with a (non-custom) rule whose shardings share one non-maximal mesh, the
  full version picks a common sharding per factor (`find_common_axes`) and reshards operands
  and results to it, the default version only reshards a dot's result (`process_dot`);
  reduction factors sharded along axes the result is not unreduced along get an all-reduce
  after the op.

Finally the returned values go to the func's result shardings. *To target* is an all-reduce of
unreduced axes the target lacks, `replicated_to_unreduced` / `sharded_to_unreduced` for the
ones it adds and, on the full version, an `sdy.reshard` when still not equivalent. The
`enable-full-version` option switches the full version on for every op; without it only calls,
`mhlo.ragged_dot` and concatenates whose operand shardings differ from the result's get it.

Where jaxlib aborts (an `SDY_CHECK`: unreduced operands of an op without results, unreduced
axes across different meshes, ...) the pass fails with the check's message instead; where it
segfaults (an op on an inlined mesh, a func declaration) with a message of its own. On a
reshape with overflow axes to a scalar (a segfault too) it does what Shardy `7994ecea` does.
"""

from __future__ import annotations

import math
from dataclasses import replace

from sharding import AxisRef, Mesh, TensorSharding, TensorShardingPerValue
from sharding.axes import difference, overlaps, sort_and_merge, suffix_without_overlap
from sharding.syntax import AxisRefList, ListOfAxisRefLists

from sdy_passes.attributes import ArrayAttr, DictionaryAttr, OpShardingRule
from sdy_passes.common._value_shardings import (
    COLLECTIVE_OPS, DATA_FLOW_OPS, MANUAL_COMPUTATION, NAMED_COMPUTATION, SHARDING,
    SINGLE_SHARDING_OPS, edge_owner_sharding, erase_manual_axes, first_free_axis, func_arg_sharding,
    func_result_sharding, get_sharding, is_static_shaped, rank_of, set_sharding,
)
from sdy_passes.dialects._base import has_trait
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import BlockArgument, Operation, OpResult, Value
from sdy_passes.op_sharding_rules import SHARDING_RULE, get_or_create_sharding_rule
from sdy_passes.pass_manager import FUNC, Pass
from sdy_passes.propagation.populate_op_sharding_rules import CONTEXT_DEPENDENT
from sdy_passes.propagation.sharding_projection import (
    PrefixStatus, ShardingProjection, TensorFactorShardings, add_axis_or_merge,
    is_axis_list_prefix_of, is_strict_prefix, prefix_without_overlap_in,
    total_axes_size,
)

RESHARD = "sdy.reshard"
BARRIER = "sdy.propagation_barrier"
DOTS = frozenset({"stablehlo.dot", "stablehlo.dot_general"})


class InsertExplicitReshardsPass(Pass):
    name = "sdy-insert-explicit-reshards"
    summary = ("Inserts explicit reshards to make all operations have compatible shardings.")
    anchor = FUNC
    options = {"enable-full-version": False}

    def run(self, func: Operation) -> None:
        _Run(func, self.options["enable-full-version"]).run()


# -- insertion points --------------------------------------------------------------------------

class _Inserter:
    """MLIR's rewriter insertion points, with each block's op list rebuilt once at the end
    (inserting into a long block one op at a time would be quadratic).

    New ops wait in groups, one per real op (or block end) they go before, in final order; a
    point is (group, the pending op to insert before, or None for the group's end). `remove`d
    real ops leave at the rebuild.
    """

    def __init__(self):
        self.groups: dict = {}  # (block, anchor op or None) -> pending ops before it
        self.pending: dict[Operation, list[Operation]] = {}  # pending op -> its group
        self.removed: set[Operation] = set()

    def group(self, block, anchor: Operation | None) -> list[Operation]:
        key = (block, anchor)
        found = self.groups.get(key)
        if found is None:
            found = self.groups[key] = []
        return found

    def before(self, op: Operation):
        """Right before `op` (a real op): after what was already inserted before it."""
        return (self.group(op.parent, op), None)

    def after(self, op: Operation):
        """Right after `op`, real or pending."""
        group = self.pending.get(op)
        if group is not None:
            i = next(k for k, o in enumerate(group) if o is op)
            return (group, group[i + 1] if i + 1 < len(group) else None)
        group = self.group(op.parent, op.next_op)
        return (group, group[0] if group else None)

    def after_value(self, value: Value):
        if isinstance(value, BlockArgument):
            block = value.owner
            group = self.group(block, block.first_op)
            return (group, group[0] if group else None)
        return self.after(value.owner)

    def insert(self, point, op: Operation) -> Operation:
        group, before = point
        if before is None:
            group.append(op)
        else:
            group.insert(next(k for k, o in enumerate(group) if o is before), op)
        self.pending[op] = group
        return op

    def apply(self) -> None:
        blocks = {}
        for block, _ in self.groups:
            blocks.setdefault(id(block), block)
        for block in blocks.values():
            ops = []
            for op in block.ops:
                ops.extend(self.groups.get((block, op), ()))
                if op not in self.removed:
                    ops.append(op)
            ops.extend(self.groups.get((block, None), ()))
            block.set_ops(ops)


def _sharding(value: Value) -> TensorSharding | None:
    """`get_sharding`, with a shortcut for the result of an op that keeps its shardings in
    `sdy.sharding` (most of them)."""
    if isinstance(value, OpResult):
        op = value.owner
        name = op.name
        if name not in DATA_FLOW_OPS and name not in SINGLE_SHARDING_OPS and name not in COLLECTIVE_OPS:
            attr = op.attributes.get(SHARDING)
            if isinstance(attr, TensorShardingPerValue) and attr.shardings:
                return attr.shardings[value.index]
            return None
    return get_sharding(value)


def _has_inlined_mesh(func: Operation) -> bool:
    """Whether any sharding in the func (its argument and result attributes included) has an
    inlined mesh."""
    def found(attr) -> bool:
        if isinstance(attr, TensorSharding):
            return isinstance(attr.mesh_or_ref, Mesh)
        if isinstance(attr, TensorShardingPerValue):
            return any(found(s) for s in attr.shardings)
        if isinstance(attr, ArrayAttr):
            return any(found(a) for a in attr.elements)
        if isinstance(attr, DictionaryAttr):
            return any(found(a) for a in attr.as_dict().values())
        return False
    keys = ("sharding", "out_sharding", "in_shardings", "out_shardings", "arg_attrs", "res_attrs")
    return any(found(op.attributes.get(SHARDING)) or any(found(op.properties.get(k)) for k in keys)
               for op in func.walk())


def _location(value: Value):
    return value.owner.location if isinstance(value, OpResult) else value.location




# -- sharding helpers --------------------------------------------------------------------------

def _fully_replicated(s: TensorSharding | None) -> bool:
    return s is None or all(not d.axes for d in s.dim_shardings)


def _equivalent(a: TensorSharding | None, b: TensorSharding | None) -> bool:
    """Shardy's `isEquivalent` (propagation utils): same axes per dim on the same mesh."""
    if _fully_replicated(a):
        return _fully_replicated(b)
    if b is None or a.mesh_or_ref != b.mesh_or_ref or a.rank != b.rank:
        return False
    return all(x.axes == y.axes for x, y in zip(a.dim_shardings, b.dim_shardings))


def _closed_replicated(mesh_or_ref, rank: int) -> TensorSharding:
    return TensorSharding.replicated(mesh_or_ref, rank)


def _axis_key(a: AxisRef):
    """`AxisRefAttr::operator<`: by name; a full axis sorts after its sub-axes of pre-size 1
    and before the others."""
    if a.sub_axis_info is None:
        return (a.name, 1, math.inf)
    return (a.name, a.sub_axis_info.pre_size, a.sub_axis_info.size)


def _list_key(axes) -> tuple:
    """`AxisListRef::operator<`: shorter lists first, then axis by axis."""
    return (len(axes), tuple(_axis_key(a) for a in axes))


def _truncate_without_overlap(axes: list[AxisRef], other) -> bool:
    """`AxisListRef::truncateWithoutOverlap`: cut `axes` (in place) before the first part that
    overlaps `other`; whether anything was cut."""
    for i, axis in enumerate(axes):
        prefix = prefix_without_overlap_in(axis, other)
        if prefix != axis:
            del axes[i:]
            if prefix is not None:
                axes.append(prefix)
            return True
    return False


def _truncate_by_removing_overlaps(axes: list[AxisRef], other) -> None:
    """`truncateAxesByRemovingOverlaps`."""
    _truncate_without_overlap(axes, other)


def _any_overlap(first, second) -> bool:
    return any(overlaps(a, b) for a in first for b in second)


class _Run:
    """One run of the pass over one func."""

    def __init__(self, func: Operation, full: bool):
        self.func = func
        self.full = full
        self.inserter = _Inserter()
        self.rules: dict = {}
        self.asked: set = set()
        self.plans: dict = {}
        self.dot_plans: dict = {}
        self.inlined_meshes = _has_inlined_mesh(func)
        module_ops = func.parent.ops if func.parent is not None else []
        self.meshes: dict[str, Mesh] = {}
        self.funcs: dict[str, Operation] = {}
        for op in module_ops:
            name = op.properties.get("sym_name")
            if name is None:
                continue
            if op.name == "sdy.mesh":
                self.meshes[name.value] = op.properties["mesh"]
            elif op.name == "func.func":
                self.funcs[name.value] = op

    def create(self, point, name: str, value: Value, properties: dict) -> Value:
        op = Operation.create(name, [value], [value.type],
                              properties=dict(sorted(properties.items())), location=_location(value))
        return self.inserter.insert(point, op).result

    def mesh(self, sharding: TensorSharding) -> Mesh:
        return self.mesh_named(sharding.mesh_or_ref)

    def mesh_named(self, ref) -> Mesh:
        if isinstance(ref, Mesh):
            return ref
        found = self.meshes.get(ref)
        if found is None:
            raise PassFailedError(f"unknown mesh: @{ref}", self.func.location)
        return found

    # -- the walk ---------------------------------------------------------------------------

    def run(self) -> None:
        if not self.func.regions or not self.func.regions[0].blocks:
            # jaxlib looks for the body's terminator regardless (and segfaults)
            raise PassFailedError("'func.func' op: explicit reshards need a func body, found a "
                                  "declaration", self.func.location)
        for op in list(self.func.walk(post_order=True)):
            if op is self.func or has_trait(op, "Terminator"):
                continue
            self.visit(op)
        body = self.func.regions[0].block
        ret = body.terminator
        point = self.inserter.before(ret)
        for index in range(ret.num_operands):
            self.to_target(ret, index, func_result_sharding(self.func, index), point, self.full)
        self.inserter.apply()

    def rule(self, op: Operation) -> OpShardingRule | None:
        """The op's rule or the registry's (`getOrCreateShardingRule`, not attached), built once
        per distinct op where it depends only on the op itself."""
        own = op.attributes.get(SHARDING_RULE)
        if isinstance(own, OpShardingRule) or op.name in CONTEXT_DEPENDENT:
            return get_or_create_sharding_rule(op)
        key = (op.name, tuple(v.type for v in op.operands), tuple(r.type for r in op.results),
               tuple(op.properties.items()))
        rule = self.rules.get(key, self.rules)
        if rule is self.rules:
            rule = self.rules[key] = get_or_create_sharding_rule(op)
        return rule

    def on_full_version(self, op: Operation) -> bool:
        if self.full or op.name in ("mhlo.ragged_dot", "func.call"):
            return True
        if op.name == "stablehlo.concatenate" and op.results:
            result = _sharding(op.results[0])
            return any(_sharding(v) != result for v in op.operands)
        return False

    def visit(self, op: Operation) -> None:
        full = self.on_full_version(op)
        if has_trait(op, "ShardableDataFlowOpInterface"):
            self.data_flow_op(op, full)
            return
        if op.name == "func.call":
            self.call_op(op, full)
            return
        if op.name == RESHARD and self.reshard_to_unreduced_collectives(op):
            return
        first = self.all_reduce_unreduced_operands(op)
        changes = full or op.name in DOTS or (first is not None and first.unreduced_axes)
        if not changes and not self.inlined_meshes:
            # The default version changes only dots and ops with unreduced results: all that
            # is left is the rule registry's once-per-process warning for unknown ops.
            if not isinstance(op.attributes.get(SHARDING_RULE), OpShardingRule):
                key = (op.name, op.properties.get("call_target_name"))
                if key not in self.asked:
                    self.asked.add(key)
                    get_or_create_sharding_rule(op)
            return
        rule = self.rule(op)
        if not isinstance(rule, OpShardingRule) or rule.is_custom_rule:
            return
        in_shardings = [_sharding_past_barriers(v) for v in op.operands]
        out_shardings = [_sharding_past_barriers(v) for v in op.results]
        mesh_name = self.common_mesh(op, in_shardings, out_shardings)
        if mesh_name is None:
            return
        if not changes:
            return
        mesh = self.meshes[mesh_name]
        projection, common = None, []
        if full:
            common = self.process_op_full(op, in_shardings, out_shardings, rule, mesh_name, mesh)
        else:
            if op.name in DOTS:
                self.process_dot(op, in_shardings, out_shardings, rule, mesh_name, mesh)
            if first is not None and first.unreduced_axes:
                projection = ShardingProjection.build(in_shardings, out_shardings, rule, mesh,
                                                      closed_if_missing=True)
        self.all_reduce_reduction_factors(op, projection, common, rule, mesh_name, mesh, full)

    # -- data-flow ops and calls ---------------------------------------------------------------

    def data_flow_op(self, op: Operation, full: bool) -> None:
        for owner, target in _edge_owner_targets(op):
            for user, index in _edge_sources(op, owner):
                point = self.inserter.after_value(user.operands[index])
                self.to_target(user, index, target, point, full)

    def call_op(self, call: Operation, full: bool) -> None:
        name = call.properties["callee"].root
        callee = self.funcs.get(name)
        if callee is None:
            raise PassFailedError(f"Failed to lookup function: {name}", call.location)
        targets = self.func_arg_shardings(callee)
        if targets is None:
            mesh_or_ref = self.first_non_maximal(_sharding(v) for v in call.operands)
            if mesh_or_ref is None:
                return
            targets = [_closed_replicated(mesh_or_ref, rank_of(v.type)) for v in call.operands]
        for index, target in enumerate(targets):
            self.to_target(call, index, target, self.inserter.after_value(call.operands[index]), full)

    def first_non_maximal(self, shardings):
        for s in shardings:
            if s is not None and not self.mesh(s).is_maximal:
                return s.mesh_or_ref
        return None

    def func_arg_shardings(self, func: Operation):
        inputs = func.properties["function_type"].type.inputs
        mesh_or_ref = self.first_non_maximal(func_arg_sharding(func, i) for i in range(len(inputs)))
        if mesh_or_ref is None:
            return None
        out = []
        for i, type_ in enumerate(inputs):
            s = func_arg_sharding(func, i)
            out.append(s if s is not None else TensorSharding.replicated(
                mesh_or_ref, rank_of(type_), is_closed=False))
        return out

    # -- to target ------------------------------------------------------------------------------

    def to_target(self, user: Operation, index: int, target: TensorSharding | None,
                  point, full: bool) -> None:
        """`insertExplicitReshardsToTargetSharding` for operand `index` of `user`."""
        current = _sharding(user.operands[index])
        if current is not None:
            current = self.all_reduce_to_replicated(user, index, current, target, point)
        new = self.unreduced_collectives(user, index, target, point)
        if new is not None:
            current = new
        if full and not _equivalent(current, target):
            value = user.operands[index]
            sharding = target if target is not None else _closed_replicated(
                current.mesh_or_ref, current.rank)
            user.set_operand(index, self.create(point, RESHARD, value, {"sharding": sharding}))

    def all_reduce_to_replicated(self, user: Operation, index: int, source: TensorSharding | None,
                                 target: TensorSharding | None, point):
        """`insertAllReduceIfUnreducedToReplicated`: the source's unreduced axes the user does
        not keep unreduced are all-reduced; returns the sharding after it."""
        if source is None or not source.unreduced_axes:
            return source
        mesh = self.mesh(source)
        target_unreduced = ()
        if target is not None:
            target_unreduced = target.unreduced_axes
            if self.mesh(target) != mesh:
                raise PassFailedError("source and user shardings have different meshes for "
                                      "unreduced axes.", user.location)
        axes = _set_diff(source.unreduced_axes, target_unreduced, mesh)
        if not axes:
            return source
        sharding = replace(source, unreduced_axes=_set_diff(source.unreduced_axes, axes, mesh))
        value = self.create(point, "sdy.all_reduce", user.operands[index],
                        {"reduction_axes": AxisRefList(tuple(axes)), "out_sharding": sharding})
        user.set_operand(index, value)
        return sharding

    def unreduced_collectives(self, user: Operation, index: int, out: TensorSharding | None,
                              point) -> TensorSharding | None:
        """`insertUnreducedCollectives`: axes `out` has unreduced and the operand has not become
        unreduced (sharded dims it cuts to a prefix by `sharded_to_unreduced`, others by
        `replicated_to_unreduced`, after a reshard of the other mismatching dims). Returns the
        sharding reached, or None when nothing was inserted."""
        value = user.operands[index]
        source = _sharding(value)
        if source is None or out is None or not out.unreduced_axes:
            return None
        mesh = self.mesh(source)
        if self.mesh(out) != mesh:
            raise PassFailedError("Input and output shardings have different meshes. The result "
                                  "has non-empty unreduced axes.", user.location)
        new_unreduced = _set_diff(out.unreduced_axes, source.unreduced_axes, mesh)
        if not new_unreduced:
            return None
        if _set_diff(source.unreduced_axes, out.unreduced_axes, mesh):
            raise PassFailedError("Both input and output have unreduced axes that does not appear "
                                  "in the other.", user.location)
        s2u: list[AxisRef] = []
        axes_per_dim: list[tuple[AxisRef, ...]] = [() for _ in source.dim_shardings]
        tmp_dims = list(out.dim_shardings)
        need_reshard = False
        for d, (in_dim, out_dim) in enumerate(zip(source.dim_shardings, out.dim_shardings)):
            in_axes, out_axes = in_dim.axes, out_dim.axes
            status = is_axis_list_prefix_of(out_axes, in_axes)
            if status is PrefixStatus.STRICT_PREFIX:
                diff: list[AxisRef] = []
                if out_axes and out_axes[-1] != in_axes[len(out_axes) - 1]:
                    diff.append(suffix_without_overlap(in_axes[len(out_axes) - 1], out_axes[-1], mesh))
                diff.extend(in_axes[len(out_axes):])
                if not _set_diff(diff, new_unreduced, mesh):
                    axes_per_dim[d] = tuple(diff)
                    s2u.extend(diff)
                    tmp_dims[d] = in_dim
                else:
                    need_reshard = True
            elif status is PrefixStatus.NOT_A_PREFIX:
                need_reshard = True
        result = value
        if need_reshard:
            result = self.create(point, RESHARD, result,
                             {"sharding": replace(source, dim_shardings=tuple(tmp_dims))})
        last = _sharding(result)
        r2u = _set_diff(new_unreduced, s2u, mesh)
        if r2u:
            last = TensorSharding(source.mesh_or_ref, tuple(tmp_dims), out.replicated_axes,
                                  sort_and_merge([*source.unreduced_axes, *r2u], mesh))
            result = self.create(point, "sdy.replicated_to_unreduced", result,
                             {"axes": AxisRefList(tuple(r2u)), "out_sharding": last})
        if s2u:
            result = self.create(point, "sdy.sharded_to_unreduced", result,
                             {"axes": ListOfAxisRefLists(tuple(axes_per_dim)), "out_sharding": out})
            last = out
        if result is value:
            return None
        user.set_operand(index, result)
        return last

    def reshard_to_unreduced_collectives(self, op: Operation) -> bool:
        if self.unreduced_collectives(op, 0, op.properties["sharding"], self.inserter.before(op)) is None:
            return False
        op.result.replace_all_uses_with(op.operands[0])
        op.drop_operand_uses()
        self.inserter.removed.add(op)
        return True

    # -- unreduced operands and reduction factors ------------------------------------------------

    def all_reduce_unreduced_operands(self, op: Operation) -> TensorSharding | None:
        """`insertAllReduceOnOpIfUnreducedToReplicated`; returns the first result's sharding."""
        if not op.results:
            if any(s is not None and s.unreduced_axes for s in map(get_sharding, op.operands)):
                raise PassFailedError("Some operands have unreduced axes but the operation has "
                                      "no results.", op.location)
            return None
        first = _sharding(op.results[0])
        first_unreduced = first.unreduced_axes if first is not None else ()
        for result in op.results[1:]:
            s = _sharding(result)
            if (s.unreduced_axes if s is not None else ()) != first_unreduced:
                raise PassFailedError("Unreduced axes mismatch between results for multi-result "
                                      "op.", op.location)
        point = self.inserter.before(op)
        for index, value in enumerate(op.operands):
            s = _sharding(value)
            if s is not None:
                self.all_reduce_to_replicated(op, index, s, first, point)
        return first

    def all_reduce_reduction_factors(self, op, projection, common, rule, mesh_name, mesh,
                                     full) -> None:
        """`insertAllReducesForReductionFactors`."""
        if not op.results:
            return
        first = _sharding(op.results[0])
        first_unreduced = first.unreduced_axes if first is not None else ()
        axes: list[AxisRef] = []
        if full:
            for factor in rule.reduction_factors:
                axes.extend(common[factor])
        elif first_unreduced:
            for factor in rule.reduction_factors:
                found = _compatible_factor_sharding(projection, factor)
                if found is None:
                    raise PassFailedError(
                        f"For the operation {op.name}, the result has unreduced axes while the "
                        "operand has incompatible sharding along reduction factors.", op.location)
                axes.extend(found)
        if not axes:
            return
        axes = _set_diff(axes, first_unreduced, mesh)
        if not axes:
            return
        axes = sort_and_merge(axes, mesh)
        point = self.inserter.after(op)
        for result in op.results:
            sharding = _sharding(result)
            if sharding is None:
                sharding = _closed_replicated(mesh_name, rank_of(result.type))
            reduced = self.create(point, "sdy.all_reduce", result,
                              {"reduction_axes": AxisRefList(tuple(axes)), "out_sharding": sharding})
            result.replace_all_uses_except(reduced, [reduced.owner])

    # -- the op's mesh -----------------------------------------------------------------------------

    def common_mesh(self, op, in_shardings, out_shardings) -> str | None:
        """`getMesh`: the name of the most common mesh when all shardings' meshes agree up to
        device order and are not maximal, else None."""
        shardings = [*in_shardings, *out_shardings]
        refs = {s.mesh_or_ref for s in shardings if s is not None}
        if len(refs) == 1 and not self.inlined_meshes:  # (the usual case: one mesh by name)
            ref = refs.pop()
            return None if self.mesh_named(ref).is_maximal else ref
        ref, mesh = None, None
        for s in shardings:
            if s is None:
                continue
            other = self.mesh(s)
            if mesh is None or mesh.is_empty:
                ref, mesh = s.mesh_or_ref, other
                continue
            if other.is_empty:
                continue
            if other.is_maximal != mesh.is_maximal or other.axes != mesh.axes:
                return None
            if not other.device_ids:  # prefer iota device ids
                ref, mesh = s.mesh_or_ref, other
        if ref is None:
            return None
        inlined = [s for s in shardings if s is not None and isinstance(s.mesh_or_ref, Mesh)]
        if isinstance(ref, Mesh) or not mesh.is_maximal and any(
                not _fully_replicated(s) for s in inlined):
            # jaxlib takes the mesh for a symbol reference here (and segfaults).
            raise PassFailedError(f"'{op.name}' op: explicit reshards need meshes referenced by "
                                  "name, found an inlined mesh (run sdy-lift-inlined-meshes first)",
                                  op.location)
        if mesh.is_maximal:
            return None
        counts: dict[str, int] = {}
        best, best_count = ref, 0
        for s in shardings:
            if not _fully_replicated(s):
                counts[s.mesh_or_ref] = counts.get(s.mesh_or_ref, 0) + 1
                if counts[s.mesh_or_ref] > best_count:
                    best, best_count = s.mesh_or_ref, counts[s.mesh_or_ref]
        return best

    # -- processOp ----------------------------------------------------------------------------------

    def process_op_full(self, op, in_shardings, out_shardings, rule, mesh_name, mesh):
        """`processOp` on the full version: reshards every operand and result that does not
        match the common sharding per factor; returns the common axes per factor. The plan is
        a function of the op's rule and shardings, so equal ops share it."""
        direct = _sharding(op.operands[0]) if op.name == "stablehlo.reshape" else None
        key = (op.name, rule, tuple(in_shardings), tuple(out_shardings), direct,
               tuple(_tensor_sizes(op)))
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = self.plan_full(op, in_shardings, out_shardings, rule,
                                                    mesh_name, mesh, direct)
        common, operand_targets, result_targets = plan
        point = self.inserter.before(op)
        for index, new in enumerate(operand_targets):
            if new is not None:
                op.set_operand(index, self.create(point, RESHARD, op.operands[index],
                                                  {"sharding": new}))
        point = self.inserter.after(op)
        for index, new in enumerate(result_targets):
            if new is not None:
                result = op.results[index]
                old = _sharding(result)
                if old is None:
                    old = _closed_replicated(mesh_name, rank_of(result.type))
                reshard = self.create(point, RESHARD, result, {"sharding": old})
                result.replace_all_uses_except(reshard, [reshard.owner])
                set_sharding(result, new)
        return common

    def plan_full(self, op, in_shardings, out_shardings, rule, mesh_name, mesh, direct):
        """(common axes per factor, new sharding per operand and per result or None)."""
        projection = ShardingProjection.build(in_shardings, out_shardings, rule, mesh,
                                              closed_if_missing=True)
        update_operands = [_has_overflow(t) for t in projection.operands]
        update_results = [_has_overflow(t) for t in projection.results]
        if (any(update_operands) or any(update_results)) and op.name == "stablehlo.reshape":
            return self.reshape_with_overflow_axes(projection, direct, out_shardings, rule,
                                                   mesh_name, mesh)
        common = find_common_axes(projection, rule, _tensor_sizes(op), mesh)
        for factor, axes in enumerate(common):
            ops_changed, results_changed = projection.update(factor, axes, [])
            update_operands = [a or b for a, b in zip(update_operands, ops_changed)]
            update_results = [a or b for a, b in zip(update_results, results_changed)]
        return (common, *self.reshard_targets(in_shardings, out_shardings, projection,
                                              update_operands, update_results, rule,
                                              mesh_name, mesh))

    def reshard_targets(self, in_shardings, out_shardings, projection, update_operands,
                        update_results, rule, mesh_name, mesh):
        """`insertExplicitReshards`: operands and results the projection changed (or on a mesh
        with another device order) are resharded to / from the projection's shardings."""
        def side(shardings, tensors, mappings, update):
            return [tensor.to_tensor_sharding(mapping, rule.factor_sizes, mesh_name, mesh)
                    if changed or self.other_device_order(sharding, mesh) else None
                    for sharding, tensor, mapping, changed in zip(shardings, tensors, mappings,
                                                                  update)]
        return (side(in_shardings, projection.operands, rule.operand_mappings, update_operands),
                side(out_shardings, projection.results, rule.result_mappings, update_results))

    def other_device_order(self, sharding, mesh: Mesh) -> bool:
        return not _fully_replicated(sharding) and self.mesh(sharding).device_ids != mesh.device_ids

    def process_dot(self, op, in_shardings, out_shardings, rule, mesh_name, mesh) -> None:
        """`processDot` (default version): the result takes the operand's axes along the one
        factor it disagrees on, and a reshard after the dot restores its sharding (spec
        export.md §2.8 step 7). Equal dots share the decision."""
        sizes = tuple(_tensor_sizes(op))
        key = (rule, tuple(in_shardings), tuple(out_shardings), sizes)
        new = self.dot_plans.get(key, self.dot_plans)
        if new is self.dot_plans:
            projection = ShardingProjection.build(in_shardings, out_shardings, rule, mesh,
                                                  closed_if_missing=True)
            new = self.dot_plans[key] = _dot_result_sharding(projection, rule, sizes, mesh_name, mesh)
        if new is None:
            return
        value = op.results[0]
        set_sharding(value, new)
        reshard = self.create(self.inserter.after(op), RESHARD, value, {"sharding": out_shardings[0]})
        value.replace_all_uses_except(reshard, [reshard.owner])

    def reshape_with_overflow_axes(self, projection, direct, out_shardings, rule, mesh_name,
                                   mesh):
        """`processReshapeWithOverflowAxes`: the axes of the larger-sharded side are spread over
        both sides' factors again, and each side is resharded to their common prefix."""
        operand, result = projection.operands[0], projection.results[0]
        prefer_input = operand.sharding_size(mesh) >= result.sharding_size(mesh)
        best = operand if prefer_input else result
        all_axes: list[AxisRef] = []
        for factor in range(len(rule.factor_sizes)):
            fs = best.factors.get(factor)
            if fs is not None:
                all_axes.extend(fs.axes)
                all_axes.extend(fs.overflow_axes)
        _redistribute_axes(operand, rule.operand_mappings[0], rule.factor_sizes, mesh, all_axes)
        _redistribute_axes(result, rule.result_mappings[0], rule.factor_sizes, mesh, all_axes)
        in_built = operand.to_tensor_sharding(rule.operand_mappings[0], rule.factor_sizes,
                                              mesh_name, mesh)
        out_built = result.to_tensor_sharding(rule.result_mappings[0], rule.factor_sizes,
                                              mesh_name, mesh)
        legal = ShardingProjection.build([in_built], [out_built], rule, mesh)
        common = legal.greatest_common_prefix_axes(len(rule.factor_sizes))
        for factor in range(len(rule.factor_sizes)):
            projection.update(factor, common[factor], [])
        new_in = operand.to_tensor_sharding(rule.operand_mappings[0], rule.factor_sizes,
                                            mesh_name, mesh)
        new_out = result.to_tensor_sharding(rule.result_mappings[0], rule.factor_sizes,
                                            mesh_name, mesh)
        update_operands = [not _equivalent(direct, new_in)]
        update_results = [not _equivalent(new_out, out_shardings[0])]
        return (common, *self.reshard_targets([direct], out_shardings, projection,
                                              update_operands, update_results, rule,
                                              mesh_name, mesh))


def _dot_result_sharding(projection, rule, sizes, mesh_name, mesh):
    """`processDot`'s decision: the dot's new result sharding, or None."""
    lhs, rhs = projection.operands[0], projection.operands[1]
    result = projection.results[0]
    lhs_size, rhs_size, result_size = sizes
    conflicting = None
    conflicting_axes: list[AxisRef] = []
    reduction_axes: list[AxisRef] = []
    seen: list[AxisRef] = []
    for factor in range(len(rule.factor_sizes)):
        lhs_fs, rhs_fs = lhs.factors.get(factor), rhs.factors.get(factor)
        if lhs_fs is not None and rhs_fs is not None:
            axes = lhs_fs.axes
            max_size = max(lhs_size, rhs_size)
            if lhs_fs.axes != rhs_fs.axes:
                return None
            if factor in rule.reduction_factors:
                reduction_axes.extend(axes)
                continue
        else:
            axes = (lhs_fs or rhs_fs).axes
            max_size = lhs_size if lhs_fs is not None else rhs_size
            for axis in axes:
                if any(overlaps(a, axis) for a in seen):
                    return None
                seen.append(axis)
        if result.factors[factor].axes != axes:
            if not axes or conflicting is not None or result_size > max_size:
                return None
            conflicting, conflicting_axes = factor, list(axes)
    if conflicting is None:
        return None
    result_axes = result.factors[conflicting].axes
    if not result_axes or result_axes != reduction_axes:
        return None
    result.factors[conflicting].axes = conflicting_axes
    return result.to_tensor_sharding(rule.result_mappings[0], rule.factor_sizes, mesh_name, mesh)


# -- data-flow edges ---------------------------------------------------------------------------

def _edge_owner_targets(op: Operation):
    """(owner, target sharding) per edge owner: results, then body arguments
    (`getEdgeOwnerSharding` then `transformTargetSharding` before edge propagation)."""
    out = []
    if op.name in (NAMED_COMPUTATION, MANUAL_COMPUTATION):
        outs = op.properties.get("out_shardings")
        ins = op.properties.get("in_shardings")
        manual = op.properties["manual_axes"].names if op.name == MANUAL_COMPUTATION else ()
        for r in op.results:
            s = outs.shardings[r.index] if outs is not None and outs.shardings else None
            out.append((r, erase_manual_axes(s, manual) if s is not None and manual else s))
        for arg in op.regions[0].block.arguments:
            s = ins.shardings[arg.index] if ins is not None and ins.shardings else None
            if s is not None and op.name == MANUAL_COMPUTATION:
                s = _add_free_axes(s, erase_manual_axes(s, manual), manual)
            out.append((arg, s))
        return out
    # (the op's own `sdy.sharding`, not a data-flow edge's that may still follow the result)
    return [(r, edge_owner_sharding(op, r)) for r in op.results]


def _add_free_axes(outer: TensorSharding, new: TensorSharding, manual) -> TensorSharding:
    """`addFreeAxesToManualComputationSharding`: the outer sharding's manual prefix of each dim,
    then the new dim's axes (with its closedness and priority)."""
    manual = set(manual)
    dims = tuple(replace(n, axes=o.axes[:first_free_axis(o.axes, manual)] + n.axes)
                 for o, n in zip(outer.dim_shardings, new.dim_shardings))
    return replace(outer, mesh_or_ref=new.mesh_or_ref, dim_shardings=dims)


def _edge_sources(op: Operation, owner: Value) -> list[tuple[Operation, int]]:
    """`getEdgeSources`: the uses (op, operand index) flowing into `owner`."""
    if isinstance(owner, BlockArgument):
        return [(op, owner.index)]
    i = owner.index

    def returned(region):
        return (region.blocks[0].terminator, i)
    if op.name == "stablehlo.while":
        return [(op, i), returned(op.regions[1])]
    if op.name == "stablehlo.case":
        return [returned(r) for r in op.regions]
    if op.name == "stablehlo.optimization_barrier":
        return [(op, i)]
    return [returned(op.regions[0])]


# -- common axes per factor (the full version) --------------------------------------------------

def _sharding_past_barriers(value: Value) -> TensorSharding | None:
    while isinstance(value, OpResult) and value.owner.name == BARRIER:
        value = value.owner.operands[0]
    return _sharding(value)


def _num_elements(type_) -> int:
    return math.prod(type_.shape) if is_static_shaped(type_) else 0


def _tensor_sizes(op: Operation) -> list[int]:
    return [_num_elements(t) for t in (*op.operand_types, *op.result_types)]


def _has_overflow(tensor: TensorFactorShardings) -> bool:
    return any(fs.overflow_axes for fs in tensor.factors.values())


def _set_diff(first, second, mesh: Mesh) -> list[AxisRef]:
    """`getAxisSetDiff`."""
    if not first or tuple(first) == tuple(second):
        return []
    if not second:
        return list(first)
    return list(difference(first, second, mesh))


def _compatible_factor_sharding(projection: ShardingProjection, factor: int):
    """The factor's axes if every tensor holding it agrees on them, else None."""
    found = None
    for tensor in projection.tensors:
        fs = tensor.factors.get(factor)
        if fs is None:
            continue
        if found is None:
            found = fs.axes
        elif found != fs.axes:
            return None
    return list(found) if found is not None else []


def _compatible_factor_shardings(projection, rule: OpShardingRule):
    """`getCompatibleFactorShardings`: the axes per factor when all tensors agree, factors that
    need replication are unsharded and no axis shards two factors; else None."""
    out: list[list[AxisRef]] = [[] for _ in rule.factor_sizes]
    seen: list[AxisRef] = []
    for factor in range(len(rule.factor_sizes)):
        axes = _compatible_factor_sharding(projection, factor)
        if axes is None:
            return None
        if factor in rule.need_replication_factors:
            if axes:
                return None
            continue
        if _any_overlap(axes, seen):
            return None
        out[factor] = axes
        seen.extend(axes)
    return out


def _factor_type_precedence(rule: OpShardingRule, factor: int) -> int:
    if factor in rule.reduction_factors:
        return 2
    if factor in rule.need_replication_factors:
        return 0
    if factor in rule.permutation_factors:
        return 1
    return 3


def _mappings(rule: OpShardingRule):
    return (*rule.operand_mappings, *rule.result_mappings)


class _Candidate:
    __slots__ = ("factor", "axes", "source_size", "precedence", "sharding_size")

    def __init__(self, factor: int, axes: list[AxisRef], precedence: int, mesh: Mesh):
        self.factor, self.axes, self.precedence = factor, axes, precedence
        self.source_size = 0
        self.sharding_size = total_axes_size(axes, mesh)

    def key(self):
        return (self.source_size, self.precedence, self.sharding_size, self.factor,
                _list_key(self.axes))


def _find_common_axes_heuristic(projection, rule: OpShardingRule, sizes, mesh: Mesh):
    """`findCommonAxesHeuristic`: repeatedly give the best (factor, axes) candidate (ranked by
    the total size of the tensors sharded so, factor type, sharding size) to its factor, and cut
    the other candidates so that no axis is used twice."""
    num_factors = len(rule.factor_sizes)
    pairs: dict = {}
    for tensor in projection.tensors:
        for factor, fs in tensor.factors.items():
            for n in range(len(fs.axes), 0, -1):
                pairs.setdefault((factor, tuple(fs.axes[:n])), None)
    candidates = [_Candidate(f, list(axes), _factor_type_precedence(rule, f), mesh)
                  for f, axes in pairs]
    for size, tensor in zip(sizes, projection.tensors):
        for factor, fs in tensor.factors.items():
            for c in candidates:
                if c.factor == factor and (c.axes == fs.axes or is_strict_prefix(c.axes, fs.axes)):
                    c.source_size += size
    depends: dict[int, set[int]] = {}
    for mapping in _mappings(rule):
        for factors in mapping:
            for k in range(1, len(factors)):
                depends.setdefault(factors[k], set()).add(factors[k - 1])
    chosen: list[list[AxisRef]] = [[] for _ in range(num_factors)]
    while candidates:
        valid = [c for c in candidates if not depends.get(c.factor)]
        if not valid:
            break
        best = max(valid, key=_Candidate.key)
        best_factor, best_axes = best.factor, list(best.axes)
        chosen[best_factor] = best_axes
        if total_axes_size(best_axes, mesh) == rule.factor_sizes[best_factor]:
            for deps in depends.values():
                deps.discard(best_factor)
        i = 0
        while i < len(candidates):
            c = candidates[i]
            if c.factor == best_factor:
                if not is_strict_prefix(best_axes, c.axes):
                    candidates[i] = candidates[-1]
                    candidates.pop()
                else:
                    c.sharding_size = total_axes_size(c.axes, mesh) // total_axes_size(best_axes, mesh)
                    i += 1
                continue
            if _truncate_without_overlap(c.axes, best_axes):
                if c.axes == chosen[c.factor]:
                    candidates[i] = candidates[-1]
                    candidates.pop()
                else:
                    c.sharding_size = (total_axes_size(c.axes, mesh)
                                       // total_axes_size(chosen[c.factor], mesh))
                    i += 1
                continue
            c.sharding_size = total_axes_size(c.axes, mesh)
            i += 1
    return chosen


def _sharded_permutation(tensor: TensorFactorShardings, rule: OpShardingRule) -> bool:
    return any(f in rule.permutation_factors and fs.axes for f, fs in tensor.factors.items())


def _common_axes_on_unary(projection, rule: OpShardingRule, sizes, mesh: Mesh):
    """`findCommonAxesOnUnaryOperation`: the preferred of the two non-scalar tensors (no sharded
    permutation factor, larger, more sharded) keeps its sharding; the other one's own factors
    keep what does not overlap it."""
    tensors = projection.tensors
    lhs, rhs = [i for i, m in enumerate(_mappings(rule)) if m]

    def preference(i):
        return (not _sharded_permutation(tensors[i], rule), sizes[i], tensors[i].sharding_size(mesh))
    preferred, other = (lhs, rhs) if preference(lhs) >= preference(rhs) else (rhs, lhs)
    out: list[list[AxisRef]] = [[] for _ in rule.factor_sizes]
    used: list[AxisRef] = []
    for factor, fs in tensors[preferred].factors.items():
        out[factor] = list(fs.axes)
        used.extend(fs.axes)
    for factor, fs in tensors[other].factors.items():
        if factor not in tensors[preferred].factors:
            out[factor] = list(fs.axes)
            _truncate_by_removing_overlaps(out[factor], used)
    return out


def _batching_factors(rule: OpShardingRule) -> list[int]:
    """Pass-through factors in every non-scalar tensor."""
    special = {*rule.reduction_factors, *rule.need_replication_factors, *rule.permutation_factors}
    return [f for f in range(len(rule.factor_sizes))
            if f not in special and _in_all_non_scalar(rule, f)]


def _in_all_non_scalar(rule: OpShardingRule, factor: int) -> bool:
    return all(any(factor in dim for dim in m) for m in _mappings(rule) if m)


def _distribute_to_batching(axes: list[AxisRef], rule: OpShardingRule, mesh: Mesh,
                            common: list[list[AxisRef]]) -> None:
    for factor in _batching_factors(rule):
        size = rule.factor_sizes[factor]
        if size == 0:
            continue
        sharded = total_axes_size(common[factor], mesh)
        if size % sharded:
            continue
        capacity = size // sharded
        while axes:
            axis_size = axes[0].size(mesh)
            if capacity % axis_size:
                break
            add_axis_or_merge(common[factor], axes[0], mesh)
            capacity //= axis_size
            axes = axes[1:]
        if not axes:
            break


def find_common_axes(projection: ShardingProjection, rule: OpShardingRule, sizes,
                     mesh: Mesh) -> list[list[AxisRef]]:
    """`findCommonAxes`: the sharding per factor every operand and result is resharded to."""
    compatible = _compatible_factor_shardings(projection, rule)
    if compatible:
        return compatible
    non_scalar = [m for m in _mappings(rule) if m]
    if (len(non_scalar) == 2 and not rule.need_replication_factors
            and not any(len(dim) > 1 for m in _mappings(rule) for dim in m)):
        return _common_axes_on_unary(projection, rule, sizes, mesh)
    common = _find_common_axes_heuristic(projection, rule, sizes, mesh)
    for factor in rule.need_replication_factors:
        axes = common[factor]
        common[factor] = []
        if _in_all_non_scalar(rule, factor) and axes:
            _distribute_to_batching(axes, rule, mesh, common)
    return common


def _redistribute_axes(tensor: TensorFactorShardings, mapping, factor_sizes, mesh: Mesh,
                       all_axes: list[AxisRef]) -> None:
    """`redistributeAxes`: the tensor's factors (dims in order) take `all_axes` again, axis
    first (`distributeAxesAcrossFactors`)."""
    factors = [f for dim in mapping for f in dim if f in tensor.factors]
    if not factors:  # a scalar: jaxlib 0.10.2 reads past the end here (a segfault, Shardy 7994ecea)
        return
    for f in factors:
        tensor.factors[f].axes, tensor.factors[f].overflow_axes = [], []
    remaining = [factor_sizes[f] for f in factors]
    index = 0
    info = _axis_info(all_axes, index, mesh)
    while info is not None:
        used = False
        for k, f in enumerate(factors):
            if remaining[k] <= 1:
                continue
            size = info[1]
            g = math.gcd(remaining[k], size)
            if g == 1 and size != 1:
                continue
            used = True
            name = all_axes[index].name
            if size > g:
                pre = info[0] or 1
                add_axis_or_merge(tensor.factors[f].axes, AxisRef.sub(name, pre, g), mesh)
                info = (pre * g, size // g)
                remaining[k] //= g
            else:
                ref = AxisRef(name) if info[0] is None else AxisRef.sub(name, info[0], size)
                add_axis_or_merge(tensor.factors[f].axes, ref, mesh)
                remaining[k] //= size
                index += 1
                info = _axis_info(all_axes, index, mesh)
                break
        if not used:
            overflow = tensor.factors[factors[-1]].overflow_axes
            while info is not None:
                name = all_axes[index].name
                ref = AxisRef(name) if info[0] is None else AxisRef.sub(name, info[0], info[1])
                add_axis_or_merge(overflow, ref, mesh)
                index += 1
                info = _axis_info(all_axes, index, mesh)
            break


def _axis_info(axes, index: int, mesh: Mesh):
    """(split pre-size or None for a full axis, size) of `axes[index]`, None past the end."""
    if index >= len(axes):
        return None
    axis = axes[index]
    return (axis.pre_size if axis.is_sub_axis else None, axis.size(mesh))
