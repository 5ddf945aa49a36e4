"""Lazy lockstep evaluation on dask (spec execute.md §3.4, §9.2): every distinct shard of every
op is one task running the evaluator the eager engine runs (so the buffers are bit-identical),
every group of a collective one task over its members' buffers. The graph is one dict built as
the program runs (no per-task collection objects: 4096 devices make millions of tasks). Control
flow computes its predicates (scalars) when it reaches them; nothing else computes until asked.
Small values of known operands (`partition_id` and the offsets computed from it) are computed as
the graph is built and merged by content as the eager engine merges them, so the values they
select stay one task per distinct shard, not one per device.
"""

from __future__ import annotations

import importlib
import itertools
from functools import partial
from operator import getitem

import numpy as np

from sdy_passes.errors import ExecutionError, SdyError
from sdy_passes.interpreter._core import _FOREIGN, _SMALL, Context, Shards, _located, merged, small

__all__ = ["Lazy", "Key"]


class Key:
    """A buffer of the lazy engine: the key of its task in `Lazy.graph`, with its `value` when
    it is small and known while the graph is built."""

    __slots__ = ("key", "value")

    def __init__(self, key, value=None):
        self.key = key
        self.value = value


def _evaluate(fn, op, module, numerics, device, single, *args):
    ctx = Context(module, numerics, device=device)
    try:
        with np.errstate(all="ignore"):
            out = tuple(fn(op, list(args), ctx))
    except SdyError:
        raise
    except _FOREIGN as e:
        raise _located(op, e) from None  # (the message names the cause)
    return out[0] if single else out


def _communicate(fn, op, module, numerics, devices, n_args, *flat):
    n = len(devices)
    ctx = Context(module, numerics, devices=devices, partitioned=True)
    try:
        with np.errstate(all="ignore"):
            return tuple(tuple(r) for r in fn(op, [list(flat[i * n:(i + 1) * n]) for i in range(n_args)], ctx))
    except SdyError:
        raise
    except _FOREIGN as e:
        raise _located(op, e) from None  # (the message names the cause)


def _expand(buffer, ndim):
    """A device's buffer as one chunk of the `(pieces..., local...)` array."""
    return np.asarray(buffer)[(None,) * ndim]


class Lazy:
    """Evaluations as tasks of one dask graph (`graph`); refuses to grow it past `max_tasks`."""

    def __init__(self, max_tasks: int):
        try:
            self.dask = importlib.import_module("dask")
            self.array = importlib.import_module("dask.array")
            self.optimization = importlib.import_module("dask.optimization")
            self.threaded = importlib.import_module("dask.threaded")
        except ImportError:
            raise ExecutionError("backend='dask' needs dask: pip install 'layout-toolkit[dask]'") from None
        self.max_tasks = max_tasks
        self.graph: dict = {}
        self._names = itertools.count()

    def _name(self, what: str) -> str:
        return f"sdy-{what}-{next(self._names)}"

    def _check(self, op) -> None:
        if len(self.graph) > self.max_tasks:
            raise ExecutionError(f"{op.name}: the task graph grows past max_tasks={self.max_tasks:,} "
                                 f"({len(self.graph):,} tasks so far)", op.location)

    def inputs(self, data, positions) -> list:
        """The buffers at `positions` of a `(pieces..., local...)` array (numpy, or dask with one
        chunk per position)."""
        if not type(data).__module__.startswith("dask."):
            name = self._name("input")
            out = []
            for i, pos in enumerate(positions):
                v = self.graph[(name, i)] = np.asarray(data[pos])
                out.append(Key((name, i), v if v.size <= _SMALL else None))
            return out
        npieces = len(positions[0])
        data = data.rechunk((1,) * npieces + data.shape[npieces:])
        self.graph.update(data.__dask_graph__())
        keys = np.empty(data.numblocks, object)
        for pos in np.ndindex(data.numblocks):
            keys[pos] = (data.name, *pos)
        name = self._name("input")
        out = []
        for i, pos in enumerate(positions):
            local = (slice(None),) * (data.ndim - npieces)
            self.graph[(name, i)] = (getitem, keys[tuple(pos) + (0,) * (data.ndim - npieces)],
                                     (0,) * npieces + local)
            out.append(Key((name, i)))
        return out

    def evaluate(self, fn, op, combos, devices, ctx, stacked) -> list:
        name = self._name(op.name.rsplit(".", 1)[-1])
        single = len(op.results) == 1
        known = all(small(r.type) for r in op.results)
        outs = [[] for _ in op.results]
        for i, (args, d) in enumerate(zip(combos, devices)):
            key = (name, i)
            if known and all(a.value is not None for a in args):
                values = _evaluate(fn, op, ctx.module, ctx.numerics, d, False, *(a.value for a in args))
                for k, v in enumerate(values):
                    v = self.graph[key + (k,)] = np.asarray(v)
                    outs[k].append(Key(key + (k,), v))
                continue
            self.graph[key] = (partial(_evaluate, fn, op, ctx.module, ctx.numerics, d, single),
                               *(a.key for a in args))
            if single:
                outs[0].append(Key(key))
                continue
            for k in range(len(op.results)):
                self.graph[(name, i, k)] = (getitem, key, k)
                outs[k].append(Key((name, i, k)))
        self._check(op)
        return outs

    def communicate(self, fn, op, members, devices, ctx) -> list:
        name = self._name(op.name.rsplit(".", 1)[-1])
        self.graph[name] = (partial(_communicate, fn, op, ctx.module, ctx.numerics, devices, len(members)),
                            *(b.key for m in members for b in m))
        outs = []
        for k in range(len(op.results)):
            per_member = []
            for j in range(len(devices)):
                if j and getattr(fn, "agreeing", False):  # every member's result is the first's
                    per_member.append(per_member[0])
                    continue
                self.graph[(name, k, j)] = (getitem, (getitem, name, k), j)
                per_member.append(Key((name, k, j)))
            outs.append(per_member)
        self._check(op)
        return outs

    @staticmethod
    def merge_small(s: Shards, t) -> Shards:
        """Known values merged by content; the others unchanged (merging them would compute them)."""
        values = [b.value for b in s.buffers]
        return merged(s, values) if small(t) and all(v is not None for v in values) else s

    def concrete(self, buffers) -> list:
        if all(b.value is not None for b in buffers):
            return [b.value for b in buffers]
        keys = [b.key for b in buffers]
        graph, _ = self.optimization.cull(self.graph, keys)
        return [np.asarray(v) for v in self.threaded.get(graph, keys)]

    def array_of(self, keys: np.ndarray, local: tuple, dtype):
        """A dask array `(pieces..., local...)` whose chunk at each piece position is the buffer
        `keys[pos]` (one chunk per device; replicas are aliases of one task)."""
        name = self._name("output")
        npieces = keys.ndim
        graph = dict(self.graph)
        for pos in np.ndindex(keys.shape):
            graph[(name, *pos) + (0,) * len(local)] = (_expand, keys[pos].key, npieces)
        chunks = tuple((1,) * n for n in keys.shape) + tuple((n,) for n in local)
        return self.array.Array(graph, name, chunks, dtype=dtype)
