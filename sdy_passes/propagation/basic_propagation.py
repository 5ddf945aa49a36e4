"""`sdy-basic-propagate`: Shardy's factor-based sharding propagation (`basic_propagation.cc`).

The pass propagates shardings through every op that has an `#sdy.op_sharding_rule` (its
`sdy.sharding_rule` attribute, or the one `sdy_passes.op_sharding_rules` gives), through data-flow edges
(`sdy.data_flow_edge`, `sdy.func_data_flow_edge`, identity rules between an edge's sources and
its owner) and propagation barriers, until nothing changes (spec/propagation.md §4.2).

It reproduces MLIR's greedy pattern driver as Shardy configures it, because the order in which
ops are visited decides conflicts: a LIFO worklist seeded with every op in pre-order; when a
value's sharding changes, its defining op (or block's parent op) and its users are pushed
(each with its enclosing ops), unless already queued; a data-flow-edge source pushes its edge,
a terminator its parent op (a `func.return` the users of the calls' results), a call operand the
users of the callee's argument. Unused ops without memory effects are erased when popped, as
the driver does. Before and after the walk, the main func's returned values and result
shardings are propagated into each other.

Options (jaxlib 0.10.2): `keep-sharding-rules`, `conservative-propagation`,
`module-dump-directory` (as in jaxlib, only user-priority propagation writes to it), `debug-sharding-origins` and
`debug-propagation-edge-sharding` (`sdy.sharding_origins` / `sdy.propagation_edges` on every
value that received axes, see `sdy_passes.propagation.source_sharding`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Sequence

from sharding import Mesh, TensorSharding

from sdy_passes.common._value_shardings import (
    COLLECTIVE_OPS, DATA_FLOW_EDGE, DATA_FLOW_OPS, SINGLE_SHARDING_OPS, MANUAL_COMPUTATION, NAMED_COMPUTATION, _add_manual_axes,
    erase_manual_axes, func_arg_sharding, func_result_sharding, get_sharding,
    set_func_attr_sharding, set_sharding, shardable_value,
)
from sdy_passes import op_sharding_rules
from sdy_passes.attributes import (
    OpShardingRule, RankedTensorType, SymbolRefAttr, TupleType, UnrankedTensorType,
)
from sdy_passes.propagation.basic_factor_propagation import BOTH, NONE, BasicFactorPropagation
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import BlockArgument, Module, Operation, OpResult, Value
from sdy_passes.common.op_properties import is_elementwise, is_trivially_dead
from sdy_passes.pass_manager import Pass
from sdy_passes.imports.propagate_sharding_from_func_to_call import main_func
from sdy_passes.propagation.sharding_group_map import ShardingGroupMap
from sdy_passes.propagation.sharding_projection import ShardingProjection
from sdy_passes.propagation.source_sharding import SourceShardingHandler, copy_projection

__all__ = ["BasicPropagationPass", "Propagator", "propagate_any", "remove_sharding_rules",
           "SHARDING_RULE"]

SHARDING_RULE = "sdy.sharding_rule"
FUNC_DATA_FLOW_EDGE = "sdy.func_data_flow_edge"
PROPAGATION_BARRIER = "sdy.propagation_barrier"
_TERMINATORS = frozenset({"func.return", "stablehlo.return", "sdy.return"})
_DYNAMIC = -(2 ** 63)

GetDirections = Callable[[Operation, int], list[int]]
"""`(op, number of factors)` → the direction (`PropagationDirection` value) allowed per factor."""


def propagate_any(op: Operation, num_factors: int) -> list[int]:
    return [BOTH] * num_factors


def get_or_create_sharding_rule(op: Operation, conservative: bool) -> OpShardingRule | None:
    """The op's `sdy.sharding_rule`, or the registry's rule, attached to the op (Shardy builds
    rules just in time and keeps them on the op until the pass ends)."""
    return op_sharding_rules.get_or_create_sharding_rule(op, conservative, set_on_op=True)


def remove_sharding_rules(module: Module) -> None:
    for op in module.walk():
        rule = op.attributes.get(SHARDING_RULE)
        if isinstance(rule, OpShardingRule) and not rule.is_custom_rule:
            del op.attributes[SHARDING_RULE]


@lru_cache(maxsize=1024)
def _identity_rule(type_, num_operands: int = 1) -> OpShardingRule:
    """(One object per type and count: edges and barriers ask on every visit, and a step's cache
    key holds the rule.)"""
    shape = type_.shape if isinstance(type_, RankedTensorType) else ()
    return OpShardingRule.identity(tuple(_DYNAMIC if d is None else d for d in shape), num_operands)


def _static_shaped(type_) -> bool:
    return isinstance(type_, RankedTensorType) and type_.has_static_shape


def _is_empty(s: TensorSharding) -> bool:
    return not s.replicated_axes and not s.unreduced_axes and all(not d.axes for d in s.dim_shardings)


def check_shapes(module: Module) -> None:
    """Shardy's `allValidShapes`: static ranked tensors and no tuples (the type quoted, as MLIR
    streams a type into a diagnostic), the first op in MLIR's walk order: post-order, a region's
    ops before the op holding them."""
    for op in module.walk(post_order=True):
        for t in op.result_types:
            if isinstance(t, UnrankedTensorType) or isinstance(t, RankedTensorType) and not t.has_static_shape:
                raise PassFailedError(
                    f"Shardy propagation only supports ranked tensors with a static shape. type: '{t}'",
                    op.location)
            if isinstance(t, TupleType):
                raise PassFailedError(f"Shardy propagation doesn't support tuples: '{t}'", op.location)


# -- data-flow edges (ShardableDataFlowOpInterface) --------------------------------------------

def _terminator_operands(region) -> tuple[Value, ...]:
    return region.blocks[0].terminator.operands


def edge_sources(edge: Operation) -> list[Value]:
    """`DataFlowEdgeOp::getSources`: the values flowing into the edge's owner."""
    owner = edge.operands[0]
    if isinstance(owner, BlockArgument):  # named / manual computation body argument
        return [owner.owner.parent_op.operands[owner.index]]
    op, i = owner.owner, owner.index
    if op.name == "stablehlo.while":
        return [op.operands[i], _terminator_operands(op.regions[1])[i]]
    if op.name == "stablehlo.case":
        return [_terminator_operands(r)[i] for r in op.regions]
    if op.name == "stablehlo.optimization_barrier":
        return [op.operands[i]]
    return [_terminator_operands(op.regions[0])[i]]


def edge_non_owner_targets(edge: Operation) -> list[Value]:
    owner = edge.operands[0]
    if isinstance(owner, OpResult) and owner.owner.name == "stablehlo.while":
        op = owner.owner
        return [op.regions[0].blocks[0].arguments[owner.index], op.regions[1].blocks[0].arguments[owner.index]]
    return []


def _edge_from_source(user: Operation, index: int) -> Operation | None:
    """`DataFlowEdgeOp::lookup(OpOperand&)`: the edge a use (`user`, operand `index`) feeds."""
    op = user.parent_op if user.name in _TERMINATORS else user
    if op is None or op.name not in DATA_FLOW_OPS:
        return None
    if op.name in (NAMED_COMPUTATION, MANUAL_COMPUTATION) and user is op:
        # Shardy returns the operand itself here, not the block argument (so an operand's
        # change never reaches the body's edge this way; jaxlib behaves so, and so do we).
        owner = op.operands[index]
    else:
        owner = op.results[index] if index < len(op.results) else None
    if owner is not None and owner.has_one_use and owner.uses[0].operation.name == DATA_FLOW_EDGE:
        return owner.uses[0].operation
    return None


def _transform_target_sharding(edge: Operation, sharding: TensorSharding | None, before: bool):
    """Manual computations keep their manual axes outside the body (`transformTargetSharding`)."""
    owner = edge.operands[0]
    op = owner.owner.parent_op if isinstance(owner, BlockArgument) else owner.owner
    if op.name != MANUAL_COMPUTATION or sharding is None:
        return sharding
    manual = op.properties["manual_axes"].names
    if isinstance(owner, BlockArgument):
        if before:
            return _add_manual_axes(op.properties["in_shardings"].shardings[owner.index], sharding, manual)
        return erase_manual_axes(sharding, manual)
    if before:
        return erase_manual_axes(sharding, manual)
    return _add_manual_axes(op.properties["out_shardings"].shardings[owner.index], sharding, manual)


# -- the driver --------------------------------------------------------------------------------

class _Worklist:
    """MLIR's greedy-driver worklist: a stack; pushing a queued op leaves it where it is."""

    __slots__ = ("items", "index")

    def __init__(self):
        self.items: list[Operation | None] = []
        self.index: dict[Operation, int] = {}

    def push(self, op: Operation) -> None:
        if op not in self.index:
            self.index[op] = len(self.items)
            self.items.append(op)

    def pop(self) -> Operation:
        op = self.items.pop()
        del self.index[op]
        while self.items and self.items[-1] is None:
            self.items.pop()
        return op

    def remove(self, op: Operation) -> None:
        i = self.index.pop(op, None)
        if i is not None:
            self.items[i] = None
            while self.items and self.items[-1] is None:
                self.items.pop()


class _Tensors:
    """One side of a propagation step: values, their current shardings, how to set each
    (`setter(i, sharding)`; None: `set_sharding` on the value)."""

    __slots__ = ("values", "shardings", "setter", "is_func_result")

    def __init__(self, values, shardings, setter=None, is_func_result=False):
        self.values = values
        self.shardings = shardings
        self.setter = setter
        self.is_func_result = is_func_result

    def set(self, i: int, sharding: TensorSharding) -> None:
        if self.setter is None:
            set_sharding(self.values[i], sharding)
        else:
            self.setter(i, sharding)


class Propagator:
    """One run of the basic driver over a module with one factor propagation strategy."""

    def __init__(self, module: Module, groups: ShardingGroupMap, strategy: BasicFactorPropagation,
                 get_directions: GetDirections, conservative: bool,
                 unchanged: dict[Operation, tuple] | None = None, steps: dict[tuple, tuple] | None = None,
                 debug: SourceShardingHandler | None = None, ruleless: set[Operation] | None = None):
        self.module = module
        self.debug = debug
        """Records where new axes came from (the debug options), or None."""
        self.groups = groups
        self.strategy = strategy
        self.get_directions = get_directions
        self.unchanged = {} if unchanged is None else unchanged
        """Per op, the inputs of its last step that changed nothing (shared by a pass's runs)."""
        self.steps = {} if steps is None else steps
        """Step inputs (`unchanged`'s keys, mesh, element-wise) -> `_step`'s new shardings (shared
        like `unchanged`)."""
        self.conservative = conservative
        self.meshes: dict[str, Mesh] = {}
        self.funcs: dict[str, Operation] = {}
        for op in module.ops:
            name = op.properties.get("sym_name")
            if op.name == "sdy.mesh":
                self.meshes[name.value] = op.properties["mesh"]
            elif op.name == "func.func":
                self.funcs[name.value] = op
        self.calls: dict[Operation, list[Operation]] = {f: [] for f in self.funcs.values()}
        for op in module.walk():
            if op.name == "func.call":
                callee = self.funcs.get(_callee_name(op))
                if callee is not None:
                    self.calls[callee].append(op)
        self.ruleless = set() if ruleless is None else ruleless
        """Ops visited without a sharding rule (they never get one during the pass: shared like
        `unchanged`)."""
        self.worklist = _Worklist()
        self.current: Operation | None = None

    # -- notifications ------------------------------------------------------------------------
    def _push(self, op: Operation) -> None:
        """`addToWorklist`: the op and its enclosing ops up to the module."""
        chain = []
        while op is not None and op is not self.module.op:
            chain.append(op)
            if op.parent is None:
                return
            op = op.parent_op
        for o in chain:
            self.worklist.push(o)

    def _notify(self, op: Operation | None) -> None:
        if op is not None and op is not self.current:
            self._push(op)

    def _notify_users(self, value: Value) -> None:
        for use in reversed(value.uses):  # MLIR's use lists run newest first
            user = use.operation
            edge = _edge_from_source(user, use.index)
            if edge is not None:
                self._notify(edge)
            elif user.name in _TERMINATORS:
                if user.name != "func.return":
                    self._notify(user.parent_op)
                    continue
                func = user.parent_op
                calls = self.calls.get(func)
                if not calls:
                    self._notify(func)
                for call in calls or ():
                    self._notify_users(call.results[use.index])
            elif user.name == "func.call":
                callee = self.funcs[_callee_name(user)]
                self._notify_users(callee.regions[0].blocks[0].arguments[use.index])
            else:
                self._notify(user)

    def _notify_sharding_modified(self, value: Value) -> None:
        if isinstance(value, OpResult) and value.owner.name == DATA_FLOW_EDGE:
            for target in edge_non_owner_targets(value.owner):
                self._notify_users(target)
        self._notify(value.owner if isinstance(value, OpResult) else value.owner.parent_op)
        self._notify_users(value)

    # -- one propagation step -----------------------------------------------------------------
    def _common_mesh(self, shardings) -> tuple[str, Mesh] | None:
        name = mesh = None
        for s in shardings:
            if s is None:
                continue
            other = s.mesh_or_ref if isinstance(s.mesh_or_ref, Mesh) else self.meshes.get(s.mesh_or_ref)
            if other is None:
                return None
            if mesh is None or mesh.is_empty:
                name, mesh = s.mesh_or_ref, other
                continue
            if other.is_empty:
                continue
            if other != mesh:
                return None
        if mesh is None or not isinstance(name, str):
            return None
        return name, mesh

    def propagate_tensors(self, operands: _Tensors, results: _Tensors, rule: OpShardingRule,
                          directions: Callable[[int], list[int]], op: Operation,
                          conservative: bool, notify: bool) -> bool:
        common = self._common_mesh([*operands.shardings, *results.shardings])
        if common is None:
            return False
        mesh_name, mesh = common
        if mesh.is_maximal:
            return False
        directions = directions(len(rule.factor_sizes))
        for f in rule.blocked_propagation_factors:
            directions[f] = NONE
        if not any(directions):
            return False  # nothing can move (both strategies would find no axes to propagate)
        # A step is a function of these: if the op saw them all before and changed nothing, it
        # would change nothing now (shardings compare by identity first, so this is cheap).
        key = (type(self.strategy), conservative, rule, tuple(directions),
               *operands.shardings, *results.shardings)
        if notify and self.unchanged.get(op) == key:
            return False
        old = None
        if self.debug is None:
            # The step's outcome depends only on these values (and the module's meshes), so ops
            # that repeat another op's inputs (layers of a model) reuse its new shardings.
            step_key = (key, mesh_name, op.name != "func.func" and is_elementwise(op))
            new_shardings = self.steps.get(step_key)
            if new_shardings is None:
                projection = ShardingProjection.build(operands.shardings, results.shardings, rule, mesh)
                new_shardings = self.steps[step_key] = self._step(
                    projection, operands, results, rule, directions, mesh_name, mesh, conservative, op)
        else:  # the debug handler compares the projection before and after the step
            projection = ShardingProjection.build(operands.shardings, results.shardings, rule, mesh)
            old = copy_projection(projection)
            new_shardings = self._step(projection, operands, results, rule, directions, mesh_name,
                                       mesh, conservative, op)
        any_update = False
        n = len(operands.shardings)
        for i, new in enumerate(new_shardings):
            if new is not None:
                self._update_tensor(operands if i < n else results, i if i < n else i - n, new, notify)
                any_update = True
        if not any_update:
            self.unchanged[op] = key
        elif old is not None:
            self.debug.record(op, operands.values, results.values, mesh, rule, old, projection)
        return any_update

    def _step(self, projection: ShardingProjection, operands: _Tensors, results: _Tensors,
              rule: OpShardingRule, directions, mesh_name: str, mesh: Mesh, conservative: bool,
              op: Operation) -> tuple:
        """Per operand, then result: its new sharding, or None if it does not change."""
        update_operands, update_results = self.strategy.propagate_factor_shardings(
            projection, directions.__getitem__, rule.factor_sizes, mesh, conservative, op)
        out = []
        for side, tensors, mappings, updates in (
                (operands, projection.operands, rule.operand_mappings, update_operands),
                (results, projection.results, rule.result_mappings, update_results)):
            for i, update in enumerate(updates):
                new = None
                if update:
                    old = side.shardings[i]
                    new = tensors[i].to_tensor_sharding(mappings[i], rule.factor_sizes, mesh_name, mesh)
                    if (old is None and _is_empty(new)) or new == old:
                        new = None
                out.append(new)
        return tuple(out)

    def _update_tensor(self, side: _Tensors, i: int, new: TensorSharding, notify: bool) -> None:
        side.set(i, new)
        if side.is_func_result:
            return
        value = shardable_value(side.values[i])
        if notify:
            self._notify_sharding_modified(value)
        for member in self.groups.members(value):
            if member is value:
                continue
            set_sharding(member, new)
            if notify:
                self._notify_sharding_modified(member)

    # -- patterns -----------------------------------------------------------------------------
    def _values(self, values: Sequence[Value]) -> _Tensors:
        return _Tensors(values, list(map(_get_sharding, values)))

    def _directions(self, op: Operation):
        return lambda num_factors: self.get_directions(op, num_factors)

    def visit(self, op: Operation) -> bool:
        if op.name == PROPAGATION_BARRIER:
            allowed = op.properties["allowed_direction"].value
            return self.propagate_tensors(self._values(op.operands), self._values(op.results),
                                          _identity_rule(op.result.type), lambda n: [allowed] * n, op,
                                          False, True)
        if op.name == DATA_FLOW_EDGE and self._visit_edge(op):
            return True
        if op.name == FUNC_DATA_FLOW_EDGE:
            return self._visit_func_edge(op)
        if op in self.ruleless:
            return False
        rule = get_or_create_sharding_rule(op, self.conservative)
        if rule is None:
            self.ruleless.add(op)
            return False
        return self.propagate_tensors(self._values(op.operands), self._values(op.results), rule,
                                      self._directions(op), op, self.conservative, True)

    def _visit_edge(self, edge: Operation) -> bool:
        if not _static_shaped(edge.result.type):
            return False
        sources = edge_sources(edge)

        def set_target(i, s):
            edge.properties["sharding"] = _transform_target_sharding(edge, s, before=False)
        target = _transform_target_sharding(edge, edge.properties.get("sharding"), before=True)
        return self.propagate_tensors(self._values(sources), _Tensors([edge.result], [target], set_target),
                                      _identity_rule(edge.result.type, len(sources)),
                                      self._directions(edge), edge, False, True)

    def _visit_func_edge(self, edge: Operation) -> bool:
        if not _static_shaped(edge.result.type):
            return False
        operand = edge.operands[0]
        if isinstance(operand, BlockArgument):
            func = edge.parent_of_type("func.func")
            sources = [call.operands[operand.index] for call in self.calls.get(func, ())]
            if not sources:
                return True
        else:
            callee = self.funcs[_callee_name(operand.owner)]
            terminator = callee.regions[0].blocks[0].terminator
            sources = [terminator.operands[operand.index]] if terminator.name == "func.return" else []
        return self.propagate_tensors(self._values(sources), self._values([edge.result]),
                                      _identity_rule(edge.result.type, len(sources)),
                                      self._directions(edge), edge, False, True)

    def propagate_func_results(self) -> None:
        func = main_func(self.module)
        terminator = func.regions[0].blocks[0].terminator
        count = len(terminator.operands)
        for i, value in enumerate(terminator.operands):
            if not _static_shaped(value.type):
                continue
            operands = self._values([value])
            results = _Tensors([value], [func_result_sharding(func, i)],
                               lambda _, s, i=i: set_func_attr_sharding(func, "res_attrs", i, count, s),
                               is_func_result=True)
            self.propagate_tensors(operands, results, _identity_rule(value.type), lambda n: [BOTH] * n, func, False, False)

    def run(self) -> None:
        self.propagate_func_results()
        self.worklist.items = list(self.module.walk())[::-1]  # popped in pre-order
        self.worklist.index = {op: i for i, op in enumerate(self.worklist.items)}
        while self.worklist.items:
            op = self.worklist.pop()
            if is_trivially_dead(op):
                self._erase(op)
                continue
            self.current = op
            self.visit(op)
            self.current = None
        self.propagate_func_results()

    def _erase(self, op: Operation) -> None:
        for inner in op.walk(post_order=True):
            for value in inner.operands:
                if isinstance(value, OpResult) and len([u for u in value.users if u is not inner]) <= 1:
                    self._push(value.owner)
            self.worklist.remove(inner)
        op.erase(drop_uses=True)


_SPECIAL_OWNERS = DATA_FLOW_OPS | SINGLE_SHARDING_OPS | COLLECTIVE_OPS


def _get_sharding(value: Value) -> TensorSharding | None:
    """`get_sharding`, with fast paths for the result of an ordinary op (most values) and a
    function's argument."""
    if isinstance(value, OpResult):
        if value.owner.name not in _SPECIAL_OWNERS:
            attr = value.owner.attributes.get("sdy.sharding")
            return attr.shardings[value.index] if attr is not None and attr.shardings else None
    else:
        func = value.owner.parent.parent if value.owner.parent is not None else None
        if func is not None and func.name == "func.func":
            return func_arg_sharding(func, value.index)
    return get_sharding(value)


def _callee_name(call: Operation) -> str:
    callee = call.properties.get("callee")
    return callee.root if isinstance(callee, SymbolRefAttr) else str(callee)


class BasicPropagationPass(Pass):
    name = "sdy-basic-propagate"
    summary = "Propagates shardings through ops with sharding rules, data-flow edges and barriers."
    options = {"keep-sharding-rules": False, "module-dump-directory": "",
               "conservative-propagation": False, "debug-sharding-origins": False,
               "debug-propagation-edge-sharding": False}
    trace = False
    """Keep each axis's first propagation step too (`SourceShardingHandler(trace=True)`)."""

    def __init__(self, **options):
        super().__init__(**options)
        self.keep_sharding_rules = self.options["keep-sharding-rules"]
        self.conservative = self.options["conservative-propagation"]
        self.debug_handler: SourceShardingHandler | None = None
        """The last run's debug records (with a debug option or `trace` on), else None."""

    def strategies(self) -> list[BasicFactorPropagation]:
        return [BasicFactorPropagation()]

    def propagate(self, module: Module, groups: ShardingGroupMap, get_directions: GetDirections) -> None:
        for strategy in self.strategies():
            Propagator(module, groups, strategy, get_directions, self.conservative, self._unchanged,
                       self._steps, self.debug_handler, self._ruleless).run()

    def run(self, module: Module) -> None:
        self._unchanged: dict[Operation, tuple] = {}  # see Propagator.unchanged
        self._steps: dict[tuple, tuple] = {}  # see Propagator.steps
        self._ruleless: set[Operation] = set()  # see Propagator.ruleless
        origins, edges = self.options["debug-sharding-origins"], self.options["debug-propagation-edge-sharding"]
        handler = self.debug_handler = (SourceShardingHandler(origins, edges, self.trace)
                                        if origins or edges or self.trace else None)
        if handler is not None:
            handler.prepare(module)
        check_shapes(module)
        groups = ShardingGroupMap(module)
        groups.sync()
        self.propagate(module, groups, propagate_any)
        if not self.keep_sharding_rules:
            remove_sharding_rules(module)
        if handler is not None:
            handler.save(module)
