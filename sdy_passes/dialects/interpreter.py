"""The StableHLO reference interpreter's test ops, as Shardy's executable tests use them
(`interpreter.run_parallel` in generic form; `check.expect_eq %a, %b : T` and
`check.expect_almost_eq %a, %b [attr-dict] : T`, or their generic forms)."""

from __future__ import annotations

from sdy_passes.dialects._base import add_operands, attr_dict_for, op, opt_dict


def _parse_check(p, op, n):
    refs = [p.parse_value_ref()]
    p.expect(",")
    refs.append(p.parse_value_ref())
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    t = p.parse_type()
    add_operands(op, p.resolve_all(refs, (t, t), pos))


def _print_check(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or len(op.operands) != 2 or op.operands[0].type != op.operands[1].type:
        return False
    pr.out.append(f"{op.name} {pr.operands(op.operands)}{opt_dict(attrs)} : {op.operands[0].type}")
    return True


OPS = (
    op("interpreter.run_parallel", "* * 0", "programs! infeed", evaluator="parallel:run_parallel"),
    op("check.expect_eq", "2 0 0", syntax=(_parse_check, _print_check), evaluator="parallel:expect_eq"),
    op("check.expect_almost_eq", "2 0 0", "tolerance", syntax=(_parse_check, _print_check),
       evaluator="parallel:expect_almost_eq"),
)
