"""Shardy's collectives on the simulated mesh: data moves only through a transfer record.

>>> import numpy as np, sharding
>>> dm = sharding.DeviceMesh('<["x"=2, "y"=4]>')
>>> x = dm.shard(np.arange(64.0).reshape(8, 8), sharding.TensorSharding.parse('<@mesh, [{"x"}, {"y"}]>'))
>>> y, plan = dm.reshard(x, sharding.TensorSharding.parse('<@mesh, [{"y"}, {"x"}]>'))
>>> [s.kind for s in plan.steps], (dm.unshard(y) == np.arange(64.0).reshape(8, 8)).all()
(['collective_permute', 'all_to_all'], np.True_)
>>> len(plan.transfers), sum(t.bytes for t in plan.transfers)
(12, 512)

Every collective that moves data (all-gather, all-slice, all-to-all, collective-permute) is one
*move* (`_moves`: its messages, from shapes alone); the array backend of the shards (`_backends`:
numpy, or dask) copies the data along them. Layers, bottom up: the plan (`reshard`, pure), the
message geometry (`_moves`), the backends, then this module and `simulate`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import _backends
from ._moves import Moves, Transfer, messages, moves, transfers
from ._placement import place, same_data
from ._sharded import ShardedArray, device_array, placement, wrap
from .axes import AxisRef, overlaps
from .errors import ShardingError
from .mesh import Mesh
from .reshard import gather_along_dim, reshard_plan, slice_along_dim
from .syntax import AllToAllParam, AllToAllParamList, ListOfAxisRefLists
from .tensor_sharding import DimensionSharding, TensorSharding

__all__ = ["Transfer", "Moves", "moves", "messages", "all_gather", "all_slice", "all_to_all", "collective_permute",
           "all_reduce", "reduce_scatter", "apply_step", "run_plan"]


def _mesh_of(x, sharding: TensorSharding, mesh: Mesh | None) -> Mesh:
    if isinstance(sharding.mesh_or_ref, Mesh):
        return sharding.mesh_or_ref
    return x.mesh if mesh is None else mesh


def move(x: ShardedArray, target: TensorSharding, *, mesh: Mesh | None = None, fill=0, step: int = 0,
         record=None) -> ShardedArray:
    """`x` resharded to `target` by one move (any collective that moves data); appends its
    messages to `record` (a list of `Transfer`) when given."""
    out_mesh = _mesh_of(x, target, mesh)
    m = moves(x.sharding, target, x.mesh, out_mesh, x.placement.shape, x.placement.uneven)
    if record is not None:
        record.extend(transfers(m, x.data.dtype.itemsize, step, [a.name for a in x.mesh.axes]))
    return _run(x, [m], target, out_mesh, fill)


def _run(x: ShardedArray, ms: list[Moves], target: TensorSharding, out_mesh: Mesh, fill) -> ShardedArray:
    data = device_array(x)
    po = placement(x, target, out_mesh)
    out = _backends.of(data).run(data, x.placement, ms, po, np.array(fill, x.data.dtype))
    return wrap(x, target, out_mesh, out)


def _with_dims(x, dims: list[tuple[AxisRef, ...]]) -> TensorSharding:
    s = x.sharding
    return TensorSharding(s.mesh_or_ref, tuple(DimensionSharding(tuple(a)) for a in dims),
                          unreduced_axes=s.unreduced_axes, reduction_op=s.reduction_op)


def _ref(a) -> AxisRef:
    """An axis ref from an `AxisRef`, its text (`'"x":(1)2'`) or a bare axis name (`"x"`)."""
    if isinstance(a, AxisRef):
        return a
    return AxisRef.parse(a) if a.lstrip().startswith('"') else AxisRef(a)


def _axes_per_dim(x, axes_per_dim) -> list[tuple[AxisRef, ...]]:
    if isinstance(axes_per_dim, ListOfAxisRefLists):
        axes_per_dim = axes_per_dim.lists
    lists = [tuple(map(_ref, axes)) for axes in axes_per_dim]
    if len(lists) != x.sharding.rank:
        raise ShardingError(f"result sharding has rank {x.sharding.rank} but collective axes has rank {len(lists)}")
    return lists


def all_gather(x, axes_per_dim, *, fill=0, record=None):
    """`sdy.all_gather`: each dim's `axes` (a suffix of its sharding) are gathered."""
    dims = []
    for d, (dim, axes) in enumerate(zip(x.sharding.dim_shardings, _axes_per_dim(x, axes_per_dim))):
        try:
            dims.append(tuple(gather_along_dim(dim.axes, axes, x.mesh)))
        except ShardingError as e:
            raise ShardingError(f"can't apply gathering axis {e} to operand sharding on dimension {d}") from None
    return move(x, _with_dims(x, dims), fill=fill, record=record)


def all_slice(x, axes_per_dim, *, fill=0, record=None):
    """`sdy.all_slice`: each dim's sharding is extended by `axes`."""
    dims = [tuple(slice_along_dim(dim.axes, axes, x.mesh))
            for dim, axes in zip(x.sharding.dim_shardings, _axes_per_dim(x, axes_per_dim))]
    return move(x, _with_dims(x, dims), fill=fill, record=record)


def all_to_all(x, params, *, fill=0, record=None):
    """`sdy.all_to_all`: each param's axes move from the end of `src_dim` to the end of `tgt_dim`."""
    if isinstance(params, AllToAllParam):
        params = (params,)
    if isinstance(params, AllToAllParamList):
        params = params.params
    dims = [list(d.axes) for d in x.sharding.dim_shardings]
    for p in params:
        if not (0 <= p.src_dim < len(dims) and 0 <= p.tgt_dim < len(dims)):
            raise ShardingError(f"all-to-all dimensions {p.src_dim}->{p.tgt_dim} are out of range [0, {len(dims)})")
        try:
            dims[p.src_dim] = gather_along_dim(dims[p.src_dim], p.axes, x.mesh)
        except ShardingError as e:
            raise ShardingError(f"can't apply all-to-all axis {e} to operand sharding on dimension {p.src_dim}") \
                from None
        dims[p.tgt_dim] = slice_along_dim(dims[p.tgt_dim], p.axes, x.mesh)
    return move(x, _with_dims(x, [tuple(d) for d in dims]), fill=fill, record=record)


def collective_permute(x, out_sharding: TensorSharding, *, mesh: Mesh | None = None, fill=0, record=None):
    """`sdy.collective_permute`: same tile counts per dim, other axes or another device order
    (`mesh`: the result's mesh when it is not `x`'s)."""
    out_mesh = _mesh_of(x, out_sharding, mesh)
    for d, (a, b) in enumerate(zip(x.sharding.dim_shardings, out_sharding.dim_shardings)):
        if a.sharded_size(x.mesh) != b.sharded_size(out_mesh):
            raise ShardingError(f"sharded size of result doesn't match operand on dimension {d}: "
                                f"{b.sharded_size(out_mesh)} != {a.sharded_size(x.mesh)}")
    return move(x, out_sharding, mesh=mesh, fill=fill, record=record)


def all_reduce(x, axes, *, record=None):
    """`sdy.all_reduce`: the partial values along unreduced `axes` reduced (the sharding's
    reduction: sum, or the simulation's max/min); `axes` leave `unreduced`."""
    return _reduce(x, [_ref(a) for a in axes], None, record)


def reduce_scatter(x, axes_per_dim, *, fill=0, record=None):
    """`sdy.reduce_scatter`: `all_reduce` over all the axes, then `all_slice` by them."""
    lists = _axes_per_dim(x, axes_per_dim)
    return _reduce(x, [a for axes in lists for a in axes], lists, record, fill)


def _reduce(x, axes: list[AxisRef], slices, record, fill=0):
    s = x.sharding
    unreduced = list(s.unreduced_axes)
    for ref in axes:
        if ref not in unreduced:
            raise ShardingError(f"reduction axis {ref} is not an unreduced axis of {s}")
    keep = tuple(a for a in unreduced if a not in axes)
    reduced = TensorSharding(s.mesh_or_ref, s.dim_shardings, s.replicated_axes, keep, s.reduction_op)
    p = x.placement
    red = tuple(i for i, pc in enumerate(p.pieces) if any(overlaps(pc.axis_ref(), a) for a in axes))
    dtype = x.data.dtype
    g = math.prod(p.pieces[i].size for i in red)
    if record is not None and g > 1:  # direct exchange: reduce-scatter then all-gather, B/g each
        b = math.prod(p.local_shape) * dtype.itemsize // g
        names = [a.name for a in x.mesh.axes]
        coords = {int(d): np.unravel_index(pos, x.mesh.shape) for pos, d in enumerate(x.mesh.devices)}
        for group in p.device_groups(red):
            for s_ in group:
                for r_ in group:
                    if s_ != r_:
                        crossed = tuple(a for a, cs, cr in zip(names, coords[int(s_)], coords[int(r_)]) if cs != cr)
                        record.append(Transfer(0, int(s_), int(r_), 2 * b, crossed))
    data = device_array(x)
    backend = _backends.of(data)
    total = backend.reduce(data, p, red, s.reduction_op)  # same positions, the reduced sharding's pieces
    out = wrap(x, reduced, x.mesh, backend.relabel(total, placement(x, reduced, x.mesh).piece_sizes, p.local_shape))
    return all_slice(out, slices, fill=fill, record=record) if slices is not None else out


def apply_step(x, step, *, mesh: Mesh | None = None, fill=0, record=None, index: int = 0):
    """Runs one `ReshardStep` of a plan on `x` (its result is exactly `step.out_sharding`)."""
    return move(x, step.out_sharding, mesh=mesh, fill=fill, step=index, record=record)


def run_plan(x: ShardedArray, target: TensorSharding, bound, *, fill=0):
    """`DeviceMesh.reshard`: plans with `reshard_plan`, runs the steps on per-device buffers
    (intermediate buffers are not wrapped) and returns `(ShardedArray, plan)`; the plan carries
    the transfer record (`plan.transfers`)."""
    uneven = x.placement.uneven
    shape = x.placement.shape
    plan = reshard_plan(x.sharding, target, bound, shape, dtype=x.data.dtype, uneven=uneven)
    if plan.error is not None:
        raise ShardingError(f"jaxlib's plan from {x.sharding} to {target} fails its verifier: {plan.error}")
    final = plan.final_sharding()
    pf, pt = place(final, bound, shape, uneven=uneven), place(target, bound, shape, uneven=uneven)
    same = pf.index_map() == pt.index_map() if uneven == "ragged" else same_data(pf, pt)
    if not plan.reaches_target and not same:
        raise ShardingError(f"Shardy's plan from {x.sharding} to {target} stops at {final} (spec collectives.md "
                            "§5.5); reshard there, or to a target it reaches")
    axes = [a.name for a in x.mesh.axes]
    ms, record = [], []
    prev, prev_mesh = x.sharding, x.mesh
    for i, step in enumerate(plan.steps):  # the messages, from shapes alone
        out_mesh = plan.mesh_of(step.out_sharding)
        ms.append(moves(prev, step.out_sharding, prev_mesh, out_mesh, shape, uneven))
        record.extend(transfers(ms[-1], x.data.dtype.itemsize, i, axes))
        prev, prev_mesh = step.out_sharding, out_mesh
    return _run(x, ms, target, prev_mesh, fill), dataclasses.replace(plan, transfers=tuple(record))
