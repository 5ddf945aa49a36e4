"""The `func` dialect: `func.func`, `func.call`, `func.return`."""

from __future__ import annotations

import re

from sharding import TensorSharding

from sdy_passes.attributes import (
    ArrayAttr, DictionaryAttr, FunctionType, StringAttr, SymbolRefAttr, TypeAttr, print_attr_dict,
    print_function_type, print_symbol_name,
)
from sdy_passes.dialects._base import (
    NO_RULE, attr_dict_for, fail, op, opt_dict, parse_attrs_and_signature, parse_return,
    print_return, short_name,
)
from sdy_passes.dialects.sdy import check_sharding
from sdy_passes.errors import VerificationError

_NAME = re.compile(r"%([A-Za-z0-9_$.\-]+)")


def _parse_func(p, op, n):
    before = p.skip()
    vis = p.parse_optional_bare_id()
    if vis is not None and vis not in ("private", "public", "nested"):
        p.pos, vis = before, None  # not a visibility: MLIR then wants the name there
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
        p.set_attrs(op, p.parse_attr_dict())
    if p.peek("{"):
        if not args and arg_types:
            raise p.error("a function with a body needs named arguments (%arg0: type)")
        op.add_region(p.parse_region(entry_args=args))
    else:
        op.add_region()


def _looks_like_function_type(p) -> bool:
    # `-> (T) -> U` (a function-typed result) vs `-> (T {attrs})`: look past the parentheses.
    save = p.pos
    try:
        p.balanced("result list")
        return p.peek("->")
    except Exception:
        return False
    finally:
        p.pos = save


def _print_func(pr, op, indent):
    props = op.properties
    ftype = props.get("function_type")
    if not isinstance(ftype, TypeAttr) or not isinstance(ftype.type, FunctionType) or len(op.regions) != 1:
        return False
    attrs = attr_dict_for(op, ("sym_name", "function_type", "arg_attrs", "res_attrs", "sym_visibility"))
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
        if region.blocks:
            text += pr.arg_location(region.block.arguments[i])
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


def _parse_call(p, op, n):
    op.properties["callee"] = SymbolRefAttr(p.parse_symbol())
    p.expect("(")
    refs = p.parse_optional_value_ref_list()
    p.expect(")")
    parse_attrs_and_signature(p, op, refs)


def _print_call(pr, op, indent):
    attrs = attr_dict_for(op, ("callee",))
    callee = op.properties.get("callee")
    if attrs is None or not isinstance(callee, SymbolRefAttr):
        return False
    pr.out.append(f"{short_name(op)} {callee}({pr.operands(op.operands)}){opt_dict(attrs)} : "
                  + print_function_type(op.operand_types, op.result_types))
    return True


# -- verification -------------------------------------------------------------------------------

def _verify_func(op, ctx) -> None:
    meshes = ctx.meshes
    visibility = op.properties.get("sym_visibility")  # MLIR's SymbolOpInterface checks
    if visibility is not None and visibility.value not in ("public", "private", "nested"):
        fail(op, f'visibility expected to be one of ["public", "private", "nested"], but got {visibility}')
    if not (op.regions[0].blocks or visibility is not None and visibility.value != "public"):
        fail(op, "symbol declaration cannot have public visibility")
    ft = op.properties.get("function_type")
    if not isinstance(ft, TypeAttr) or not isinstance(ft.type, FunctionType):
        fail(op, "requires attribute 'function_type'")
    ft = ft.type
    region = op.regions[0] if op.regions else None
    if region is not None and region.blocks and region.block.arg_types != ft.inputs:
        fail(op, "type of entry block arguments must match the function signature")
    for key, types, kind in (("arg_attrs", ft.inputs, "arg"), ("res_attrs", ft.results, "result")):
        attrs = op.properties.get(key)
        if attrs is None:
            continue
        if not isinstance(attrs, ArrayAttr) or len(attrs) != len(types):
            fail(op, f"expects {key} to be an array of {len(types)} dictionaries")
        for i, (d, t) in enumerate(zip(attrs, types)):
            if isinstance(d, DictionaryAttr) and any("." not in name for name, _ in d.entries):
                fail(op, f"{'arguments' if kind == 'arg' else 'results'} may only have dialect attributes")
            if not isinstance(d, DictionaryAttr) or "sdy.sharding" not in d:
                continue
            s = d.get("sdy.sharding")
            if not isinstance(s, TensorSharding):
                fail(op, f"{kind} {i} - should have a sharding attribute of type TensorShardingAttr")
            check_sharding(op, s, t, meshes, f"{kind} {i} - ")


def _verify_return(op, ctx) -> None:
    """MLIR's `func::ReturnOp::verify`: its operands as the enclosing function's results
    (checked when the walk meets the return: after the ops before it)."""
    func = op.parent_op
    ft = func.properties.get("function_type")
    name = func.properties.get("sym_name")
    _check_return(op, ft.type.results, name.value if isinstance(name, StringAttr) else "")


def _check_return(op, results: tuple, name: str) -> None:
    if len(op.operands) != len(results):
        fail(op, f"has {len(op.operands)} operands, but enclosing function (@{name}) returns {len(results)}")
    for i, (t, want) in enumerate(zip(op.operand_types, results)):
        if t != want:
            raise VerificationError(f"type of return operand {i} ('{t}') doesn't match function result type "
                                    f"('{want}') in function @{name}", op.location)


def _verify_call(op, ctx) -> None:
    """MLIR's `func::CallOp::verifySymbolUses`: the callee is a function of the module, called
    with its operand and result types."""
    callee = op.properties["callee"]
    if not isinstance(callee, SymbolRefAttr):
        fail(op, "attribute 'callee' failed to satisfy constraint: flat symbol reference attribute")
    target = ctx.symbols.get(callee.root)
    if target is None or target.name != "func.func":
        fail(op, f"'{callee.root}' does not reference a valid function")
    ft = target.properties["function_type"].type
    if len(ft.inputs) != len(op.operands):
        fail(op, "incorrect number of operands for callee")
    for i, (t, want) in enumerate(zip(op.operand_types, ft.inputs)):
        if t != want:
            fail(op, f"operand type mismatch: expected operand type '{want}', but provided '{t}' for operand number {i}")
    if len(ft.results) != len(op.results):
        fail(op, "incorrect number of results for callee")
    for i, (r, want) in enumerate(zip(op.results, ft.results)):
        if r.type != want:
            fail(op, f"result type mismatch at index {i}")


OPS = (
    op("func.func", "0 0 1", "sym_name!:StrAttr function_type!:FunctionTypeAttr arg_attrs:DictArrayAttr "
       "res_attrs:DictArrayAttr sym_visibility:StrAttr no_inline:UnitAttr", syntax=(_parse_func, _print_func), verify=_verify_func,
       traits="IsolatedFromAbove Symbol FunctionOpInterface", rule=NO_RULE),
    op("func.call", "* * 0", "callee!:FlatSymbolRefAttr arg_attrs:DictArrayAttr res_attrs:DictArrayAttr no_inline:UnitAttr",
       syntax=(_parse_call, _print_call), verify=_verify_call, traits="CallOpInterface SymbolUserOpInterface", rule=NO_RULE,
       evaluator="control:call"),
    op("func.return", "* 0 0", syntax=(parse_return, print_return), verify=_verify_return,
       traits="Terminator NoMemoryEffect", parent="func.func"),
    # Generic form only.
    op("func.constant", "0 1 0", "value!:FlatSymbolRefAttr", traits="NoMemoryEffect"),
    op("func.call_indirect", "1+ * 0", "arg_attrs:DictArrayAttr res_attrs:DictArrayAttr"),
)
