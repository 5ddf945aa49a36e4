"""Manual computations (JAX's `shard_map`) and the StableHLO collectives in them (spec execute.md
§1.1, §6.2).

`sdy.manual_computation` runs its body in lockstep on every device of its mesh: each value in
the body is `Shards` (local along the manual axes; one buffer per distinct tile); ordinary ops
run once per distinct shard, the collectives (`@collective`) once per group of communicating
devices. Groups list device ids
(`use_global_device_ids`, or partition ids with a `channel_handle`: the same numbers here).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from sdy_passes.errors import UnsupportedOpError
from sdy_passes.interpreter._core import (
    Shards, agreeing, collective, fail, per_device, process_groups, region_fn, spmd,
)
from sdy_passes.interpreter.movement import int_attr


def _mesh(ctx, sharding, op):
    m = sharding.mesh_or_ref
    if isinstance(m, str):
        sym = ctx.module.lookup_symbol(m)
        if sym is None or sym.name != "sdy.mesh":
            fail(op, f"unknown mesh @{m}")
        m = sym.properties["mesh"]
    if ctx.mesh is None:
        return m
    if ctx.mesh.axes != m.axes:
        fail(op, f"mesh {ctx.mesh.body()} has other axes than the manual computation's mesh {m.body()}")
    return ctx.mesh


def _axis_coordinate(ref, coords: dict, mesh) -> tuple[int, int]:
    """(coordinate, size) of a device along a (sub-)axis."""
    c, full = coords[ref.name], mesh.axis_size(ref.name)
    if ref.sub_axis_info is None:
        return c, full
    pre, size = ref.sub_axis_info.pre_size, ref.sub_axis_info.size
    return (c // (full // (pre * size))) % size, size


def _tiles(sharding, manual: set, coords: dict, mesh, shape):
    """The slice of the global value one device holds along the manual axes."""
    out = []
    for d, ds in enumerate(sharding.dim_shardings):
        tile, count = 0, 1
        for ref in ds.axes:
            if ref.name not in manual:
                break
            c, size = _axis_coordinate(ref, coords, mesh)
            tile, count = tile * size + c, count * size
        local = shape[d] // count
        out.append(np.s_[tile * local:(tile + 1) * local])
    return tuple(out) + tuple(np.s_[:] for _ in range(len(shape) - len(out)))


def _distinct_tiles(tiles: list, x) -> Shards:
    """`x` cut into the devices' tiles, one buffer per distinct tile."""
    where: dict = {}
    buffers, index = [], np.empty(len(tiles), np.int64)
    for i, t in enumerate(tiles):
        key = tuple((s.start, s.stop) for s in t)
        k = where.setdefault(key, len(buffers))
        if k == len(buffers):
            buffers.append(x[t])
        index[i] = k
    return Shards(buffers, index)


@contextmanager
def _one_device(ctx):
    """Runs regions (reduction bodies) as ordinary single-device code inside a lockstep run."""
    devices, ctx.devices = ctx.devices, None
    try:
        yield
    finally:
        ctx.devices = devices


@spmd  # in a lockstep run only to refuse nesting
def manual_computation(op, args, ctx):
    if ctx.devices is not None:
        fail(op, "a manual computation inside a manual computation")
    manual = set(op.properties["manual_axes"].names)
    ins = op.properties["in_shardings"].shardings
    outs = op.properties["out_shardings"].shardings
    shardings = [*ins, *outs]
    if not shardings:  # no operands or results: the body still runs, once per device of no mesh
        return ctx.run_region(op.regions[0], [], op)
    mesh = _mesh(ctx, shardings[0], op)
    names = mesh.axis_names
    sizes = mesh.shape
    ids = mesh.devices
    coords = [dict(zip(names, np.unravel_index(p, sizes))) if sizes else {} for p in range(len(ids))]
    per_device = [_distinct_tiles([_tiles(s, manual, c, mesh, x.shape) for c in coords], x) for x, s in zip(args, ins)]
    ctx.devices = ctx.mesh_device_ids = tuple(int(i) for i in ids)
    try:
        results = ctx.run_block(op.regions[0].blocks[0], per_device)
    finally:
        ctx.devices, ctx.device, ctx.mesh_device_ids = None, 0, ()
    out_values = []
    for r, s, value in zip(op.results, outs, results):
        locals_ = value.per_device()
        full = np.empty(tuple(r.type.shape), locals_[0].dtype)
        # devices apart only on axes the result is not sharded over should agree; where they do
        # not (shard_map without its checks), JAX returns the first device's: written last
        for c, local in reversed(list(zip(coords, locals_))):
            full[_tiles(s, manual, c, mesh, full.shape)] = local
        out_values.append(full)
    return out_values


# -- collectives ----------------------------------------------------------------------------------
# Each runs on one group of communicating devices (the engine's `_comm_groups`): `ctx.devices`
# are its members in group order, and every operand is a list with one array per member.

def _outside(op):
    raise UnsupportedOpError(f"{op.name}: a collective outside a manual computation needs "
                             "per-device execution (sdy_passes.execute)", op.location)


def _reduce(op, ctx, args):
    """The members' operands folded with the op's region, in group order."""
    if ctx.devices is None:
        _outside(op)
    body = region_fn(ctx, op.regions[0], op)
    acc = [a[0] for a in args]
    with _one_device(ctx):
        for m in range(1, len(args[0])):
            acc = body(*acc, *(a[m] for a in args))
    return acc


@agreeing
@collective
def all_reduce(op, args, ctx):
    return [[acc] * len(ctx.devices) for acc in _reduce(op, ctx, args)]


@agreeing
@collective
def all_gather(op, args, ctx):
    if ctx.devices is None:
        _outside(op)
    dim = int_attr(op, "all_gather_dim")
    return [[np.concatenate(a, axis=dim)] * len(a) for a in args]


@collective
def reduce_scatter(op, args, ctx):
    dim = int_attr(op, "scatter_dimension")
    return [np.split(np.asarray(full), len(ctx.devices), axis=dim) for full in _reduce(op, ctx, args)]


@collective
def all_to_all(op, args, ctx):
    if ctx.devices is None:
        _outside(op)
    split = int_attr(op, "split_dimension")
    concat = int_attr(op, "concat_dimension")
    out = []
    for a in args:
        parts = [np.split(x, len(a), axis=split) for x in a]
        out.append([np.concatenate([p[j] for p in parts], axis=concat) for j in range(len(a))])
    return out


@collective
def collective_permute(op, args, ctx):
    if ctx.devices is None:
        _outside(op)
    where = {d: i for i, d in enumerate(ctx.devices)}
    (a,) = args
    out = [np.zeros_like(x) for x in a]  # a device no pair targets gets zeros (spec)
    pairs = op.properties["source_target_pairs"].to_numpy().reshape(-1, 2)
    if ctx.num_partitions is not None:  # replicas and partitions of `run_parallel`
        pairs = process_groups(op, ctx, pairs)
    for s, t in pairs.tolist():
        if t in where:
            out[where[t]] = a[where[s]]
    return [out]


@agreeing
@collective
def collective_broadcast(op, args, ctx):
    if ctx.devices is None:
        _outside(op)
    (a,) = args
    return [[a[0]] * len(a)]


@per_device
def partition_id(op, args, ctx):
    n = ctx.num_partitions
    return (np.array(ctx.device if n is None else ctx.device % n, np.uint32),)


@per_device
def replica_id(op, args, ctx):
    n = ctx.num_partitions
    return (np.array(0 if n is None else ctx.device // n, np.uint32),)
