"""The `stablehlo` dialect: every op JAX emits, with the pretty forms jaxlib 0.10.2 prints."""

from __future__ import annotations

import re

from sdy_passes.attributes import (
    I64, ArrayAttr, DenseArrayAttr, IntegerAttr, OpaqueAttr, print_attr_dict, print_function_type,
)
from sdy_passes.dialects._base import (
    OpDef, add_operands, attr_dict_for, opt_dict, parse_constant, parse_return, print_constant,
    print_return, print_type_signature, set_results,
)
from sdy_passes.dialects.stablehlo_attributes import (
    DotDimensionNumbers, EnumAttr, parse_int_list,
)


_NAME = re.compile(r"%([A-Za-z0-9_$.\-]+)")


def _is_enum(attr, kind: str) -> bool:
    return isinstance(attr, EnumAttr) and attr.kind == kind


ELEMENTWISE = (
    "abs add and atan2 cbrt ceil clamp convert cosine count_leading_zeros divide exponential "
    "exponential_minus_one floor imag is_finite log log_plus_one logistic maximum minimum multiply "
    "negate not or popcnt power real remainder round_nearest_afz round_nearest_even rsqrt complex "
    "shift_left shift_right_arithmetic shift_right_logical sign sine sqrt subtract tan tanh xor "
    "reshape bitcast_convert").split()


_FUNCTIONAL = frozenset(f"stablehlo.{n}" for n in "reshape convert bitcast_convert real imag".split())
"""Element-wise ops whose result type may differ from the operand's: always `(A) -> R`."""

_ARITY = {**dict.fromkeys(("add and atan2 divide maximum minimum multiply or power remainder shift_left "
                           "shift_right_arithmetic shift_right_logical subtract xor").split(), 2),
          "clamp": 3, "complex": 2}


def _parse_elementwise(p, op, n):
    refs = [p.parse_value_ref()]
    for _ in range(_ARITY.get(op.name.removeprefix("stablehlo."), 1) - 1):
        p.expect(",")
        refs.append(p.parse_value_ref())
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.parse_trailing_type_signature(op, refs, 1)


def _print_elementwise(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or op.regions or len(op.results) != 1 or not op.operands:
        return False
    pr.out.append(f"{op.name} {pr.operands(op.operands)}{opt_dict(attrs)}")
    print_type_signature(pr, op, functional=op.name in _FUNCTIONAL)
    return True


def _parse_compare(p, op, n):
    op.properties["comparison_direction"] = EnumAttr.parse_value(p, "comparison_direction")
    p.expect(",")
    refs = [p.parse_value_ref()]
    p.expect(",")
    refs.append(p.parse_value_ref())
    if p.parse_optional(","):
        op.properties["compare_type"] = EnumAttr.parse_value(p, "comparison_type")
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.parse_trailing_type_signature(op, refs, 1)


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
    print_type_signature(pr, op, functional=True)
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


def _parse_dims_op(key: str, word: str):
    def parse(p, op, n):
        refs = [p.parse_value_ref()]
        p.expect(",")
        p.expect_keyword(word)
        p.expect("=")
        op.properties[key] = DenseArrayAttr(I64, parse_int_list(p))
        p.set_attrs(op, p.parse_optional_attr_dict())
        p.parse_trailing_type_signature(op, refs, 1)

    def print_(pr, op, indent):
        attrs = attr_dict_for(op, (key,))
        dims = _i64_array(op.properties.get(key))
        if attrs is None or dims is None or len(op.operands) != 1 or len(op.results) != 1:
            return False
        pr.out.append(f"{op.name} {pr.operands(op.operands)}, {word} = {_ints(dims)}{opt_dict(attrs)}")
        print_type_signature(pr, op, functional=True)
        return True
    return parse, print_


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
    p.parse_trailing_type_signature(op, refs, 1)


def _print_slice(pr, op, indent):
    keys = ("start_indices", "limit_indices", "strides")
    attrs = attr_dict_for(op, keys)
    arrays = [_i64_array(op.properties.get(k)) for k in keys]
    if attrs is None or None in arrays or len({len(a) for a in arrays}) != 1 or len(op.operands) != 1:
        return False
    dims = ", ".join(f"{s}:{l}" + (f":{st}" if st != 1 else "") for s, l, st in zip(*arrays))
    pr.out.append(f"stablehlo.slice {pr.value_name(op.operands[0])} [{dims}]{opt_dict(attrs)}")
    print_type_signature(pr, op, functional=True)
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
    p.parse_trailing_type_signature(op, refs, 1)


def _print_dot(pr, op, indent):
    attrs = attr_dict_for(op, ("precision_config",))
    prec = _precision_text(op)
    if attrs is None or prec is None or len(op.operands) != 2 or len(op.results) != 1:
        return False
    pr.out.append(f"stablehlo.dot {pr.operands(op.operands)}{prec}{opt_dict(attrs)}")
    print_type_signature(pr, op, functional=True)
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
    p.parse_trailing_type_signature(op, refs, 1)


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
    print_type_signature(pr, op, functional=True)
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
        if len(types) > 2:
            raise p.error(f"expected 1 or 2 types for select, found {len(types)}", pos)
        pred, t = (types[0], types[-1])
        ins, outs = (pred, t, t), (t,)
    add_operands(op, p.resolve_all(refs, ins, pos))
    set_results(op, outs)


def _print_select(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or op.regions or len(op.results) != 1 or len(op.operands) != 3:
        return False
    pred, a, b = op.operand_types
    pr.out.append(f"stablehlo.select {pr.operands(op.operands)}{opt_dict(attrs)} : ")
    if a == b == op.result.type:
        pr.out.append(str(a) if pred == a else f"{pred}, {a}")
    else:
        pr.out.append(print_function_type(op.operand_types, op.result_types))
    return True


def _props(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_COLLECTIVE = "replica_groups channel_handle use_global_device_ids"
_PROPERTIES = {
    "iota": "iota_dimension", "dynamic_iota": "iota_dimension",
    "broadcast_in_dim": "broadcast_dimensions",
    "dynamic_broadcast_in_dim": ("broadcast_dimensions known_expanding_dimensions "
                                 "known_nonexpanding_dimensions"),
    "broadcast": "broadcast_sizes",
    "compare": "comparison_direction compare_type",
    "concatenate": "dimension",
    "convolution": ("window_strides padding lhs_dilation rhs_dilation window_reversal "
                    "dimension_numbers feature_group_count batch_group_count precision_config"),
    "dot": "precision_config",
    "dot_general": "dot_dimension_numbers precision_config algorithm",
    "slice": "start_indices limit_indices strides",
    "dynamic_slice": "slice_sizes",
    "transpose": "permutation",
    "reduce": "dimensions",
    "reduce_window": "window_dimensions window_strides base_dilations window_dilations padding",
    "select_and_scatter": "window_dimensions window_strides padding",
    "sort": "dimension is_stable",
    "scatter": "scatter_dimension_numbers indices_are_sorted unique_indices",
    "gather": "dimension_numbers slice_sizes indices_are_sorted",
    "dynamic_gather": "dimension_numbers indices_are_sorted",
    "pad": "edge_padding_low edge_padding_high interior_padding",
    "reverse": "dimensions",
    "reduce_precision": "exponent_bits mantissa_bits",
    "custom_call": ("call_target_name has_side_effect backend_config api_version "
                    "called_computations operand_layouts result_layouts output_operand_aliases"),
    "all_reduce": _COLLECTIVE,
    "all_gather": "all_gather_dim " + _COLLECTIVE,
    "reduce_scatter": "scatter_dimension " + _COLLECTIVE,
    "all_to_all": "split_dimension concat_dimension split_count replica_groups channel_handle",
    "collective_permute": "source_target_pairs channel_handle",
    "collective_broadcast": "replica_groups channel_handle",
    "rng": "rng_distribution",
    "rng_bit_generator": "rng_algorithm",
    "fft": "fft_type fft_length",
    "get_tuple_element": "index",
    "composite": "name composite_attributes decomposition version",
    "infeed": "infeed_config layout",
    "outfeed": "outfeed_config",
    "send": "channel_handle is_host_transfer source_target_pairs",
    "recv": "channel_handle is_host_transfer source_target_pairs",
    "batch_norm_grad": "epsilon feature_index",
    "batch_norm_inference": "epsilon feature_index",
    "batch_norm_training": "epsilon feature_index",
    "triangular_solve": "left_side lower unit_diagonal transpose_a",
    "cholesky": "lower",
    "get_dimension_size": "dimension",
    "map": "dimensions",
    "einsum": "einsum_config",
    "torch_index_select": "dim batch_dims",
    "constant": "value",
}
_OTHER = ("dynamic_update_slice while case if tuple after_all create_token dynamic_reshape "
          "real_dynamic_slice dynamic_pad dynamic_conv uniform_quantize uniform_dequantize "
          "partition_id replica_id optimization_barrier return reduce_precision").split()
_REGIONS = {"reduce": 1, "reduce_window": 1, "select_and_scatter": 2, "sort": 1, "scatter": 1,
            "while": 2, "if": 2, "all_reduce": 1, "reduce_scatter": 1, "map": 1}
_HOOKS = {
    **{n: (_parse_elementwise, _print_elementwise) for n in ELEMENTWISE},
    "select": (_parse_select, _print_select),
    "compare": (_parse_compare, _print_compare),
    "iota": (_parse_iota, _print_iota),
    "broadcast_in_dim": _parse_dims_op("broadcast_dimensions", "dims"),
    "transpose": _parse_dims_op("permutation", "dims"),
    "slice": (_parse_slice, _print_slice),
    "dot": (_parse_dot, _print_dot),
    "dot_general": (_parse_dot_general, _print_dot_general),
    "optimization_barrier": (_parse_barrier_op, _print_barrier_op),
    "while": (_parse_while, _print_while),
    "constant": (parse_constant, print_constant),
    "return": (parse_return, print_return),
}
_TRAITS = {
    "while": {"ShardableDataFlowOpInterface"}, "case": {"ShardableDataFlowOpInterface"},
    "optimization_barrier": {"ShardableDataFlowOpInterface"},
    "return": {"Terminator"}, "constant": {"ConstantLike"},
    **{n: {"Elementwise"} for n in ELEMENTWISE if n not in ("reshape", "bitcast_convert")},
}


def _opdef(name: str) -> OpDef:
    parse, print_ = _HOOKS.get(name, (None, None))
    return OpDef(f"stablehlo.{name}", _props(_PROPERTIES.get(name, "")),
                 num_regions=_REGIONS.get(name), parse=parse, print=print_,
                 traits=frozenset(_TRAITS.get(name, ())))


OPS = tuple(_opdef(n) for n in dict.fromkeys([*ELEMENTWISE, "select", *_PROPERTIES, *_OTHER]))
