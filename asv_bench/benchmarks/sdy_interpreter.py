"""`sdy_passes.interpret` speed (issue 34): a transformer block forward as JAX lowers it, and the
per-op overhead on tiny arrays.

* `TransformerForward.track_ratio_fast_to_jax`: `numerics="fast"` seconds over `jax.jit`'s on the
  same block and inputs (target <= 3 at batch 8, seq 512, d_model 1024, 16 heads, f32, which
  `BENCH_LONG=1` runs; by default batch 4, seq 128, d_model 256, 4 heads). JAX is
  timed in a child process (the benchmark process never imports jax), best of 5 calls after a
  warm-up, with the default thread settings of both (XLA's pool, numpy's BLAS).
* `TransformerForward.track_ratio_reference_to_fast`: `numerics="reference"` over `fast` on a
  smaller block (batch 2, seq 64, d_model 128: the sequential dots are O(k) numpy calls; target
  <= 20).
* `PerOp.track_us_per_op`: microseconds per op of a chain of N element-wise ops on 4-element
  arrays (target <= 20); `track_per_op_10k_vs_1k`: that time at 10k over 1k (linear: ~1).
"""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    from ._common import LONG, TRANSFORMER_BLOCK
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import LONG, TRANSFORMER_BLOCK

ROOT = pathlib.Path(__file__).resolve().parents[2]
try:
    import sdy_passes
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(ROOT))
    import sdy_passes

REALISTIC = (8, 512, 1024, 16)  # batch, seq, d_model, heads
FORWARD = REALISTIC if LONG else (4, 128, 256, 4)
SMALL = (2, 64, 128, 4)

_CHILD = r"""
import json, sys, time
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
batch, seq, d, heads = json.loads(sys.argv[1])
hd = d // heads
""" + TRANSFORMER_BLOCK + r"""rng = np.random.default_rng(0)
args = [(rng.standard_normal(s) / (np.sqrt(s[0]) if len(s) == 2 else 1)).astype(np.float32) for s in shapes]
jf = jax.jit(f)
text = jf.lower(*args).as_text()
jf(*args).block_until_ready()
best = min((lambda t0: (jf(*args).block_until_ready(), time.perf_counter() - t0)[1])(time.perf_counter())
           for _ in range(5))
np.savez(sys.argv[2], *args)
print(json.dumps({"text": text, "seconds": best}))
"""


def transformer(size):
    """(lowered text, inputs, jax.jit seconds) of the block at `size`, made once per machine."""
    cache = pathlib.Path(tempfile.gettempdir()) / f"sdy-interpreter-bench-{'x'.join(map(str, size))}"
    meta, arrays = cache.with_suffix(".json"), cache.with_suffix(".npz")
    if not (meta.exists() and arrays.exists()):
        if importlib.util.find_spec("jax") is None:
            raise NotImplementedError("jax is not installed")  # asv skips the row (one line)
        proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(size), str(arrays)],
                              capture_output=True, text=True, env=dict(os.environ, JAX_PLATFORMS="cpu"))
        if proc.returncode != 0:
            raise RuntimeError(f"jax child failed: {proc.stderr[-2000:]}")
        meta.write_text(proc.stdout.strip().splitlines()[-1])
    info = json.loads(meta.read_text())
    data = np.load(arrays)
    return info["text"], [data[f"arr_{i}"] for i in range(len(data.files))], info["seconds"]


def _best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


class TransformerForward:
    timeout = 900

    def setup(self):
        text, self.args, self.jax_seconds = transformer(FORWARD)
        self.module = sdy_passes.parse_module(text)
        small, self.small_args, _ = transformer(SMALL)
        self.small = sdy_passes.parse_module(small)

    def time_fast(self):
        sdy_passes.interpret(self.module, *self.args)

    def track_ratio_fast_to_jax(self):
        return _best(lambda: sdy_passes.interpret(self.module, *self.args)) / self.jax_seconds

    def track_ratio_reference_to_fast(self):
        fast = _best(lambda: sdy_passes.interpret(self.small, *self.small_args))
        ref = _best(lambda: sdy_passes.interpret(self.small, *self.small_args, numerics="reference"), 1)
        return ref / fast


def chain_module(n: int) -> str:
    t = "tensor<4xf32>"
    lines = [f"func.func @main(%a: {t}, %b: {t}) -> {t} {{"]
    prev = "%a"
    for i in range(n):
        op = ("add", "multiply", "subtract", "maximum")[i % 4]
        lines.append(f"  %{i} = stablehlo.{op} {prev}, %b : {t}")
        prev = f"%{i}"
    lines += [f"  return {prev} : {t}", "}"]
    return "\n".join(lines)


class PerOp:
    params = [1000, 10000]
    param_names = ["ops"]

    def setup(self, n):
        self.module = sdy_passes.parse_module(chain_module(n))
        self.x = np.ones(4, np.float32)
        sdy_passes.interpret(self.module, self.x, self.x)  # plans made once per block

    def track_us_per_op(self, n):
        return _best(lambda: sdy_passes.interpret(self.module, self.x, self.x), 5) / n * 1e6

    def track_per_op_10k_vs_1k(self, n):
        small = sdy_passes.parse_module(chain_module(1000))
        sdy_passes.interpret(small, self.x, self.x)
        t_small = _best(lambda: sdy_passes.interpret(small, self.x, self.x), 5) / 1000
        return _best(lambda: sdy_passes.interpret(self.module, self.x, self.x), 5) / n / t_small
