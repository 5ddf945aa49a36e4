"""Verify a module the way MLIR + Shardy do for the ops the import passes meet.

`verify_module(module)` raises `VerificationError(message, location)` for the first problem, with
Shardy's message text and prefix (`'func.func' op arg 0 - unknown axis name: "c"`):

* symbols: unique names (`redefinition of symbol named 'mesh'`), meshes valid (M1-M7);
* every sdy sharding — func argument/result attributes, `sdy.sharding` on any op, the `sharding`
  of constraint/reshard/data-flow-edge ops, the in/out shardings of manual and named
  computations — checked by `sharding.verify` against the module's meshes and the value's type,
  with the axes bound by enclosing manual computations;
* `sdy.data_flow_edge`, `sdy.manual_computation`, `sdy.named_computation`,
  `sdy.propagation_barrier` op rules; `func.call` callees exist.
"""

from __future__ import annotations

from sharding import InvalidMeshError, InvalidShardingError, Mesh, MeshTable, TensorSharding
from sharding import TensorShardingPerValue, ManualAxes
from sharding.verify import NO_TYPE, sharding_errors, verify_mesh

from sdy_passes.attributes import (
    ArrayAttr, DictionaryAttr, FunctionType, OpShardingRule, RankedTensorType, SymbolRefAttr, TypeAttr,
    factor_name,
)
from sdy_passes.errors import VerificationError
from sdy_passes.ir import Module, Operation, symbol_name

__all__ = ["verify_module"]

_SHARDING_OPS = ("sdy.sharding_constraint", "sdy.reshard", "sdy.data_flow_edge")


def verify_module(module: Module) -> None:
    """Raise `VerificationError` for the first invalid op (module order, parents first)."""
    meshes = _mesh_table(module)
    for op in module.walk():
        _verify_op(op, module, meshes)


def _fail(op: Operation, message: str):
    raise VerificationError(f"'{op.name}' op {message}", op.location)


def _mesh_table(module: Module) -> MeshTable:
    seen: dict[str, Operation] = {}
    entries = []
    for op in module.ops:
        name = symbol_name(op)
        if name is None:
            continue
        if name in seen:
            raise VerificationError(f"redefinition of symbol named '{name}'", op.location)
        seen[name] = op
        if op.name == "sdy.mesh":
            mesh = op.properties.get("mesh")
            if not isinstance(mesh, Mesh):
                _fail(op, "requires attribute 'mesh' of type MeshAttr")
            try:
                verify_mesh(mesh)
            except InvalidMeshError as e:
                _fail(op, str(e))
            entries.append((name, mesh))
    return MeshTable(tuple(entries))


def _shape(t):
    """What `sharding.verify` takes as the value's type: dims, the type's text, or `NO_TYPE`
    (Shardy verifies the single sharding of a result-less op against a null type)."""
    if t is None:
        return NO_TYPE
    return t.shape if isinstance(t, RankedTensorType) else str(t)


def _bound_manual_axes(op: Operation, *, include_self: bool = False) -> tuple[str, ...]:
    """Axes made manual by the manual computations enclosing `op`."""
    axes: list[str] = []
    chain = [op] if include_self else []
    chain += list(op.ancestors())
    for a in chain:
        if a.name == "sdy.manual_computation":
            m = a.properties.get("manual_axes")
            if isinstance(m, ManualAxes):
                axes.extend(m.names)
    return tuple(axes)


def _check_sharding(op, sharding, t, meshes, prefix: str, manual_axes=()) -> None:
    try:
        errors = sharding_errors(sharding, mesh=meshes, shape=_shape(t),
                                 manual_axes=manual_axes)
    except (InvalidMeshError, InvalidShardingError) as e:
        errors = (str(e),)
    if errors:
        _fail(op, prefix + errors[0])


def _value_prefix(kind: str, count: int, index: int) -> str:
    return f"{kind} - " if count == 1 else f"{kind} {index} - "


def _check_per_value(op, per_value, types, meshes, kind: str, manual_axes=()) -> None:
    """`verifyTensorShardingPerValueAttr`: count, then each sharding against its type."""
    shardings = per_value.shardings
    if not types and len(shardings) == 1:
        first = shardings[0]
        mesh = first.mesh_or_ref if isinstance(first.mesh_or_ref, Mesh) else meshes.get(first.mesh_or_ref)
        if mesh is not None and (mesh.is_maximal or first.is_fully_replicated):
            _check_sharding(op, first, None, meshes, _value_prefix(kind, 0, 0), manual_axes)
            return
    if len(shardings) != len(types):
        _fail(op, f"{kind} shardings don't match number of values: {len(shardings)} shardings vs "
                  f"{len(types)} values")
    for i, (s, t) in enumerate(zip(shardings, types)):
        _check_sharding(op, s, t, meshes, _value_prefix(kind, len(types), i), manual_axes)


def _verify_op(op: Operation, module: Module, meshes: MeshTable) -> None:
    name = op.name
    bound = _bound_manual_axes(op)
    if "sdy.sharding" in op.attributes:
        s = op.attributes["sdy.sharding"]
        if not isinstance(s, TensorShardingPerValue):
            _fail(op, "should have a sharding attribute of type TensorShardingPerValueAttr")
        _check_per_value(op, s, op.result_types, meshes, "result", bound)
    if "sdy.sharding_rule" in op.attributes:
        _verify_sharding_rule(op, op.attributes["sdy.sharding_rule"])
    if name == "func.func":
        _verify_func(op, meshes)
    elif name in _SHARDING_OPS:
        s = op.properties.get("sharding")
        if name == "sdy.data_flow_edge":
            _verify_edge(op)
        if s is None and name != "sdy.data_flow_edge":
            _fail(op, "requires attribute 'sharding'")
        if s is not None:
            if not isinstance(s, TensorSharding):
                _fail(op, "attribute 'sharding' failed to satisfy constraint: Tensor sharding")
            if len(op.results) == 1:
                _check_sharding(op, s, op.result.type, meshes, "", bound)
    elif name == "sdy.manual_computation":
        _verify_manual(op, meshes, bound)
    elif name == "sdy.named_computation":
        _verify_named(op, meshes, bound)
    elif name == "sdy.propagation_barrier":
        d = op.properties.get("allowed_direction")
        if getattr(d, "value", None) == 3:
            _fail(op, "cannot specify `BOTH` as the direction. Not blocking propagation direction "
                      "makes the op redundant.")
    elif name == "func.call":
        callee = op.properties.get("callee")
        if not isinstance(callee, SymbolRefAttr):
            _fail(op, "requires attribute 'callee'")
        target = module.lookup_symbol(callee.root)
        if target is None or target.name != "func.func":
            _fail(op, f"'{callee}' does not reference a valid function")


def _verify_func(op: Operation, meshes: MeshTable) -> None:
    ft = op.properties.get("function_type")
    if not isinstance(ft, TypeAttr) or not isinstance(ft.type, FunctionType):
        _fail(op, "requires attribute 'function_type'")
    ft = ft.type
    region = op.regions[0] if op.regions else None
    if region is not None and region.blocks and region.block.arg_types != ft.inputs:
        _fail(op, "type of entry block arguments must match the function signature")
    for key, types, kind in (("arg_attrs", ft.inputs, "arg"), ("res_attrs", ft.results, "result")):
        attrs = op.properties.get(key)
        if attrs is None:
            continue
        if not isinstance(attrs, ArrayAttr) or len(attrs) != len(types):
            _fail(op, f"expects {key} to be an array of {len(types)} dictionaries")
        for i, (d, t) in enumerate(zip(attrs, types)):
            if not isinstance(d, DictionaryAttr) or "sdy.sharding" not in d:
                continue
            s = d.get("sdy.sharding")
            if not isinstance(s, TensorSharding):
                _fail(op, f"{kind} {i} - should have a sharding attribute of type TensorShardingAttr")
            _check_sharding(op, s, t, meshes, f"{kind} {i} - ")


def _verify_edge(op: Operation) -> None:
    if len(op.operands) != 1 or len(op.results) != 1:
        _fail(op, "expects one operand and one result")
    t = op.result.type
    if not (isinstance(t, RankedTensorType) and t.has_static_shape):
        _fail(op, f"expected sdy.data_flow_edge to have a static-shaped result. type: {t}")
    x = op.operands[0]
    if x.num_uses != 1:
        _fail(op, "expected input of sdy.data_flow_edge to have a single user")
    owner = getattr(x, "owner", None)
    if isinstance(owner, Operation) and owner.name.startswith("sdy.") and owner.name not in (
            "sdy.named_computation", "sdy.manual_computation"):
        _fail(op, "expected input of sdy.data_flow_edge to not be defined by an SdyDialect op "
                  "(other than an sdy.named_computation).")


def _terminator_types(op: Operation):
    region = op.regions[0] if op.regions else None
    if region is None or not region.blocks or region.block.terminator is None:
        return ()
    return region.block.terminator.operand_types


def _verify_manual(op: Operation, meshes: MeshTable, bound: tuple[str, ...]) -> None:
    props = op.properties
    ins, outs, manual = props.get("in_shardings"), props.get("out_shardings"), props.get("manual_axes")
    if not isinstance(ins, TensorShardingPerValue) or not isinstance(outs, TensorShardingPerValue):
        _fail(op, "requires attributes 'in_shardings' and 'out_shardings'")
    if not isinstance(manual, ManualAxes):
        _fail(op, "requires attribute 'manual_axes'")
    for axis in manual.names:
        if axis in bound:
            _fail(op, f'operates on axis "{axis}" which is already bound by a parent '
                      "sdy.manual_computation op")
    region = op.regions[0] if op.regions and op.regions[0].blocks else None
    if region is None:
        _fail(op, "expects a body with one block")
    manual_set = set(manual.names)
    for kind, global_types, local_types, per_value in (
            ("operand", op.operand_types, region.block.arg_types, ins),
            ("result", op.result_types, _terminator_types(op), outs)):
        if not global_types and not local_types and not per_value.shardings:
            continue
        _check_per_value(op, per_value, global_types, meshes, kind, bound)
        if len(global_types) != len(local_types):
            _fail(op, f"number of op {kind}s and region {kind}s must match. Op has "
                      f"{len(global_types)} op {kind}s and {len(local_types)} region {kind}s")
        for i, (gt, lt, s) in enumerate(zip(global_types, local_types, per_value.shardings)):
            mesh = s.mesh_or_ref if isinstance(s.mesh_or_ref, Mesh) else meshes.get(s.mesh_or_ref)
            for d, dim in enumerate(s.dim_shardings):
                seen_free = None
                for ref in dim.axes:
                    if ref.name not in manual_set:
                        seen_free = seen_free or ref
                    elif seen_free is not None:
                        prev = dim.axes[dim.axes.index(ref) - 1]
                        _fail(op, f"{kind} sharding at index {i} must have all manual axes come before "
                                  f"free axes in its dimension sharding at index {d}. Saw manual axis "
                                  f"{ref} after free axis {prev}")
            if not isinstance(gt, RankedTensorType):
                continue
            new_dims = []
            for size, dim in zip(gt.shape, s.dim_shardings):
                if size is None:
                    new_dims.append(None)
                    continue
                factor = 1
                for ref in dim.axes:
                    if ref.name in manual_set and mesh is not None:
                        factor *= ref.sub_axis_info.size if ref.sub_axis_info else mesh.axis_size(ref.name)
                if size % factor:
                    _fail(op, f"{kind} dimension size {size} is not divisible by the manual axes size {factor}")
                new_dims.append(size // factor)
            expected = RankedTensorType(tuple(new_dims), gt.element_type)
            if expected != lt:
                _fail(op, f"{kind} shape, corresponding sharding, and region {kind} shape at index {i} "
                          f"must match. Expected local shape '{expected}', actual local shape '{lt}'")
    if not ins.shardings and not outs.shardings:
        return
    common = None
    for s in (*ins.shardings, *outs.shardings):
        mesh = s.mesh_or_ref if isinstance(s.mesh_or_ref, Mesh) else meshes.get(s.mesh_or_ref)
        if mesh is None or mesh.is_empty:
            continue
        if common is None:
            common = mesh
        elif mesh != common:
            common = False
            break
    if common is False and manual.names:
        _fail(op, "all in and out shardings must be bound to the same mesh or an empty mesh.")
    for axis in manual.names:
        if common and not common.has_axis(axis):
            _fail(op, f'unknown manual axis: "{axis}"')


def _verify_named(op: Operation, meshes: MeshTable, bound: tuple[str, ...]) -> None:
    region = op.regions[0] if op.regions and op.regions[0].blocks else None
    if region is None:
        _fail(op, "expects a body with one block")
    returned = _terminator_types(op)
    if tuple(returned) != op.result_types:  # result type inference runs first
        _fail(op, f"inferred type(s) {_types(returned)} are incompatible with return type(s) of "
                  f"operation {_types(op.result_types)}")
    for inner, outer, inner_name, outer_name in (
            (region.block.arg_types, op.operand_types, "block argument", "operand"),
            (_terminator_types(op), op.result_types, "returned value", "result")):
        if len(inner) != len(outer):
            raise VerificationError(f"number of {inner_name}s must match the number of {outer_name}s: "
                                    f"{len(inner)} != {len(outer)}", op.location)
        for i, (a, b) in enumerate(zip(inner, outer)):
            if a != b:
                raise VerificationError(f"expected the type of the {i}'th {inner_name} to match the type "
                                        f"of the corresponding {outer_name}: '{a}' vs '{b}'", op.location)
    for key, types in (("in_shardings", op.operand_types), ("out_shardings", op.result_types)):
        s = op.properties.get(key)
        if s is not None:
            if not isinstance(s, TensorShardingPerValue):
                _fail(op, f"attribute '{key}' failed to satisfy constraint: sharding per value")
            _check_per_value(op, s, types, meshes, key, bound)


def _types(types) -> str:
    return ", ".join(f"'{t}'" for t in types)


def _verify_sharding_rule(op: Operation, rule) -> None:
    """`verifyOpShardingRuleAttr`: mappings fit the op's types, factors are used and valid."""
    if not isinstance(rule, OpShardingRule):
        _fail(op, "should have a sharding rule attribute of type OpShardingRuleAttr")
    sizes = rule.factor_sizes
    seen: set[int] = set()
    for kind, types, mappings in (("operand", op.operand_types, rule.operand_mappings),
                                  ("result", op.result_types, rule.result_mappings)):
        if len(types) != len(mappings):
            _fail(op, f"number of {kind}s and mappings must match: {len(types)} != {len(mappings)}")
        if not mappings:
            _fail(op, f"number of {kind}s mappings cannot be 0. Op sharding rules can only be defined "
                      "on operations with at least one operand and result.")
        for i, (t, mapping) in enumerate(zip(types, mappings)):
            prefix = _value_prefix(kind, len(types), i)
            if not (isinstance(t, RankedTensorType) and t.has_static_shape):
                _fail(op, f"{prefix}expected a ranked tensor with a static shape. type: {t}")
            if len(mapping) != t.rank:
                _fail(op, f"{prefix}mapping rank must match: {len(mapping)} != {t.rank}")
            used: set[int] = set()
            for dim in mapping:
                if not dim:
                    _fail(op, f"{prefix}dim mapping must have at least one factor")
                for f in dim:
                    if not 0 <= f < len(sizes):
                        _fail(op, f"{prefix}expecting factor indices to be within 0<=...<num_factors; "
                                  f"received: {f}, num_factors: {len(sizes)}")
                    if f in used:
                        _fail(op, f"{prefix}cannot reuse factors for the same tensor value")
                    if sizes[f] == 1 and len(dim) > 1:
                        _fail(op, f"{prefix}dim mapping can't have a factor of size 1 if there are "
                                  "multiple factors")
                    used.add(f)
                    seen.add(f)
    unused = [i for i in range(len(sizes)) if i not in seen]
    if unused:
        _fail(op, f"has factor {factor_name(unused[0])}={sizes[unused[0]]} that isn't used in operand "
                  "and result mappings")
    special = (rule.reduction_factors, rule.need_replication_factors, rule.permutation_factors)
    for indices in special:
        _check_factor_indices(op, indices, len(sizes))
    all_special = [f for group in special for f in group]
    if len(set(all_special)) != len(all_special):
        _fail(op, "a factor can only be in one of the reduction, need replication, or "
                  "permutation factor sets")
    _check_factor_indices(op, rule.blocked_propagation_factors, len(sizes))


def _check_factor_indices(op: Operation, indices, num_factors: int) -> None:
    if not indices:
        return
    if list(indices) != sorted(indices):
        _fail(op, "indices of special factors must be sorted")
    if len(set(indices)) != len(indices):
        _fail(op, "indices of special factors must be unique")
    if indices[0] < 0:
        _fail(op, "index must be non-negative")
    if indices[-1] >= num_factors:
        _fail(op, f"index must be less than {num_factors}, got: {indices[-1]}")
