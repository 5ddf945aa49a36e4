"""Pretty (custom assembly) forms: for each op a parser and a printer, side by side.

Parsers have the signature `parse(p: Parser, op: Operation, num_results: int)` and fill in the
detached `op` (operands, results, properties, attributes, regions) from the text after the op
name. Printers `print_(pr: Printer, op, indent) -> bool` write the text after `%r = ` and return
False to fall back to the generic form (an op whose shape the pretty syntax cannot express).
The forms follow what jaxlib 0.10.2 prints (spec `sdy_passes.md` §1).
"""

from __future__ import annotations

import re

from sdy_passes import _sdy_syntax as sdy_syntax
from sdy_passes.attributes import (
    I32, I64, ArrayAttr, DenseArrayAttr, DictionaryAttr, FunctionType, IntegerAttr, OpaqueAttr,
    StringAttr, SymbolRefAttr, TypeAttr, print_attr_dict, print_symbol_name,
)
from sdy_passes.parser import INHERENT_ATTRS, PRETTY_OPS, Parser, _set_results
from sdy_passes.printer import Printer, print_function_type

PRETTY_PRINTERS: dict = {}
_NAME = re.compile(r"%([A-Za-z0-9_$.\-]+)")


def _register(*names):
    def deco(pair):
        parse, print_ = pair
        for n in names:
            PRETTY_OPS[n] = parse
            PRETTY_PRINTERS[n] = print_
        return pair
    return deco


def _add_operands(op, values):
    for v in values:
        op._add_operand(v)


def _attr_dict_for(op, consumed: tuple[str, ...] = ()) -> dict | None:
    """Discardable attributes plus unconsumed *inherent* properties; None if a property could
    not be read back as a property (then the op prints generic)."""
    inherent = INHERENT_ATTRS.get(op.name, frozenset())
    extra = {}
    for k, v in op.properties.items():
        if k in consumed:
            continue
        if k not in inherent:
            return None
        extra[k] = v
    if set(extra) & set(op.attributes):
        return None
    extra.update(op.attributes)
    return extra


def _short_name(op) -> str:
    """MLIR drops the `func.` prefix only where `func` is the default dialect: directly in a
    `func.func` body (other region ops reset the default dialect)."""
    parent = op.parent_op
    if op.name.startswith("func.") and parent is not None and parent.name == "func.func":
        return op.name[len("func."):]
    return op.name


def _opt_dict(d: dict) -> str:
    return " " + print_attr_dict(d) if d else ""


# -- builtin.module -----------------------------------------------------------------------------

def _parse_module(p: Parser, op, n):
    name = p.parse_optional_symbol()
    if name is not None:
        op.properties["sym_name"] = StringAttr(name)
    if p.parse_optional_keyword("attributes"):
        p._set_attrs(op, p.parse_attr_dict())
    op.add_region(p.parse_region(entry_args=[]))


def _print_module(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("sym_name",))
    region = op.regions[0] if len(op.regions) == 1 else None
    if attrs is None or region is None or len(region.blocks) != 1 or region.block.arguments or op.results:
        return False
    out = pr.out
    out.append("module")
    if "sym_name" in op.properties:
        out.append(" " + print_symbol_name(op.properties["sym_name"].value))
    if attrs:
        out.append(" attributes " + print_attr_dict(attrs))
    out.append(" ")
    pr.print_region(region, indent, print_entry_args=False, print_empty_block=False)
    return True


_register("builtin.module")((_parse_module, _print_module))


# -- func.func, func.call, returns --------------------------------------------------------------

def _parse_func(p: Parser, op, n):
    vis = p.parse_optional_bare_id()
    if vis is not None and vis not in ("private", "public", "nested"):
        raise p.error(f"expected symbol visibility or '@name', found '{vis}'")
    name = p.parse_symbol()
    p.expect("(")
    args, arg_types, arg_attrs = [], [], []
    if not p.parse_optional(")"):
        while True:
            pos = p.skip()
            if p.peek("%"):
                ref = p.parse_optional_regex(_NAME)
                p.expect(":")
                t = p.parse_type()
                attrs = p.parse_optional_attr_dict()
                loc = p.parse_optional_trailing_location()
                args.append((ref.group(1), t, loc, pos))
            else:
                t = p.parse_type()
                attrs = p.parse_optional_attr_dict()
                p.parse_optional_trailing_location()
            arg_types.append(t)
            arg_attrs.append(attrs)
            if not p.parse_optional(","):
                break
        p.expect(")", "',' or ')' in the argument list")
    if args and len(args) != len(arg_types):
        raise p.error("expected SSA names for every argument or for none")
    res_types, res_attrs = [], []
    if p.parse_optional("->"):
        if p.peek("(") and not _looks_like_function_type(p):
            p.expect("(")
            if not p.parse_optional(")"):
                while True:
                    res_types.append(p.parse_type())
                    res_attrs.append(p.parse_optional_attr_dict())
                    if not p.parse_optional(","):
                        break
                p.expect(")")
        else:
            res_types.append(p.parse_type())
            res_attrs.append({})
    props = {"sym_name": StringAttr(name),
             "function_type": TypeAttr(FunctionType(tuple(arg_types), tuple(res_types)))}
    if vis is not None:
        props["sym_visibility"] = StringAttr(vis)
    if any(arg_attrs):
        props["arg_attrs"] = ArrayAttr(tuple(DictionaryAttr.from_dict(a) for a in arg_attrs))
    if any(res_attrs):
        props["res_attrs"] = ArrayAttr(tuple(DictionaryAttr.from_dict(a) for a in res_attrs))
    op.properties.update(props)
    if p.parse_optional_keyword("attributes"):
        p._set_attrs(op, p.parse_attr_dict())
    if p.peek("{"):
        if not args and arg_types:
            raise p.error("a function with a body needs named arguments (%arg0: type)")
        op.add_region(p.parse_region(entry_args=args))
    else:
        op.add_region()


def _looks_like_function_type(p: Parser) -> bool:
    # `-> (T) -> U` (a function-typed result) vs `-> (T {attrs})`: look past the parentheses.
    save = p.pos
    try:
        p.balanced("result list")
        return p.peek("->")
    except Exception:
        return False
    finally:
        p.pos = save


def _print_func(pr: Printer, op, indent):
    props = op.properties
    ftype = props.get("function_type")
    if not isinstance(ftype, TypeAttr) or not isinstance(ftype.type, FunctionType) or len(op.regions) != 1:
        return False
    attrs = _attr_dict_for(op, ("sym_name", "function_type", "arg_attrs", "res_attrs", "sym_visibility"))
    if attrs is None or op.results or op.operands:
        return False
    ft = ftype.type
    region = op.regions[0]
    arg_attrs = list(props["arg_attrs"]) if "arg_attrs" in props else [DictionaryAttr()] * len(ft.inputs)
    res_attrs = list(props["res_attrs"]) if "res_attrs" in props else [DictionaryAttr()] * len(ft.results)
    if len(arg_attrs) != len(ft.inputs) or len(res_attrs) != len(ft.results):
        return False
    if region.blocks and region.block.arg_types != ft.inputs:
        return False
    out = pr.out
    out.append("func.func ")
    if "sym_visibility" in props:
        out.append(props["sym_visibility"].value + " ")
    out.append(print_symbol_name(props["sym_name"].value) + "(")
    parts = []
    for i, t in enumerate(ft.inputs):
        text = f"{pr.value_name(region.block.arguments[i])}: {t}" if region.blocks else str(t)
        if len(arg_attrs[i]):
            text += f" {arg_attrs[i]}"
        parts.append(text)
    out.append(", ".join(parts) + ")")
    if ft.results:
        res = [str(t) + (f" {a}" if len(a) else "") for t, a in zip(ft.results, res_attrs)]
        if len(res) == 1 and not len(res_attrs[0]) and not isinstance(ft.results[0], FunctionType):
            out.append(f" -> {res[0]}")
        else:
            out.append(f" -> ({', '.join(res)})")
    if attrs:
        out.append(" attributes " + print_attr_dict(attrs))
    if region.blocks:
        out.append(" ")
        pr.print_region(region, indent, print_entry_args=False, print_empty_block=False)
    return True


_register("func.func")((_parse_func, _print_func))


def _parse_return(p: Parser, op, n):
    p._set_attrs(op, p.parse_optional_attr_dict())
    refs = p.parse_optional_value_ref_list()
    if refs:
        pos = p.pos
        p.expect(":", "':' and the operand types")
        _add_operands(op, p.resolve_all(refs, p.parse_type_list(), pos))


def _print_return(pr: Printer, op, indent):
    attrs = _attr_dict_for(op)
    if attrs is None or op.results or op.regions:
        return False
    pr.out.append(_short_name(op) + _opt_dict(attrs))
    if op.operands:
        pr.out.append(f" {pr.operands(op.operands)} : {', '.join(str(t) for t in op.operand_types)}")
    return True


_register("func.return", "stablehlo.return", "sdy.return")((_parse_return, _print_return))


def _parse_call(p: Parser, op, n):
    op.properties["callee"] = SymbolRefAttr(p.parse_symbol())
    p.expect("(")
    refs = p.parse_optional_value_ref_list()
    p.expect(")")
    p._set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    ft = p.parse_function_type()
    _add_operands(op, p.resolve_all(refs, ft.inputs, pos))
    _set_results(op, ft.results)


def _print_call(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("callee",))
    callee = op.properties.get("callee")
    if attrs is None or not isinstance(callee, SymbolRefAttr):
        return False
    pr.out.append(f"{_short_name(op)} {callee}({pr.operands(op.operands)}){_opt_dict(attrs)} : "
                  + print_function_type(op.operand_types, op.result_types))
    return True


_register("func.call")((_parse_call, _print_call))


# -- sdy ----------------------------------------------------------------------------------------

def _parse_mesh(p: Parser, op, n):
    op.properties["sym_name"] = StringAttr(p.parse_symbol())
    p.expect("=")
    p.skip()
    op.properties["mesh"] = p._sdy(sdy_syntax.parse_mesh_body, p.pos)
    p._set_attrs(op, p.parse_optional_attr_dict())


def _print_mesh(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("sym_name", "mesh"))
    if attrs is None or set(op.properties) != {"sym_name", "mesh"} or op.results or op.operands:
        return False
    pr.out.append(f"sdy.mesh {print_symbol_name(op.properties['sym_name'].value)} = "
                  f"{sdy_syntax.print_body(op.properties['mesh'])}{_opt_dict(attrs)}")
    return True


_register("sdy.mesh")((_parse_mesh, _print_mesh))


def _unary_type(p: Parser, op, ref, num_results=1):
    p.expect(":")
    pos = p.skip()
    t = p.parse_type()
    _add_operands(op, p.resolve_all([ref], [t], pos))
    _set_results(op, [t] * num_results)


def _is_unary_same_type(op, num_results=1):
    return (len(op.operands) == 1 and len(op.results) == num_results and not op.regions
            and all(r.type == op.operands[0].type for r in op.results))


def _parse_sharding_op(p: Parser, op, n):
    ref = p.parse_value_ref()
    p.skip()
    op.properties["sharding"] = p._sdy(sdy_syntax.parse_sharding_body, p.pos)
    p._set_attrs(op, p.parse_optional_attr_dict())
    _unary_type(p, op, ref)


def _print_sharding_op(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("sharding",))
    if attrs is None or "sharding" not in op.properties or not _is_unary_same_type(op):
        return False
    pr.out.append(f"{op.name} {pr.value_name(op.operands[0])} "
                  f"{sdy_syntax.print_body(op.properties['sharding'])}{_opt_dict(attrs)} : {op.result.type}")
    return True


_register("sdy.sharding_constraint", "sdy.reshard")((_parse_sharding_op, _print_sharding_op))


def _parse_edge(p: Parser, op, n):
    ref = p.parse_value_ref()
    if p.parse_optional_keyword("sharding"):
        p.expect("=")
        p.skip()
        op.properties["sharding"] = p._sdy(sdy_syntax.parse_sharding_body, p.pos)
    p._set_attrs(op, p.parse_optional_attr_dict())
    _unary_type(p, op, ref)


def _print_edge(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("sharding",))
    if attrs is None or not _is_unary_same_type(op):
        return False
    text = f"sdy.data_flow_edge {pr.value_name(op.operands[0])}"
    if "sharding" in op.properties:
        text += f" sharding={sdy_syntax.print_body(op.properties['sharding'])}"
    pr.out.append(f"{text}{_opt_dict(attrs)} : {op.result.type}")
    return True


_register("sdy.data_flow_edge")((_parse_edge, _print_edge))


def _parse_group(p: Parser, op, n):
    ref = p.parse_value_ref()
    p.expect_keyword("group_id")
    p.expect("=")
    op.properties["group_id"] = IntegerAttr(p.parse_int("group id"), I64)
    p._set_attrs(op, p.parse_optional_attr_dict())
    _unary_type(p, op, ref, 0)


def _print_group(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("group_id",))
    gid = op.properties.get("group_id")
    if attrs is None or not isinstance(gid, IntegerAttr) or len(op.operands) != 1 or op.results:
        return False
    pr.out.append(f"sdy.sharding_group {pr.value_name(op.operands[0])} group_id={gid.value}"
                  f"{_opt_dict(attrs)} : {op.operands[0].type}")
    return True


_register("sdy.sharding_group")((_parse_group, _print_group))

_DIRECTIONS = ("NONE", "FORWARD", "BACKWARD", "BOTH")


def _parse_barrier(p: Parser, op, n):
    ref = p.parse_value_ref()
    p.expect_keyword("allowed_direction")
    p.expect("=")
    pos = p.skip()
    d = p.parse_bare_id("propagation direction")
    if d not in _DIRECTIONS:
        raise p.error(f"expected one of {', '.join(_DIRECTIONS)}, found '{d}'", pos)
    op.properties["allowed_direction"] = IntegerAttr(_DIRECTIONS.index(d), I32)
    p._set_attrs(op, p.parse_optional_attr_dict())
    _unary_type(p, op, ref)


def _print_barrier(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("allowed_direction",))
    d = op.properties.get("allowed_direction")
    if attrs is None or not isinstance(d, IntegerAttr) or not 0 <= d.value < 4 or not _is_unary_same_type(op):
        return False
    pr.out.append(f"sdy.propagation_barrier {pr.value_name(op.operands[0])} allowed_direction="
                  f"{_DIRECTIONS[d.value]}{_opt_dict(attrs)} : {op.result.type}")
    return True


_register("sdy.propagation_barrier")((_parse_barrier, _print_barrier))


def _parse_constant(p: Parser, op, n):
    p._set_attrs(op, p.parse_optional_attr_dict())
    pos = p.skip()
    value = p.parse_attribute()
    typ = getattr(value, "type", None)
    if typ is None:
        raise p.error("expected a typed constant value such as dense<1.0> : tensor<f32>", pos)
    op.properties["value"] = value
    _set_results(op, [typ])


def _print_constant(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("value",))
    value = op.properties.get("value")
    if (attrs is None or value is None or op.operands or len(op.results) != 1
            or getattr(value, "type", None) != op.result.type):
        return False
    pr.out.append(f"{op.name}{_opt_dict(attrs)} {value}")
    return True


_register("sdy.constant", "stablehlo.constant")((_parse_constant, _print_constant))


def _parse_shardings_list(p: Parser, key: str, op) -> None:
    p.expect_keyword(key)
    p.expect("=")
    p.skip()
    op.properties[key] = p._sdy(sdy_syntax.parse_per_value_body, p.pos)


def _parse_body_and_signature(p: Parser, op, refs):
    args = p.parse_block_arg_list()
    op.add_region(p.parse_region(entry_args=args))
    p._set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    ft = p.parse_function_type()
    _add_operands(op, p.resolve_all(refs, ft.inputs, pos))
    _set_results(op, ft.results)


def _parse_manual(p: Parser, op, n):
    p.expect("(")
    refs = p.parse_optional_value_ref_list()
    p.expect(")")
    _parse_shardings_list(p, "in_shardings", op)
    _parse_shardings_list(p, "out_shardings", op)
    p.expect_keyword("manual_axes")
    p.expect("=")
    p.skip()
    op.properties["manual_axes"] = p._sdy(sdy_syntax.parse_manual_axes_body, p.pos)
    _parse_body_and_signature(p, op, refs)


def _print_body_and_signature(pr: Printer, op, indent, attrs):
    region = op.regions[0]
    out = pr.out
    out.append(" (" + ", ".join(pr.block_arg(a) for a in region.block.arguments) + ") ")
    pr.print_region(region, indent, print_entry_args=False, print_empty_block=False)
    out.append(_opt_dict(attrs) + " : " + print_function_type(op.operand_types, op.result_types))


def _single_block(op):
    return len(op.regions) == 1 and len(op.regions[0].blocks) == 1


def _print_manual(pr: Printer, op, indent):
    keys = ("in_shardings", "out_shardings", "manual_axes")
    attrs = _attr_dict_for(op, keys)
    if attrs is None or not all(k in op.properties for k in keys) or not _single_block(op):
        return False
    pr.out.append(f"sdy.manual_computation({pr.operands(op.operands)})"
                  f" in_shardings={sdy_syntax.print_body(op.properties['in_shardings'])}"
                  f" out_shardings={sdy_syntax.print_body(op.properties['out_shardings'])}"
                  f" manual_axes={sdy_syntax.print_body(op.properties['manual_axes'])}")
    _print_body_and_signature(pr, op, indent, attrs)
    return True


_register("sdy.manual_computation")((_parse_manual, _print_manual))


def _parse_named(p: Parser, op, n):
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


def _print_named(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("name", "in_shardings", "out_shardings"))
    name = op.properties.get("name")
    if attrs is None or not isinstance(name, StringAttr) or not _single_block(op):
        return False
    pr.out.append(f"sdy.named_computation<{name}>({pr.operands(op.operands)})")
    for key in ("in_shardings", "out_shardings"):
        if key in op.properties:
            pr.out.append(f" {key}={sdy_syntax.print_body(op.properties[key])}")
    _print_body_and_signature(pr, op, indent, attrs)
    return True


_register("sdy.named_computation")((_parse_named, _print_named))


# -- stablehlo ----------------------------------------------------------------------------------

ELEMENTWISE = (
    "abs add and atan2 cbrt ceil clamp convert cosine count_leading_zeros divide exponential "
    "exponential_minus_one floor imag is_finite log log_plus_one logistic maximum minimum multiply "
    "negate not or popcnt power real remainder round_nearest_afz round_nearest_even rsqrt select "
    "shift_left shift_right_arithmetic shift_right_logical sign sine sqrt subtract tan tanh xor "
    "reshape bitcast_convert").split()


_ARITY = {**dict.fromkeys(("add and atan2 divide maximum minimum multiply or power remainder shift_left "
                           "shift_right_arithmetic shift_right_logical subtract xor").split(), 2),
          "clamp": 3, "select": 3}


def _parse_elementwise(p: Parser, op, n):
    refs = [p.parse_value_ref()]
    for _ in range(_ARITY.get(op.name.removeprefix("stablehlo."), 1) - 1):
        p.expect(",")
        refs.append(p.parse_value_ref())
    p._set_attrs(op, p.parse_optional_attr_dict())
    p.parse_trailing_type_signature(op, refs, 1)


def _print_type_signature(pr: Printer, op, *, functional: bool = False):
    ts = set(op.operand_types) | set(op.result_types)
    if not functional and len(ts) == 1 and len(op.results) == 1 and op.operands:
        pr.out.append(f" : {op.result.type}")
    else:
        pr.out.append(" : " + print_function_type(op.operand_types, op.result_types))


def _print_elementwise(pr: Printer, op, indent):
    attrs = _attr_dict_for(op)
    if attrs is None or op.regions or len(op.results) != 1 or not op.operands:
        return False
    pr.out.append(f"{op.name} {pr.operands(op.operands)}{_opt_dict(attrs)}")
    _print_type_signature(pr, op, functional=op.name in ("stablehlo.reshape", "stablehlo.convert",
                                                         "stablehlo.bitcast_convert"))
    return True


_register(*(f"stablehlo.{n}" for n in ELEMENTWISE))((_parse_elementwise, _print_elementwise))


def _enum_attr(kind: str, value: str) -> OpaqueAttr:
    return OpaqueAttr(f"#stablehlo<{kind} {value}>")


def _enum_value(attr, kind: str) -> str | None:
    m = re.fullmatch(rf"#stablehlo<{kind} ([A-Z_0-9]+)>", str(attr))
    return m.group(1) if m else None


def _parse_compare(p: Parser, op, n):
    op.properties["comparison_direction"] = _enum_attr("comparison_direction", p.parse_bare_id("comparison direction"))
    p.expect(",")
    refs = [p.parse_value_ref()]
    p.expect(",")
    refs.append(p.parse_value_ref())
    if p.parse_optional(","):
        op.properties["compare_type"] = _enum_attr("comparison_type", p.parse_bare_id("comparison type"))
    p._set_attrs(op, p.parse_optional_attr_dict())
    p.parse_trailing_type_signature(op, refs, 1)


def _print_compare(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("comparison_direction", "compare_type"))
    d = _enum_value(op.properties.get("comparison_direction"), "comparison_direction")
    ct = op.properties.get("compare_type")
    if attrs is None or d is None or len(op.operands) != 2 or len(op.results) != 1:
        return False
    text = f"stablehlo.compare {d}, {pr.operands(op.operands)}"
    if ct is not None:
        t = _enum_value(ct, "comparison_type")
        if t is None:
            return False
        text += f", {t}"
    pr.out.append(text + _opt_dict(attrs))
    _print_type_signature(pr, op, functional=True)
    return True


_register("stablehlo.compare")((_parse_compare, _print_compare))


def _parse_iota(p: Parser, op, n):
    p.expect_keyword("dim")
    p.expect("=")
    op.properties["iota_dimension"] = IntegerAttr(p.parse_int("iota dimension"), I64)
    p._set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    _set_results(op, [p.parse_type()])


def _print_iota(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("iota_dimension",))
    d = op.properties.get("iota_dimension")
    if attrs is None or not isinstance(d, IntegerAttr) or op.operands or len(op.results) != 1:
        return False
    pr.out.append(f"stablehlo.iota dim = {d.value}{_opt_dict(attrs)} : {op.result.type}")
    return True


_register("stablehlo.iota")((_parse_iota, _print_iota))


def _parse_int_list(p: Parser) -> tuple[int, ...]:
    p.expect("[")
    vals = []
    if not p.parse_optional("]"):
        while True:
            vals.append(p.parse_int())
            if not p.parse_optional(","):
                break
        p.expect("]")
    return tuple(vals)


def _i64_array(attr) -> tuple[int, ...] | None:
    if isinstance(attr, DenseArrayAttr) and attr.element_type == I64:
        return attr.values
    return None


def _ints(vals) -> str:
    return "[" + ", ".join(map(str, vals)) + "]"


def _parse_dims_op(key: str, word: str):
    def parse(p: Parser, op, n):
        refs = [p.parse_value_ref()]
        p.expect(",")
        p.expect_keyword(word)
        p.expect("=")
        op.properties[key] = DenseArrayAttr(I64, _parse_int_list(p))
        p._set_attrs(op, p.parse_optional_attr_dict())
        p.parse_trailing_type_signature(op, refs, 1)

    def print_(pr: Printer, op, indent):
        attrs = _attr_dict_for(op, (key,))
        dims = _i64_array(op.properties.get(key))
        if attrs is None or dims is None or len(op.operands) != 1 or len(op.results) != 1:
            return False
        pr.out.append(f"{op.name} {pr.operands(op.operands)}, {word} = {_ints(dims)}{_opt_dict(attrs)}")
        _print_type_signature(pr, op, functional=True)
        return True
    return parse, print_


_register("stablehlo.broadcast_in_dim")(_parse_dims_op("broadcast_dimensions", "dims"))
_register("stablehlo.transpose")(_parse_dims_op("permutation", "dims"))


def _parse_slice(p: Parser, op, n):
    refs = [p.parse_value_ref()]
    p.expect("[")
    starts, limits, strides = [], [], []
    if not p.parse_optional("]"):
        while True:
            starts.append(p.parse_int("slice start"))
            p.expect(":")
            limits.append(p.parse_int("slice limit"))
            strides.append(p.parse_int("slice stride") if p.parse_optional(":") else 1)
            if not p.parse_optional(","):
                break
        p.expect("]")
    op.properties.update(start_indices=DenseArrayAttr(I64, tuple(starts)),
                         limit_indices=DenseArrayAttr(I64, tuple(limits)),
                         strides=DenseArrayAttr(I64, tuple(strides)))
    p._set_attrs(op, p.parse_optional_attr_dict())
    p.parse_trailing_type_signature(op, refs, 1)


def _print_slice(pr: Printer, op, indent):
    keys = ("start_indices", "limit_indices", "strides")
    attrs = _attr_dict_for(op, keys)
    arrays = [_i64_array(op.properties.get(k)) for k in keys]
    if attrs is None or None in arrays or len({len(a) for a in arrays}) != 1 or len(op.operands) != 1:
        return False
    dims = ", ".join(f"{s}:{l}" + (f":{st}" if st != 1 else "") for s, l, st in zip(*arrays))
    pr.out.append(f"stablehlo.slice {pr.value_name(op.operands[0])} [{dims}]{_opt_dict(attrs)}")
    _print_type_signature(pr, op, functional=True)
    return True


_register("stablehlo.slice")((_parse_slice, _print_slice))


def _parse_precision(p: Parser, op):
    p.expect("[")
    vals = []
    while not p.parse_optional("]"):
        vals.append(_enum_attr("precision", p.parse_bare_id("precision")))
        p.parse_optional(",")
    op.properties["precision_config"] = ArrayAttr(tuple(vals))


def _precision_text(op) -> str | None:
    pc = op.properties.get("precision_config")
    if pc is None:
        return ""
    if not isinstance(pc, ArrayAttr):
        return None
    vals = [_enum_value(a, "precision") for a in pc]
    return None if None in vals else f", precision = [{', '.join(vals)}]"


def _parse_dot(p: Parser, op, n):
    refs = [p.parse_value_ref()]
    p.expect(",")
    refs.append(p.parse_value_ref())
    if p.parse_optional(","):
        p.expect_keyword("precision")
        p.expect("=")
        _parse_precision(p, op)
    p._set_attrs(op, p.parse_optional_attr_dict())
    p.parse_trailing_type_signature(op, refs, 1)


def _print_dot(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("precision_config",))
    prec = _precision_text(op)
    if attrs is None or prec is None or len(op.operands) != 2 or len(op.results) != 1:
        return False
    pr.out.append(f"stablehlo.dot {pr.operands(op.operands)}{prec}{_opt_dict(attrs)}")
    _print_type_signature(pr, op, functional=True)
    return True


_register("stablehlo.dot")((_parse_dot, _print_dot))

_DOT_FIELDS = ("lhs_batching_dimensions", "rhs_batching_dimensions",
               "lhs_contracting_dimensions", "rhs_contracting_dimensions")


def _parse_dot_general(p: Parser, op, n):
    refs = [p.parse_value_ref()]
    p.expect(",")
    refs.append(p.parse_value_ref())
    dims = {}
    while p.parse_optional(","):
        pos = p.skip()
        key = p.parse_bare_id("'batching_dims', 'contracting_dims', 'precision' or 'algorithm'")
        p.expect("=")
        if key in ("batching_dims", "contracting_dims"):
            lhs = _parse_int_list(p)
            p.expect_keyword("x")
            dims[key] = (lhs, _parse_int_list(p))
        elif key == "precision":
            _parse_precision(p, op)
        elif key == "algorithm":
            p.skip()
            op.properties["algorithm"] = OpaqueAttr("#stablehlo.dot_algorithm" + p.balanced("algorithm"))
        else:
            raise p.error(f"unknown dot_general keyword '{key}'", pos)
    parts = []
    for key, (l_name, r_name) in (("batching_dims", _DOT_FIELDS[:2]), ("contracting_dims", _DOT_FIELDS[2:])):
        lhs, rhs = dims.get(key, ((), ()))
        if lhs:
            parts.append(f"{l_name} = {_ints(lhs)}")
        if rhs:
            parts.append(f"{r_name} = {_ints(rhs)}")
    op.properties["dot_dimension_numbers"] = OpaqueAttr(f"#stablehlo.dot<{', '.join(parts)}>")
    p._set_attrs(op, p.parse_optional_attr_dict())
    p.parse_trailing_type_signature(op, refs, 1)


def _print_dot_general(pr: Printer, op, indent):
    attrs = _attr_dict_for(op, ("dot_dimension_numbers", "precision_config", "algorithm"))
    ddn = str(op.properties.get("dot_dimension_numbers", ""))
    m = re.fullmatch(r"#stablehlo\.dot<(.*)>", ddn)
    prec = _precision_text(op)
    if attrs is None or not m or prec is None or len(op.operands) != 2 or len(op.results) != 1:
        return False
    fields = dict.fromkeys(_DOT_FIELDS, "[]")
    for part in filter(None, re.split(r",\s*(?=[a-z_]+ = )", m.group(1))):
        k, _, v = part.partition(" = ")
        if k not in fields:
            return False
        fields[k] = v
    text = f"stablehlo.dot_general {pr.operands(op.operands)}"
    if fields[_DOT_FIELDS[0]] != "[]" or fields[_DOT_FIELDS[1]] != "[]":
        text += f", batching_dims = {fields[_DOT_FIELDS[0]]} x {fields[_DOT_FIELDS[1]]}"
    text += f", contracting_dims = {fields[_DOT_FIELDS[2]]} x {fields[_DOT_FIELDS[3]]}{prec}"
    if "algorithm" in op.properties:
        alg = str(op.properties["algorithm"])
        if not alg.startswith("#stablehlo.dot_algorithm<"):
            return False
        text += ", algorithm = " + alg[len("#stablehlo.dot_algorithm"):]
    pr.out.append(text + _opt_dict(attrs))
    _print_type_signature(pr, op, functional=True)
    return True


_register("stablehlo.dot_general")((_parse_dot_general, _print_dot_general))


def _parse_barrier_op(p: Parser, op, n):
    p._set_attrs(op, p.parse_optional_attr_dict())  # jaxlib writes the attributes first
    refs = p.parse_optional_value_ref_list()
    if not op.attributes and not op.properties:
        p._set_attrs(op, p.parse_optional_attr_dict())
    if refs:
        p.expect(":")
        pos = p.skip()
        types = p.parse_type_list()
        _add_operands(op, p.resolve_all(refs, types, pos))
        _set_results(op, types)


def _print_barrier_op(pr: Printer, op, indent):
    attrs = _attr_dict_for(op)
    if attrs is None or op.regions or op.operand_types != op.result_types or not op.operands:
        return False
    pr.out.append(f"stablehlo.optimization_barrier{_opt_dict(attrs)} {pr.operands(op.operands)} : "
                  + ", ".join(map(str, op.result_types)))
    return True


_register("stablehlo.optimization_barrier")((_parse_barrier_op, _print_barrier_op))


def _parse_while(p: Parser, op, n):
    p.expect("(")
    names, refs = [], []
    if not p.parse_optional(")"):
        while True:
            pos = p.skip()
            m = p.parse_optional_regex(_NAME)
            if not m:
                p.fail_expected("%iterArg = %value")
            p.expect("=")
            names.append((m.group(1), pos))
            refs.append(p.parse_value_ref())
            if not p.parse_optional(","):
                break
        p.expect(")")
    types = []
    if refs:
        p.expect(":")
        pos = p.skip()
        types = p.parse_type_list()
        _add_operands(op, p.resolve_all(refs, types, pos))
    _set_results(op, types)
    if p.parse_optional_keyword("attributes"):
        p._set_attrs(op, p.parse_attr_dict())
    args = [(name, t, None, pos) for (name, pos), t in zip(names, types)]
    p.expect_keyword("cond")
    op.add_region(p.parse_region(entry_args=args))
    p.expect_keyword("do")
    op.add_region(p.parse_region(entry_args=args))


def _print_while(pr: Printer, op, indent):
    attrs = _attr_dict_for(op)
    if (attrs is None or len(op.regions) != 2 or any(len(r.blocks) != 1 for r in op.regions)
            or op.operand_types != op.result_types
            or any(r.block.arg_types != op.operand_types for r in op.regions)):
        return False
    cond, body = op.regions
    # The iteration arguments are printed once; both regions use the cond block's names.
    for a, b in zip(cond.block.arguments, body.block.arguments):
        pr._arg_names[b] = pr.value_name(a)
    its = ", ".join(f"{pr.value_name(a)} = {pr.value_name(v)}" for a, v in zip(cond.block.arguments, op.operands))
    out = pr.out
    out.append(f"stablehlo.while({its})")
    if op.operands:
        out.append(" : " + ", ".join(map(str, op.operand_types)))
    if attrs:
        out.append(" attributes " + print_attr_dict(attrs))
    out.append("\n" + " " * indent + "cond ")
    pr.print_region(cond, indent, print_entry_args=False, print_empty_block=False)
    out.append(" do ")
    pr.print_region(body, indent, print_entry_args=False, print_empty_block=False)
    return True


_register("stablehlo.while")((_parse_while, _print_while))
