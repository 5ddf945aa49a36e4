"""Where a value's sharding lives, and the data-flow ops' edge owners (Shardy's `ir/utils.cc`).

Shared by the passes: `get_sharding(value)` / `set_sharding(value, s)` read and write the one
place a value's sharding is stored (spec/sdy_passes.md §5, "Where a value's sharding lives"),
`data_flow_edge_of(target)` is `DataFlowEdgeOp::lookup`, and the `*_edge_owners` functions
give the owners of each `ShardableDataFlowOpInterface` op (`stablehlo.while`, `case`,
`optimization_barrier`, `sdy.named_computation`, `sdy.manual_computation`).
"""

from __future__ import annotations

from dataclasses import replace

from sharding import DimensionSharding, Mesh, TensorSharding, TensorShardingPerValue

from sdy_passes.attributes import ArrayAttr, DictionaryAttr, RankedTensorType, UnrankedTensorType
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import BlockArgument, Operation, OpResult, Value

SHARDING = "sdy.sharding"
DATA_FLOW_EDGE = "sdy.data_flow_edge"
MANUAL_COMPUTATION = "sdy.manual_computation"
NAMED_COMPUTATION = "sdy.named_computation"
DATA_FLOW_OPS = frozenset({"stablehlo.while", "stablehlo.case", "stablehlo.optimization_barrier",
                           NAMED_COMPUTATION, MANUAL_COMPUTATION})
"""Ops implementing `ShardableDataFlowOpInterface`."""
SINGLE_SHARDING_OPS = frozenset({"sdy.sharding_constraint", "sdy.reshard", DATA_FLOW_EDGE})
"""Sdy ops whose result sharding is their `sharding` property."""
COLLECTIVE_OPS = frozenset({"sdy.all_gather", "sdy.all_slice", "sdy.all_reduce", "sdy.all_to_all",
                            "sdy.collective_permute", "sdy.reduce_scatter", "sdy.sharded_to_unreduced",
                            "sdy.replicated_to_unreduced"})
"""Sdy collectives (`CollectiveOpInterface`): the result sharding is `out_sharding`."""


# -- types ---------------------------------------------------------------------------------------

def is_shaped(type_) -> bool:
    return isinstance(type_, (RankedTensorType, UnrankedTensorType))


def is_static_shaped(type_) -> bool:
    return isinstance(type_, RankedTensorType) and type_.has_static_shape


def rank_of(type_) -> int:
    """Rank of a ranked tensor, 0 for anything else (Shardy's `getTensorRank`)."""
    return type_.rank if isinstance(type_, RankedTensorType) else 0


def is_scalar(value: Value) -> bool:
    return isinstance(value.type, RankedTensorType) and value.type.rank == 0


def shape_of(type_) -> tuple:
    """Shardy's `getTensorShape`: the shape of a ranked tensor, `()` for other types."""
    return type_.shape if isinstance(type_, RankedTensorType) else ()


def open_sharding(mesh_or_ref, type_) -> TensorSharding:
    """`<@mesh, [{?}, ...]>` for a value of `type_` (`[]` for non-tensors)."""
    return TensorSharding(mesh_or_ref, tuple(DimensionSharding((), False) for _ in range(rank_of(type_))))


# -- owners --------------------------------------------------------------------------------------

def owning_op(value: Value) -> Operation | None:
    """The defining op of a result, or the op whose region holds a block argument."""
    if isinstance(value, OpResult):
        return value.owner
    return value.owner.parent_op


def block_arg_edge_owners(op: Operation) -> list[BlockArgument]:
    """Body arguments of named/manual computations; none for while, case, barrier."""
    if op.name in (NAMED_COMPUTATION, MANUAL_COMPUTATION):
        return list(op.regions[0].block.arguments)
    return []


def edge_owner_from_target(op: Operation, target: Value) -> Value:
    """The owner for a target of data-flow op `op` (a while body/cond arg maps to the result)."""
    if op.name == "stablehlo.while" and isinstance(target, BlockArgument):
        return op.results[target.index]
    return target


def data_flow_edge_of(target: Value) -> Operation | None:
    """The `sdy.data_flow_edge` of `target`'s owner, if its single use is one (`lookup`)."""
    op = owning_op(target)
    if op is None or op.name not in DATA_FLOW_OPS:
        return None
    owner = edge_owner_from_target(op, target)
    if owner.has_one_use:
        user = owner.uses[0].operation
        if user.name == DATA_FLOW_EDGE:
            return user
    return None


def shardable_value(value: Value) -> Value | None:
    """The value whose sharding stands for `value`, or None if `value` cannot be sharded."""
    edge = data_flow_edge_of(value)
    if edge is not None:
        return edge.result
    if isinstance(value, OpResult):
        return value
    op = owning_op(value)
    if op is None:
        return None
    if op.name == "func.func":
        return value
    if op.name in DATA_FLOW_OPS:
        return edge_owner_from_target(op, value)
    return None


# -- reading -------------------------------------------------------------------------------------

def first_free_axis(axes, manual) -> int:
    """`getFirstFreeAxisIter`: where a dim's leading manual axes end, found as Shardy finds it,
    by `llvm::partition_point` (a binary search). On a dim that is not manual-axes-first (a free
    axis propagated before a manual one) the search's answer is what jaxlib uses: `[a, m]`
    gives 2, so erasing the manual axes erases both."""
    lo, n = 0, len(axes)
    while n > 0:
        half = n // 2
        if axes[lo + half].name in manual:
            lo, n = lo + half + 1, n - half - 1
        else:
            n = half
    return lo


def erase_manual_axes(sharding: TensorSharding, manual_axes) -> TensorSharding:
    """The in-sharding of a manual computation as seen inside its body (`eraseManualAxes`).

    Drops the leading manual axes of each dim and manual axes from replicated/unreduced.
    """
    if not manual_axes:
        return sharding
    manual = set(manual_axes)
    dims = [replace(dim, axes=dim.axes[first_free_axis(dim.axes, manual):]) for dim in sharding.dim_shardings]
    return replace(sharding, dim_shardings=tuple(dims),
                   replicated_axes=tuple(a for a in sharding.replicated_axes if a.name not in manual),
                   unreduced_axes=tuple(a for a in sharding.unreduced_axes if a.name not in manual))


def op_shardings(op: Operation) -> tuple[TensorSharding, ...]:
    """The op's `sdy.sharding` per-value list, `()` when absent."""
    attr = op.attributes.get(SHARDING)
    return attr.shardings if isinstance(attr, TensorShardingPerValue) else ()


def _per_value(op: Operation, key: str, properties: bool = True) -> tuple[TensorSharding, ...]:
    attr = (op.properties if properties else op.attributes).get(key)
    return attr.shardings if isinstance(attr, TensorShardingPerValue) else ()


def func_arg_sharding(func: Operation, index: int) -> TensorSharding | None:
    return _func_attr_sharding(func, "arg_attrs", index)


def func_result_sharding(func: Operation, index: int) -> TensorSharding | None:
    return _func_attr_sharding(func, "res_attrs", index)


def _func_attr_sharding(func: Operation, key: str, index: int) -> TensorSharding | None:
    attrs = func.properties.get(key)
    if not isinstance(attrs, ArrayAttr) or index >= len(attrs):
        return None
    found = attrs[index].get(SHARDING)
    return found if isinstance(found, TensorSharding) else None


def set_func_attr_sharding(func: Operation, key: str, index: int, count: int,
                           sharding: TensorSharding) -> None:
    """Set `sdy.sharding` in `arg_attrs`/`res_attrs` entry `index` (creating the list)."""
    set_func_attr(func, key, index, count, SHARDING, sharding)


def set_func_attr(func: Operation, key: str, index: int, count: int, name: str, value) -> None:
    """Set attribute `name` in `arg_attrs`/`res_attrs` entry `index` (creating the list)."""
    attrs = func.properties.get(key)
    entries = list(attrs.elements) if isinstance(attrs, ArrayAttr) else [DictionaryAttr()] * count
    entry = entries[index].as_dict()
    entry[name] = value
    entries[index] = DictionaryAttr.from_dict(entry)
    func.properties[key] = ArrayAttr(tuple(entries))


def remove_func_attr(func: Operation, key: str, index: int, name: str) -> None:
    """Remove attribute `name` from `arg_attrs`/`res_attrs` entry `index`; the list goes when
    every entry is empty (MLIR's `removeArgAttr`/`removeResultAttr`)."""
    attrs = func.properties.get(key)
    if not isinstance(attrs, ArrayAttr) or index >= len(attrs) or name not in attrs[index]:
        return
    entries = list(attrs.elements)
    entries[index] = DictionaryAttr.from_dict({k: v for k, v in entries[index].as_dict().items() if k != name})
    if all(len(e) == 0 for e in entries):
        del func.properties[key]
    else:
        func.properties[key] = ArrayAttr(tuple(entries))


def edge_owner_sharding(op: Operation, owner: Value) -> TensorSharding | None:
    """`ShardableDataFlowOpInterface::getEdgeOwnerSharding`."""
    if isinstance(owner, BlockArgument):
        shardings = _per_value(op, "in_shardings")
        if op.name == MANUAL_COMPUTATION and shardings:
            manual = op.properties["manual_axes"].names
            return erase_manual_axes(shardings[owner.index], manual)
    elif op.name in (NAMED_COMPUTATION, MANUAL_COMPUTATION):
        shardings = _per_value(op, "out_shardings")
    else:
        shardings = op_shardings(op)
    return shardings[owner.index] if shardings else None


def get_sharding(value: Value) -> TensorSharding | None:
    """The sharding of `value` (Shardy's `getSharding`), or None."""
    value = shardable_value(value)
    if value is None:
        return None
    op = owning_op(value)
    if op.name == "func.func":
        return func_arg_sharding(op, value.index)
    if op.name in SINGLE_SHARDING_OPS:
        return op.properties.get("sharding")
    if op.name in COLLECTIVE_OPS:
        return op.properties.get("out_sharding")
    if op.name in DATA_FLOW_OPS:
        return edge_owner_sharding(op, value)
    shardings = op_shardings(op)
    return shardings[value.index] if shardings else None


# -- writing -------------------------------------------------------------------------------------

def _with_sharding_at(shardings, values, index: int, sharding: TensorSharding):
    """The list with entry `index` replaced; a missing list becomes fully open shardings."""
    if shardings:
        out = list(shardings)
        out[index] = sharding
    else:
        out = [sharding if i == index else open_sharding(sharding.mesh_or_ref, v.type)
               for i, v in enumerate(values)]
    return TensorShardingPerValue(tuple(out))


def set_sharding(value: Value, sharding: TensorSharding) -> None:
    """Store `sharding` where `value`'s sharding lives (Shardy's `setSharding`)."""
    value = shardable_value(value)
    if value is None:
        return
    op = owning_op(value)
    if op.name == "func.func":
        set_func_attr_sharding(op, "arg_attrs", value.index, len(value.owner.arguments), sharding)
    elif op.name in SINGLE_SHARDING_OPS:
        op.properties["sharding"] = sharding
    elif op.name in COLLECTIVE_OPS:
        op.properties["out_sharding"] = sharding
    elif op.name in DATA_FLOW_OPS:
        _set_edge_owner_sharding(op, value, sharding)
    else:
        op.attributes[SHARDING] = _with_sharding_at(op_shardings(op), op.results, value.index, sharding)


def _set_edge_owner_sharding(op: Operation, owner: Value, sharding: TensorSharding) -> None:
    if isinstance(owner, BlockArgument):
        args = block_arg_edge_owners(op)
        if op.name == MANUAL_COMPUTATION:
            # Body arguments of a manual computation always have a sharding, so a pass never
            # writes one; keep the outer sharding's manual axes if it ever happens.
            outer = op.properties["in_shardings"].shardings
            manual = op.properties["manual_axes"].names
            new = list(outer)
            new[owner.index] = _add_manual_axes(outer[owner.index], sharding, manual)
            op.properties["in_shardings"] = TensorShardingPerValue(tuple(new))
            return
        op.properties["in_shardings"] = _with_sharding_at(_per_value(op, "in_shardings"), args,
                                                          owner.index, sharding)
    elif op.name in (NAMED_COMPUTATION, MANUAL_COMPUTATION):
        op.properties["out_shardings"] = _with_sharding_at(_per_value(op, "out_shardings"), op.results,
                                                           owner.index, sharding)
    else:
        op.attributes[SHARDING] = _with_sharding_at(op_shardings(op), op.results, owner.index, sharding)


def _add_manual_axes(outer: TensorSharding, inner: TensorSharding, manual) -> TensorSharding:
    """`addFreeAxesToManualComputationSharding`: each dim is the outer sharding's manual prefix
    followed by the inner dim's axes (inner closedness and priority); the mesh is the inner
    one, replicated and unreduced axes the outer ones."""
    manual = set(manual)
    dims = [replace(in_dim, axes=out_dim.axes[:first_free_axis(out_dim.axes, manual)] + in_dim.axes)
            for out_dim, in_dim in zip(outer.dim_shardings, inner.dim_shardings)]
    return replace(outer, mesh_or_ref=inner.mesh_or_ref, dim_shardings=tuple(dims))


# -- every sharding of a module ------------------------------------------------------------------

def transform_shardings(module, transform) -> None:
    """Shardy's `transformShardings`: replace every sharding `s` in the module (pre-order; func
    arg then result attrs, in/out shardings, `sdy.sharding`, `sharding`/`out_sharding`
    properties) by `transform(s)`, writing only the ones that change. `transform` is a function
    of the sharding alone: called once per distinct sharding (a model repeats a few)."""
    made: dict[TensorSharding, TensorSharding] = {}

    def fn(s: TensorSharding) -> TensorSharding:
        new = made.get(s)
        if new is None:
            new = made[s] = transform(s)
        return new

    def per_value(owner: dict, key: str) -> None:
        attr = owner.get(key)
        if isinstance(attr, TensorShardingPerValue) and attr.shardings:
            new = tuple(map(fn, attr.shardings))
            if new != attr.shardings:
                owner[key] = TensorShardingPerValue(new)

    for op in module.walk():
        if op.name == "func.func":
            for key in ("arg_attrs", "res_attrs"):
                attrs = op.properties.get(key)
                if not isinstance(attrs, ArrayAttr):
                    continue
                entries = list(attrs.elements)
                for i, entry in enumerate(entries):
                    old = entry.get(SHARDING) if isinstance(entry, DictionaryAttr) else None
                    if isinstance(old, TensorSharding):
                        new = fn(old)
                        if new != old:
                            entries[i] = DictionaryAttr.from_dict({**entry.as_dict(), SHARDING: new})
                op.properties[key] = ArrayAttr(tuple(entries))
        elif op.name in (MANUAL_COMPUTATION, NAMED_COMPUTATION):
            per_value(op.properties, "in_shardings")
            per_value(op.properties, "out_shardings")
        elif op.name in SINGLE_SHARDING_OPS or op.name in COLLECTIVE_OPS:
            key = "sharding" if op.name in SINGLE_SHARDING_OPS else "out_sharding"
            old = op.properties.get(key)
            if isinstance(old, TensorSharding):
                op.properties[key] = fn(old)
        else:
            per_value(op.attributes, SHARDING)


def mesh_of(sharding: TensorSharding, op: Operation) -> Mesh:
    """The mesh `sharding` names (inlined, or the `sdy.mesh` symbol of `op`'s module; the
    verifier checked that it exists)."""
    if isinstance(sharding.mesh_or_ref, Mesh):
        return sharding.mesh_or_ref
    found = op
    while found.parent_op is not None:
        found = found.parent_op
    for top in found.regions[0].block.ops:
        if top.name == "sdy.mesh" and top.properties["sym_name"].value == sharding.mesh_or_ref:
            return top.properties["mesh"]
    raise PassFailedError(f"unknown mesh: @{sharding.mesh_or_ref}", op.location)
