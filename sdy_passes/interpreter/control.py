"""Evaluators of control flow, calls and the ops that are identities on global values
(spec execute.md §4.6, §4.9)."""

from __future__ import annotations

import numpy as np

from sdy_passes.interpreter._core import Shards, fail, spmd


def _agreed(op, ctx, value: Shards, what: str):
    """The one value every device computed for a predicate or branch index; None when they differ
    in a manual computation (its devices then run their own paths, `_split`); else divergent
    control flow."""
    values = [v.reshape(()).item() for v in ctx.backend.concrete(value.buffers)]
    if all(v == values[0] for v in values):
        return values[0]
    if not ctx.partitioned or "sdy_passes.manual_body" in op.attributes:  # set by sdy-convert-global-to-local
        return None
    groups: dict = {}
    for d, i in zip(ctx.devices, value.index.tolist()):
        groups.setdefault(values[i], []).append(d)
    fail(op, "divergent control flow: " + ", ".join(
        f"devices {{{', '.join(map(str, ds))}}} {what} {v}" for v, ds in groups.items()))


def _split(fn, op, args, ctx, key: Shards):
    """`fn` run in lockstep by each group of devices that agree on `key` (its own control path;
    collectives inside see the group's devices only); results per result as `Shards`."""
    values = [v.reshape(()).item() for v in ctx.backend.concrete(key.buffers)]
    of_device = np.asarray([values[i] for i in key.index.tolist()])
    devices, env, parts = ctx.devices, ctx.env, []
    try:
        for v in dict.fromkeys(of_device.tolist()):
            positions = np.flatnonzero(of_device == v)
            ctx.devices = tuple(devices[p] for p in positions)
            # values from above the regions, as these devices hold them
            ctx.env = {k: x.take(positions) if isinstance(x, Shards) else x for k, x in env.items()}
            parts.append((positions, fn(op, [a.take(positions) for a in args], ctx)))
    finally:
        ctx.devices, ctx.env = devices, env
    return [Shards.merge([(p, outs[k]) for p, outs in parts], len(devices)) for k in range(len(op.results))]


@spmd  # in lockstep (a manual computation, a partitioned run) collectives in the body see every device
def while_(op, args, ctx):
    cond, body = op.regions
    values = list(args)
    while True:
        (pred,) = ctx.run_region(cond, values, op)
        if ctx.devices is not None:
            agreed = _agreed(op, ctx, pred, "have the loop predicate")
            if agreed is None:
                return _split(while_, op, values, ctx, pred)
            pred = agreed
        if not bool(np.asarray(pred).reshape(())):
            return values
        values = ctx.run_region(body, values, op)


@spmd
def case(op, args, ctx):
    index = args[0]
    if ctx.devices is not None:
        agreed = _agreed(op, ctx, index, "take branch")
        if agreed is None:
            return _split(case, op, args, ctx, index)
        index = agreed
    index = int(np.asarray(index).reshape(()))
    n = len(op.regions)
    if not 0 <= index < n:  # out of range: the last branch (the spec's default)
        index = n - 1
    return ctx.run_region(op.regions[index], [], op)


def if_(op, args, ctx):
    branch = op.regions[0] if bool(np.asarray(args[0]).reshape(())) else op.regions[1]
    return ctx.run_region(branch, [], op)


@spmd  # in a manual computation the callee runs in lockstep too (its collectives see every device)
def call(op, args, ctx):
    callee = op.properties.get("callee")
    if callee is None:
        fail(op, "requires attribute 'callee'")
    return ctx.call(ctx.lookup_func(callee.root, op), args, op)


def composite(op, args, ctx):
    """A composite runs its decomposition."""
    d = op.properties.get("decomposition")
    if d is None:
        fail(op, "requires attribute 'decomposition'")
    return ctx.call(ctx.lookup_func(d.root, op), args, op)


def map_(op, args, ctx):
    """The computation applied element by element (vectorised: the body sees whole arrays)."""
    return ctx.run_region(op.regions[0], args, op)


def token(op, args, ctx):
    """`after_all`, `create_token`: tokens order side effects, which the interpreter runs in order."""
    return (np.zeros((0,), np.bool_),)


@spmd
def named_computation(op, args, ctx):
    return ctx.run_region(op.regions[0], args, op)


@spmd
def identity(op, args, ctx):
    """Sharding annotations, data-flow edges, barriers and sdy collectives: the global value is
    unchanged (§4.9)."""
    return args


def tuple_(op, args, ctx):
    return (tuple(args),)


def get_tuple_element(op, args, ctx):
    return (args[0][op.properties["index"].value],)
