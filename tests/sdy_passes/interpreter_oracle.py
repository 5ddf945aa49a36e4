"""JAX's results and the StableHLO reference interpreter's, for the interpreter tests.

`corpus_results(seeds)` runs, in jaxlib children (cached like the corpus), every program of
`jax_corpus.PROGRAMS` and `propagation_jax.EXTRA_PROGRAMS` on inputs drawn as
`../shared/oracle/jax_execute.py` draws them (floats normal, signed ints in [-20, 20], unsigned in
[0, 40], uint32 full range, bools, 4-bit ints over their range, complex normal), once per seed:
the lowered text, the inputs, JAX's outputs, and jaxlib's `stablehlo.eval_module` outputs on the
same module with shardings dropped (None where the reference interpreter cannot run it: chlo,
custom_call, rng_bit_generator, manual computations, or an abort such as SIGFPE on an integer
division by zero). `compare` is spec execute.md §7.
"""

from __future__ import annotations

import base64

import ml_dtypes
import numpy as np

from sdy_passes import parse_attribute
from tests.jaxlib_child import cached, run_child_items
from tests.sdy_passes.jax_corpus import CHILD_PRELUDE

_CODE = CHILD_PRELUDE + r"""
import base64, zlib, ml_dtypes
from jax._src.lib.mlir import passmanager
from jaxlib.mlir.dialects import stablehlo

def draw(rng, shape, dtype):
    dt = np.dtype(dtype)
    name = dt.name
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if name in ("int4", "uint4", "int2", "uint2"):
        info = ml_dtypes.iinfo(dt)
        return rng.integers(info.min, info.max + 1, shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    if dt.kind == "i":
        return rng.integers(-20, 21, shape).astype(dt)
    if dt.kind == "u":
        if dt.itemsize >= 4:
            return rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(dt)
        return rng.integers(0, 41, shape).astype(dt)
    return rng.standard_normal(shape).astype(np.float32).astype(dt)

def enc(a):
    a = np.asarray(a)
    raw = np.ascontiguousarray(a).tobytes()
    return {"dtype": a.dtype.name, "shape": list(a.shape), "data": base64.b64encode(raw).decode()}

def dec(d):
    dt = np.dtype(getattr(ml_dtypes, d["dtype"], None) or d["dtype"])
    return np.frombuffer(base64.b64decode(d["data"]), dt).reshape(d["shape"])

def prepare(name, code, seed):
    env = program(code)
    fn, args = jitted(env["f"]), env["args"]
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    is_s = lambda v: isinstance(v, S)
    inputs = jax.tree.map(lambda s: draw(rng, s.shape, s.dtype) if is_s(s) else s, args, is_leaf=is_s)
    return fn, args, inputs

def run_jax(name, code, seed):
    fn, args, inputs = prepare(name, code, seed)
    is_s = lambda v: isinstance(v, S)
    text = fn.lower(*args).as_text()
    leaves = [x for x, a in zip(jax.tree.leaves(inputs), jax.tree.leaves(args, is_leaf=is_s)) if is_s(a)]
    outs = jax.tree.leaves(fn(*inputs))
    return {"text": text, "inputs": [enc(x) for x in leaves], "outputs": [enc(o) for o in outs]}

SPECIAL = {"bfloat16": "BF16Type", "float8_e4m3fn": "Float8E4M3FNType", "float8_e5m2": "Float8E5M2Type",
           "float16": "F16Type"}

def attr(a):
    a = np.asarray(a)
    a = a if a.flags.c_contiguous else a.copy()
    if a.dtype.name in SPECIAL:
        return ir.DenseElementsAttr.get(a.view(f"u{a.dtype.itemsize}"), type=getattr(ir, SPECIAL[a.dtype.name]).get())
    if a.dtype.name in ("int4", "uint4"):
        t = ir.IntegerType.get_signless(4) if a.dtype.name == "int4" else ir.IntegerType.get_unsigned(4)
        return ir.DenseElementsAttr.get(a.astype(np.int8 if a.dtype.name == "int4" else np.uint8), type=t)
    if a.dtype == np.bool_:
        return ir.DenseElementsAttr.get(a, type=ir.IntegerType.get_signless(1))
    if a.dtype.kind == "c":
        part = ir.F32Type.get() if a.dtype == np.complex64 else ir.F64Type.get()
        return ir.DenseElementsAttr.get(a.view(f"u{a.dtype.itemsize}"), type=ir.ComplexType.get(part))
    return ir.DenseElementsAttr.get(a, signless=a.dtype.kind != "u")

def result(r):
    try:
        a = np.array(r)
    except TypeError:
        a = None
    if a is None or a.dtype == object or a.dtype.kind == "V":  # bf16, f8: as MLIR prints them
        return {"text": str(r)}
    return enc(a)

def run_interp(text, inputs):
    ctx = mlir.make_ir_context(); ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        m = ir.Module.parse(text)
        def strip(block):
            for op in list(block.operations):
                for region in op.operation.regions:
                    for b in region.blocks:
                        strip(b)
                if op.operation.name == "sdy.sharding_constraint":
                    op.operation.results[0].replace_all_uses_with(op.operation.operands[0])
                    op.operation.erase()
        strip(m.body)
        passmanager.PassManager.parse("builtin.module(sdy-drop-sharding-and-mesh)").run(m.operation)
        complex_results = split_complex_results(m)
        res = [result(r) for r in stablehlo.eval_module(m, [attr(dec(x)) for x in inputs])]
        out, k = [], 0
        for is_complex in complex_results:  # jaxlib cannot return complex attributes: parts
            if is_complex:
                re, im = dec(res[k]), dec(res[k + 1])
                out.append(enc(re + 1j * im.astype(re.dtype)))
                k += 2
            else:
                out.append(res[k])
                k += 1
        return out

def split_complex_results(m):
    # @main returns each complex result as (real, imag): eval_module's Python binding aborts on
    # complex attributes ("Can't cast unknown element type")
    main = [op for op in m.body.operations if op.operation.name == "func.func"
            and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main"][0]
    block = main.operation.regions[0].blocks[0]
    ret = list(block.operations)[-1]
    flags, values, types = [], [], []
    with ir.InsertionPoint(ret):
        for v in ret.operation.operands:
            t = ir.RankedTensorType(v.type)
            if isinstance(t.element_type, ir.ComplexType) or "complex" in str(t.element_type):
                part = ir.RankedTensorType.get(t.shape, ir.ComplexType(t.element_type).element_type)
                values += [stablehlo.RealOp(v).result, stablehlo.ImagOp(v).result]
                types += [part, part]
                flags.append(True)
            else:
                values.append(v)
                types.append(v.type)
                flags.append(False)
        if any(flags):
            from jaxlib.mlir.dialects import func as func_dialect
            func_dialect.ReturnOp(values)
            ret.operation.erase()
            ft = ir.FunctionType(ir.TypeAttr(main.operation.attributes["function_type"]).value)
            main.operation.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(ft.inputs, types))
            if "res_attrs" in main.operation.attributes:
                del main.operation.attributes["res_attrs"]
    return flags

def run_item(item):
    kind = item[0]
    try:
        if kind == "jax":
            return run_jax(*item[1:])
        return {"outputs": run_interp(*item[1:])}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"[:500]}
"""

_NO_REFERENCE = ("chlo.", "custom_call", "rng_bit_generator", "sdy.manual_computation")
"""Text the reference interpreter aborts on (spec execute.md §2.2) or cannot run globally."""


def programs():
    from tests.sdy_passes.jax_corpus import PROGRAMS
    from tests.sdy_passes.propagation_jax import EXTRA_PROGRAMS

    return list(PROGRAMS) + list(EXTRA_PROGRAMS)


def _compute(progs, seeds):
    jax_items = [["jax", name, code, seed] for seed in seeds for name, code in progs]
    jax_out = run_child_items(_CODE, jax_items, timeout=1800)
    interp_items, keys = [], []
    for (_, name, _, seed), r in zip(jax_items, jax_out):
        if r and "text" in r and not any(s in r["text"] for s in _NO_REFERENCE):
            interp_items.append(["interp", r["text"], r["inputs"]])
            keys.append((name, seed))
    interp_out = run_child_items(_CODE, interp_items, timeout=1800) if interp_items else []
    result = {}
    for (_, name, _, seed), r in zip(jax_items, jax_out):
        result[f"{name}@{seed}"] = r if r is not None else {"error": "the JAX child died"}
    for (name, seed), r in zip(keys, interp_out):
        result[f"{name}@{seed}"]["reference"] = r if r is not None else {"error": "the reference interpreter aborted"}
    return result


def corpus_results(seeds=(0, 1), progs=None) -> dict:
    """`"name@seed"` -> {"text", "inputs", "outputs", "reference"?} or {"error"}."""
    progs = programs() if progs is None else progs
    return cached([_CODE, "interpreter-corpus", progs, list(seeds)], lambda: _compute(progs, seeds))


def decode(d) -> np.ndarray:
    if "text" in d:  # a result the reference interpreter returned as an attribute (bf16, f8)
        return np.array(parse_attribute(d["text"]).to_numpy())
    dt = np.dtype(getattr(ml_dtypes, d["dtype"], None) or d["dtype"])
    return np.frombuffer(base64.b64decode(d["data"]), dt).reshape(d["shape"]).copy()


# -- spec execute.md §7 ------------------------------------------------------------------------

FLOAT_TOL = {"float64": 2.0 ** -40, "complex128": 2.0 ** -40, "float32": 2.0 ** -15, "complex64": 2.0 ** -15,
             "float16": 2.0 ** -8, "bfloat16": 2.0 ** -5, "float8_e4m3fn": 2.0 ** -1, "float8_e5m2": 2.0 ** 0}


def bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return a.view(np.uint8)
    if a.dtype.kind == "c":
        return a.view(f"u{a.dtype.itemsize // 2}")
    return a.view(f"u{a.dtype.itemsize}")


def compare(got: np.ndarray, want: np.ndarray, *, exact: bool) -> tuple[bool, str]:
    """(ok, detail): bit for bit for non-floats (and floats when `exact`), else §7.3's tier."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return False, f"{got.dtype}{list(got.shape)} != {want.dtype}{list(want.shape)}"
    if want.dtype.name not in FLOAT_TOL or exact:
        bad = int(np.count_nonzero(bits(got) != bits(want)))
        return bad == 0, f"{bad} elements differ in bits"
    tol = FLOAT_TOL[want.dtype.name]
    g = got.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
    w = want.astype(g.dtype)
    ok, worst = True, 0.0
    for gp, wp in ((g.real, w.real), (g.imag, w.imag)) if w.dtype.kind == "c" else ((g, w),):
        nan_ok = np.isnan(gp) == np.isnan(wp)
        inf_ok = np.where(np.isinf(wp) | np.isinf(gp), gp == wp, True)
        fin = np.isfinite(wp) & np.isfinite(gp)
        scale = float(np.max(np.abs(wp[np.isfinite(wp)]), initial=0.0))
        d = np.where(fin, np.abs(gp - wp), 0.0)
        bound = np.abs(np.where(fin, wp, 0.0)) + scale
        ok &= bool((nan_ok & inf_ok & (d <= tol * bound)).all())
        if fin.any():
            worst = max(worst, float((d / np.maximum(bound, 1e-300)).max()))
    return ok, f"max_norm {worst:.3g} (tol {tol:.3g})"
