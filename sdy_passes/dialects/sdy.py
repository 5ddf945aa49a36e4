"""The `sdy` dialect (Shardy): its ops' pretty forms and verifiers, and the checks of sdy
sharding attributes other dialects' ops carry (`sdy.sharding`, `sdy.sharding_rule`, func
argument and result shardings). The collectives are defined with the collectives work.
"""

from __future__ import annotations

from functools import lru_cache

from sharding import InvalidMeshError, InvalidShardingError, ManualAxes, Mesh, TensorSharding
from sharding import TensorShardingPerValue
from sharding.verify import NO_TYPE, sharding_errors

from sdy_passes import _sdy_syntax as sdy_syntax
from sdy_passes.common._value_shardings import get_sharding
from sdy_passes.attributes import (
    ArrayAttr, I32, I64, IntegerAttr, OpShardingRule, RankedTensorType, StringAttr, TupleType, factor_name,
    print_function_type, print_symbol_name,
)
from sdy_passes.dialects._base import (
    NO_RULE, VerifyContext, op, add_operands, attr_dict_for, fail, opt_dict,
    parse_attrs_and_signature, parse_constant, parse_return, print_constant, print_return, set_results,
    verify_constant,
)
from sdy_passes.dialects.sdy_attributes import PropagationEdges
from sdy_passes.errors import IRParseError, VerificationError
from sdy_passes.ir import BlockArgument, Operation


def _parse_mesh(p, op, n):
    op.properties["sym_name"] = StringAttr(p.parse_symbol())
    p.expect("=")
    p.skip()
    op.properties["mesh"] = parse_op_attribute(p, op, sdy_syntax.parse_mesh_body)
    p.set_attrs(op, p.parse_optional_attr_dict())


def parse_op_attribute(p, op, fn):
    """An sdy attribute written bare in a pretty op (`<["a"=2]>`): MLIR hands the op's own
    parser to the attribute, so the attribute's messages (not token errors) read `custom op
    'sdy.mesh' ...`."""
    try:
        return p.parse_sdy(fn, p.skip())
    except IRParseError as e:
        if e.message.startswith("expected "):
            raise
        raise p.error(f"custom op '{op.name}' {e.message}", p.pos_of(e)) from None


def _print_mesh(pr, op, indent):
    attrs = attr_dict_for(op, ("sym_name", "mesh"))
    if attrs is None or set(op.properties) != {"sym_name", "mesh"} or op.results or op.operands:
        return False
    pr.out.append(f"sdy.mesh {print_symbol_name(op.properties['sym_name'].value)} = "
                  f"{sdy_syntax.print_body(op.properties['mesh'])}{opt_dict(attrs)}")
    return True


def _unary_type(p, op, ref, num_results=1):
    p.expect(":")
    pos = p.skip()
    t = p.parse_type()
    add_operands(op, p.resolve_all([ref], [t], pos))
    set_results(op, [t] * num_results)


def _is_unary_same_type(op, num_results=1):
    return (len(op.operands) == 1 and len(op.results) == num_results and not op.regions
            and all(r.type == op.operands[0].type for r in op.results))


def _parse_sharding_op(p, op, n):
    ref = p.parse_value_ref()
    p.skip()
    op.properties["sharding"] = parse_op_attribute(p, op, sdy_syntax.parse_sharding_body)
    p.set_attrs(op, p.parse_optional_attr_dict())
    _unary_type(p, op, ref)


def _print_sharding_op(pr, op, indent):
    attrs = attr_dict_for(op, ("sharding",))
    if attrs is None or "sharding" not in op.properties or not _is_unary_same_type(op):
        return False
    pr.out.append(f"{op.name} {pr.value_name(op.operands[0])} "
                  f"{sdy_syntax.print_body(op.properties['sharding'])}{opt_dict(attrs)} : {op.result.type}")
    return True


def _parse_edge(p, op, n):
    ref = p.parse_value_ref()
    if p.parse_optional_keyword("sharding"):
        p.expect("=")
        p.skip()
        op.properties["sharding"] = parse_op_attribute(p, op, sdy_syntax.parse_sharding_body)
    p.set_attrs(op, p.parse_optional_attr_dict())
    _unary_type(p, op, ref)


def _print_edge(pr, op, indent):
    attrs = attr_dict_for(op, ("sharding",))
    if attrs is None or not _is_unary_same_type(op):
        return False
    text = f"sdy.data_flow_edge {pr.value_name(op.operands[0])}"
    if "sharding" in op.properties:
        text += f" sharding={sdy_syntax.print_body(op.properties['sharding'])}"
    pr.out.append(f"{text}{opt_dict(attrs)} : {op.result.type}")
    return True


def _parse_group(p, op, n):
    ref = p.parse_value_ref()
    p.expect_keyword("group_id")
    p.expect("=")
    op.properties["group_id"] = IntegerAttr(p.parse_int("group id"), I64)
    p.set_attrs(op, p.parse_optional_attr_dict())
    _unary_type(p, op, ref, 0)


def _print_group(pr, op, indent):
    attrs = attr_dict_for(op, ("group_id",))
    gid = op.properties.get("group_id")
    if attrs is None or not isinstance(gid, IntegerAttr) or len(op.operands) != 1 or op.results:
        return False
    pr.out.append(f"sdy.sharding_group {pr.value_name(op.operands[0])} group_id={gid.value}"
                  f"{opt_dict(attrs)} : {op.operands[0].type}")
    return True


_DIRECTIONS = ("NONE", "FORWARD", "BACKWARD", "BOTH")


def _parse_barrier(p, op, n):
    ref = p.parse_value_ref()
    p.expect_keyword("allowed_direction")
    p.expect("=")
    pos = p.skip()
    d = p.parse_bare_id("propagation direction")
    if d not in _DIRECTIONS:
        raise p.error(f"expected one of {', '.join(_DIRECTIONS)}, found '{d}'", pos)
    op.properties["allowed_direction"] = IntegerAttr(_DIRECTIONS.index(d), I32)
    p.set_attrs(op, p.parse_optional_attr_dict())
    _unary_type(p, op, ref)


def _print_barrier(pr, op, indent):
    attrs = attr_dict_for(op, ("allowed_direction",))
    d = op.properties.get("allowed_direction")
    if attrs is None or not isinstance(d, IntegerAttr) or not 0 <= d.value < 4 or not _is_unary_same_type(op):
        return False
    pr.out.append(f"sdy.propagation_barrier {pr.value_name(op.operands[0])} allowed_direction="
                  f"{_DIRECTIONS[d.value]}{opt_dict(attrs)} : {op.result.type}")
    return True


def _parse_shardings_list(p, key: str, op) -> None:
    p.expect_keyword(key)
    p.expect("=")
    p.skip()
    op.properties[key] = parse_op_attribute(p, op, sdy_syntax.parse_per_value_body)


def _parse_body_and_signature(p, op, refs):
    args = p.parse_block_arg_list()
    op.add_region(p.parse_region(entry_args=args))
    parse_attrs_and_signature(p, op, refs)


def _parse_manual(p, op, n):
    p.expect("(")
    refs = p.parse_optional_value_ref_list()
    p.expect(")")
    _parse_shardings_list(p, "in_shardings", op)
    _parse_shardings_list(p, "out_shardings", op)
    p.expect_keyword("manual_axes")
    p.expect("=")
    p.skip()
    op.properties["manual_axes"] = parse_op_attribute(p, op, sdy_syntax.parse_manual_axes_body)
    _parse_body_and_signature(p, op, refs)


def _print_body_and_signature(pr, op, indent, attrs):
    region = op.regions[0]
    out = pr.out
    out.append(" (" + ", ".join(pr.block_arg(a) for a in region.block.arguments) + ") ")
    pr.print_region(region, indent, print_entry_args=False, print_empty_block=False)
    out.append(opt_dict(attrs) + " : " + print_function_type(op.operand_types, op.result_types))


def _single_block(op):
    return len(op.regions) == 1 and len(op.regions[0].blocks) == 1


def _print_manual(pr, op, indent):
    keys = ("in_shardings", "out_shardings", "manual_axes")
    attrs = attr_dict_for(op, keys)
    if attrs is None or not all(k in op.properties for k in keys) or not _single_block(op):
        return False
    pr.out.append(f"sdy.manual_computation({pr.operands(op.operands)})"
                  f" in_shardings={sdy_syntax.print_body(op.properties['in_shardings'])}"
                  f" out_shardings={sdy_syntax.print_body(op.properties['out_shardings'])}"
                  f" manual_axes={sdy_syntax.print_body(op.properties['manual_axes'])}")
    _print_body_and_signature(pr, op, indent, attrs)
    return True


def _parse_named(p, op, n):
    p.expect("<")
    op.properties["name"] = StringAttr(p.parse_string("computation name"))
    p.expect(">")
    p.expect("(")
    refs = p.parse_optional_value_ref_list()
    p.expect(")")
    for key in ("in_shardings", "out_shardings"):
        if p.peek(key):
            _parse_shardings_list(p, key, op)
    _parse_body_and_signature(p, op, refs)


def _print_named(pr, op, indent):
    attrs = attr_dict_for(op, ("name", "in_shardings", "out_shardings"))
    name = op.properties.get("name")
    if attrs is None or not isinstance(name, StringAttr) or not _single_block(op):
        return False
    pr.out.append(f"sdy.named_computation<{name}>({pr.operands(op.operands)})")
    for key in ("in_shardings", "out_shardings"):
        if key in op.properties:
            pr.out.append(f" {key}={sdy_syntax.print_body(op.properties[key])}")
    _print_body_and_signature(pr, op, indent, attrs)
    return True


# -- verification -------------------------------------------------------------------------------

def _shape(t):
    """What `sharding.verify` takes as the value's type: dims, the type's text, or `NO_TYPE`
    (Shardy verifies the single sharding of a result-less op against a null type)."""
    if t is None:
        return NO_TYPE
    return t.shape if isinstance(t, RankedTensorType) else str(t)


def bound_manual_axes(op: Operation, *, include_self: bool = False) -> tuple[str, ...]:
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


def check_sharding(op, sharding, t, meshes, prefix: str, manual_axes=()) -> None:
    if isinstance(t, TupleType):  # Shardy: a 1-tuple's sharding is its element's
        if len(t.types) != 1:
            fail(op, f"{prefix}ops can only have a sharding for a tuple of size 1: '{t}'")
        t = t.types[0]
    error = _sharding_error(sharding, meshes, _shape(t), tuple(manual_axes))
    if error:
        fail(op, prefix + error)


@lru_cache(maxsize=4096)
def _sharding_error(sharding, meshes, shape, manual_axes) -> str | None:
    """The first message for `sharding` (frozen values: the verifier meets the same ones after
    every pass)."""
    try:
        errors = sharding_errors(sharding, mesh=meshes, shape=shape, manual_axes=manual_axes)
    except (InvalidMeshError, InvalidShardingError) as e:
        errors = (str(e),)
    return errors[0] if errors else None


def value_prefix(kind: str, count: int, index: int) -> str:
    return f"{kind} - " if count == 1 else f"{kind} {index} - "


def check_per_value(op, per_value, types, meshes, kind: str, manual_axes=()) -> None:
    """`verifyTensorShardingPerValueAttr`: count, then each sharding against its type."""
    shardings = per_value.shardings
    if not types and len(shardings) == 1:
        first = shardings[0]
        mesh = first.mesh_or_ref if isinstance(first.mesh_or_ref, Mesh) else meshes.get(first.mesh_or_ref)
        if mesh is not None and (mesh.is_maximal or first.is_fully_replicated):
            check_sharding(op, first, None, meshes, value_prefix(kind, 0, 0), manual_axes)
            return
    if len(shardings) != len(types):
        fail(op, f"{kind} shardings don't match number of values: {len(shardings)} shardings vs "
                  f"{len(types)} values")
    for i, (s, t) in enumerate(zip(shardings, types)):
        check_sharding(op, s, t, meshes, value_prefix(kind, len(types), i), manual_axes)


def verify_discardable(op: Operation, ctx: VerifyContext) -> None:
    """The sdy attributes any op may carry, in name order as MLIR checks them:
    `sdy.propagation_edges` (and the result/block-argument lists), `sdy.sharding`,
    `sdy.sharding_rule`."""
    for name in sorted(k for k in op.attributes if k.startswith("sdy.")):
        value = op.attributes[name]
        if name == "sdy.sharding":
            if not isinstance(value, TensorShardingPerValue):
                fail(op, "should have a sharding attribute of type TensorShardingPerValueAttr")
            check_per_value(op, value, op.result_types, ctx.meshes, "result", bound_manual_axes(op))
        elif name == "sdy.sharding_rule":
            _verify_sharding_rule(op, value)
        elif name == "sdy.propagation_edges":
            if not isinstance(value, PropagationEdges):
                fail(op, "should have a propagation edges attribute of type PropagationEdgesAttr "
                         "for attr named 'sdy.propagation_edges'")
            _verify_propagation_edges(op, value, ctx)
        elif name in ("sdy.result_propagation_edges", "sdy.block_arg_propagation_edges"):
            if not (isinstance(value, ArrayAttr) and all(isinstance(e, PropagationEdges) for e in value)):
                fail(op, "should have a propagation edges attribute of type "
                         "ArrayAttr<PropagationEdgesAttr> for attr named "
                         "'sdy.result_propagation_edges' or 'sdy.block_arg_propagation_edges'")


def _verify_propagation_edges(op: Operation, edges: PropagationEdges, ctx: VerifyContext) -> None:
    """Shardy's `verifyPropagationEdgesShardingAttr`: the values referenced have shardings on
    one mesh that has every axis named, and every reference is in range."""
    def value_of(ref):
        values = op.results if ref.type == "result" else op.operands
        return values[ref.index] if 0 <= ref.index < len(values) else None

    meshes = []
    for step in edges.steps:
        for entry in step.axis_entries:
            for ref in (entry.source, *entry.targets):
                value = value_of(ref)
                sharding = get_sharding(value) if value is not None else None
                if sharding is not None:
                    mesh = sharding.mesh_or_ref
                    meshes.append(mesh if isinstance(mesh, Mesh) else ctx.meshes.get(mesh))
    if not meshes:
        fail(op, "expected propagation edges attr to reference a sharding.")
    non_empty = {m for m in meshes if m is not None and not m.is_empty}
    if len(non_empty) > 1:
        fail(op, "expected a common mesh for propagation edges attr.")
    mesh = next(iter(non_empty), meshes[0])
    for step in edges.steps:
        for entry in step.axis_entries:
            if mesh is None or not mesh.has_axis(entry.axis.name):
                fail(op, "expected axis ref to be in one of the meshes")
            for ref in (entry.source, *entry.targets):
                count = len(op.results if ref.type == "result" else op.operands)
                if not 0 <= ref.index < count:
                    article = "a result" if ref.type == "result" else "an operand"
                    fail(op, f"expected a value ref to have {article} index in range [0, {count}), "
                             f"got: {ref.index}")


def _verify_sharding_op(op: Operation, ctx: VerifyContext) -> None:
    s = op.properties.get("sharding")
    if op.name == "sdy.data_flow_edge":
        _verify_edge(op)
    if s is not None:
        if not isinstance(s, TensorSharding):
            fail(op, "attribute 'sharding' failed to satisfy constraint: Tensor sharding")
        if len(op.results) == 1:
            check_sharding(op, s, op.result.type, ctx.meshes, "", bound_manual_axes(op))


def _verify_barrier(op: Operation, ctx: VerifyContext) -> None:
    d = op.properties.get("allowed_direction")
    if getattr(d, "value", None) == 3:
        fail(op, "cannot specify `BOTH` as the direction. Not blocking propagation direction "
                 "makes the op redundant.")


def _verify_edge(op: Operation) -> None:
    if len(op.operands) != 1 or len(op.results) != 1:
        fail(op, "expects one operand and one result")
    t = op.result.type
    if not (isinstance(t, RankedTensorType) and t.has_static_shape):
        fail(op, f"expected sdy.data_flow_edge to have a static-shaped result. type: '{t}'")
    x = op.operands[0]
    if x.num_uses != 1:
        fail(op, "expected input of sdy.data_flow_edge to have a single user")
    owner = getattr(x, "owner", None)
    if isinstance(owner, Operation) and owner.name.startswith("sdy.") and owner.name not in (
            "sdy.named_computation", "sdy.manual_computation"):
        fail(op, "expected input of sdy.data_flow_edge to not be defined by an SdyDialect op "
                  "(other than an sdy.named_computation).")


def _parse_func_edge(p, op, n):
    ref = p.parse_value_ref()
    p.set_attrs(op, p.parse_optional_attr_dict())
    _unary_type(p, op, ref)


def _print_func_edge(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or not _is_unary_same_type(op):
        return False
    pr.out.append(f"sdy.func_data_flow_edge {pr.value_name(op.operands[0])}{opt_dict(attrs)} : "
                  f"{op.result.type}")
    return True


def _verify_func_edge(op: Operation, ctx: VerifyContext) -> None:
    """Shardy's `FuncDataFlowEdgeOp::verifySymbolUses`."""
    t = op.result.type
    if not (isinstance(t, RankedTensorType) and t.has_static_shape):
        fail(op, f"expected sdy.func_data_flow_edge to have a static-shaped result. type: '{t}'")
    x = op.operands[0]
    if x.num_uses != 1:
        fail(op, "expected operand of sdy.func_data_flow_edge to have a single user")
    if isinstance(x, BlockArgument):
        parent = x.owner.parent_op
        if parent is None or parent.name != "func.func":
            fail(op, "expected operand of sdy.func_data_flow_edge to be a block argument of a func op.")
    elif x.owner.name != "func.call":
        fail(op, "expected operand of sdy.func_data_flow_edge to be a result of call op.")


def _terminator_types(op: Operation):
    region = op.regions[0] if op.regions else None
    if region is None or not region.blocks or region.block.terminator is None:
        return ()
    return region.block.terminator.operand_types


def _verify_manual(op: Operation, ctx: VerifyContext) -> None:
    meshes, bound = ctx.meshes, bound_manual_axes(op)
    props = op.properties
    ins, outs, manual = props.get("in_shardings"), props.get("out_shardings"), props.get("manual_axes")
    if not isinstance(ins, TensorShardingPerValue) or not isinstance(outs, TensorShardingPerValue):
        fail(op, "requires attributes 'in_shardings' and 'out_shardings'")
    if not isinstance(manual, ManualAxes):
        fail(op, "requires attribute 'manual_axes'")
    for axis in manual.names:
        if axis in bound:
            fail(op, f'operates on axis "{axis}" which is already bound by a parent '
                      "sdy.manual_computation op")
    region = op.regions[0]
    manual_set = set(manual.names)
    for kind, global_types, local_types, per_value in (
            ("operand", op.operand_types, region.block.arg_types, ins),
            ("result", op.result_types, _terminator_types(op), outs)):
        if not global_types and not local_types and not per_value.shardings:
            continue
        check_per_value(op, per_value, global_types, meshes, kind, bound)
        if len(global_types) != len(local_types):
            fail(op, f"number of op {kind}s and region {kind}s must match. Op has "
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
                        fail(op, f"{kind} sharding at index {i} must have all manual axes come before "
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
                    fail(op, f"{kind} dimension size {size} is not divisible by the manual axes size {factor}")
                new_dims.append(size // factor)
            expected = RankedTensorType(tuple(new_dims), gt.element_type)
            if expected != lt:
                fail(op, f"{kind} shape, corresponding sharding, and region {kind} shape at index {i} "
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
        fail(op, "all in and out shardings must be bound to the same mesh or an empty mesh.")
    for axis in manual.names:
        if common and not common.has_axis(axis):
            fail(op, f'unknown manual axis: "{axis}"')


def _verify_named(op: Operation, ctx: VerifyContext) -> None:
    meshes, bound = ctx.meshes, bound_manual_axes(op)
    returned = _terminator_types(op)
    if tuple(returned) != op.result_types:  # result type inference runs first
        fail(op, f"inferred type(s) {_types(returned)} are incompatible with return type(s) of "
                  f"operation {_types(op.result_types)}")
    for inner, outer, inner_name, outer_name in (
            (op.regions[0].block.arg_types, op.operand_types, "block argument", "operand"),
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
                fail(op, f"attribute '{key}' failed to satisfy constraint: sharding per value")
            check_per_value(op, s, types, meshes, key, bound)


def _types(types) -> str:
    return ", ".join(f"'{t}'" for t in types)


def _verify_sharding_rule(op: Operation, rule) -> None:
    """`verifyOpShardingRuleAttr`: mappings fit the op's types, factors are used and valid."""
    if not isinstance(rule, OpShardingRule):
        fail(op, "should have a sharding rule attribute of type OpShardingRuleAttr for attr named "
                 "'sdy.sharding_rule'")
    error = _sharding_rule_error(rule, op.operand_types, op.result_types)
    if error:
        fail(op, error)


@lru_cache(maxsize=4096)
def _sharding_rule_error(rule: OpShardingRule, operand_types, result_types) -> str | None:
    """The message for `rule` on an op of these types, or None (frozen values: the verifier
    meets the same ones after every pass)."""
    sizes = rule.factor_sizes
    seen: set[int] = set()
    for kind, types, mappings in (("operand", operand_types, rule.operand_mappings),
                                  ("result", result_types, rule.result_mappings)):
        if len(types) != len(mappings):
            return f"number of {kind}s and mappings must match: {len(types)} != {len(mappings)}"
        if not mappings:
            return (f"number of {kind}s mappings cannot be 0. Op sharding rules can only be defined "
                    "on operations with at least one operand and result.")
        for i, (t, mapping) in enumerate(zip(types, mappings)):
            prefix = value_prefix(kind, len(types), i)
            if not (isinstance(t, RankedTensorType) and t.has_static_shape):
                return f"{prefix}expected a ranked tensor with a static shape. type: '{t}'"
            if len(mapping) != t.rank:
                return f"{prefix}mapping rank must match: {len(mapping)} != {t.rank}"
            used: set[int] = set()
            for dim in mapping:
                if not dim:
                    return f"{prefix}dim mapping must have at least one factor"
                for f in dim:
                    if not 0 <= f < len(sizes):
                        return (f"{prefix}expecting factor indices to be within 0<=...<num_factors; "
                                f"received: {f}, num_factors: {len(sizes)}")
                    if f in used:
                        return f"{prefix}cannot reuse factors for the same tensor value"
                    if sizes[f] == 1 and len(dim) > 1:
                        return (f"{prefix}dim mapping can't have a factor of size 1 if there are "
                                "multiple factors")
                    used.add(f)
                    seen.add(f)
    unused = [i for i in range(len(sizes)) if i not in seen]
    if unused:
        return (f"has factor {factor_name(unused[0])}={sizes[unused[0]]} that isn't used in operand "
                "and result mappings")
    special = (rule.reduction_factors, rule.need_replication_factors, rule.permutation_factors)
    for indices in special:
        error = _factor_indices_error(indices, len(sizes))
        if error:
            return error
    all_special = [f for group in special for f in group]
    if len(set(all_special)) != len(all_special):
        return ("a factor can only be in one of the reduction, need replication, or "
                "permutation factor sets")
    error = _factor_indices_error(rule.blocked_propagation_factors, len(sizes))
    if error:
        return error
    in_results = {f for mapping in rule.result_mappings for dim in mapping for f in dim}
    if any(f in in_results for f in rule.reduction_factors):
        return "reduction factor cannot be in result mappings"
    return None


def _factor_indices_error(indices, num_factors: int) -> str | None:
    if not indices:
        return None
    if list(indices) != sorted(indices):
        return "indices of special factors must be sorted"
    if len(set(indices)) != len(indices):
        return "indices of special factors must be unique"
    if indices[0] < 0:
        return "index must be non-negative"
    if indices[-1] >= num_factors:
        return f"index must be less than {num_factors}, got: {indices[-1]}"
    return None


_CANONICALIZATION = "sdy_passes.common.canonicalization:"
_IDENTITY = "control:identity"
_DATA_FLOW = "IsolatedFromAbove ShardableDataFlowOpInterface RecursiveMemoryEffects"
_SYMBOL_USER = "SymbolUserOpInterface"
"""jaxlib's Shardy checks these ops in `verifySymbolUses` (they look up meshes): after every
other check of the module, in the symbol table's order (probed: `test_error_order.py`)."""
OPS = (
    op("sdy.mesh", "0 0 0", "sym_name!:StrAttr mesh!", syntax=(_parse_mesh, _print_mesh), traits="Symbol",
       rule=NO_RULE, parent="builtin.module"),
    op("sdy.sharding_constraint", "1 1 0", "sharding!", syntax=(_parse_sharding_op, _print_sharding_op),
       verify=_verify_sharding_op, traits=_SYMBOL_USER, rule="elementwise:pointwise", evaluator=_IDENTITY),
    op("sdy.reshard", "1 1 0", "sharding!", syntax=(_parse_sharding_op, _print_sharding_op),
       verify=_verify_sharding_op, traits="NoMemoryEffect " + _SYMBOL_USER, rule=NO_RULE,
       canonicalization=_CANONICALIZATION + "RESHARD_PATTERNS", evaluator=_IDENTITY),
    op("sdy.data_flow_edge", "1 1 0", "sharding", syntax=(_parse_edge, _print_edge), verify=_verify_sharding_op,
       traits=_SYMBOL_USER, rule=NO_RULE, evaluator=_IDENTITY),
    op("sdy.func_data_flow_edge", "1 1 0", syntax=(_parse_func_edge, _print_func_edge), verify=_verify_func_edge,
       traits=_SYMBOL_USER, rule=NO_RULE, evaluator=_IDENTITY),
    op("sdy.sharding_group", "1 0 0", "group_id!:I64Attr", syntax=(_parse_group, _print_group), rule=NO_RULE,
       evaluator=_IDENTITY),
    op("sdy.propagation_barrier", "1 1 0", "allowed_direction!", syntax=(_parse_barrier, _print_barrier),
       verify=_verify_barrier, traits="NoMemoryEffect", rule=NO_RULE, evaluator=_IDENTITY),
    # not ConstantLike (ops.td)
    op("sdy.constant", "0 1 0", "value!:ElementsAttr", syntax=(parse_constant, print_constant), verify=verify_constant,
       traits="NoMemoryEffect", rule=NO_RULE, evaluator="movement:constant"),
    op("sdy.manual_computation", "* * 1", "in_shardings! out_shardings! manual_axes!",
       syntax=(_parse_manual, _print_manual), verify=_verify_manual,
       traits=f"{_DATA_FLOW} {_SYMBOL_USER} KeepsEdgeOwnerShardingsDivisible", evaluator="collectives:manual_computation",
       terminator="sdy.return", regions="body"),
    op("sdy.named_computation", "* * 1", "name!:StrAttr in_shardings out_shardings",
       syntax=(_parse_named, _print_named), verify=_verify_named, traits=f"{_DATA_FLOW} {_SYMBOL_USER}",
       evaluator="control:named_computation", terminator="sdy.return", regions="body"),
    op("sdy.return", "* 0 0", syntax=(parse_return, print_return), traits="NoMemoryEffect Terminator"),
)
