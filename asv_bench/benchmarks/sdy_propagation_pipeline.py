"""The whole `sdy-propagation-pipeline` (both modes, `sdy-export-pipeline` included) on a module
whose `@main` calls one func `n_calls` times in a chain: the call graph is flattened into
`n_calls` clones, imported as named computations, propagated, exported and unflattened again.

Measured: parse + pipeline (verifying after each pass, as MLIR does) + generic print, here with
the cyclic GC paused, and for jaxlib 0.10.2 in a child on the same passes, named one by one
(`PropagationPipeline.pipeline()`: jaxlib registers each name). 100 and 1k calls; 10k with
`BENCH_LONG=1`. Targets: linear (`track_seconds_per_call` flat from 100 to 10k calls);
`track_ratio_to_jaxlib` shows the gap (in CPU time on a loaded machine, 2026-12-02: 7.0 at 1k
calls, 5.9 at 10k, ~1.0 ms per call at both). `SDY_BENCH_NO_JAXLIB` skips jaxlib.

`TransformerPipeline`: the same measurement on `sdy_propagation`'s transformer module (about 1k
and 10k ops; 100k with `BENCH_LONG`). Targets (issue 33): <= 3x jaxlib at 100k, the per-op
time from 1k to 100k growing no more than jaxlib's (`track_jaxlib_seconds_per_op`).
"""

import json
import os
import subprocess
import sys

try:
    from ._common import SkipNotImplemented, attempt, measured, sizes
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import SkipNotImplemented, attempt, measured, sizes

from .sdy_pipeline import _JAXLIB_CHILD, _best_seconds, _has_jaxlib, sdy_passes
from .sdy_propagation import transformer_module
from sdy_passes.pass_manager import get_pass


def calls_module(n_calls):
    calls = "\n".join(f"  %{i + 1} = call @foo(%{i}) : (tensor<8xf32>) -> tensor<8xf32>"
                      for i in range(n_calls))
    return f"""sdy.mesh @mesh = <["x"=2]>
func.func @main(%arg0: tensor<8xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}]>}}) -> tensor<8xf32> {{
  %0 = stablehlo.negate %arg0 : tensor<8xf32>
{calls}
  return %{n_calls} : tensor<8xf32>
}}
func.func private @foo(%arg0: tensor<8xf32>) -> (tensor<8xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{}}]>}}) {{
  %0 = stablehlo.abs %arg0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}}
"""


def _flag(dedup):
    return "sdy-propagation-pipeline" + ("{dedup-functions-fully=true}" if dedup else "")


def _run_pipeline(text, dedup=False):
    module = sdy_passes.parse_module(text)
    sdy_passes.run_passes(module, [_flag(dedup)])
    return sdy_passes.print_module(module, generic=True)


class PropagationPipeline:
    """Parse + pipeline + generic print of `calls_module(n_calls)`; ours and jaxlib's seconds
    measured once for the rows (`setup_cache`)."""

    params = [sizes([100, 1_000], [10_000]), [False, True]]
    param_names = ["n_calls", "dedup_functions_fully"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup_cache(self):
        runs = {}
        for n_calls in self.params[0]:
            text = calls_module(n_calls)
            for dedup in self.params[1]:
                runs[n_calls, dedup] = dict(
                    ours=_best_seconds(lambda t: _run_pipeline(t, dedup), text),
                    jaxlib=attempt(_jaxlib_pipeline_seconds, text, dedup))
        return runs

    def setup(self, runs, n_calls, dedup):
        self.text = calls_module(n_calls)

    def time_pipeline(self, runs, n_calls, dedup):
        _run_pipeline(self.text, dedup)

    def track_seconds_per_call(self, runs, n_calls, dedup):
        return runs[n_calls, dedup]["ours"] / n_calls

    track_seconds_per_call.unit = "seconds"

    def track_ratio_to_jaxlib(self, runs, n_calls, dedup):
        """Our seconds / jaxlib's on the same text and passes (< 1: faster than jaxlib)."""
        return runs[n_calls, dedup]["ours"] / measured(runs[n_calls, dedup]["jaxlib"])

    track_ratio_to_jaxlib.unit = "ratio"


def _jaxlib_pipeline_seconds(text, dedup=False):
    """jaxlib's seconds for parse + the pipeline's passes + generic print of `text` (a child)."""
    if not _has_jaxlib():
        raise SkipNotImplemented("jaxlib is not installed (or SDY_BENCH_NO_JAXLIB is set)")
    passes = get_pass("sdy-propagation-pipeline")(**{"dedup-functions-fully": dedup}).pipeline()
    proc = subprocess.run([sys.executable, "-c", _JAXLIB_CHILD % passes], input=text,
                          capture_output=True, text=True, timeout=3600,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))
    if proc.returncode != 0:
        raise RuntimeError(f"jaxlib child failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]


def _ours_and_jaxlib(text):
    """What the rows on one text read: our best seconds and jaxlib's (or its skip)."""
    return dict(ours=_best_seconds(_run_pipeline, text), jaxlib=attempt(_jaxlib_pipeline_seconds, text))


class TransformerPipeline:
    """Parse + `sdy-propagation-pipeline` + generic print of the transformer module; ours and
    jaxlib's seconds measured once for the rows (`setup_cache`)."""

    params = [sizes([27, 270], [2700])]  # about 1k, 10k (and 100k) ops
    param_names = ["layers"]
    timeout = 3600
    number = 1
    repeat = 1

    def setup_cache(self):
        runs = {}
        for layers in self.params[0]:
            text = transformer_module(layers)
            runs[layers] = dict(_ours_and_jaxlib(text),
                                n_ops=text.count("\n") - 4)  # one op per line, but the mesh, func and `}`
        return runs

    def setup(self, runs, layers):
        self.text = transformer_module(layers)

    def time_pipeline(self, runs, layers):
        _run_pipeline(self.text)

    def track_seconds_per_op(self, runs, layers):
        return runs[layers]["ours"] / runs[layers]["n_ops"]

    track_seconds_per_op.unit = "seconds"

    def track_jaxlib_seconds_per_op(self, runs, layers):
        return measured(runs[layers]["jaxlib"]) / runs[layers]["n_ops"]

    track_jaxlib_seconds_per_op.unit = "seconds"

    def track_ratio_to_jaxlib(self, runs, layers):
        """Our seconds / jaxlib's on the same text and passes (< 1: faster than jaxlib)."""
        return runs[layers]["ours"] / measured(runs[layers]["jaxlib"])

    track_ratio_to_jaxlib.unit = "ratio"


_LOWER_TRAIN_STEP = """
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding as NS, PartitionSpec as P
layers = int(sys.argv[1])
mesh = jax.make_mesh((2, 4), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
b, s, d, f = 8, 32, 64, 256
def layer(x, p):
    q, k, v, o, w1, w2 = p
    x = (x - x.mean(-1, keepdims=True)) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-6)
    a = jax.nn.softmax(jnp.einsum("bsd,btd->bst", x @ q, x @ k) / 8.0)
    x = x + jnp.einsum("bst,btd->bsd", a, x @ v) @ o
    return x + jax.nn.relu(x @ w1) @ w2
def loss(params, x):
    for p in params:
        x = layer(x, p)
    return jnp.mean(x ** 2)
def step(params, x):
    l, g = jax.value_and_grad(loss)(params, x)
    return l, jax.tree.map(lambda p, g: p - 0.01 * g, params, g)
def arg(shape, spec):
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NS(mesh, spec))
params = [tuple(arg((d, d), P(None, "model")) for _ in range(4))
          + (arg((d, f), P(None, "model")), arg((f, d), P("model", None))) for _ in range(layers)]
sys.stdout.write(jax.jit(step).lower(params, arg((b, s, d), P("data", None, None))).as_text())
"""


class JaxTrainStep:
    """A real program: a train step of `layers` layers (layer norm, attention, MLP; SGD update
    of the gradients) lowered by JAX with NamedShardings on a 2x4 mesh (in a child: the benchmark
    process never imports jax), once for both rows (`setup_cache`). 32 layers: about 4.7k ops.
    Parse + `sdy-propagation-pipeline` + generic print; target (issue 33): <= 3x jaxlib."""

    params = [[32]]
    param_names = ["layers"]
    timeout = 1800
    number = 1
    repeat = 1

    def setup_cache(self):
        return {layers: attempt(_lowered_train_step, layers) for layers in self.params[0]}

    def setup(self, runs, layers):
        self.text = measured(runs[layers])["text"]

    def time_pipeline(self, runs, layers):
        _run_pipeline(self.text)

    def track_ratio_to_jaxlib(self, runs, layers):
        """Our seconds / jaxlib's on the same text and passes (< 1: faster than jaxlib)."""
        run = runs[layers]
        return run["ours"] / measured(run["jaxlib"])

    track_ratio_to_jaxlib.unit = "ratio"


def _lowered_train_step(layers):
    """`_LOWER_TRAIN_STEP`'s text and `_ours_and_jaxlib` of it."""
    if not _has_jaxlib():
        raise SkipNotImplemented("jaxlib is not installed (or SDY_BENCH_NO_JAXLIB is set)")
    proc = subprocess.run([sys.executable, "-c", _LOWER_TRAIN_STEP, str(layers)],
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, JAX_PLATFORMS="cpu"))
    if proc.returncode != 0:
        raise RuntimeError(f"lowering failed: {proc.stderr[-2000:]}")
    return dict(text=proc.stdout, **_ours_and_jaxlib(proc.stdout))


def interleaved_ratio(layers, rounds):
    """`TransformerPipeline`'s ratio in rounds alternating ours (here) and a jaxlib child."""
    text = transformer_module(layers)
    _run_pipeline(text)  # warm-up
    ratios = []
    for i in range(rounds):
        ours = _best_seconds(_run_pipeline, text)
        theirs = _jaxlib_pipeline_seconds(text)
        ratios.append(ours / theirs)
        print(f"round {i}: ours {ours:.3f} s, jaxlib {theirs:.3f} s, ratio {ours / theirs:.2f}", flush=True)
    return ratios


if __name__ == "__main__":
    # python -m benchmarks.sdy_propagation_pipeline [layers [rounds]]  (from asv_bench/)
    import statistics
    args = [int(a) for a in sys.argv[1:3]]
    n = args[0] if args else 27
    k = args[1] if len(args) > 1 else 3
    r = interleaved_ratio(n, k)
    print(f"layers={n}: median ratio {statistics.median(r):.2f} (min {min(r):.2f}, max {max(r):.2f}, {k} rounds)")
