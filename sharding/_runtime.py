"""Execution of moves and reductions on the device arrays of `ShardedArray`s (no xarray here).

What `DeviceMesh.reshard` (`simulate`) and the collectives (`collectives`) share: the messages of
each step from shapes alone (`_moves`), the transfer record, and the array backend of the shards
(`_backends`) copying or reducing the data. Each function returns the result's device array
(`(pieces..., local...)` under `placement(x, sharding, mesh)`); `simulate.wrap` labels it.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from . import _backends
from ._moves import Moves, Transfer, moves, nested, refs, transfers
from ._placement import Placement, place, same_data
from .axes import AxisRef, overlaps
from .errors import ShardingError
from .mesh import Mesh
from .reshard import ReshardPlan, reshard_plan
from .tensor_sharding import TensorSharding

__all__ = ["device_array", "placement", "move", "all_reduce", "run_plan"]


def device_array(x):
    """`x`'s device array in the order `(pieces..., local...)` (numpy, or lazy)."""
    order = tuple(pc.label for pc in x.placement.pieces) + x.dims
    return x.data.data if x.data.dims == order else x.data.transpose(*order).data


def placement(x, target: TensorSharding, mesh: Mesh) -> Placement:
    """Where `x`'s data lies under `target`, cut as `shard` cuts (every named sub-axis a piece)."""
    return place(target, mesh, x.placement.shape, cut_by_replicated=True, uneven=x.placement.uneven)


def _run(x, ms: list[Moves], target: TensorSharding, out_mesh: Mesh, fill, out=None):
    data = device_array(x)
    return _backends.of(data).run(data, x.placement, ms, placement(x, target, out_mesh), np.array(fill, x.data.dtype),
                                  out)


def move(x, target: TensorSharding, out_mesh: Mesh, *, fill=0, step: int = 0, record=None):
    """`x`'s data under `target` by one move (any collective that moves data); appends its
    messages to `record` (a list of `Transfer`) when given."""
    m = moves(x.sharding, target, x.mesh, out_mesh, x.placement.shape, x.placement.uneven)
    if record is not None:
        record.extend(transfers(m, x.data.dtype.itemsize, step, [a.name for a in x.mesh.axes]))
    return _run(x, [m], target, out_mesh, fill)


def all_reduce(x, axes: list[AxisRef], record=None):
    """`(device array, reduced sharding)`: the partial values along the unreduced `axes` reduced
    (the sharding's reduction); `axes` leave `unreduced`."""
    s = x.sharding
    unreduced = list(s.unreduced_axes)
    for ref in axes:
        if ref not in unreduced:
            raise ShardingError(f"reduction axis {ref} is not an unreduced axis of {s}")
    keep = tuple(a for a in unreduced if a not in axes)
    reduced = TensorSharding(s.mesh_or_ref, s.dim_shardings, s.replicated_axes, keep, s.reduction_op)
    p = x.placement
    red = tuple(i for i, pc in enumerate(p.pieces) if any(overlaps(pc.axis_ref(), a) for a in axes))
    g = math.prod(p.pieces[i].size for i in red)
    if record is not None and g > 1:  # direct exchange: reduce-scatter then all-gather, B/g each
        b = math.prod(p.local_shape) * x.data.dtype.itemsize // g
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
    return backend.relabel(total, placement(x, reduced, x.mesh).piece_sizes, p.local_shape), reduced


def run_plan(x, target: TensorSharding, bound, *, fill=0, out=None) -> tuple[object, Mesh, ReshardPlan]:
    """`DeviceMesh.reshard`'s data: plans with `reshard_plan`, runs the steps on the device
    array (intermediate buffers are not wrapped; the result's buffers in `out` when given);
    returns `(device array, result mesh, plan)`, the plan carrying the transfer record
    (`plan.transfers`)."""
    ms, out_mesh, plan = _planned(x.sharding, target, bound, x.mesh, x.placement.shape, x.data.dtype,
                                  x.placement.uneven, _backends.of(x.data.data).fuses_moves)
    return _run(x, list(ms), target, out_mesh, fill, out), out_mesh, plan


@functools.lru_cache(maxsize=16)  # few: the moves of a plan on many devices are large
def _planned(source: TensorSharding, target: TensorSharding, bound, mesh: Mesh, shape: tuple[int, ...],
             dtype: np.dtype, uneven: str, fuses_moves: bool) -> tuple[tuple[Moves, ...], Mesh, ReshardPlan]:
    """`run_plan`'s plan and moves, from frozen values and shapes alone: a reshard run again
    (a loop over batches) plans once."""
    plan = reshard_plan(source, target, bound, shape, dtype=dtype, uneven=uneven)
    if plan.error is not None:
        raise ShardingError(f"jaxlib's plan from {source} to {target} fails its verifier: {plan.error}")
    final = plan.final_sharding()
    pf, pt = place(final, bound, shape, uneven=uneven), place(target, bound, shape, uneven=uneven)
    same = pf.index_map() == pt.index_map() if uneven == "ragged" else same_data(pf, pt)
    if not plan.reaches_target and not same:
        raise ShardingError(f"Shardy's plan from {source} to {target} stops at {final} (spec collectives.md "
                            "§5.5); reshard there, or to a target it reaches")
    axes = [a.name for a in mesh.axes]
    ms, record = [], []
    prev, prev_mesh = source, mesh
    for i, step in enumerate(plan.steps):  # the messages, from shapes alone
        out_mesh = plan.mesh_of(step.out_sharding)
        ms.append(moves(prev, step.out_sharding, prev_mesh, out_mesh, shape, uneven))
        record.extend(transfers(ms[-1], dtype.itemsize, i, axes))
        prev, prev_mesh = step.out_sharding, out_mesh
    if len(ms) > 1 and fuses_moves and nested(refs(source) + refs(target), mesh):
        ms = [moves(source, target, mesh, prev_mesh, shape, uneven)]  # the same data, each block once
    return tuple(ms), prev_mesh, dataclasses.replace(plan, transfers=tuple(record))
