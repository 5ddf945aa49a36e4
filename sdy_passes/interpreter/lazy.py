"""Lazy lockstep evaluation on dask (spec execute.md §3.4, §9.2): every distinct shard of every
op is one task (`dask.delayed` of the same evaluator the eager engine runs, so the buffers are
bit-identical), every group of a collective one task over its members' buffers. Control flow
computes its predicates (scalars) when it reaches them; nothing else computes until asked.
"""

from __future__ import annotations

import importlib
from functools import partial

import numpy as np

from sdy_passes.errors import ExecutionError, SdyError
from sdy_passes.interpreter._core import _FOREIGN, Context, Shards, _located

__all__ = ["Lazy"]


def _evaluate(fn, op, module, numerics, device, *args):
    ctx = Context(module, numerics, device=device)
    try:
        with np.errstate(all="ignore"):
            return tuple(fn(op, list(args), ctx))
    except SdyError:
        raise
    except _FOREIGN as e:
        raise _located(op, e) from e


def _communicate(fn, op, module, numerics, devices, n_args, *flat):
    n = len(devices)
    ctx = Context(module, numerics, devices=devices, partitioned=True)
    try:
        with np.errstate(all="ignore"):
            return tuple(tuple(r) for r in fn(op, [list(flat[i * n:(i + 1) * n]) for i in range(n_args)], ctx))
    except SdyError:
        raise
    except _FOREIGN as e:
        raise _located(op, e) from e


class Lazy:
    """Evaluations as dask tasks (`Delayed` buffers); `tasks` counts them and refuses more than
    `max_tasks`."""

    def __init__(self, max_tasks: int):
        try:
            self.dask = importlib.import_module("dask")
        except ImportError:
            raise ExecutionError("backend='dask' needs dask: pip install 'layout-toolkit[dask]'") from None
        self.max_tasks = max_tasks
        self.tasks = 0

    def _count(self, n: int, op) -> None:
        self.tasks += n
        if self.tasks > self.max_tasks:
            raise ExecutionError(f"{op.name}: the task graph grows past max_tasks={self.max_tasks:,} "
                                 f"({self.tasks:,} tasks so far)", op.location)

    def evaluate(self, fn, op, combos, devices, ctx, stacked) -> list:
        outs = [[] for _ in op.results]
        for args, d in zip(combos, devices):
            # the IR goes in a partial: dask would walk dataclass arguments
            t = self.dask.delayed(partial(_evaluate, fn, op, ctx.module, ctx.numerics, d), pure=False,
                                  nout=len(op.results))(*args)
            for k in range(len(op.results)):
                outs[k].append(t[k])
        self._count(len(combos) * (1 + len(op.results)), op)
        return outs

    def communicate(self, fn, op, members, devices, ctx) -> list:
        t = self.dask.delayed(partial(_communicate, fn, op, ctx.module, ctx.numerics, devices, len(members)),
                              pure=False)(*(b for m in members for b in m))
        self._count(1 + len(op.results) * (1 + len(devices)), op)
        return [[t[k][j] for j in range(len(devices))] for k in range(len(op.results))]

    @staticmethod
    def merge_small(s: Shards, t) -> Shards:
        """Unchanged: merging by content would compute the values."""
        return s

    def concrete(self, buffers) -> list:
        return [np.asarray(b) for b in self.dask.compute(*buffers, scheduler="threads")]
