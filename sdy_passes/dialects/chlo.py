"""The `chlo` dialect (client HLO): the ops JAX emits, with their pretty forms."""

from __future__ import annotations

from sdy_passes.attributes import I64, IntegerAttr, print_function_type
from sdy_passes.dialects._base import add_operands, attr_dict_for, op, opt_dict, set_results

UNARY = ("acos acosh asin asinh atan atanh bessel_i1e conj cosh digamma erf erf_inv erfc "
         "is_inf is_neg_inf is_pos_inf lgamma sinh square tan").split()
BINARY = ("next_after polygamma zeta broadcast_add broadcast_atan2 broadcast_divide "
          "broadcast_maximum broadcast_minimum broadcast_multiply broadcast_next_after "
          "broadcast_polygamma broadcast_power broadcast_remainder broadcast_shift_left "
          "broadcast_shift_right_arithmetic broadcast_shift_right_logical broadcast_subtract "
          "broadcast_zeta broadcast_and broadcast_or broadcast_xor broadcast_complex").split()


def _parse_elementwise(p, op, n):
    """`chlo.erf %x : T -> R`, `chlo.zeta %a, %b : A, B -> R` (operands' types, then results)."""
    refs = p.parse_optional_value_ref_list()
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    ins = p.parse_type_list()
    p.expect("->")
    add_operands(op, p.resolve_all(refs, ins, pos))
    set_results(op, p.parse_result_types())


def _print_elementwise(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or op.regions or len(op.results) != 1 or not op.operands:
        return False
    pr.out.append(f"{op.name} {pr.operands(op.operands)}{opt_dict(attrs)} : "
                  f"{', '.join(map(str, op.operand_types))} -> {op.result.type}")
    return True


def _parse_top_k(p, op, n):
    p.expect("(")
    ref = p.parse_value_ref()
    p.expect(",")
    p.expect_keyword("k")
    p.expect("=")
    op.properties["k"] = IntegerAttr(p.parse_int("k"), I64)
    p.expect(")")
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    t = p.parse_type()
    p.expect("->")
    add_operands(op, p.resolve_all([ref], [t], pos))
    set_results(op, p.parse_result_types())


def _print_top_k(pr, op, indent):
    attrs = attr_dict_for(op, ("k",))
    k = op.properties.get("k")
    if (attrs is None or not isinstance(k, IntegerAttr) or k.type != I64 or len(op.operands) != 1
            or len(op.results) != 2 or op.regions):
        return False
    pr.out.append(f"chlo.top_k({pr.value_name(op.operands[0])}, k = {k.value}){opt_dict(attrs)} : "
                  f"{op.operands[0].type} -> "
                  + print_function_type((), op.result_types).removeprefix("() -> "))
    return True


_ELEMENTWISE = (_parse_elementwise, _print_elementwise)
OPS = (
    *(op(f"chlo.{n}", "1 1 0", syntax=_ELEMENTWISE, traits="Elementwise NoMemoryEffect", evaluator=f"chlo:{n}")
      for n in UNARY),
    *(op(f"chlo.{n}", "2 1 0", "broadcast_dimensions:DenseI64ArrayAttr", syntax=_ELEMENTWISE,
         traits="BroadcastingElementwise NoMemoryEffect", evaluator=f"chlo:{n}")
      for n in BINARY if n.startswith("broadcast_")),
    *(op(f"chlo.{n}", "2 1 0", syntax=_ELEMENTWISE, traits="NoMemoryEffect", evaluator=f"chlo:{n}")
      for n in BINARY if not n.startswith("broadcast_")),
    op("chlo.broadcast_compare", "2 1 0", "broadcast_dimensions:DenseI64ArrayAttr comparison_direction!:ChloComparisonDirection "
       "compare_type:ChloComparisonType",
       traits="BroadcastingElementwise NoMemoryEffect", evaluator="chlo:broadcast_compare"),
    op("chlo.top_k", "1 2 0", "k!:I64Attr", syntax=(_parse_top_k, _print_top_k), traits="NoMemoryEffect",
       result_names=lambda op: ("values", "indices"), evaluator="chlo:top_k"),
    op("chlo.constant", "0 1 0", "value!:ElementsAttr", traits="ConstantLike NoMemoryEffect", evaluator="movement:constant"),
    op("chlo.constant_like", "1 1 0", "value!", traits="BroadcastingElementwise NoMemoryEffect",
       evaluator="chlo:constant_like"),
    # Generic form only.
    op("chlo.ragged_dot", "3 1 0", "ragged_dot_dimension_numbers! precision_config", traits="NoMemoryEffect"),
    op("chlo.broadcast_select", "3 1 0", traits="BroadcastingElementwise NoMemoryEffect"),
    op("chlo.mulhi", "2 1 0", traits="NoMemoryEffect"),
    op("chlo.scan", "* * 1", "dimension!:NonNegativeI64Attr scan_dim_size:NonNegativeI64Attr is_reverse:BoolAttr "
       "is_associative:BoolAttr", segments=(2, 2), regions="body"),
    op("chlo._asin_acos_kernel", "1 1 0", traits="NoMemoryEffect"),
)
"""Every chlo op here is `Pure` (`ChloOps.td`); the `broadcast_*` ops are `BroadcastingElementwise`."""
