"""The interpreter's engine: evaluators found through the op table, blocks run in order,
element-type arithmetic helpers shared by the evaluator families.

An evaluator is `evaluate(op, args: list[np.ndarray], ctx: Context) -> sequence of arrays`
(one per result); it is named in its op's `OpDef.evaluator` as `"module:function"` and imported
on first use, as `pass_manager.PASSES` does. Evaluators marked `@spmd` (the collectives) get, in a
manual computation, one argument list per device instead (`ctx.devices` says which).
"""

from __future__ import annotations

import importlib
import math
import os
import sys
import weakref
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from sdy_passes.attributes import RankedTensorType, TupleType, Type
from sdy_passes.dialects import lookup
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import ExecutionError, SdyError, UnsupportedOpError
from sdy_passes.ir import Block, Module, Operation, Region

__all__ = ["contiguous", "Context", "run_func", "evaluator_for", "spmd", "dtype_of", "up", "down", "is_float",
           "is_int", "int_bits", "LOW_FLOATS", "fail", "region_fn"]

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
    """Marks an evaluator that sees every device's operands at once (a collective)."""
    fn.spmd = True
    return fn


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
        steps = [(evaluator_for(op), op, tuple(op._operands), tuple(op.results), dead[i])
                 for i, op in enumerate(ops[:-1])]
        plan = _PLANS[block] = (steps, ops[-1])
    return plan


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
    mesh_device_ids: tuple[int, ...] = ()
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
            return _run_spmd(self, steps, term, env)
        op = None
        try:
            for fn, op, operands, results, dead in steps:
                vals = fn(op, [env[v] for v in operands], self)
                for r, v in zip(results, vals):
                    env[r] = v
                for v in dead:
                    del env[v]
            return [env[v] for v in term._operands]
        except SdyError:
            raise
        except _FOREIGN as e:  # an op the verifier let through that its evaluator cannot run
            raise _located(op or term, e) from e

    def call(self, func: Operation, args, op: Operation | None = None) -> list:
        if func in self.stack:
            fail(op or func, f"recursive call of @{func.properties['sym_name'].value}")
        self.stack.append(func)
        outer, self.env = self.env, {}
        try:
            return self.run_block(func.regions[0].blocks[0], args)
        finally:
            self.env = outer
            self.stack.pop()


def _run_spmd(ctx: Context, steps, term, env) -> list:
    """Lockstep over `ctx.devices`: every value is a list (one array per device)."""
    devices = ctx.devices
    op = None
    try:
        for fn, op, operands, results, dead in steps:
            args = [env[v] for v in operands]
            if getattr(fn, "spmd", False):
                per_result = fn(op, args, ctx)
            else:
                outs = []
                ctx.devices = None
                try:
                    for i, d in enumerate(devices):
                        ctx.device = d
                        outs.append(fn(op, [a[i] for a in args], ctx))
                finally:
                    ctx.devices = devices
                per_result = [[o[k] for o in outs] for k in range(len(results))]
            for r, v in zip(results, per_result):
                env[r] = v
            for v in dead:
                del env[v]
        return [env[v] for v in term._operands]
    except SdyError:
        raise
    except _FOREIGN as e:
        raise _located(op or term, e) from e


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
            raise ExecutionError(f"@{func}: argument #{i}: expected '{t}', found Python {type(arr).__name__} {arr!r}")
        if is_int(want) and not isinstance(arr, bool):
            info = ml_dtypes.iinfo(want)
            if not info.min <= arr <= info.max:
                raise ExecutionError(f"@{func}: argument #{i}: expected '{t}', found {arr} (out of range)")
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


def run_func(module: Module, args, func: str, numerics: str) -> tuple:
    if numerics not in NUMERICS:
        raise ExecutionError(f"numerics must be one of {', '.join(map(repr, NUMERICS))}, found {numerics!r}")
    f = module.lookup_symbol(func)
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
    ctx = Context(module, numerics)
    with np.errstate(all="ignore"):
        outs = ctx.call(f, checked)
    return tuple(np.asarray(o) for o in outs)
