"""The `chlo` dialect (client HLO): the ops JAX emits, with their pretty forms."""

from __future__ import annotations

from sdy_passes.attributes import I64, IntegerAttr, print_function_type
from sdy_passes.dialects._base import EVAL, OpDef, add_operands, attr_dict_for, opt_dict, set_results

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


_BROADCAST_PROPS = ("broadcast_dimensions",)
_PURE = frozenset({"NoMemoryEffect"})
"""Every chlo op here is `Pure` (`ChloOps.td`); the `broadcast_*` ops are `BroadcastingElementwise`."""
OPS = (
    *(OpDef(f"chlo.{n}", num_operands=1, num_results=1, parse=_parse_elementwise,
            print=_print_elementwise, traits=_PURE | {"Elementwise"}, evaluator=f"{EVAL}chlo:{n}") for n in UNARY),
    *(OpDef(f"chlo.{n}", _BROADCAST_PROPS if n.startswith("broadcast_") else (), num_operands=2,
            num_results=1, parse=_parse_elementwise, print=_print_elementwise,
            traits=_PURE | {"BroadcastingElementwise"} if n.startswith("broadcast_") else _PURE,
            evaluator=f"{EVAL}chlo:{n}")
      for n in BINARY),
    OpDef("chlo.broadcast_compare", ("broadcast_dimensions", "comparison_direction", "compare_type"),
          traits=_PURE | {"BroadcastingElementwise"}, evaluator=EVAL + "chlo:broadcast_compare"),
    OpDef("chlo.top_k", ("k",), ("k",), 1, 2, parse=_parse_top_k, print=_print_top_k,
          result_names=lambda op: ("values", "indices"), traits=_PURE, evaluator=EVAL + "chlo:top_k"),
    OpDef("chlo.constant", ("value",), ("value",), 0, 1, traits=_PURE | {"ConstantLike"},
          evaluator=EVAL + "movement:constant"),
    OpDef("chlo.constant_like", ("value",), ("value",), 1, 1,
          traits=_PURE | {"BroadcastingElementwise"}, evaluator=EVAL + "chlo:constant_like"),
    OpDef("chlo.ragged_dot", ("ragged_dot_dimension_numbers", "precision_config"), traits=_PURE),
)
