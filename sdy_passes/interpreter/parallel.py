"""`interpreter.run_parallel` and the `check` ops of the StableHLO reference interpreter (what
Shardy's executable global-to-local tests run, spec execute.md §10).

`run_parallel` runs its programs on `len(programs)` replicas of `len(programs[0])` partitions
in lockstep (process `i` of the flattened list is replica `i // partitions`, partition
`i % partitions`; collectives form StableHLO's process groups from their mode); operands are
dealt to the programs in order and results gathered in order. The programs must all be one function (a lockstep run);
the `check` ops raise `ExecutionError` at the op when values differ.
"""

from __future__ import annotations

import numpy as np

from sdy_passes.interpreter._core import Shards, fail, is_float


def run_parallel(op, args, ctx):
    programs = op.properties["programs"].elements
    rows = [[ref.root for ref in replica.elements] for replica in programs]
    if not rows or len({len(r) for r in rows}) != 1 or not rows[0]:
        fail(op, f"programs {rows}: every replica needs the same number (at least one) of partitions")
    names = [name for row in rows for name in row]
    if len(set(names)) != 1:
        fail(op, f"programs {sorted(set(names))} differ: only one function on every process is supported")
    func = ctx.lookup_func(names[0], op)
    n = len(names)
    k = len(func.properties["function_type"].type.inputs)
    if len(args) != n * k:
        fail(op, f"{n} programs of {k} arguments need {n * k} operands, found {len(args)}")
    per_device = [Shards.from_list([args[p * k + i] for p in range(n)]) for i in range(k)]
    saved = ctx.devices, ctx.device, ctx.mesh_device_ids, ctx.num_partitions
    ctx.devices = ctx.mesh_device_ids = tuple(range(n))
    ctx.num_partitions = len(rows[0])
    try:
        results = ctx.call(func, per_device, op)
    finally:
        ctx.devices, ctx.device, ctx.mesh_device_ids, ctx.num_partitions = saved
    results = [r.per_device() for r in results]
    return [np.asarray(r[p]) for p in range(n) for r in results]


def _differ(op, got, want, message):
    fail(op, f"{message}: got {np.asarray(got).tolist()}, expected {np.asarray(want).tolist()}")


def expect_eq(op, args, ctx):
    got, want = args
    if got.shape != want.shape or not np.array_equal(got, want, equal_nan=is_float(got.dtype)):
        _differ(op, got, want, "values differ")
    return ()


def expect_almost_eq(op, args, ctx):
    got, want = args
    t = op.properties.get("tolerance")
    tol = float(t.value) if t is not None else 1e-4
    g, w = np.asarray(got, np.complex128 if got.dtype.kind == "c" else np.float64), np.asarray(want, np.float64 if want.dtype.kind != "c" else np.complex128)
    if got.shape != want.shape or not np.all((np.abs(g - w) <= tol) | (np.isnan(g) & np.isnan(w))):
        _differ(op, got, want, f"values differ by more than {tol}")
    return ()
