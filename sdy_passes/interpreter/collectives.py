"""Manual computations (JAX's `shard_map`) and the StableHLO collectives in them (spec execute.md
§1.1, §6.2).

`sdy.manual_computation` runs its body in lockstep on every device of its mesh: each value in
the body is a list of per-device arrays (local along the manual axes); ordinary ops run once per
device, the collectives (`@spmd`) see every device's operand at once. Groups list device ids
(`use_global_device_ids`, or partition ids with a `channel_handle`: the same numbers here).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from sdy_passes.attributes import OpaqueAttr
from sdy_passes.common.mesh_groups import parse_mesh_axes, replica_groups
from sdy_passes.errors import UnsupportedOpError
from sdy_passes.interpreter._core import fail, region_fn, spmd
from sdy_passes.interpreter.movement import int_attr
from sdy_passes.interpreter.parallel import process_groups


def _mesh(ctx, sharding, op):
    m = sharding.mesh_or_ref
    if isinstance(m, str):
        sym = ctx.module.lookup_symbol(m)
        if sym is None or sym.name != "sdy.mesh":
            fail(op, f"unknown mesh @{m}")
        m = sym.properties["mesh"]
    return m


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


@contextmanager
def _one_device(ctx):
    """Runs regions (reduction bodies) as ordinary single-device code inside a lockstep run."""
    devices, ctx.devices = ctx.devices, None
    try:
        yield
    finally:
        ctx.devices = devices


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
    per_device = [[x[_tiles(s, manual, c, mesh, x.shape)] for c in coords] for x, s in zip(args, ins)]
    ctx.devices = tuple(int(i) for i in ids)
    try:
        results = ctx.run_block(op.regions[0].blocks[0], per_device)
    finally:
        ctx.devices, ctx.device = None, 0
    out_values = []
    for r, s, locals_ in zip(op.results, outs, results):
        full = np.empty(tuple(r.type.shape), locals_[0].dtype)
        # devices apart only on axes the result is not sharded over should agree; where they do
        # not (shard_map without its checks), JAX returns the first device's: written last
        for c, local in reversed(list(zip(coords, locals_))):
            full[_tiles(s, manual, c, mesh, full.shape)] = local
        out_values.append(full)
    return out_values


# -- collectives ---------------------------------------------------------------------------------

def _mesh_symbol(ctx, name):
    sym = ctx.module.lookup_symbol(name)
    return sym.properties["mesh"] if sym is not None and sym.name == "sdy.mesh" else None


def _groups(op, ctx, attr="replica_groups"):
    """Groups as lists of positions in `ctx.devices`."""
    if ctx.devices is None:
        raise UnsupportedOpError(f"{op.name}: a collective outside a manual computation needs "
                                 "per-device execution (sdy_passes.execute)", op.location)
    a = op.properties.get(attr)
    where = {d: i for i, d in enumerate(ctx.devices)}
    if isinstance(a, OpaqueAttr):  # ReplicaGroupV3: the groups along mesh axes
        found = parse_mesh_axes(a.text, lambda name: _mesh_symbol(ctx, name))
        if found is None:
            fail(op, f"cannot read replica_groups {a.text}")
        groups = replica_groups(*found)
    else:
        groups = a.to_numpy() if a is not None else np.zeros((0, 0), np.int64)
    if ctx.num_partitions is not None:  # replicas and partitions of `run_parallel`
        groups = process_groups(op, ctx, groups)
    if groups.size == 0:
        return [list(range(len(ctx.devices)))]
    out = []
    seen = set()
    for g in groups.tolist():
        g = [x for x in g if x >= 0]
        if any(x not in where or x in seen for x in g):
            fail(op, f"replica group {g} names a device twice or one outside the mesh")
        seen.update(g)
        out.append([where[x] for x in g])
    return out


def _reducer(op, ctx, region):
    """Folds the members' operands with the region, in group order."""
    body = region_fn(ctx, region, op)

    def reduce(values):
        acc = list(values[0])
        with _one_device(ctx):
            for v in values[1:]:
                acc = body(*acc, *v)
        return acc
    return reduce


@spmd
def all_reduce(op, args, ctx):
    groups = _groups(op, ctx)
    reduce = _reducer(op, ctx, op.regions[0])
    n = len(args)
    out = [[None] * len(ctx.devices) for _ in range(n)]
    for g in groups:
        acc = reduce([[a[m] for a in args] for m in g])
        for m in g:
            for k in range(n):
                out[k][m] = acc[k]
    return out


@spmd
def all_gather(op, args, ctx):
    groups = _groups(op, ctx)
    dim = int_attr(op, "all_gather_dim")
    out = [[None] * len(ctx.devices) for _ in args]
    for k, a in enumerate(args):
        for g in groups:
            cat = np.concatenate([a[m] for m in g], axis=dim)
            for m in g:
                out[k][m] = cat
    return out


@spmd
def reduce_scatter(op, args, ctx):
    groups = _groups(op, ctx)
    dim = int_attr(op, "scatter_dimension")
    reduce = _reducer(op, ctx, op.regions[0])
    out = [[None] * len(ctx.devices) for _ in args]
    for g in groups:
        acc = reduce([[a[m] for a in args] for m in g])
        for k, full in enumerate(acc):
            parts = np.split(np.asarray(full), len(g), axis=dim)
            for i, m in enumerate(g):
                out[k][m] = parts[i]
    return out


@spmd
def all_to_all(op, args, ctx):
    groups = _groups(op, ctx)
    split = int_attr(op, "split_dimension")
    concat = int_attr(op, "concat_dimension")
    out = [[None] * len(ctx.devices) for _ in args]
    for k, a in enumerate(args):
        for g in groups:
            parts = {m: np.split(a[m], len(g), axis=split) for m in g}
            for j, m in enumerate(g):
                out[k][m] = np.concatenate([parts[src][j] for src in g], axis=concat)
    return out


@spmd
def collective_permute(op, args, ctx):
    if ctx.devices is None:
        _groups(op, ctx)
    where = {d: i for i, d in enumerate(ctx.devices)}
    pairs = op.properties["source_target_pairs"].to_numpy().reshape(-1, 2)
    if ctx.num_partitions is not None:
        pairs = process_groups(op, ctx, pairs)
    pairs = pairs.tolist()
    (a,) = args
    out = [np.zeros_like(x) for x in a]  # a device no pair targets gets zeros (spec)
    for s, t in pairs:
        if s not in where or t not in where:
            fail(op, f"source-target pair {[s, t]} names a device outside the mesh")
        out[where[t]] = a[where[s]]
    return [out]


@spmd
def collective_broadcast(op, args, ctx):
    groups = _groups(op, ctx)
    (a,) = args
    out = [None] * len(ctx.devices)
    for g in groups:
        for m in g:
            out[m] = a[g[0]]
    return [out]


def partition_id(op, args, ctx):
    n = ctx.num_partitions
    return (np.array(ctx.device if n is None else ctx.device % n, np.uint32),)


def replica_id(op, args, ctx):
    n = ctx.num_partitions
    return (np.array(0 if n is None else ctx.device // n, np.uint32),)
