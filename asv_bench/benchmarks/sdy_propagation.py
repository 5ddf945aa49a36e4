"""Sharding propagation (`sdy-user-priority-propagate`, jaxlib's full propagation step) on a
transformer-like module of about 1k, 10k and 100k ops.

`transformer_module(layers)` stacks attention + MLP blocks (dot_generals, reshapes, transposes,
reduces, broadcasts, element-wise ops; 37 ops per layer) on a `["data"=2, "model"=4]` mesh with
sharded weights and activations. Both sides build each op's sharding rule just in time, as
jaxlib does. Measured: the pass alone (parsing and printing excluded), here with the cyclic GC
paused, and in jaxlib 0.10.2 inside a child (the benchmark process never imports jax).

Targets (issue 28): per op at 100k within 1.2x of 10k (`track_seconds_per_op`), and within 5x of
jaxlib (`track_ratio_to_jaxlib`). `SDY_BENCH_NO_JAXLIB` skips jaxlib.
"""

import gc
import json
import os
import pathlib
import subprocess
import sys
import time

try:
    from ._common import SkipNotImplemented, attempt, measured, sizes
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import SkipNotImplemented, attempt, measured, sizes

ROOT = pathlib.Path(__file__).resolve().parents[2]
try:
    import sdy_passes
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(ROOT))
    import sdy_passes

PASS = "sdy-user-priority-propagate"

_JAXLIB_CHILD = """
import json, sys, time
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir, passmanager
ctx = jax_mlir.make_ir_context()
ctx.enable_multithreading(False)
with ctx, ir.Location.unknown():
    module = ir.Module.parse(sys.stdin.read())
    start = time.perf_counter()
    passmanager.PassManager.parse("builtin.module(%s)").run(module.operation)
    seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds}))
"""


def ttype(shape):
    return "tensor<%s>" % "x".join([*map(str, shape), "f32"])


def transformer_module(layers, *, batch=8, seq=128, model=256, heads=8, hidden=1024):
    """A stack of `layers` attention + MLP blocks on `@mesh` `["data"=2, "model"=4]`."""
    head = model // heads
    x_t, w_t = ttype((batch, seq, model)), ttype((model, model))
    lines = []
    counter = [0]

    def emit(text):
        counter[0] += 1
        lines.append(f"  %{counter[0]} = {text}")
        return f"%{counter[0]}"

    args = [f'%arg0: {x_t} {{sdy.sharding = #sdy.sharding<@mesh, [{{"data"}}, {{}}, {{}}]>}}',
            f'%arg1: {w_t} {{sdy.sharding = #sdy.sharding<@mesh, [{{}}, {{"model"}}]>}}',
            f'%arg2: {ttype((model, hidden))} {{sdy.sharding = #sdy.sharding<@mesh, [{{}}, {{"model"}}]>}}',
            f'%arg3: {ttype((hidden, model))} {{sdy.sharding = #sdy.sharding<@mesh, [{{"model"}}, {{}}]>}}']
    zero = emit("stablehlo.constant dense<0.0> : tensor<f32>")
    x = "%arg0"
    bsm, bshd = (batch, seq, model), (batch, seq, heads, head)
    bhsd, bhss = (batch, heads, seq, head), (batch, heads, seq, seq)
    for _ in range(layers):
        def proj(inp):
            y = emit(f"stablehlo.dot_general {inp}, %arg1, contracting_dims = [2] x [0] : "
                     f"({x_t}, {w_t}) -> {x_t}")
            y = emit(f"stablehlo.reshape {y} : ({x_t}) -> {ttype(bshd)}")
            return emit(f"stablehlo.transpose {y}, dims = [0, 2, 1, 3] : ({ttype(bshd)}) -> {ttype(bhsd)}")
        q, k, v = proj(x), proj(x), proj(x)
        s = emit(f"stablehlo.dot_general {q}, {k}, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3] : "
                 f"({ttype(bhsd)}, {ttype(bhsd)}) -> {ttype(bhss)}")
        m = emit(f"stablehlo.reduce({s} init: {zero}) applies stablehlo.maximum across dimensions = [3] : "
                 f"({ttype(bhss)}, tensor<f32>) -> {ttype(bhss[:3])}")
        m = emit(f"stablehlo.broadcast_in_dim {m}, dims = [0, 1, 2] : ({ttype(bhss[:3])}) -> {ttype(bhss)}")
        e = emit(f"stablehlo.subtract {s}, {m} : {ttype(bhss)}")
        e = emit(f"stablehlo.exponential {e} : {ttype(bhss)}")
        z = emit(f"stablehlo.reduce({e} init: {zero}) applies stablehlo.add across dimensions = [3] : "
                 f"({ttype(bhss)}, tensor<f32>) -> {ttype(bhss[:3])}")
        z = emit(f"stablehlo.broadcast_in_dim {z}, dims = [0, 1, 2] : ({ttype(bhss[:3])}) -> {ttype(bhss)}")
        p = emit(f"stablehlo.divide {e}, {z} : {ttype(bhss)}")
        o = emit(f"stablehlo.dot_general {p}, {v}, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : "
                 f"({ttype(bhss)}, {ttype(bhsd)}) -> {ttype(bhsd)}")
        o = emit(f"stablehlo.transpose {o}, dims = [0, 2, 1, 3] : ({ttype(bhsd)}) -> {ttype(bshd)}")
        o = emit(f"stablehlo.reshape {o} : ({ttype(bshd)}) -> {x_t}")
        o = emit(f"stablehlo.dot_general {o}, %arg1, contracting_dims = [2] x [0] : ({x_t}, {w_t}) -> {x_t}")
        x = emit(f"stablehlo.add {x}, {o} : {x_t}")
        sq = emit(f"stablehlo.multiply {x}, {x} : {x_t}")
        var = emit(f"stablehlo.reduce({sq} init: {zero}) applies stablehlo.add across dimensions = [2] : "
                   f"({x_t}, tensor<f32>) -> {ttype(bsm[:2])}")
        var = emit(f"stablehlo.rsqrt {var} : {ttype(bsm[:2])}")
        var = emit(f"stablehlo.broadcast_in_dim {var}, dims = [0, 1] : ({ttype(bsm[:2])}) -> {x_t}")
        n = emit(f"stablehlo.multiply {x}, {var} : {x_t}")
        h_t = ttype((batch, seq, hidden))
        h = emit(f"stablehlo.dot_general {n}, %arg2, contracting_dims = [2] x [0] : ({x_t}, {ttype((model, hidden))}) -> {h_t}")
        h = emit(f"stablehlo.logistic {h} : {h_t}")
        h = emit(f"stablehlo.dot_general {h}, %arg3, contracting_dims = [2] x [0] : ({h_t}, {ttype((hidden, model))}) -> {x_t}")
        x = emit(f"stablehlo.add {x}, {h} : {x_t}")
    return "\n".join([
        'sdy.mesh @mesh = <["data"=2, "model"=4]>',
        f"func.func @main({', '.join(args)}) -> {x_t} {{",
        *lines,
        f"  return {x} : {x_t}",
        "}",
    ])


def jaxlib_seconds(layers):
    """jaxlib's seconds for the pass on `transformer_module(layers)`."""
    if os.environ.get("SDY_BENCH_NO_JAXLIB"):
        raise SkipNotImplemented("SDY_BENCH_NO_JAXLIB is set")
    proc = subprocess.run([sys.executable, "-c", _JAXLIB_CHILD % PASS], input=transformer_module(layers),
                          capture_output=True, text=True, timeout=1800,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))
    if proc.returncode != 0:
        raise RuntimeError(f"jaxlib child failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]


def propagate_seconds(text):
    module = sdy_passes.parse_module(text)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        sdy_passes.run_passes(module, [PASS], verify=False)
        return time.perf_counter() - start
    finally:
        if was_enabled:
            gc.enable()


class UserPriorityPropagation:
    """`sdy-user-priority-propagate` on a transformer-like module of `layers` layers: ours and
    jaxlib's seconds measured once for the three rows (`setup_cache`)."""

    params = [sizes([27, 270], [2700])]  # about 1k, 10k (and 100k) ops
    param_names = ["layers"]
    timeout = 3600
    number = 1
    repeat = 1

    def setup_cache(self):
        runs = {}
        for layers in self.params[0]:
            text = transformer_module(layers)
            runs[layers] = dict(n_ops=text.count("\n") - 4,  # one op per line, but the mesh, func and `}`
                                ours=propagate_seconds(text), jaxlib=attempt(jaxlib_seconds, layers))
        return runs

    def track_seconds_per_op(self, runs, layers):
        return runs[layers]["ours"] / runs[layers]["n_ops"]

    track_seconds_per_op.unit = "seconds"

    def track_jaxlib_seconds_per_op(self, runs, layers):
        return measured(runs[layers]["jaxlib"]) / runs[layers]["n_ops"]

    track_jaxlib_seconds_per_op.unit = "seconds"

    def track_ratio_to_jaxlib(self, runs, layers):
        """Our seconds / jaxlib's seconds for the pass on the same module."""
        return runs[layers]["ours"] / measured(runs[layers]["jaxlib"])

    track_ratio_to_jaxlib.unit = "ratio"
