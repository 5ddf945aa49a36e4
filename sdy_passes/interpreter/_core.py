"""The interpreter's engine: evaluators found through the op table, blocks run in order,
element-type arithmetic helpers shared by the evaluator families.

An evaluator is `evaluate(op, args: list[np.ndarray], ctx: Context) -> sequence of arrays`
(one per result); it is named in its op's `OpDef.evaluator` as `"module:function"` and imported
on first use, as `pass_manager.PASSES` does.

In a lockstep run over devices (a manual computation, `sdy_passes.execute`; `ctx.devices` says
which) every value is `Shards`: its distinct buffers and which one each device holds (spec
execute.md §3.1). An ordinary op runs once per distinct combination of its operands' buffers,
and `Elementwise` ops once over all of them stacked on a leading axis; `@per_device` evaluators
(`partition_id`) run per device, their small results merged again by content; an evaluator
with a `stacked` variant (`dot_general`, `reduce`, the data-movement ops) runs once over the
stacked shards too. `@spmd` evaluators
(control flow) get the `Shards` themselves; `@collective` ones run per group of communicating
devices on per-member lists, once per distinct pattern of member buffers. `ctx.backend` runs
the evaluations: eagerly here, or as dask tasks (`interpreter.lazy`).
"""

from __future__ import annotations

import importlib
import math
import os
import re
import sys
import weakref
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from sdy_passes.attributes import OpaqueAttr, RankedTensorType, TupleType, Type
from sdy_passes.common.mesh_groups import parse_mesh_axes, replica_groups
from sdy_passes.dialects import lookup
from sdy_passes.dialects._base import has_trait
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import ExecutionError, SdyError, UnsupportedOpError, expect, shown
from sdy_passes.ir import Block, Module, Operation, Region

__all__ = ["contiguous", "Context", "Shards", "run_func", "evaluator_for", "spmd", "collective", "agreeing",
           "per_device",
           "dtype_of", "up", "down", "is_float",
           "is_int", "int_bits", "LOW_FLOATS", "fail", "region_fn", "process_groups"]

NUMERICS = ("fast", "reference")

# -- element types -------------------------------------------------------------------------------

_NARROW_INTS = {np.dtype(ml_dtypes.int4): (4, True), np.dtype(ml_dtypes.uint4): (4, False),
                np.dtype(ml_dtypes.int2): (2, True), np.dtype(ml_dtypes.uint2): (2, False)}
LOW_FLOATS = frozenset(np.dtype(t) for t in (
    np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3,
    ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e4m3b11fnuz, ml_dtypes.float8_e3m4,
    ml_dtypes.float8_e8m0fnu, ml_dtypes.float4_e2m1fn))
"""Floats computed in float32 (fast) or float64 (reference) and rounded to the type after each op."""


def is_float(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt in LOW_FLOATS


def is_int(dt: np.dtype) -> bool:
    return dt.kind in "iu" or dt in _NARROW_INTS


def is_signed(dt: np.dtype) -> bool:
    return dt.kind == "i" or _NARROW_INTS.get(dt, (0, False))[1]


def int_bits(dt: np.dtype) -> int:
    return _NARROW_INTS[dt][0] if dt in _NARROW_INTS else 8 * dt.itemsize


def up(x: np.ndarray, wide: bool = False) -> np.ndarray:
    """`x` in the dtype arithmetic runs in: low floats as float32 (float64 if `wide`), 4- and
    2-bit ints as int8/uint8; other dtypes as they are."""
    dt = x.dtype
    if dt in LOW_FLOATS:
        return x.astype(np.float64 if wide else np.float32)
    if dt in _NARROW_INTS:
        return x.astype(np.int8 if _NARROW_INTS[dt][1] else np.uint8)
    return x


def down(y: np.ndarray, dt: np.dtype) -> np.ndarray:
    """`y` (computed by `up`'s rule) rounded or wrapped to `dt`: floats round to nearest even,
    narrow ints wrap to their width as XLA does (int4 `7 + 1 = -8`)."""
    if y.dtype == dt:
        return y
    if dt in _NARROW_INTS:
        bits, signed = _NARROW_INTS[dt]
        mask = (1 << bits) - 1
        v = y.astype(np.int16) & mask
        if signed:
            v = ((v + (1 << (bits - 1))) & mask) - (1 << (bits - 1))
        return v.astype(np.int8).astype(dt)
    return y.astype(dt)


def dtype_of(t: Type, op: Operation | None = None) -> np.dtype:
    el = t.element_type if isinstance(t, RankedTensorType) else t
    dt = numpy_dtype(el)
    if dt is None:
        raise UnsupportedOpError(f"{op.name if op else 'value'}: element type '{el}' is not supported",
                                 op.location if op else None)
    return dt


def contiguous(a: np.ndarray) -> np.ndarray:
    """`a` in C order (numpy's `ascontiguousarray` turns a 0-d array into a 1-d one)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy()


def fail(op: Operation, message: str):
    raise ExecutionError(f"{op.name}: {message}", op.location)


# -- evaluators ----------------------------------------------------------------------------------

def spmd(fn):
    """Marks an evaluator that gets `Shards` in a lockstep run (control flow, regions run in lockstep)."""
    fn.spmd = True
    return fn


def collective(fn):
    """Marks a collective: in a lockstep run it gets, per operand, one array per member of a
    group of communicating devices (`ctx.devices`: the members) and returns one per member."""
    fn.collective = True
    return fn


def agreeing(fn):
    """Marks a collective whose members all receive one result (`all_reduce`, `all_gather`): the
    lazy engine holds it once per group, as the eager one does."""
    fn.agreeing = True
    return fn


def per_device(fn):
    """Marks an evaluator whose result depends on the device (`ctx.device`), not only its operands."""
    fn.per_device = True
    return fn


class Shards:
    """One value on every device of a lockstep run: `buffers`, the distinct arrays (or lazy
    ones), and `index`, per device position, the buffer that device holds (§3.1)."""

    __slots__ = ("buffers", "index")

    def __init__(self, buffers: list, index: np.ndarray):
        self.buffers = buffers
        self.index = index

    @classmethod
    def from_list(cls, per_device: list) -> Shards:
        """From one array per device; the same object on several devices is one buffer."""
        where: dict = {}
        buffers = []
        index = np.empty(len(per_device), np.int64)
        for i, b in enumerate(per_device):
            k = where.get(id(b))
            if k is None:
                k = where[id(b)] = len(buffers)
                buffers.append(b)
            index[i] = k
        return cls(buffers, index)

    def per_device(self) -> list:
        b = self.buffers
        return [b[i] for i in self.index.tolist()]

    def take(self, positions) -> Shards:
        """The value on the device positions `positions` only."""
        used, index = np.unique(self.index[positions], return_inverse=True)
        return Shards([self.buffers[i] for i in used.tolist()], index.reshape(-1))

    @staticmethod
    def merge(parts, n: int) -> Shards:
        """One value from `(positions, Shards)` parts covering the `n` device positions."""
        buffers, index = [], np.empty(n, np.int64)
        for positions, s in parts:
            index[positions] = s.index + len(buffers)
            buffers.extend(s.buffers)
        return Shards(buffers, index)


_LOADED: dict[str, object] = {}


def evaluator_for(op: Operation):
    opdef = lookup(op.name)
    name = opdef.evaluator if opdef is not None else None
    if name is None:
        raise UnsupportedOpError(f"{op.name}: no evaluator for this op", op.location)
    fn = _LOADED.get(name)
    if fn is None:
        module, _, attr = name.partition(":")
        fn = _LOADED[name] = getattr(importlib.import_module(module), attr)
    return fn


# -- running blocks ------------------------------------------------------------------------------

_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 40


MEMORY_BYTES = _memory_bytes()
"""Results larger than the machine's memory are refused before anything is allocated."""


def _check_size(op: Operation) -> None:
    for i, r in enumerate(op.results):
        t = r.type
        if isinstance(t, RankedTensorType) and None not in t.shape:
            dt = numpy_dtype(t.element_type)
            size = math.prod(t.shape) * (dt.itemsize if dt is not None else 1)
            if size > MEMORY_BYTES:
                raise ExecutionError(f"{op.name}: result #{i} of type '{t}' needs {size / 2 ** 30:.1f} GiB, "
                                     f"more than this machine's {MEMORY_BYTES / 2 ** 30:.1f} GiB", op.location)


def _plan(block: Block) -> tuple[list, Operation]:
    """The block's steps `(evaluator, op, operands, results)` and its terminator, made once."""
    plan = _PLANS.get(block)
    if plan is None:
        ops = block.ops
        if not ops:
            raise ExecutionError("a block without a terminator")
        for op in ops:
            _check_size(op)
        dead = _last_uses(block)
        steps = []
        for i, op in enumerate(ops[:-1]):
            fn = evaluator_for(op)
            steps.append((fn, op, tuple(op._operands), tuple(op.results), dead[i], _stacked(fn, op)))
        plan = _PLANS[block] = (steps, ops[-1])
    return plan


def _stacked(fn, op: Operation):
    """The evaluator of the op over shards stacked on a new leading axis, or None: its `stacked`
    variant, or the evaluator itself for an `Elementwise` op whose operands have its result's
    shape, with scalar operands (`clamp`'s bounds) stacked as `(k, 1, ...)` to broadcast."""
    variant = getattr(fn, "stacked", None)
    if variant is not None or not has_trait(op, "Elementwise"):
        return variant
    shapes = [tuple(v.type.shape) if isinstance(v.type, RankedTensorType) else None
              for v in (*op.results, *op._operands)]
    shape = shapes[0]
    if shape is None or None in shape or any(s != shape and s != () for s in shapes):
        return None
    scalars = [i for i, s in enumerate(shapes[len(op.results):]) if s != shape]
    if not scalars:
        return fn
    ones = (1,) * len(shape)

    def broadcasting(op, args, ctx):
        args = list(args)
        for i in scalars:
            args[i] = args[i].reshape(args[i].shape[:1] + ones)
        return fn(op, args, ctx)
    return broadcasting


def _last_uses(block: Block) -> list[tuple]:
    """Per op of the block: the block's values (arguments, results) whose last use it is, counting
    uses inside its regions; values the terminator returns or nothing uses stay (results of an op
    nothing uses are dropped after it). Freed after the op, so results die after their last use."""
    ops = block.ops
    last: dict = {}
    for i, op in enumerate(ops):
        for inner in op.walk():
            for v in inner._operands:
                last[v] = i
    dead: list[list] = [[] for _ in ops]
    for v, i in last.items():
        if i < len(ops) - 1 and _defined_in(v, block):
            dead[i].append(v)
    for i, op in enumerate(ops[:-1]):
        dead[i] += [r for r in op.results if r not in last]
    return [tuple(d) for d in dead]


def _defined_in(v, block: Block) -> bool:
    owner = getattr(v, "owner", None)
    return owner is block or (isinstance(owner, Operation) and owner.parent is block)


class Eager:
    """Evaluations run at once on numpy buffers."""

    @staticmethod
    def evaluate(fn, op, combos, devices, ctx, stacked) -> list:
        """Per result, the buffer of each combination of operands (`stacked`: the evaluator that
        runs once over them all on a leading axis, or None)."""
        saved = ctx.devices
        ctx.devices = None
        try:
            if stacked is not None:
                ctx.device = devices[0]
                outs = stacked(op, [_stack(col) for col in zip(*combos)], ctx)
                return [[o[i, ...] for i in range(len(combos))] for o in outs]
            per = []
            for args, d in zip(combos, devices):
                ctx.device = d
                per.append(fn(op, args, ctx))
            return [[o[k] for o in per] for k in range(len(op.results))]
        finally:
            ctx.devices, ctx.device = saved, 0

    @staticmethod
    def communicate(fn, op, members, devices, ctx) -> list:
        """Per result, per member of the group `devices`, the collective's buffer."""
        saved = ctx.devices
        ctx.devices = devices
        try:
            return fn(op, members, ctx)
        finally:
            ctx.devices = saved

    @staticmethod
    def merge_small(s: Shards, t) -> Shards:
        return merged(s, s.buffers) if small(t) else s

    @staticmethod
    def concrete(buffers) -> list:
        return [np.asarray(b) for b in buffers]


EAGER = Eager()


def _stack(buffers) -> np.ndarray:
    """The buffers on a new leading axis, as a read-only view where they allow one (stacked
    evaluators never write into their operands): one buffer every combination shares, or the
    rows of one array in order (the results of the op before, run stacked); else a copy."""
    first = np.asarray(buffers[0])
    if all(b is buffers[0] for b in buffers):
        return np.broadcast_to(first, (len(buffers),) + first.shape)
    owner = first.base
    if owner is not None and len(buffers) > 1 and all(
            isinstance(b, np.ndarray) and b.base is owner and b.dtype == first.dtype and b.shape == first.shape
            and b.strides == first.strides for b in buffers):
        starts = [b.__array_interface__["data"][0] for b in buffers]
        step = starts[1] - starts[0]
        if step > 0 and all(b - a == step for a, b in zip(starts, starts[1:])):
            return np.lib.stride_tricks.as_strided(first, (len(buffers),) + first.shape, (step,) + first.strides,
                                                   writeable=False)
    return np.stack(buffers)


@dataclass(eq=False)
class Context:
    """What evaluators see besides their operands."""

    module: Module
    numerics: str = "fast"
    device: int = 0
    """The device (partition id) an op runs on; 0 outside manual computations."""
    devices: tuple[int, ...] | None = None
    """Inside a manual computation: the device ids the lockstep run covers (in order)."""
    num_partitions: int | None = None
    """Inside `interpreter.run_parallel`: partitions per replica (position i of `devices` is
    replica i // n, partition i % n); None: every device is a partition of replica 0."""
    backend: object = EAGER
    """How lockstep evaluations run (`Eager`, or `interpreter.lazy.Lazy`)."""
    kept: dict | None = None
    """With `execute(keep_values=True)`: every value of a lockstep run, as `Shards` (the last
    iteration's inside loops)."""
    mesh_device_ids: tuple[int, ...] = ()
    mesh: object = None
    """`interpret(mesh=...)`: the `sharding.Mesh` manual computations run on (the module's axes,
    in this device order)."""
    """Every device of the lockstep run (`devices` may be a group on its own control path)."""
    partitioned: bool = False
    """A partitioned run (`sdy_passes.execute`): devices must agree on control flow."""
    env: dict = field(default_factory=dict)
    stack: list = field(default_factory=list)
    symbols: dict = field(default_factory=dict)

    @property
    def reference(self) -> bool:
        return self.numerics == "reference"

    def lookup_func(self, name: str, op: Operation) -> Operation:
        f = self.symbols.get(name)
        if f is None:
            f = self.symbols[name] = self.module.lookup_symbol(name)
        if f is None or f.name != "func.func" or not f.regions or not f.regions[0].blocks:
            fail(op, f"no function @{name} with a body to call")
        return f

    def run_region(self, region: Region, args, op: Operation | None = None) -> list:
        """Runs the region's block on `args`; the values its terminator returns."""
        block = region.blocks[0] if region.blocks else None
        if block is None:
            fail(op, "empty region")
        if len(block.arguments) != len(args):
            fail(op, f"region takes {len(block.arguments)} arguments, given {len(args)}")
        return self.run_block(block, args)

    def run_block(self, block: Block, args) -> list:
        steps, term = _plan(block)
        env = self.env
        for a, v in zip(block.arguments, args):
            env[a] = v
        if self.devices is not None:
            if self.kept is not None:
                self.kept.update(zip(block.arguments, args))
            return _run_lockstep(self, steps, term, env)
        op = None
        try:
            for fn, op, operands, results, dead, _ in steps:
                vals = fn(op, [env[v] for v in operands], self)
                for r, v in zip(results, vals):
                    env[r] = v
                for v in dead:
                    del env[v]
            return [env[v] for v in term._operands]
        except SdyError:
            raise
        except _FOREIGN as e:  # an op the verifier let through that its evaluator cannot run
            raise _located(op or term, e) from None  # (the message names the cause)

    def call(self, func: Operation, args, op: Operation | None = None) -> list:
        if func in self.stack:
            fail(op or func, f"recursive call of @{func.properties['sym_name'].value}")
        self.stack.append(func)
        outer, self.env = self.env, {}
        try:
            return self.run_block(func.regions[0].blocks[0], args)
        except RecursionError:  # (the innermost call that fits refuses, at its op)
            at = op or func
            raise ExecutionError(f"{at.name}: calls nested {len(self.stack)} deep: more than Python's stack holds",
                                 at.location) from None
        finally:
            self.env = outer
            self.stack.pop()


def _run_lockstep(ctx: Context, steps, term, env) -> list:
    """Every device of `ctx.devices` at once: every value is `Shards`."""
    op = None
    try:
        for fn, op, operands, results, dead, stacked in steps:
            args = [env[v] for v in operands]
            if getattr(fn, "spmd", False):
                outs = fn(op, args, ctx)
            elif getattr(fn, "collective", False):
                outs = _run_collective(fn, op, args, ctx)
            else:
                outs = _run_distinct(fn, op, args, ctx, stacked)
            for r, v in zip(results, outs):
                env[r] = v
            if ctx.kept is not None:
                ctx.kept.update(zip(results, outs))
            for v in dead:
                del env[v]
        return [env[v] for v in term._operands]
    except SdyError:
        raise
    except _FOREIGN as e:
        raise _located(op or term, e) from None  # (the message names the cause)


_SMALL = 64
"""Results of at most this many elements are merged by content (offsets from `partition_id`)."""


def small(t) -> bool:
    """A static tensor type of at most `_SMALL` elements."""
    return isinstance(t, RankedTensorType) and None not in t.shape and math.prod(t.shape) <= _SMALL


def merged(s: Shards, arrays) -> Shards:
    """`s` with buffers of equal contents (`arrays`: each buffer's value) held once."""
    where: dict = {}
    remap = []
    buffers = []
    for b, a in zip(s.buffers, arrays):
        a = np.asarray(a)
        k = where.setdefault((a.dtype.str, a.shape, a.tobytes()), len(buffers))
        if k == len(buffers):
            buffers.append(b)
        remap.append(k)
    return s if len(buffers) == len(s.buffers) else Shards(buffers, np.asarray(remap, np.int64)[s.index])


def _run_distinct(fn, op, args, ctx, stacked) -> list:
    """The op once per distinct combination of its operands' buffers (per device if `@per_device`)."""
    n = len(ctx.devices)
    if getattr(fn, "per_device", False):
        first, inverse = np.arange(n), np.arange(n)
    elif all(len(a.buffers) == 1 for a in args):
        first, inverse = np.zeros(1, np.int64), np.zeros(n, np.int64)
    else:
        if math.prod(len(a.buffers) for a in args) < 2 ** 62:
            key = np.zeros(n, np.int64)
            for a in args:
                key = key * len(a.buffers) + a.index
        else:
            key = np.stack([a.index for a in args], axis=1)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True, axis=0)
        inverse = inverse.reshape(-1)
    first = first.tolist()
    combos = [[a.buffers[a.index[f]] for a in args] for f in first]
    devices = [ctx.devices[f] for f in first]
    per_result = ctx.backend.evaluate(fn, op, combos, devices, ctx, stacked if len(combos) > 1 else None)
    outs = []
    for r, buffers in zip(op.results, per_result):
        s = Shards(buffers, inverse)
        if len(buffers) > 1:
            s = ctx.backend.merge_small(s, r.type)
        outs.append(s)
    return outs


_PER_PARTITION_GROUPS = frozenset({"stablehlo.all_to_all", "stablehlo.collective_permute",
                                   "stablehlo.collective_broadcast"})
"""Collectives whose groups (or pairs) are partition ids when they have a channel (StableHLO's
`cross_partition`), replica ids without one (`cross_replica`)."""


def process_groups(op, ctx, groups: np.ndarray) -> np.ndarray:
    """StableHLO's process groups (spec "Collective ops") of `groups` as flattened ids
    (`replica * num_partitions + partition`) over `run_parallel`'s replicas and partitions.
    Empty groups mean one group of every replica (or partition)."""
    p = ctx.num_partitions
    r = len(ctx.mesh_device_ids or ctx.devices) // p
    handle = op.properties.get("channel_handle")
    match = re.search(r"handle\s*=\s*(-?\d+)", str(getattr(handle, "text", ""))) if handle is not None else None
    channel = match is not None and int(match.group(1)) > 0
    if op.properties.get("use_global_device_ids") is not None:
        return groups  # flattened_ids
    members = p if channel and op.name in _PER_PARTITION_GROUPS else r
    if groups.size == 0:
        groups = np.arange(members)[None, :]
    if np.any(groups >= members):
        fail(op, f"groups {groups.tolist()} name ids outside the {members} "
             f"{'partitions' if members == p and channel else 'replicas'}")
    if op.name in _PER_PARTITION_GROUPS:
        if channel:  # cross_partition
            return np.concatenate([np.where(groups >= 0, rep * p + groups, -1) for rep in range(r)])
        return np.concatenate([np.where(groups >= 0, groups * p + part, -1) for part in range(p)])  # cross_replica
    if channel:  # cross_replica_and_partition
        return np.stack([np.array([rep * p + part for part in range(p) for rep in g if rep >= 0])
                         for g in groups.tolist()])
    return np.stack([np.where(g >= 0, g * p + part, -1) for g in groups for part in range(p)])  # cross_replica


def _replica_groups(op, ctx) -> np.ndarray:
    a = op.properties.get("replica_groups")
    if isinstance(a, OpaqueAttr):  # ReplicaGroupV3: the groups along mesh axes
        found = parse_mesh_axes(a.text, lambda name: _mesh_symbol(ctx, name))
        if found is None:
            fail(op, f"cannot read replica_groups {a.text}")
        return replica_groups(*found)
    return a.to_numpy() if a is not None else np.zeros((0, 0), np.int64)


def _mesh_symbol(ctx, name):
    sym = ctx.module.lookup_symbol(name)
    return sym.properties["mesh"] if sym is not None and sym.name == "sdy.mesh" else None


def _comm_groups(op, ctx) -> list[tuple[list[int], tuple]]:
    """The groups of device positions a collective connects, each with its shape: replica
    groups (all devices if none) in their order, or the components of a permute's
    source-target pairs with the pairs relative to the component. Groups wholly outside
    `ctx.devices` (devices on another control path of a manual computation) are left out."""
    devices = ctx.devices
    where = {d: i for i, d in enumerate(devices)}
    pairs = op.properties.get("source_target_pairs")
    g = pairs.to_numpy().reshape(-1, 2) if pairs is not None else _replica_groups(op, ctx)
    if ctx.num_partitions is not None:  # replicas and partitions of `run_parallel`
        g = process_groups(op, ctx, g)
    if pairs is not None:
        groups = g.tolist()
    else:
        groups = [[x for x in row if x >= 0] for row in g.tolist()] if g.size else [list(devices)]
    mesh = set(ctx.mesh_device_ids or devices)
    inside, seen = [], set()
    for g in groups:
        if any(x not in mesh for x in g) or (pairs is None and (len(set(g)) < len(g) or seen & set(g))):
            fail(op, f"{'source-target pair' if pairs is not None else 'replica group'} {g} names a device "
                     "twice or one outside the mesh")
        seen.update(g)
        here = [x in where for x in g]
        if any(here) and not all(here):
            fail(op, f"divergent control flow: devices {{{', '.join(str(x) for x in g if x not in where)}}} of "
                     f"{'source-target pair' if pairs is not None else 'replica group'} {g} take another path")
        if all(here):
            inside.append([where[x] for x in g])
    if pairs is None:
        missing = [d for d in devices if d not in seen]
        if missing:
            fail(op, "replica groups do not cover devices {" + ", ".join(map(str, missing)) + "}")
        return [(g, ()) for g in inside]
    parent = list(range(len(devices)))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for s, t in inside:
        parent[root(s)] = root(t)
    members: dict = {}
    for i in range(len(devices)):
        members.setdefault(root(i), []).append(i)
    rel = {i: j for g in members.values() for j, i in enumerate(g)}
    shape: dict = {}
    for s, t in inside:
        shape.setdefault(root(s), []).append((rel[s], rel[t]))
    return [(g, tuple(shape.get(r, ()))) for r, g in members.items()]


def _run_collective(fn, op, args, ctx) -> list:
    """The collective once per group, and once for every group whose members hold the same
    buffers in the same pattern."""
    n = len(ctx.devices)
    outs = [[None] * n for _ in op.results]
    done: dict = {}
    for g, shape in _comm_groups(op, ctx):
        key = (shape, tuple(tuple(a.index[g].tolist()) for a in args))
        got = done.get(key)
        if got is None:
            members = [[a.buffers[i] for i in a.index[g].tolist()] for a in args]
            got = done[key] = ctx.backend.communicate(fn, op, members, tuple(ctx.devices[i] for i in g), ctx)
        for k, per_member in enumerate(got):
            for j, i in enumerate(g):
                outs[k][i] = per_member[j]
    return [Shards.from_list(o) for o in outs]


_FOREIGN = (ValueError, IndexError, TypeError, KeyError, AttributeError, ZeroDivisionError, OverflowError,
            MemoryError, np.linalg.LinAlgError)


def _located(op: Operation, e: Exception) -> ExecutionError:
    if isinstance(e, KeyError):
        return ExecutionError(f"{op.name}: an operand has no value (defined later or in another region)",
                              op.location)
    return ExecutionError(f"{op.name}: cannot evaluate: {type(e).__name__}: {e}", op.location)


def region_fn(ctx: Context, region: Region, op: Operation):
    """The region as a function of arrays (for reduce bodies, comparators)."""
    return lambda *args: ctx.run_region(region, args, op)


# -- functions -----------------------------------------------------------------------------------

def _check_arg(i: int, x, t: Type, func: str) -> np.ndarray:
    if isinstance(t, TupleType) or not isinstance(t, RankedTensorType) or None in t.shape:
        raise UnsupportedOpError(f"@{func}: argument #{i} has type '{t}', which the interpreter cannot take")
    want = numpy_dtype(t.element_type)
    simulate = sys.modules.get("sharding.simulate")  # loaded if x is a ShardedArray (xarray is slow to import)
    if simulate is not None and isinstance(x, simulate.ShardedArray):
        x = np.asarray(simulate.DeviceMesh(x.mesh).unshard(x))  # its global value
    arr = x
    if isinstance(arr, (bool, int, float, complex)) and not t.shape:
        if want is None:
            raise UnsupportedOpError(f"@{func}: argument #{i}: element type '{t.element_type}' is not supported")
        with np.errstate(all="ignore"):
            a = np.array(arr)
        if (is_int(want) and not isinstance(arr, (bool, int))) or (want == np.bool_ and not isinstance(arr, bool)):
            raise ExecutionError(f"@{func}: argument #{i}: expected '{t}', found Python {type(arr).__name__} {shown(arr)}")
        if is_int(want) and not isinstance(arr, bool):
            info = ml_dtypes.iinfo(want)
            if not info.min <= arr <= info.max:
                raise ExecutionError(f"@{func}: argument #{i}: expected '{t}', found {shown(arr)} (out of range)")
        return a.astype(want)
    if not isinstance(arr, np.ndarray):
        if isinstance(arr, np.generic):
            arr = np.asarray(arr)
        else:
            raise ExecutionError(f"@{func}: argument #{i}: expected a numpy array of type '{t}', "
                                 f"found {type(x).__name__}")
    found = f"{arr.dtype.name}{list(arr.shape)}"
    if want is None:
        raise UnsupportedOpError(f"@{func}: argument #{i}: element type '{t.element_type}' is not supported")
    if arr.dtype.newbyteorder("=") != want or tuple(arr.shape) != tuple(t.shape):
        raise ExecutionError(f"@{func}: argument #{i}: expected '{t}' ({want.name}{list(t.shape)}), "
                             f"found {found}")
    return np.array(arr, dtype=want)  # a copy: evaluators may not write into the caller's arrays


def run_func(module: Module, args, func: str, numerics: str, mesh=None) -> tuple:
    if numerics not in NUMERICS:
        raise ExecutionError(f"numerics must be one of {', '.join(map(repr, NUMERICS))}, found {shown(numerics)}")
    f = module.lookup_symbol(expect(func, (str,), "a function name (str)", "func", ExecutionError))
    if f is None or f.name != "func.func":
        names = [op.properties["sym_name"].value for op in module.ops if op.name == "func.func"]
        raise ExecutionError(f"no function @{func} in the module (functions: {', '.join(names) or 'none'})")
    if not f.regions or not f.regions[0].blocks:
        raise ExecutionError(f"@{func} is a declaration without a body", f.location)
    ft = f.properties["function_type"].type
    if len(args) != len(ft.inputs):
        raise ExecutionError(f"@{func} takes {len(ft.inputs)} arguments ("
                             + ", ".join(map(str, ft.inputs)) + f"), found {len(args)}", f.location)
    checked = [_check_arg(i, x, t, func) for i, (x, t) in enumerate(zip(args, ft.inputs))]
    ctx = Context(module, numerics, mesh=mesh)
    with np.errstate(all="ignore"):
        outs = ctx.call(f, checked)
    return tuple(np.asarray(o) for o in outs)
