"""Evaluators of control flow, calls and the ops that are identities on global values
(spec execute.md §4.6, §4.9)."""

from __future__ import annotations

import numpy as np

from sdy_passes.interpreter._core import fail, spmd


def while_(op, args, ctx):
    cond, body = op.regions
    values = list(args)
    while True:
        (pred,) = ctx.run_region(cond, values, op)
        if not bool(np.asarray(pred).reshape(())):
            return values
        values = ctx.run_region(body, values, op)


def case(op, args, ctx):
    index = int(np.asarray(args[0]).reshape(()))
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
