"""Shardy's eight collective ops (`sdy.all_gather`, ...): pretty syntax and verifiers as jaxlib
0.10.2 has them (spec collectives.md §1-§2; Shardy `ir/ops.td`, `ir/verifiers.cc`).

Every op reads `PARAMS %tensor out_sharding=<...> {attrs} : type` (`collective_permute`
without `PARAMS`); the parameters are the frozen values of `sharding.syntax`. The verifier is
`verifyCollectiveOp` then the op's symbol-use checks.
"""

from __future__ import annotations

from functools import partial

from sharding import AxisRef, Mesh, TensorSharding
from sharding import ShardingError
from sharding.axes import can_merge, is_sorted, overlaps, sort_and_merge
from sharding.reshard import gather_along_dim, slice_along_dim
from sharding.syntax import AllToAllParamList, AxisRefList, ListOfAxisRefLists, parse_collective_params_body

from sdy_passes import _sdy_syntax as sdy_syntax
from sdy_passes.common._value_shardings import get_sharding
from sdy_passes.dialects._base import OpDef, VerifyContext, add_operands, attr_dict_for, fail, op, opt_dict, set_results
from sdy_passes.dialects.sdy import check_sharding
from sdy_passes.ir import Operation

def _parse(key, kind, p, op, n):
    if key is not None:  # (from the end of the op name: MLIR reports a wrong first token there)
        op.properties[key] = p.parse_sdy(lambda text, at: parse_collective_params_body(text, kind, at), p.pos)
    ref = p.parse_value_ref()
    p.expect_keyword("out_sharding")
    p.expect("=")
    op.properties["out_sharding"] = p.parse_sdy(sdy_syntax.parse_sharding_body, p.pos)
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    t = p.parse_type()
    add_operands(op, p.resolve_all([ref], [t], pos))
    set_results(op, [t])


def _print(key, cls, pr, op, indent):
    consumed = ("out_sharding",) if key is None else (key, "out_sharding")
    attrs = attr_dict_for(op, consumed)
    out = op.properties.get("out_sharding")
    params = op.properties.get(key) if key else None
    if (attrs is None or not isinstance(out, TensorSharding) or (key and not isinstance(params, cls))
            or len(op.operands) != 1 or len(op.results) != 1 or op.regions
            or op.result.type != op.operands[0].type):
        return False
    head = op.name if key is None else f"{op.name} {params.body()}"
    pr.out.append(f"{head} {pr.value_name(op.operands[0])} out_sharding={sdy_syntax.print_body(out)}"
                  f"{opt_dict(attrs)} : {op.result.type}")
    return True


# -- verifier ----------------------------------------------------------------------------------


def _mesh(op: Operation, s: TensorSharding, ctx: VerifyContext) -> Mesh:
    return s.mesh_or_ref if isinstance(s.mesh_or_ref, Mesh) else ctx.meshes[s.mesh_or_ref]


def _list(refs) -> str:
    return "[" + ", ".join(map(str, refs)) + "]"


class _AxisLists:
    """`verifyAxisRefList` over several lists of one op (one set of seen refs)."""

    def __init__(self, op: Operation, mesh: Mesh):
        self.op, self.names, self.seen = op, {a.name for a in mesh.axes}, set()

    def check(self, refs) -> None:
        prev = None
        for ref in refs:
            if ref.name not in self.names:
                fail(self.op, f'unknown axis name: "{ref.name}"')
            if ref in self.seen:
                fail(self.op, f"duplicate axis ref: {ref}")
            self.seen.add(ref)
            if ref.sub_axis_info is not None and prev is not None and can_merge(prev, ref):
                fail(self.op, f"two consecutive sub-axes can be merged: {prev}, {ref}")
            prev = ref


def _gather(op, dim_axes, axes, d, mesh, what) -> list[AxisRef]:
    try:
        return gather_along_dim(dim_axes, axes, mesh)
    except ShardingError as e:
        fail(op, f"can't apply {what} axis {e} to operand sharding on dimension {d}")


def _expect(op, expected, result: TensorSharding, d: int) -> None:
    if tuple(expected) != result.dim_shardings[d].axes:
        fail(op, f"result sharding doesn't match expected sharding {_list(expected)} on dimension {d}")


def _verify(key, cls, verify_params, missing_input_ok: bool, op: Operation, ctx: VerifyContext) -> None:
    out = op.properties.get("out_sharding")
    if not isinstance(out, TensorSharding):
        fail(op, "attribute 'out_sharding' failed to satisfy constraint: Tensor sharding")
    if key is not None and not isinstance(op.properties.get(key), cls):
        fail(op, f"requires attribute '{key}'")

    operand = get_sharding(op.operands[0])
    # verifyCollectiveOp
    if operand is None and not missing_input_ok:
        fail(op, "collective on operand without sharding")
    check_sharding(op, out, op.result.type, ctx.meshes, "")
    mesh = _mesh(op, out, ctx)
    if operand is not None:
        operand_mesh = _mesh(op, operand, ctx)
        if op.name != "sdy.collective_permute" and operand_mesh != mesh:
            fail(op, "result mesh does not match operand mesh")
        if operand.rank != out.rank:
            fail(op, f"result sharding has rank {out.rank} but operand sharding has rank {operand.rank}")
    else:
        operand = TensorSharding.replicated(out.mesh_or_ref, out.rank, is_closed=False)
    verify_params(op, op.properties.get(key) if key else None, operand, out, mesh, ctx)


def _per_dim(what):
    """`verifyCollectiveWithAxesPerDim` with gathering (`what`) or slicing (`None`)."""

    def verify(op, params: ListOfAxisRefLists, operand, out, mesh, ctx):
        lists = _AxisLists(op, mesh)
        for axes in params.lists:
            lists.check(axes)
        if out.rank != len(params.lists):
            fail(op, f"result sharding has rank {out.rank} but collective axes has rank {len(params.lists)}")
        for d, (dim, axes) in enumerate(zip(operand.dim_shardings, params.lists)):
            expected = _gather(op, dim.axes, axes, d, mesh, what) if what else slice_along_dim(dim.axes, axes, mesh)
            _expect(op, expected, out, d)
        if op.name == "sdy.sharded_to_unreduced":
            expected = sort_and_merge([*operand.unreduced_axes, *(a for axes in params.lists for a in axes)], mesh)
            if not is_sorted(out.unreduced_axes, mesh):
                fail(op, "unreduced axes are not ordered w.r.t. mesh")
            if tuple(expected) != out.unreduced_axes:
                fail(op, "out_unreduced_axes should be in_unreduced_axes + sharded_to_unreduced_axes")

    return verify


def _verify_all_to_all(op, params: AllToAllParamList, operand, out, mesh, ctx):
    if not params.params:
        fail(op, "parameter list is empty")
    rank = out.rank
    seen: set[int] = set()
    prev = -1
    lists = _AxisLists(op, mesh)
    for p in params.params:
        lists.check(p.axes)
        for dim, name in ((p.src_dim, "source"), (p.tgt_dim, "target")):
            if not 0 <= dim < rank:
                fail(op, f"{name} dimension {dim} is out of range [0, {rank})")
        for dim in (p.src_dim, p.tgt_dim):
            if dim in seen:
                fail(op, f"overlapping source/target dimensions in all-to-all params: {dim}")
            seen.add(dim)
        if prev >= p.src_dim:
            fail(op, f"source dimensions are not sorted in ascending order: {p.src_dim} appears after {prev}")
        prev = p.src_dim
    for p in params.params:
        _expect(op, _gather(op, operand.dim_shardings[p.src_dim].axes, p.axes, p.src_dim, mesh, "all-to-all"),
                out, p.src_dim)
        _expect(op, slice_along_dim(operand.dim_shardings[p.tgt_dim].axes, p.axes, mesh), out, p.tgt_dim)
    for d, dim in enumerate(operand.dim_shardings):
        if d not in seen:
            _expect(op, dim.axes, out, d)


def _verify_permute(op, params, operand, out, mesh, ctx):
    operand_mesh = _mesh(op, operand, ctx)
    if mesh.axes != operand_mesh.axes:
        fail(op, "result mesh has different axes than operand mesh")
    if operand.mesh_or_ref != out.mesh_or_ref and mesh.device_ids == operand_mesh.device_ids:
        fail(op, "result mesh name is different but same device ids as operand")
    for d, (a, b) in enumerate(zip(operand.dim_shardings, out.dim_shardings)):
        if a.axes != b.axes and a.sharded_size(mesh) != b.sharded_size(mesh):
            fail(op, f"sharded size of result doesn't match operand on dimension {d}: "
                     f"{b.sharded_size(mesh)} != {a.sharded_size(mesh)}")


def _sorted_list(op, refs, mesh, what: str) -> None:
    if not is_sorted(refs, mesh):
        fail(op, f"{what} axes are not ordered w.r.t. mesh")
    _AxisLists(op, mesh).check(refs)


def _verify_all_reduce(op, params: AxisRefList, operand, out, mesh, ctx):
    same = (operand.is_fully_replicated and out.is_fully_replicated) or (
        operand.mesh_or_ref == out.mesh_or_ref and operand.rank == out.rank
        and all(a.axes == b.axes for a, b in zip(operand.dim_shardings, out.dim_shardings)))
    if not same:
        fail(op, "operand and result shardings are not equivalent")
    _sorted_list(op, params.axes, mesh, "reduction")
    for ref in params.axes:
        if any(overlaps(a, ref) for d in operand.dim_shardings for a in d.axes) or \
                any(overlaps(a, ref) for a in operand.replicated_axes):
            fail(op, f"reduction axis {ref} overlaps with operand dimension sharding or replicated axes")
        if any(overlaps(a, ref) for a in out.unreduced_axes):
            fail(op, f"reduction axis {ref} overlaps with result unreduced axes")


def _verify_r2u(op, params: AxisRefList, operand, out, mesh, ctx):
    if operand.dim_shardings != out.dim_shardings:
        fail(op, "input and output must share the same dimension shardings")
    if not params.axes:
        fail(op, "r2u axes must not be empty")
    _sorted_list(op, params.axes, mesh, "r2u")
    for ref in params.axes:
        if any(overlaps(a, ref) for d in operand.dim_shardings for a in d.axes):
            fail(op, f"r2u axis {ref} overlaps with operand dimension sharding")
        if any(overlaps(a, ref) for a in operand.unreduced_axes):
            fail(op, f"r2u axis {ref} overlaps with operand unreduced axes")
    if tuple(sort_and_merge([*operand.unreduced_axes, *params.axes], mesh)) != out.unreduced_axes:
        fail(op, "out_unreduced_axes should be in_unreduced_axes + r2u_axes")


def _collective(name: str, params: tuple[str, type, str] | None, verify_params, *, missing_input_ok: bool = False,
                canonicalization: str | None = None) -> OpDef:
    """One collective: its parameter (property, value class, syntax kind; None for
    `collective_permute`), the op's own checks after `verifyCollectiveOp`, whether an operand
    without a sharding is allowed, and its canonicalization patterns."""
    key, cls, kind = params or (None, None, None)
    return op(name, "1 1 0", f"{key}! out_sharding!" if key else "out_sharding!",
              syntax=(partial(_parse, key, kind), partial(_print, key, cls)),
              verify=partial(_verify, key, cls, verify_params, missing_input_ok), traits="CollectiveOpInterface",
              canonicalization=canonicalization,
              evaluator="control:identity")  # the global value is unchanged (execute.md §4.9)


_LISTS = (ListOfAxisRefLists, "list_of_axis_ref_lists")
_AXES = (AxisRefList, "axis_ref_list")
_CANONICALIZATION = "sdy_passes.common.canonicalization:"
OPS = (
    _collective("sdy.all_gather", ("gathering_axes", *_LISTS), _per_dim("gathering"),
                canonicalization=_CANONICALIZATION + "ALL_GATHER"),
    _collective("sdy.all_slice", ("slicing_axes", *_LISTS), _per_dim(None), missing_input_ok=True,
                canonicalization=_CANONICALIZATION + "ALL_SLICE"),
    _collective("sdy.all_to_all", ("params", AllToAllParamList, "all_to_all_param_list"), _verify_all_to_all,
                canonicalization=_CANONICALIZATION + "ALL_TO_ALL"),
    _collective("sdy.collective_permute", None, _verify_permute,
                canonicalization=_CANONICALIZATION + "COLLECTIVE_PERMUTE"),
    _collective("sdy.all_reduce", ("reduction_axes", *_AXES), _verify_all_reduce, missing_input_ok=True,
                canonicalization=_CANONICALIZATION + "ALL_REDUCE"),
    _collective("sdy.reduce_scatter", ("reduce_scatter_axes", *_LISTS), _per_dim(None), missing_input_ok=True,
                canonicalization=_CANONICALIZATION + "REDUCE_SCATTER"),
    _collective("sdy.sharded_to_unreduced", ("axes", *_LISTS), _per_dim("shard-to-unreduce")),
    _collective("sdy.replicated_to_unreduced", ("axes", *_AXES), _verify_r2u),
)
"""Each collective declared once."""
