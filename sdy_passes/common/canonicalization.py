"""The canonicalization patterns of Shardy's ops (`ir/canonicalization.{td,cc}` as jaxlib 0.10.2
has them), one tuple per registering op, named by its `OpDef.canonicalization`; `canonicalize`
runs them with the greedy driver (`common.rewrite`).

Labels as Shardy registers them: `sdy-collective` (the collectives' patterns, the export
pipeline's last canonicalize step) and `sdy-reshard` (reshard of a single-use reshard). The
manual computation patterns and reshard CSE are unlabelled and not here (`canonicalize` refuses
to run without `enable-patterns`). DRR patterns (`Pat<...>`) have the benefit of the number of
ops they match; within one benefit, patterns keep MLIR's order (op names sorted, then the
order each op registers them).
"""

from __future__ import annotations

from sharding import DimensionSharding, TensorSharding
from sharding.axes import can_merge, merge, sort_and_merge
from sharding.reshard import equivalent_shardings
from sharding.syntax import AllToAllParamList, ListOfAxisRefLists

from sdy_passes.common._value_shardings import get_sharding, mesh_of
from sdy_passes.common.rewrite import Pattern, Rewriter
from sdy_passes.ir import Operation, OpResult

__all__ = ["COLLECTIVE", "RESHARD", "ALL_GATHER", "ALL_REDUCE", "ALL_SLICE", "ALL_TO_ALL",
           "COLLECTIVE_PERMUTE", "REDUCE_SCATTER", "RESHARD_PATTERNS"]

COLLECTIVE = "sdy-collective"
RESHARD = "sdy-reshard"


def _defining(op: Operation, name: str) -> Operation | None:
    value = op.operands[0]
    return value.owner if isinstance(value, OpResult) and value.owner.name == name else None


def _forward(op: Operation, rewriter: Rewriter) -> bool:
    rewriter.replace_op(op, [op.operands[0]])
    return True


# -- no-ops ---------------------------------------------------------------------------------------

def _empty_per_dim(key):
    def noop(op: Operation, rewriter: Rewriter) -> bool:
        return all(not axes for axes in op.properties[key].lists) and _forward(op, rewriter)
    noop.__name__ = f"noop_{key}"
    return noop


def all_reduce_noop(op: Operation, rewriter: Rewriter) -> bool:
    return not op.properties["reduction_axes"].axes and _forward(op, rewriter)


def collective_permute_noop(op: Operation, rewriter: Rewriter) -> bool:
    return equivalent_shardings(get_sharding(op.operands[0]), op.properties["out_sharding"]) and \
        _forward(op, rewriter)


# -- pairs ----------------------------------------------------------------------------------------

def all_slice_of_all_gather(op: Operation, rewriter: Rewriter) -> bool:
    gather = _defining(op, "sdy.all_gather")
    if gather is None or gather.properties["gathering_axes"] != op.properties["slicing_axes"]:
        return False
    rewriter.replace_op(op, [gather.operands[0]])
    return True


def all_reduce_of_replicated_to_unreduced(op: Operation, rewriter: Rewriter) -> bool:
    r2u = _defining(op, "sdy.replicated_to_unreduced")
    if r2u is None or r2u.properties["axes"] != op.properties["reduction_axes"]:
        return False
    rewriter.replace_op(op, [r2u.operands[0]])
    return True


def all_reduce_of_sharded_to_unreduced(op: Operation, rewriter: Rewriter) -> bool:
    s2u = _defining(op, "sdy.sharded_to_unreduced")
    if s2u is None:
        return False
    mesh = mesh_of(s2u.properties["out_sharding"], op)
    axes = sort_and_merge([a for dim in s2u.properties["axes"].lists for a in dim], mesh)
    if axes != op.properties["reduction_axes"].axes:
        return False
    gather = rewriter.create("sdy.all_gather", [s2u.operands[0]], op.result_types,
                             {"gathering_axes": s2u.properties["axes"],
                              "out_sharding": op.properties["out_sharding"]}, location=op.location)
    rewriter.replace_op(op, gather.results)
    return True


def all_to_all_no_use(op: Operation, rewriter: Rewriter) -> bool:
    return not op.has_uses() and _forward(op, rewriter)


def all_to_all_fusion(op: Operation, rewriter: Rewriter) -> bool:
    inner = _defining(op, "sdy.all_to_all")
    if inner is None or not inner.results[0].has_one_use:
        return False
    a, b = inner.properties["params"].params, op.properties["params"].params
    dims = [d for p in (*a, *b) for d in (p.src_dim, p.tgt_dim)]
    if len(set(dims)) != len(dims):
        return False
    params = AllToAllParamList(tuple(sorted((*a, *b), key=lambda p: p.src_dim)))
    fused = rewriter.create("sdy.all_to_all", [inner.operands[0]], op.result_types,
                            {"params": params, "out_sharding": op.properties["out_sharding"]},
                            location=op.location)
    rewriter.replace_op(op, fused.results)
    return True


def reshard_of_reshard(op: Operation, rewriter: Rewriter) -> bool:
    inner = _defining(op, "sdy.reshard")
    if inner is None or not inner.results[0].has_one_use:
        return False
    new = rewriter.create("sdy.reshard", [inner.operands[0]], op.result_types,
                          {"sharding": op.properties["sharding"]}, location=op.location)
    rewriter.replace_op(op, new.results)
    return True


def reduce_scatter_fusion(op: Operation, rewriter: Rewriter) -> bool:
    """`all_slice(all_reduce(x))` whose every all-reduce user is an equal all-slice, this one
    first, and whose reduction axes each lead some dim's slicing axes → `reduce_scatter` (and an
    `all_slice` of the slicing axes left)."""
    reduce = _defining(op, "sdy.all_reduce")
    if reduce is None:
        return False
    slicing = op.properties["slicing_axes"]
    users = reduce.results[0].users
    if any(u.name != "sdy.all_slice" or u.properties["slicing_axes"] != slicing
           or (u.parent is op.parent and u.is_before_in_block(op)) for u in users):
        return False
    remaining = set(reduce.properties["reduction_axes"].axes)
    scatter_axes, residual = [], []
    for axes in slicing.lists:
        n = 0
        while n < len(axes) and axes[n] in remaining:
            remaining.discard(axes[n])
            n += 1
        scatter_axes.append(axes[:n])
        residual.append(axes[n:])
    if remaining:
        return False
    out = reduce.properties["out_sharding"]
    mesh = mesh_of(out, op)
    source = get_sharding(reduce.operands[0]) or TensorSharding.replicated(out.mesh_or_ref,
                                                                          len(slicing.lists))
    dims = []
    for dim, extra in zip(source.dim_shardings, scatter_axes):
        axes = list(dim.axes)
        for a in extra:
            if axes and can_merge(axes[-1], a):
                axes[-1] = merge(axes[-1], a, mesh)
            else:
                axes.append(a)
        dims.append(DimensionSharding(tuple(axes), True))
    slice_out = op.properties["out_sharding"]
    scatter = rewriter.create(
        "sdy.reduce_scatter", [reduce.operands[0]], op.result_types,
        {"reduce_scatter_axes": ListOfAxisRefLists(tuple(scatter_axes)),
         "out_sharding": TensorSharding(out.mesh_or_ref, tuple(dims), slice_out.replicated_axes,
                                        slice_out.unreduced_axes)},
        location=reduce.location)
    final = scatter.results[0]
    if any(residual):
        final = rewriter.create("sdy.all_slice", [final], op.result_types,
                                {"slicing_axes": ListOfAxisRefLists(tuple(residual)),
                                 "out_sharding": slice_out}, location=op.location).results[0]
    for user in list(reversed(reduce.results[0].users)):
        rewriter.replace_op(user, [final])
    rewriter.erase_op(reduce)
    return True


_C = (COLLECTIVE,)
# Each op's `getCanonicalizationPatterns`, named by its `OpDef.canonicalization`; DRR patterns'
# benefit is their op count.
ALL_GATHER = (Pattern("sdy.all_gather", _empty_per_dim("gathering_axes"), labels=_C),)
ALL_REDUCE = (Pattern("sdy.all_reduce", all_reduce_noop, labels=_C),
              Pattern("sdy.all_reduce", all_reduce_of_replicated_to_unreduced, benefit=2, labels=_C),
              Pattern("sdy.all_reduce", all_reduce_of_sharded_to_unreduced, labels=_C))
ALL_SLICE = (Pattern("sdy.all_slice", all_slice_of_all_gather, benefit=2, labels=_C),
             Pattern("sdy.all_slice", _empty_per_dim("slicing_axes"), labels=_C))
ALL_TO_ALL = (Pattern("sdy.all_to_all", all_to_all_fusion, benefit=2, labels=_C),
              Pattern("sdy.all_to_all", all_to_all_no_use, labels=_C))
COLLECTIVE_PERMUTE = (Pattern("sdy.collective_permute", collective_permute_noop, labels=_C),)
REDUCE_SCATTER = (Pattern("sdy.all_slice", reduce_scatter_fusion, labels=_C),
                  Pattern("sdy.reduce_scatter", _empty_per_dim("reduce_scatter_axes"), labels=_C))
RESHARD_PATTERNS = (Pattern("sdy.reshard", reshard_of_reshard, benefit=2, labels=(RESHARD,)),)
