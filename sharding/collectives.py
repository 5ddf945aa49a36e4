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

from . import _runtime
from ._moves import Moves, Transfer, messages, moves
from .axes import AxisRef
from .errors import ShardingError
from .mesh import Mesh
from .reshard import gather_along_dim, slice_along_dim
from .simulate import ShardedArray, wrap
from .syntax import AllToAllParam, AllToAllParamList, ListOfAxisRefLists
from .tensor_sharding import DimensionSharding, TensorSharding

__all__ = ["Transfer", "Moves", "moves", "messages", "all_gather", "all_slice", "all_to_all", "collective_permute",
           "all_reduce", "reduce_scatter", "apply_step"]


def _mesh_of(x, sharding: TensorSharding, mesh: Mesh | None) -> Mesh:
    if isinstance(sharding.mesh_or_ref, Mesh):
        return sharding.mesh_or_ref
    return x.mesh if mesh is None else mesh


def move(x: ShardedArray, target: TensorSharding, *, mesh: Mesh | None = None, fill=0, step: int = 0,
         record=None) -> ShardedArray:
    """`x` resharded to `target` by one move (any collective that moves data); appends its
    messages to `record` (a list of `Transfer`) when given."""
    out_mesh = _mesh_of(x, target, mesh)
    return wrap(x, target, out_mesh, _runtime.move(x, target, out_mesh, fill=fill, step=step, record=record))


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
    data, reduced = _runtime.all_reduce(x, axes, record)
    out = wrap(x, reduced, x.mesh, data)
    return all_slice(out, slices, fill=fill, record=record) if slices is not None else out


def apply_step(x, step, *, mesh: Mesh | None = None, fill=0, record=None, index: int = 0):
    """Runs one `ReshardStep` of a plan on `x` (its result is exactly `step.out_sharding`)."""
    return move(x, step.out_sharding, mesh=mesh, fill=fill, step=index, record=record)
