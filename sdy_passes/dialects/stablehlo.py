"""The `stablehlo` dialect: every op JAX emits, with the pretty forms jaxlib 0.10.2 prints."""

from __future__ import annotations

import re
from functools import partial

from sdy_passes.attributes import (
    I1, I32, I64, ArrayAttr, BoolAttr, ComplexType, DenseArrayAttr, DenseElementsAttr, FunctionType, IntegerAttr,
    OpaqueAttr, RankedTensorType, StringAttr, TupleType, print_attr_dict, print_function_type,
    print_symbol_name,
)
from sdy_passes.dialects._base import (
    NO_RULE, add_operands, attr_dict_for, constant_names, lookup, op, opt_dict, parse_constant, parse_return,
    print_constant, print_return, set_results, verify_constant,
)
from sdy_passes.dialects.stablehlo_attributes import (
    ConvDimensionNumbers, DotDimensionNumbers, EnumAttr, parse_int_list,
)
from sdy_passes.errors import VerificationError
from sdy_passes.ir import Block, Operation, Region


_NAME = re.compile(r"%([A-Za-z0-9_$.\-]+)")


def _is_enum(attr, kind: str) -> bool:
    return isinstance(attr, EnumAttr) and attr.kind == kind


def _operands_type(functional: bool):
    """Hooks for `operands attr-dict : T` when every operand and the result have type T
    (StableHLO's `SameOperandsAndResultType`), else `: (A, B) -> R`; `functional`: always the
    latter. The op's declared operand count is read one by one for the exact error."""

    def parse(p, op, n):
        arity = lookup(op.name).num_operands
        start = p.pos
        refs = p.parse_optional_value_ref_list()
        if arity is not None and len(refs) != arity:
            p.pos = start
            refs = [p.parse_value_ref()]
            for _ in range(arity - 1):
                p.expect(",")
                refs.append(p.parse_value_ref())
        known = None if functional else p.parse_optional_colon_known_type()
        if known is not None:  # `%a, %b : T`: no attributes, every type T
            t, pos = known
            add_operands(op, p.resolve_all(refs, (t,) * len(refs), pos))
            set_results(op, (t,) * max(n, 1))
            return
        p.set_attrs(op, p.parse_optional_attr_dict())
        _parse_types(p, op, refs, n, functional=functional)

    def print_(pr, op, indent):
        attrs = attr_dict_for(op)
        if attrs is None or op.regions or len(op.results) != 1:
            return False
        pr.out.append(f"{op.name} {pr.operands(op.operands)}".rstrip() + opt_dict(attrs))
        _print_types(pr, op, functional=functional)
        return True
    return parse, print_


OPERANDS_TYPE = _operands_type(False)
FUNCTIONAL = _operands_type(True)


def _parse_types(p, op, refs, num_results, *, functional: bool) -> None:
    """`: T` (every operand and the result, unless `functional`) or `: (A, B) -> R`."""
    p.expect(":")
    pos = p.skip()
    t = p.parse_type()
    if isinstance(t, FunctionType):
        ins, outs = t.inputs, t.results
    elif functional:
        raise p.error(f"expected function type, found '{t}'", pos)
    else:
        ins, outs = (t,) * len(refs), (t,) * max(num_results, 1)
    add_operands(op, p.resolve_all(refs, ins, pos))
    set_results(op, outs)


def _print_types(pr, op, *, functional: bool) -> None:
    types = set(op.operand_types)
    if not functional and len(op.results) == 1 and types <= {op.result.type}:
        pr.out.append(f" : {op.result.type}")
    else:
        pr.out.append(" : " + print_function_type(op.operand_types, op.result_types))


def _parse_compare(p, op, n):
    op.properties["comparison_direction"] = EnumAttr.parse_value(p, "comparison_direction")
    p.expect(",")
    refs = [p.parse_value_ref()]
    p.expect(",")
    refs.append(p.parse_value_ref())
    if p.parse_optional(","):
        op.properties["compare_type"] = EnumAttr.parse_value(p, "comparison_type")
    p.set_attrs(op, p.parse_optional_attr_dict())
    _parse_types(p, op, refs, 1, functional=True)


def _print_compare(pr, op, indent):
    attrs = attr_dict_for(op, ("comparison_direction", "compare_type"))
    d = op.properties.get("comparison_direction")
    ct = op.properties.get("compare_type")
    if (attrs is None or not _is_enum(d, "comparison_direction") or len(op.operands) != 2
            or len(op.results) != 1 or not (ct is None or _is_enum(ct, "comparison_type"))):
        return False
    text = f"stablehlo.compare {d.value}, {pr.operands(op.operands)}"
    if ct is not None:
        text += f", {ct.value}"
    pr.out.append(text + opt_dict(attrs))
    _print_types(pr, op, functional=True)
    return True


def _parse_iota(p, op, n):
    p.expect_keyword("dim")
    p.expect("=")
    op.properties["iota_dimension"] = IntegerAttr(p.parse_int("iota dimension"), I64)
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    set_results(op, [p.parse_type()])


def _print_iota(pr, op, indent):
    attrs = attr_dict_for(op, ("iota_dimension",))
    d = op.properties.get("iota_dimension")
    if attrs is None or not isinstance(d, IntegerAttr) or op.operands or len(op.results) != 1:
        return False
    pr.out.append(f"stablehlo.iota dim = {d.value}{opt_dict(attrs)} : {op.result.type}")
    return True


def _i64_array(attr) -> tuple[int, ...] | None:
    if isinstance(attr, DenseArrayAttr) and attr.element_type == I64:
        return attr.values
    return None


def _ints(vals) -> str:
    return "[" + ", ".join(map(str, vals)) + "]"


def _keyword_op(fields: tuple[tuple[str, str, str], ...], *, functional: bool = True):
    """Hooks for `op %a, %b, kw = value, ... attr-dict : types`: each field is (keyword,
    property, kind) with kind `i64s` (`[1, 2]`, an `array<i64>`), `i64` (an `i64` integer),
    `bool` (optional: left out when absent), `str`, or an enum kind (`fft_type`, ...)."""
    keys = tuple(prop for _, prop, _ in fields)

    def parse(p, op, n):
        refs = []
        while p.peek("%"):
            refs.append(p.parse_value_ref())
            if not p.parse_optional(","):
                break
        for i, (word, prop, kind) in enumerate(fields):
            if kind == "bool" and not p.peek(word):
                continue
            if i:
                p.expect(",")
            p.expect_keyword(word)
            p.expect("=")
            op.properties[prop] = _parse_field(p, kind)
        p.set_attrs(op, p.parse_optional_attr_dict())
        _parse_types(p, op, refs, n, functional=functional)

    def print_(pr, op, indent):
        attrs = attr_dict_for(op, keys)
        texts = []
        for word, prop, kind in fields:
            value = op.properties.get(prop)
            if value is None and kind == "bool":
                continue
            text = _field_text(value, kind)
            if text is None:
                return False
            texts.append(f"{word} = {text}")
        if attrs is None or op.regions or (len(op.results) != 1 and not functional):
            return False
        head = ", ".join([*(pr.value_name(v) for v in op.operands), *texts])
        pr.out.append(f"{op.name} {head}{opt_dict(attrs)}")
        _print_types(pr, op, functional=functional)
        return True
    return parse, print_


def _parse_field(p, kind: str):
    if kind == "i64s":
        return DenseArrayAttr(I64, parse_int_list(p))
    if kind == "i64":
        return IntegerAttr(p.parse_int(), I64)
    if kind == "bool":
        pos = p.skip()
        word = p.parse_bare_id("'true' or 'false'")
        if word not in ("true", "false"):
            raise p.error(f"expected 'true' or 'false', found '{word}'", pos)
        return BoolAttr(word == "true")
    if kind == "str":
        return StringAttr(p.parse_string())
    return EnumAttr.parse_value(p, kind)


def _field_text(value, kind: str) -> str | None:
    if kind == "i64s":
        return _ints(value.values) if _i64_array(value) is not None else None
    if kind == "i64":
        return str(value.value) if isinstance(value, IntegerAttr) and value.type == I64 else None
    if kind == "bool":
        return str(value) if isinstance(value, BoolAttr) else None
    if kind == "str":
        return str(value) if isinstance(value, StringAttr) else None
    return value.value if _is_enum(value, kind) else None


def _parse_slice(p, op, n):
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
    p.set_attrs(op, p.parse_optional_attr_dict())
    _parse_types(p, op, refs, 1, functional=True)


def _print_slice(pr, op, indent):
    keys = ("start_indices", "limit_indices", "strides")
    attrs = attr_dict_for(op, keys)
    arrays = [_i64_array(op.properties.get(k)) for k in keys]
    if attrs is None or None in arrays or len({len(a) for a in arrays}) != 1 or len(op.operands) != 1:
        return False
    dims = ", ".join(f"{s}:{l}" + (f":{st}" if st != 1 else "") for s, l, st in zip(*arrays))
    pr.out.append(f"stablehlo.slice {pr.value_name(op.operands[0])} [{dims}]{opt_dict(attrs)}")
    _print_types(pr, op, functional=True)
    return True


def _parse_precision(p, op):
    p.expect("[")
    vals = []
    while not p.parse_optional("]"):
        vals.append(EnumAttr.parse_value(p, "precision"))
        p.parse_optional(",")
    op.properties["precision_config"] = ArrayAttr(tuple(vals))


def _precision_text(op) -> str | None:
    pc = op.properties.get("precision_config")
    if pc is None:
        return ""
    if not isinstance(pc, ArrayAttr):
        return None
    if not all(_is_enum(a, "precision") for a in pc):
        return None
    return f", precision = [{', '.join(a.value for a in pc)}]"


def _parse_dot(p, op, n):
    refs = [p.parse_value_ref()]
    p.expect(",")
    refs.append(p.parse_value_ref())
    if p.parse_optional(","):
        p.expect_keyword("precision")
        p.expect("=")
        _parse_precision(p, op)
    p.set_attrs(op, p.parse_optional_attr_dict())
    _parse_types(p, op, refs, 1, functional=True)


def _print_dot(pr, op, indent):
    attrs = attr_dict_for(op, ("precision_config",))
    prec = _precision_text(op)
    if attrs is None or prec is None or len(op.operands) != 2 or len(op.results) != 1:
        return False
    pr.out.append(f"stablehlo.dot {pr.operands(op.operands)}{prec}{opt_dict(attrs)}")
    _print_types(pr, op, functional=True)
    return True


def _parse_dot_general(p, op, n):
    refs = [p.parse_value_ref()]
    p.expect(",")
    refs.append(p.parse_value_ref())
    dims = {}
    while p.parse_optional(","):
        pos = p.skip()
        key = p.parse_bare_id("'batching_dims', 'contracting_dims', 'precision' or 'algorithm'")
        p.expect("=")
        if key in ("batching_dims", "contracting_dims"):
            lhs = parse_int_list(p)
            p.expect_keyword("x")
            dims[key] = (lhs, parse_int_list(p))
        elif key == "precision":
            _parse_precision(p, op)
        elif key == "algorithm":
            p.skip()
            op.properties["algorithm"] = OpaqueAttr("#stablehlo.dot_algorithm" + p.balanced("algorithm"))
        else:
            raise p.error(f"unknown dot_general keyword '{key}'", pos)
    batch = dims.get("batching_dims", ((), ()))
    contract = dims.get("contracting_dims", ((), ()))
    op.properties["dot_dimension_numbers"] = DotDimensionNumbers(*batch, *contract)
    p.set_attrs(op, p.parse_optional_attr_dict())
    _parse_types(p, op, refs, 1, functional=True)


def _print_dot_general(pr, op, indent):
    attrs = attr_dict_for(op, ("dot_dimension_numbers", "precision_config", "algorithm"))
    d = op.properties.get("dot_dimension_numbers")
    prec = _precision_text(op)
    if (attrs is None or not isinstance(d, DotDimensionNumbers) or prec is None
            or len(op.operands) != 2 or len(op.results) != 1):
        return False
    text = f"stablehlo.dot_general {pr.operands(op.operands)}"
    if d.lhs_batching_dimensions or d.rhs_batching_dimensions:
        text += (f", batching_dims = {_ints(d.lhs_batching_dimensions)} x "
                 f"{_ints(d.rhs_batching_dimensions)}")
    text += (f", contracting_dims = {_ints(d.lhs_contracting_dimensions)} x "
             f"{_ints(d.rhs_contracting_dimensions)}{prec}")
    if "algorithm" in op.properties:
        alg = str(op.properties["algorithm"])
        if not alg.startswith("#stablehlo.dot_algorithm<"):
            return False
        text += ", algorithm = " + alg[len("#stablehlo.dot_algorithm"):]
    pr.out.append(text + opt_dict(attrs))
    _print_types(pr, op, functional=True)
    return True


def _parse_barrier_op(p, op, n):
    p.set_attrs(op, p.parse_optional_attr_dict())  # jaxlib writes the attributes first
    refs = p.parse_optional_value_ref_list()
    if not op.attributes and not op.properties:
        p.set_attrs(op, p.parse_optional_attr_dict())
    if refs:
        p.expect(":")
        pos = p.skip()
        types = p.parse_type_list()
        add_operands(op, p.resolve_all(refs, types, pos))
        set_results(op, types)


def _print_barrier_op(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or op.regions or op.operand_types != op.result_types or not op.operands:
        return False
    pr.out.append(f"stablehlo.optimization_barrier{opt_dict(attrs)} {pr.operands(op.operands)} : "
                  + ", ".join(map(str, op.result_types)))
    return True


def _parse_while(p, op, n):
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
        add_operands(op, p.resolve_all(refs, types, pos))
    set_results(op, types)
    if p.parse_optional_keyword("attributes"):
        p.set_attrs(op, p.parse_attr_dict())
    args = [(name, t, None, pos) for (name, pos), t in zip(names, types)]
    p.expect_keyword("cond")
    op.add_region(p.parse_region(entry_args=args))
    p.expect_keyword("do")
    op.add_region(p.parse_region(entry_args=args))


def _print_while(pr, op, indent):
    attrs = attr_dict_for(op)
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


def _parse_select(p, op, n):
    refs = [p.parse_value_ref()]
    for _ in range(2):
        p.expect(",")
        refs.append(p.parse_value_ref())
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    if p.peek("("):
        ft = p.parse_function_type()
        ins, outs = ft.inputs, ft.results
    else:
        types = p.parse_type_list()
        if len(types) != 2:  # StableHLO's parseSelectOpType
            raise p.error("custom op 'stablehlo.select' expected functional type or list of two types", pos)
        pred, t = types
        ins, outs = (pred, t, t), (t,)
    add_operands(op, p.resolve_all(refs, ins, pos))
    set_results(op, outs)


def _print_select(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or op.regions or len(op.results) != 1 or len(op.operands) != 3:
        return False
    pred, a, b = op.operand_types
    pr.out.append(f"stablehlo.select {pr.operands(op.operands)}{opt_dict(attrs)} : ")
    if a == b == op.result.type:  # StableHLO's printSelectOpType: always both types
        pr.out.append(f"{pred}, {a}")
    else:
        pr.out.append(print_function_type(op.operand_types, op.result_types))
    return True


def _parse_reduce(p, op, n):
    """`(%x init: %i), ... applies stablehlo.add across dimensions = [1] : T` (the body is one
    commutative binary op) or `... across dimensions = [..] : T reducer(%a: t, %b: t) {...}`."""
    start = p.skip()
    inputs, inits = [], []
    while True:
        p.expect("(")
        inputs.append(p.parse_value_ref())
        p.expect_keyword("init")
        p.expect(":")
        inits.append(p.parse_value_ref())
        p.expect(")")
        if not p.parse_optional(","):
            break
    inner = None
    if p.parse_optional_keyword("applies"):
        pos = p.skip()
        inner = p.parse_bare_id("inner op name")
        if inner.removeprefix("stablehlo.") not in _COMMUTATIVE or not inner.startswith("stablehlo."):
            raise p.error("expected the inner-op to be a commutative binary-op from the stablehlo "
                          "dialect, with zero region, producing single result", pos)
    p.expect_keyword("across")
    p.expect_keyword("dimensions")
    p.expect("=")
    op.properties["dimensions"] = DenseArrayAttr(I64, parse_int_list(p))
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    ft = p.parse_type()
    if not isinstance(ft, FunctionType):
        raise p.error("expected function type", pos)
    add_operands(op, p.resolve_all(inputs + inits, ft.inputs, pos))
    set_results(op, ft.results)
    if inner is None:
        p.expect_keyword("reducer")
        pairs = []
        while p.peek("("):
            args = p.parse_block_arg_list()
            if len(args) != 2:
                raise p.error(f"expected 2 reducer arguments, found {len(args)}")
            pairs.append(args)
        op.add_region(p.parse_region(entry_args=[a for a, _ in pairs] + [b for _, b in pairs]))
        op.location = p.location(start)  # StableHLO's parser: where the operands begin
        return
    if not ft.inputs:
        raise p.error("input types missing in reduce-op function type", pos)
    loc = p.parse_optional_trailing_location() or p.location(start)
    el = getattr(ft.inputs[0], "element_type", ft.inputs[0])
    scalar = RankedTensorType((), el)
    block = Block([scalar, scalar])
    for a in block.arguments:
        a.location = loc
    body = Operation.create(inner, block.arguments, [scalar], location=loc)
    block.append(body)
    block.append(Operation.create("stablehlo.return", body.results, location=loc))
    op.add_region(Region([block]))
    op.location = loc


def _compact_reducer(op) -> str | None:
    """The inner op's name when the reduce prints as `applies <op>` (StableHLO's rules E1-E5;
    like jaxlib, they ignore the inner op's attributes, which the compact form then drops)."""
    region = op.regions[0]
    if len(region.blocks) != 1 or len(region.block.ops) != 2 or not op.operands:
        return None
    inner, ret = region.block.ops
    if (inner.name.removeprefix("stablehlo.") not in _COMMUTATIVE or not inner.name.startswith("stablehlo.")
            or inner.regions or len(inner.operands) != 2 or len(inner.results) != 1):
        return None
    t = inner.result.type
    el = getattr(op.operands[0].type, "element_type", None)
    if any(x != t for x in inner.operand_types) or t != RankedTensorType((), el):
        return None
    if list(inner.operands) != region.block.arguments:
        return None
    if ret.name.rsplit(".", 1)[-1] != "return" or list(ret.operands) != inner.results:
        return None
    return inner.name


def _print_reduce(pr, op, indent):
    attrs = attr_dict_for(op, ("dimensions",))
    dims = _i64_array(op.properties.get("dimensions"))
    if (attrs is None or dims is None or len(op.regions) != 1 or len(op.operands) % 2
            or len(op.regions[0].blocks) != 1):
        return False
    n = len(op.operands) // 2
    block = op.regions[0].block
    if len(block.arguments) != 2 * n:
        return False
    inner = _compact_reducer(op)
    out = pr.out
    out.append("stablehlo.reduce" + ", ".join(
        f"({pr.value_name(op.operands[i])} init: {pr.value_name(op.operands[i + n])})" for i in range(n)))
    if inner is not None:
        out.append(f" applies {inner}")
    out.append(f" across dimensions = {_ints(dims)}{opt_dict(attrs)} : "
               + print_function_type(op.operand_types, op.result_types))
    if inner is None:
        args = block.arguments
        out.append("\n" + " " * indent + " reducer")
        for i in range(n):
            out.append(f"({pr.block_arg(args[i])}, {pr.block_arg(args[i + n])}) ")
        out.append(" ")
        pr.print_region(op.regions[0], indent, print_entry_args=False, print_empty_block=False)
    return True


_COMMUTATIVE = frozenset("add and maximum minimum multiply or xor".split())


def _parse_window(p) -> dict:
    """`{stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [..], rhs_dilate = [..],
    reverse = [false, ..]}` -> the convolution's window properties."""
    out = {}
    p.expect("{")
    if p.parse_optional("}"):
        return out
    while True:
        pos = p.skip()
        word = p.parse_bare_id("window attribute")
        if word not in _WINDOW:
            raise p.error(f"Unexpected keyword {word}", pos)
        prop = _WINDOW[word]
        if prop in out:
            raise p.error(f"Duplicated attribute {word}", pos)
        p.expect("=")
        if word == "pad":
            p.expect("[")
            pairs = []
            if not p.parse_optional("]"):
                while True:
                    pair = parse_int_list(p)
                    if len(pair) != 2:
                        raise p.error("Expected array with 2 elements", pos)
                    pairs.append(pair)
                    if not p.parse_optional(","):
                        break
                p.expect("]")
            out[prop] = DenseElementsAttr.of_ints([v for x in pairs for v in x],
                                                  RankedTensorType((len(pairs), 2), I64))
        elif word == "reverse":
            p.expect("[")
            flags = []
            while not p.parse_optional("]"):
                flags.append(_parse_field(p, "bool").value)
                p.parse_optional(",")
            out[prop] = DenseArrayAttr(I1, tuple(flags))
        else:
            out[prop] = DenseArrayAttr(I64, parse_int_list(p))
        if not p.parse_optional(","):
            break
    p.expect("}")
    return out


_WINDOW = {"stride": "window_strides", "pad": "padding", "lhs_dilate": "lhs_dilation",
           "rhs_dilate": "rhs_dilation", "reverse": "window_reversal"}


def _window_text(op) -> str | None:
    parts = []
    for word, prop in _WINDOW.items():
        value = op.properties.get(prop)
        if value is None:
            continue
        if word == "pad":
            nums = _dense_ints(value)
            if nums is None or len(nums) % 2:
                return None
            parts.append("pad = [" + ", ".join(f"[{a}, {b}]" for a, b in zip(nums[::2], nums[1::2])) + "]")
        elif word == "reverse":
            if not isinstance(value, DenseArrayAttr) or value.element_type != I1:
                return None
            parts.append("reverse = [" + ", ".join("true" if v else "false" for v in value.values) + "]")
        else:
            vals = _i64_array(value)
            if vals is None:
                return None
            parts.append(f"{word} = {_ints(vals)}")
    return "{" + ", ".join(parts) + "}"


def _dense_ints(attr) -> list[int] | None:
    """The integers of a `dense<...> : tensor<Nx2xi64>` attribute (splats expanded)."""
    if not isinstance(attr, DenseElementsAttr) or not isinstance(attr.type, RankedTensorType):
        return None
    shape = attr.type.shape
    if attr.type.element_type != I64 or None in shape:
        return None
    body = attr.body.replace("[", " ").replace("]", " ").replace(",", " ").split()
    try:
        nums = [int(x) for x in body]
    except ValueError:
        return None
    count = 1
    for d in shape:
        count *= d
    return nums * count if len(nums) == 1 else nums if len(nums) == count else None


def _parse_convolution(p, op, n):
    p.expect("(")
    refs = p.parse_optional_value_ref_list()
    p.expect(")")
    p.expect_keyword("dim_numbers")
    p.expect("=")
    op.properties["dimension_numbers"] = ConvDimensionNumbers.parse_dims(p)
    p.expect(",")
    p.expect_keyword("window")
    p.expect("=")
    op.properties.update(_parse_window(p))
    p.set_attrs(op, p.parse_optional_attr_dict())
    _parse_types(p, op, refs, n, functional=True)


def _print_convolution(pr, op, indent):
    attrs = attr_dict_for(op, ("dimension_numbers", *_WINDOW.values()))
    dims = op.properties.get("dimension_numbers")
    window = _window_text(op)
    if attrs is None or not isinstance(dims, ConvDimensionNumbers) or window is None or op.regions:
        return False
    pr.out.append(f"stablehlo.convolution({pr.operands(op.operands)}) dim_numbers = {dims.body()}, "
                  f"window = {window}{opt_dict(attrs)}")
    _print_types(pr, op, functional=True)
    return True


def _parse_custom_call(p, op, n):
    op.properties["call_target_name"] = StringAttr(p.parse_symbol())
    p.expect("(")
    refs = p.parse_optional_value_ref_list()
    p.expect(")")
    p.set_attrs(op, p.parse_optional_attr_dict())
    _parse_types(p, op, refs, n, functional=True)


def _print_custom_call(pr, op, indent):
    attrs = attr_dict_for(op, ("call_target_name",))
    target = op.properties.get("call_target_name")
    if attrs is None or not isinstance(target, StringAttr) or op.regions:
        return False
    pr.out.append(f"stablehlo.custom_call {print_symbol_name(target.value)}"
                  f"({pr.operands(op.operands)}){opt_dict(attrs)}")
    _print_types(pr, op, functional=True)
    return True


def _parse_get_tuple_element(p, op, n):
    ref = p.parse_value_ref()
    p.expect("[")
    op.properties["index"] = IntegerAttr(p.parse_int("index"), I32)
    p.expect("]")
    p.set_attrs(op, p.parse_optional_attr_dict())
    _parse_types(p, op, [ref], n, functional=True)


def _print_get_tuple_element(pr, op, indent):
    attrs = attr_dict_for(op, ("index",))
    index = op.properties.get("index")
    if (attrs is None or not isinstance(index, IntegerAttr) or index.type != I32
            or len(op.operands) != 1 or len(op.results) != 1):
        return False
    pr.out.append(f"stablehlo.get_tuple_element {pr.value_name(op.operands[0])}[{index.value}]"
                  f"{opt_dict(attrs)}")
    _print_types(pr, op, functional=True)
    return True


def _parse_operands_attrs_type(p, op):
    """`%a, %b {attrs} : T`: the operand refs, the type's position and the type."""
    refs = p.parse_optional_value_ref_list()
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    return refs, pos, p.parse_type()


def _parse_tuple(p, op, n):
    refs, pos, t = _parse_operands_attrs_type(p, op)
    if not isinstance(t, TupleType):
        raise p.error("expected tuple type", pos)
    add_operands(op, p.resolve_all(refs, t.types, pos))
    set_results(op, [t])


def _print_tuple(pr, op, indent):
    attrs = attr_dict_for(op)
    if (attrs is None or len(op.results) != 1 or op.regions
            or op.result.type != TupleType(op.operand_types)):
        return False
    pr.out.append(f"stablehlo.tuple {pr.operands(op.operands)}".rstrip() + opt_dict(attrs)
                  + f" : {op.result.type}")
    return True


def _parse_reduce_precision(p, op, n):
    ref = p.parse_value_ref()
    p.expect(",")
    p.expect_keyword("format")
    p.expect("=")
    pos = p.skip()
    word = p.parse_bare_id("exponent mantissa")
    m = re.fullmatch(r"e([0-9]+)m([0-9]+)", word)
    if not m or len(m.group(1)) > 9 or len(m.group(2)) > 9:
        raise p.error(f"expected exponent mantissa in format e#m#, saw {word}", pos)
    op.properties["exponent_bits"] = IntegerAttr(int(m.group(1)), I32)
    op.properties["mantissa_bits"] = IntegerAttr(int(m.group(2)), I32)
    p.set_attrs(op, p.parse_optional_attr_dict())
    _parse_types(p, op, [ref], n, functional=False)


def _print_reduce_precision(pr, op, indent):
    attrs = attr_dict_for(op, ("exponent_bits", "mantissa_bits"))
    e, m = op.properties.get("exponent_bits"), op.properties.get("mantissa_bits")
    if (attrs is None or not isinstance(e, IntegerAttr) or not isinstance(m, IntegerAttr)
            or len(op.operands) != 1 or len(op.results) != 1):
        return False
    pr.out.append(f"stablehlo.reduce_precision {pr.value_name(op.operands[0])}, "
                  f"format = e{e.value}m{m.value}{opt_dict(attrs)}")
    _print_types(pr, op, functional=False)
    return True


def _parse_result_only(p, op, n):
    """`attr-dict : type` (create_token, replica_id, partition_id)."""
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    set_results(op, [p.parse_type()])


def _print_result_only(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or op.operands or len(op.results) != 1 or op.regions:
        return False
    pr.out.append(f"{op.name}{opt_dict(attrs)} : {op.result.type}")
    return True


def _parse_composite(p, op, n):
    op.properties["name"] = StringAttr(p.parse_string("composite name"))
    refs = p.parse_optional_value_ref_list()
    p.set_attrs(op, p.parse_optional_attr_dict())
    _parse_types(p, op, refs, n, functional=True)


def _print_composite(pr, op, indent):
    attrs = attr_dict_for(op, ("name",))
    name = op.properties.get("name")
    if attrs is None or not isinstance(name, StringAttr) or op.regions:
        return False
    pr.out.append(f"stablehlo.composite {name} {pr.operands(op.operands)}".rstrip() + opt_dict(attrs))
    _print_types(pr, op, functional=True)
    return True


def _parse_complex(p, op, n):
    refs, pos, t = _parse_operands_attrs_type(p, op)
    if isinstance(t, FunctionType):
        ins, outs = t.inputs, t.results
    else:
        el = getattr(t, "element_type", None)
        if not isinstance(el, ComplexType):
            raise p.error("expected tensor with complex element type", pos)
        real = RankedTensorType(t.shape, el.element_type, t.encoding)
        ins, outs = (real, real), (t,)
    add_operands(op, p.resolve_all(refs, ins, pos))
    set_results(op, outs)


def _print_complex(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or op.regions or len(op.results) != 1 or len(op.operands) != 2:
        return False
    pr.out.append(f"stablehlo.complex {pr.operands(op.operands)}{opt_dict(attrs)}")
    t = op.result.type
    el = getattr(t, "element_type", None)
    if (isinstance(el, ComplexType) and isinstance(t, RankedTensorType)
            and all(x == RankedTensorType(t.shape, el.element_type, t.encoding) for x in op.operand_types)):
        pr.out.append(f" : {t}")
    else:
        pr.out.append(" : " + print_function_type(op.operand_types, op.result_types))
    return True


def _rng_results(op: Operation) -> tuple[str, ...] | None:
    return ("output_state", "output") if len(op.results) == 2 else None


_EW = "Elementwise NoMemoryEffect"

def _verify_replica_groups(same_size: bool, global_ids: bool, group_size: str | None, op: Operation, ctx) -> None:
    """StableHLO's `verifyReplicaGroups` (each collective's verifier starts with it): a rank-2
    table of distinct ids 0..n-1, -1 only padding groups of uneven size (`same_size` refuses
    it), not empty with `use_global_device_ids` (when the op has it: `global_ids`), groups of
    the `group_size` property's value. The mesh-axes form is not a table: not checked here."""
    attr = op.properties.get("replica_groups")
    if not isinstance(attr, DenseElementsAttr) or not isinstance(attr.type, RankedTensorType):
        return
    shape = attr.type.shape
    if len(shape) != 2:
        raise VerificationError("replica groups should be a rank 2 tensor", op.location)
    if global_ids and "use_global_device_ids" in op.properties and shape[0] * shape[1] == 0:
        raise VerificationError("if `use_global_device_ids` is set, the replica groups cannot be empty", op.location)
    ids = ([int(v) for v in _INTEGER.findall(attr.body)] if not attr.body.startswith('"')
           else [int(v) for v in attr.to_numpy().ravel()])
    if len(ids) == 1:  # a splat
        ids *= shape[0] * shape[1]
    seen: set[int] = set()
    for i in ids:
        if i == -1 and not same_size:
            continue
        if i == -1:
            raise VerificationError("Invalid replica id -1", op.location)
        if i in seen:
            raise VerificationError(f"replica id #{i} seen more than once", op.location)
        seen.add(i)
    for i in range(len(seen)):
        if i not in seen:
            raise VerificationError(f"replica id #{i} not seen in replica groups", op.location)
    size = op.properties.get(group_size) if group_size else None
    if same_size and isinstance(size, IntegerAttr) and shape[0] and len(ids) // shape[0] != size.value:
        raise VerificationError(f"group size of replica_groups must be {size.value}", op.location)



def _verify_dot_general(op: Operation, ctx) -> None:
    """StableHLO's `verifyDotDimensionNumbers` (the start of `verifyDotGeneralOp`): as many
    batching and contracting dims on both sides, none twice on a side, each in range, and
    batching and contracting sizes equal where both are static."""
    dims = op.properties.get("dot_dimension_numbers")
    lhs, rhs = (v.type for v in op.operands)
    if not isinstance(dims, DotDimensionNumbers) or not all(isinstance(t, RankedTensorType) for t in (lhs, rhs)):
        return
    lb, rb = dims.lhs_batching_dimensions, dims.rhs_batching_dimensions
    lc, rc = dims.lhs_contracting_dimensions, dims.rhs_contracting_dimensions
    if len(lb) != len(rb):
        raise VerificationError("lhs and rhs should have the same number of batching dimensions", op.location)
    if len(lc) != len(rc):
        raise VerificationError("lhs and rhs should have the same number of contracting dimensions", op.location)
    for side, batching, contracting in (("lhs", lb, lc), ("rhs", rb, rc)):
        seen: set[int] = set()
        for d in (*batching, *contracting):
            if d in seen:
                raise VerificationError(f"has duplicated dimension from {side}_batching_dimensions and "
                                        f"{side}_contracting_dimensions: {d}", op.location)
            seen.add(d)
    for name, t, ds in (("lhs_batching_dimensions", lhs, lb), ("lhs_contracting_dimensions", lhs, lc),
                        ("rhs_batching_dimensions", rhs, rb), ("rhs_contracting_dimensions", rhs, rc)):
        bad = next((d for d in ds if not 0 <= d < len(t.shape)), None)
        if bad is not None:
            raise VerificationError(f"{name} value: {bad} is out of range: [0, {len(t.shape)})", op.location)
    for what, ls, rs in (("batching", lb, rb), ("contracting", lc, rc)):
        for l, r in zip(ls, rs):
            if None not in (lhs.shape[l], rhs.shape[r]) and lhs.shape[l] != rhs.shape[r]:
                raise VerificationError(f"{what} dimension sizes must match for lhs/rhs", op.location)

_INTEGER = re.compile(r"-?[0-9]+")

OPS = (
    op("stablehlo.abs", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:abs"),
    op("stablehlo.add", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:add"),
    op("stablehlo.after_all", "* 1 0", syntax=OPERANDS_TYPE, traits="NoMemoryEffect", rule=NO_RULE, evaluator="control:token"),
    op("stablehlo.all_gather", "* * 0", "all_gather_dim!:NonNegativeI64Attr replica_groups!:ReplicaGroups channel_handle:ChannelHandle use_global_device_ids:UnitAttr", rule="collectives:all_gather", evaluator="collectives:all_gather", verify=partial(_verify_replica_groups, True, True, None)),
    op("stablehlo.all_reduce", "* * 1", "replica_groups!:ReplicaGroups channel_handle:ChannelHandle use_global_device_ids:UnitAttr", rule="elementwise:pointwise", evaluator="collectives:all_reduce", verify=partial(_verify_replica_groups, False, True, None), terminator="stablehlo.return", regions="computation"),
    op("stablehlo.all_to_all", "* * 0", "split_dimension!:NonNegativeI64Attr concat_dimension!:NonNegativeI64Attr split_count!:PositiveI64Attr replica_groups!:ReplicaGroups channel_handle:ChannelHandle", rule="collectives:all_to_all", evaluator="collectives:all_to_all", verify=partial(_verify_replica_groups, True, False, "split_count")),
    op("stablehlo.and", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:and_", operand_type="PredOrIntTensor"),
    op("stablehlo.async_done", "1 1 0"),
    op("stablehlo.async_start", "* 1 1", "called_computation execution_thread"),
    op("stablehlo.atan2", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:atan2"),
    op("stablehlo.batch_norm_grad", "5 3 0", "epsilon!:F32Attr feature_index!:NonNegativeI64Attr", traits="NoMemoryEffect"),
    op("stablehlo.batch_norm_inference", "5 1 0", "epsilon!:F32Attr feature_index!:NonNegativeI64Attr", traits="NoMemoryEffect", rule="linalg:batch_norm_inference"),
    op("stablehlo.batch_norm_training", "3 3 0", "epsilon!:F32Attr feature_index!:NonNegativeI64Attr", traits="NoMemoryEffect"),
    op("stablehlo.bitcast_convert", "1 1 0", syntax=FUNCTIONAL, traits="NoMemoryEffect", rule="shape:bitcast_convert", evaluator="elementwise:bitcast_convert"),
    op("stablehlo.broadcast", "1 1 0", "broadcast_sizes!:DenseI64ArrayAttr", syntax=_keyword_op((("sizes", "broadcast_sizes", "i64s"),)), traits="NoMemoryEffect", evaluator="movement:broadcast"),
    op("stablehlo.broadcast_in_dim", "1 1 0", "broadcast_dimensions!:DenseI64ArrayAttr", syntax=_keyword_op((("dims", "broadcast_dimensions", "i64s"),)), traits="NoMemoryEffect", rule="shape:broadcast_in_dim", evaluator="movement:broadcast_in_dim"),
    op("stablehlo.case", "1 * *", traits="RecursiveMemoryEffects ShardableDataFlowOpInterface", evaluator="control:case", terminator="stablehlo.return", regions="branches"),
    op("stablehlo.cbrt", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:cbrt"),
    op("stablehlo.ceil", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:ceil"),
    op("stablehlo.cholesky", "1 1 0", "lower:BoolAttr", syntax=_keyword_op((("lower", "lower", "bool"),), functional=False), traits="NoMemoryEffect", rule="linalg:cholesky", evaluator="custom_call:cholesky"),
    op("stablehlo.clamp", "3 1 0", syntax=OPERANDS_TYPE, traits="BroadcastingElementwise NoMemoryEffect", rule="elementwise:clamp", evaluator="elementwise:clamp"),
    op("stablehlo.collective_broadcast", "1 1 0", "replica_groups!:ReplicaGroups channel_handle:ChannelHandle", rule="elementwise:pointwise", evaluator="collectives:collective_broadcast"),
    op("stablehlo.collective_permute", "1 1 0", "source_target_pairs!:I64ElementsAttr channel_handle:ChannelHandle", rule="elementwise:pointwise", evaluator="collectives:collective_permute"),
    op("stablehlo.compare", "2 1 0", "comparison_direction!:ComparisonDirection compare_type:ComparisonType", syntax=(_parse_compare, _print_compare), traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:compare"),
    op("stablehlo.complex", "2 1 0", syntax=(_parse_complex, _print_complex), traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:complex"),
    op("stablehlo.composite", "* * *", "name!:StrAttr composite_attributes:DictionaryAttr decomposition!:FlatSymbolRefAttr version:I32Attr", syntax=(_parse_composite, _print_composite), evaluator="control:composite"),
    op("stablehlo.concatenate", "1+ 1 0", "dimension!:NonNegativeI64Attr", syntax=_keyword_op((("dim", "dimension", "i64"),)), traits="NoMemoryEffect", rule="shape:concatenate", evaluator="movement:concatenate"),
    op("stablehlo.constant", "0 1 0", "value!:ElementsAttr", syntax=(parse_constant, print_constant), traits="ConstantLike NoMemoryEffect", rule=NO_RULE, evaluator="movement:constant", verify=verify_constant, result_names=constant_names),
    op("stablehlo.convert", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:convert"),
    op("stablehlo.convolution", "2 1 0", "window_strides:DenseI64ArrayAttr padding:I64ElementsAttr lhs_dilation:DenseI64ArrayAttr rhs_dilation:DenseI64ArrayAttr window_reversal:DenseBoolArrayAttr dimension_numbers!:ConvDimensionNumbers feature_group_count!:PositiveI64Attr batch_group_count!:PositiveI64Attr precision_config:PrecisionConfig", syntax=(_parse_convolution, _print_convolution), traits="NoMemoryEffect", rule="contraction:convolution", evaluator="reduction:convolution"),
    op("stablehlo.cosine", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:cosine"),
    op("stablehlo.count_leading_zeros", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:count_leading_zeros", operand_type="IntTensor"),
    op("stablehlo.create_token", "0 1 0", syntax=(_parse_result_only, _print_result_only), traits="NoMemoryEffect", rule=NO_RULE, evaluator="control:token"),
    op("stablehlo.cross-replica-sum", "1 1 0", "replica_groups!:I64ElementsAttr", traits="NoMemoryEffect", rule="elementwise:pointwise"),
    op("stablehlo.custom_call", "* * 0", "call_target_name!:StrAttr has_side_effect:BoolAttr backend_config:BackendConfig api_version:CustomCallApiVersion called_computations:FlatSymbolRefArrayAttr operand_layouts:LayoutArray result_layouts:LayoutArray output_operand_aliases:OutputOperandAliasArray", syntax=(_parse_custom_call, _print_custom_call), rule="custom_call:custom_call", evaluator="custom_call:custom_call"),
    op("stablehlo.divide", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:divide"),
    op("stablehlo.dot", "2 1 0", "precision_config:PrecisionConfig", syntax=(_parse_dot, _print_dot), traits="NoMemoryEffect", rule="contraction:dot", evaluator="reduction:dot"),
    op("stablehlo.dot_general", "2 1 0", "dot_dimension_numbers!:DotDimensionNumbers precision_config:PrecisionConfig algorithm:DotAlgorithm", syntax=(_parse_dot_general, _print_dot_general), traits="NoMemoryEffect", rule="contraction:dot_general", evaluator="reduction:dot_general", verify=_verify_dot_general),
    op("stablehlo.dynamic_broadcast_in_dim", "2 1 0", "broadcast_dimensions!:DenseI64ArrayAttr known_expanding_dimensions:DenseI64ArrayAttr known_nonexpanding_dimensions:DenseI64ArrayAttr", syntax=_keyword_op((("dims", "broadcast_dimensions", "i64s"),)), traits="NoMemoryEffect"),
    op("stablehlo.dynamic_conv", "3 1 0", "window_strides lhs_dilation rhs_dilation window_reversal dimension_numbers! feature_group_count! batch_group_count! precision_config", traits="NoMemoryEffect"),
    op("stablehlo.dynamic_gather", "3 1 0", "dimension_numbers!:GatherDimensionNumbers indices_are_sorted:BoolAttr", traits="NoMemoryEffect"),
    op("stablehlo.dynamic_iota", "1 1 0", "iota_dimension!:NonNegativeI64Attr", syntax=_keyword_op((("dim", "iota_dimension", "i64"),)), traits="NoMemoryEffect"),
    op("stablehlo.dynamic_pad", "5 1 0", syntax=FUNCTIONAL, traits="NoMemoryEffect"),
    op("stablehlo.dynamic_reshape", "2 1 0", syntax=FUNCTIONAL, traits="NoMemoryEffect"),
    op("stablehlo.dynamic_slice", "1+ 1 0", "slice_sizes!:DenseI64ArrayAttr", syntax=_keyword_op((("sizes", "slice_sizes", "i64s"),)), traits="NoMemoryEffect", rule="shape:dynamic_slice", evaluator="movement:dynamic_slice"),
    op("stablehlo.dynamic_update_slice", "2+ 1 0", syntax=FUNCTIONAL, traits="NoMemoryEffect", rule="shape:dynamic_update_slice", evaluator="movement:dynamic_update_slice"),
    op("stablehlo.einsum", "2 1 0", "einsum_config!:StrAttr", syntax=_keyword_op((("config", "einsum_config", "str"),)), traits="NoMemoryEffect"),
    op("stablehlo.exponential", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:exponential"),
    op("stablehlo.exponential_minus_one", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:exponential_minus_one"),
    op("stablehlo.fft", "1 1 0", "fft_type!:FftType fft_length!:DenseI64ArrayAttr", syntax=_keyword_op((("type", "fft_type", "fft_type"), ("length", "fft_length", "i64s"))), traits="NoMemoryEffect", rule="linalg:fft", evaluator="reduction:fft"),
    op("stablehlo.floor", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:floor"),
    op("stablehlo.gather", "2 1 0", "dimension_numbers!:GatherDimensionNumbers slice_sizes!:DenseI64ArrayAttr indices_are_sorted:BoolAttr", traits="NoMemoryEffect", rule="gather_scatter:gather", evaluator="movement:gather"),
    op("stablehlo.get_dimension_size", "1 1 0", "dimension!:NonNegativeI64Attr", syntax=_keyword_op((("dim", "dimension", "i64"),)), traits="NoMemoryEffect", evaluator="movement:get_dimension_size"),
    op("stablehlo.get_tuple_element", "1 1 0", "index!:NonNegativeI32Attr", syntax=(_parse_get_tuple_element, _print_get_tuple_element), traits="NoMemoryEffect", rule=NO_RULE, evaluator="control:get_tuple_element"),
    op("stablehlo.if", "1 * 2", traits="RecursiveMemoryEffects", evaluator="control:if_", terminator="stablehlo.return", regions="true_branch false_branch"),
    op("stablehlo.imag", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:imag"),
    op("stablehlo.infeed", "1 * 0", "infeed_config:StrAttr layout:ArrayAttr", rule=NO_RULE),
    op("stablehlo.iota", "0 1 0", "iota_dimension!:NonNegativeI64Attr", syntax=(_parse_iota, _print_iota), traits="NoMemoryEffect", rule=NO_RULE, evaluator="movement:iota"),
    op("stablehlo.is_finite", "1 1 0", syntax=FUNCTIONAL, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:is_finite"),
    op("stablehlo.log", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:log"),
    op("stablehlo.log_plus_one", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:log_plus_one"),
    op("stablehlo.logistic", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:logistic"),
    op("stablehlo.map", "* 1 1", "dimensions!:DenseI64ArrayAttr", traits="RecursiveMemoryEffects", evaluator="control:map_", terminator="stablehlo.return", regions="computation"),
    op("stablehlo.maximum", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:maximum"),
    op("stablehlo.minimum", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:minimum"),
    op("stablehlo.multiply", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:multiply"),
    op("stablehlo.negate", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:negate"),
    op("stablehlo.not", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:not_", operand_type="PredOrIntTensor"),
    op("stablehlo.optimization_barrier", "* * 0", syntax=(_parse_barrier_op, _print_barrier_op), traits="NoMemoryEffect ShardableDataFlowOpInterface", evaluator="control:identity"),
    op("stablehlo.or", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:or_", operand_type="PredOrIntTensor"),
    op("stablehlo.outfeed", "1+ 1 0", "outfeed_config:StrAttr", rule=NO_RULE),
    op("stablehlo.pad", "2 1 0", "edge_padding_low!:DenseI64ArrayAttr edge_padding_high!:DenseI64ArrayAttr interior_padding!:DenseI64ArrayAttr", syntax=_keyword_op((("low", "edge_padding_low", "i64s"), ("high", "edge_padding_high", "i64s"), ("interior", "interior_padding", "i64s"))), traits="NoMemoryEffect", rule="shape:pad", evaluator="movement:pad"),
    op("stablehlo.partition_id", "0 1 0", syntax=(_parse_result_only, _print_result_only), traits="NoMemoryEffect", rule=NO_RULE, evaluator="collectives:partition_id"),
    op("stablehlo.popcnt", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:popcnt", operand_type="IntTensor"),
    op("stablehlo.power", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:power"),
    op("stablehlo.real", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:real"),
    op("stablehlo.real_dynamic_slice", "4 1 0", syntax=FUNCTIONAL, traits="NoMemoryEffect"),
    op("stablehlo.recv", "1 * 0", "channel_handle!:ChannelHandle is_host_transfer:BoolAttr source_target_pairs:I64ElementsAttr", rule=NO_RULE),
    op("stablehlo.reduce", "* * 1", "dimensions!:DenseI64ArrayAttr", syntax=(_parse_reduce, _print_reduce), traits="RecursiveMemoryEffects", rule="reduction:reduce", evaluator="reduction:reduce", operand_groups=2, terminator="stablehlo.return", regions="body"),
    op("stablehlo.reduce_precision", "1 1 0", "exponent_bits!:PositiveI32Attr mantissa_bits!:NonNegativeI32Attr", syntax=(_parse_reduce_precision, _print_reduce_precision), traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:reduce_precision"),
    op("stablehlo.reduce_scatter", "1 1 1", "scatter_dimension!:NonNegativeI64Attr replica_groups!:ReplicaGroups channel_handle:ChannelHandle use_global_device_ids:UnitAttr", rule="collectives:reduce_scatter", evaluator="collectives:reduce_scatter", verify=partial(_verify_replica_groups, True, True, None), regions="computation"),
    op("stablehlo.reduce_window", "* * 1", "window_dimensions!:DenseI64ArrayAttr window_strides:DenseI64ArrayAttr base_dilations:DenseI64ArrayAttr window_dilations:DenseI64ArrayAttr padding:I64ElementsAttr", traits="RecursiveMemoryEffects", rule="reduction:reduce_window", evaluator="reduction:reduce_window", operand_groups=2, terminator="stablehlo.return", regions="body"),
    op("stablehlo.remainder", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:remainder"),
    op("stablehlo.replica_id", "0 1 0", syntax=(_parse_result_only, _print_result_only), traits="NoMemoryEffect", evaluator="collectives:replica_id"),
    op("stablehlo.reshape", "1 1 0", syntax=FUNCTIONAL, traits="NoMemoryEffect", rule="shape:reshape", evaluator="movement:reshape"),
    op("stablehlo.return", "* 0 0", syntax=(parse_return, print_return), traits="NoMemoryEffect Terminator"),
    op("stablehlo.reverse", "1 1 0", "dimensions!:DenseI64ArrayAttr", syntax=_keyword_op((("dims", "dimensions", "i64s"),), functional=False), traits="NoMemoryEffect", rule="shape:reverse", evaluator="movement:reverse"),
    op("stablehlo.rng", "3 1 0", "rng_distribution!:RngDistribution", syntax=_keyword_op((("distribution", "rng_distribution", "rng_distribution"),))),
    op("stablehlo.rng_bit_generator", "1 2 0", "rng_algorithm!:RngAlgorithm", syntax=_keyword_op((("algorithm", "rng_algorithm", "rng_algorithm"),)), traits="NoMemoryEffect", rule="linalg:rng_bit_generator", evaluator="rng:rng_bit_generator", result_names=_rng_results),
    op("stablehlo.round_nearest_afz", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:round_nearest_afz"),
    op("stablehlo.round_nearest_even", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:round_nearest_even"),
    op("stablehlo.rsqrt", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:rsqrt"),
    op("stablehlo.scatter", "1+ * 1", "scatter_dimension_numbers!:ScatterDimensionNumbers indices_are_sorted:BoolAttr unique_indices:BoolAttr", traits="RecursiveMemoryEffects", rule="gather_scatter:scatter", evaluator="movement:scatter", operand_groups=2, regions="update_computation"),
    op("stablehlo.select", "3 1 0", syntax=(_parse_select, _print_select), traits="BroadcastingElementwise NoMemoryEffect", rule="elementwise:select", evaluator="elementwise:select"),
    op("stablehlo.select_and_scatter", "3 1 2", "window_dimensions:DenseI64ArrayAttr window_strides:DenseI64ArrayAttr padding:I64ElementsAttr", traits="RecursiveMemoryEffects", rule="reduction:select_and_scatter", evaluator="reduction:select_and_scatter", regions="select scatter"),
    op("stablehlo.send", "1+ 1 0", "channel_handle!:ChannelHandle is_host_transfer:BoolAttr source_target_pairs:I64ElementsAttr", rule=NO_RULE),
    op("stablehlo.set_dimension_size", "2 1 0", "dimension!:NonNegativeI64Attr", syntax=_keyword_op((("dim", "dimension", "i64"),)), traits="NoMemoryEffect"),
    op("stablehlo.shift_left", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:shift_left", operand_type="IntTensor"),
    op("stablehlo.shift_right_arithmetic", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:shift_right_arithmetic", operand_type="IntTensor"),
    op("stablehlo.shift_right_logical", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:shift_right_logical", operand_type="IntTensor"),
    op("stablehlo.sign", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:sign"),
    op("stablehlo.sine", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:sine"),
    op("stablehlo.slice", "1 1 0", "start_indices!:DenseI64ArrayAttr limit_indices!:DenseI64ArrayAttr strides!:DenseI64ArrayAttr", syntax=(_parse_slice, _print_slice), traits="NoMemoryEffect", rule="shape:slice_", evaluator="movement:slice"),
    op("stablehlo.sort", "1+ 1+ 1", "dimension:I64Attr is_stable:BoolAttr", traits="RecursiveMemoryEffects", rule="reduction:sort", evaluator="reduction:sort", regions="comparator"),
    op("stablehlo.sqrt", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:sqrt"),
    op("stablehlo.subtract", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:subtract"),
    op("stablehlo.tan", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:tan"),
    op("stablehlo.tanh", "1 1 0", "result_accuracy:ResultAccuracy", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:tanh"),
    op("stablehlo.torch_index_select", "2 1 0", "dim!:I64Attr batch_dims!:I64Attr", traits="NoMemoryEffect"),
    op("stablehlo.transpose", "1 1 0", "permutation!:DenseI64ArrayAttr", syntax=_keyword_op((("dims", "permutation", "i64s"),)), traits="NoMemoryEffect", rule="shape:transpose", evaluator="movement:transpose"),
    op("stablehlo.triangular_solve", "2 1 0", "left_side!:BoolAttr lower!:BoolAttr unit_diagonal!:BoolAttr transpose_a!:Transpose", traits="NoMemoryEffect", rule="linalg:triangular_solve", evaluator="custom_call:triangular_solve"),
    op("stablehlo.tuple", "* 1 0", syntax=(_parse_tuple, _print_tuple), traits="NoMemoryEffect", evaluator="control:tuple_"),
    op("stablehlo.unary_einsum", "1 1 0", "einsum_config!:StrAttr", syntax=_keyword_op((("config", "einsum_config", "str"),)), traits="NoMemoryEffect"),
    op("stablehlo.uniform_dequantize", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW),
    op("stablehlo.uniform_quantize", "1 1 0", syntax=OPERANDS_TYPE, traits=_EW),
    op("stablehlo.while", "* * 2", syntax=(_parse_while, _print_while), traits="RecursiveMemoryEffects ShardableDataFlowOpInterface", evaluator="control:while_", block_arg_name="iterArg", terminator="stablehlo.return", regions="cond body"),
    op("stablehlo.xor", "2 1 0", syntax=OPERANDS_TYPE, traits=_EW, rule="elementwise:pointwise", evaluator="elementwise:xor", operand_type="PredOrIntTensor"),
)
"""StableHLO's ops as `StablehloOps.td` declares them in jaxlib 0.10.2 (counts, attributes and
constraints probed with its verifier). Traits: `Pure` and `NoMemoryEffect` ops are both
`NoMemoryEffect`; `clamp` and `select` are `BroadcastingElementwise`, not `Elementwise`. Rules are
Shardy's registry (`op_sharding_rule_registry.cc`): `buildPointwise` ops are its explicit list,
not the `Elementwise` trait; `while`, `case` and `optimization_barrier` get none as
`ShardableDataFlowOpInterface` ops."""
