"""`sdy_passes.execute` speed (issue 35): a transformer block as JAX lowers it against a mesh
(batch over `x`, heads and the MLP's hidden dim over `y`, Megatron style), run per device.

* `Eager.track_ratio_execute_to_interpret`: the eager `execute` on a 2x4 mesh over the global
  `interpret` of the same text and inputs (target <= 3: sharding costs bookkeeping, not
  arithmetic), interleaved rounds, best of each. The partitioning passes run outside the timed
  part only in neither: both take the text, as a user calls them.
* `Eager.track_ratio_8x8_to_2x4`: `execute` on 8x8 over 2x4 with the same global data (each op
  runs once per distinct shard, so 8x the devices is not 8x the time).
* `Lazy.track_ratio_dask_to_eager`: `backend="dask"` building the graph and computing every
  output over the eager run on 2x4.

The block: batch 8, seq 128, d_model 256, 8 heads; seq 256 and d_model 512 with `BENCH_LONG=1`.
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

SIZE = (8, 256, 512, 8) if LONG else (8, 128, 256, 8)  # batch, seq, d_model, heads (8x8: batch % 8)

_CHILD = r"""
import json, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
from jax.sharding import AbstractMesh, AxisType, NamedSharding as NS, PartitionSpec as P
(batch, seq, d, heads), (mx, my) = json.loads(sys.argv[1])
hd = d // heads
""" + TRANSFORMER_BLOCK + r"""am = AbstractMesh((mx, my), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
specs = [P("x"), P(None, "y"), P(None, "y"), P(None, "y"), P("y"), P(None, "y"), P("y")]
args = [jax.ShapeDtypeStruct(s, jnp.float32, sharding=NS(am, p)) for s, p in zip(shapes, specs)]
print(json.dumps({"text": jax.jit(f).trace(*args).lower(lowering_platforms=("cpu",)).as_text(), "shapes": shapes}))
"""


def program(mesh):
    """(lowered text, inputs) of the block on a `mesh` = (x, y) mesh, made once per machine."""
    cache = pathlib.Path(tempfile.gettempdir()) / f"sdy-execute-bench-{'x'.join(map(str, SIZE + mesh))}.json"
    if not cache.exists():
        if importlib.util.find_spec("jax") is None:
            raise NotImplementedError("jax is not installed")  # asv skips the row (one line)
        proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([SIZE, mesh])],
                              capture_output=True, text=True, env=dict(os.environ, JAX_PLATFORMS="cpu"))
        if proc.returncode != 0:
            raise RuntimeError(f"jax child failed: {proc.stderr[-2000:]}")
        cache.write_text(proc.stdout.strip().splitlines()[-1])
    info = json.loads(cache.read_text())
    rng = np.random.default_rng(0)
    args = [(rng.standard_normal(s) / (np.sqrt(s[0]) if len(s) == 2 else 1)).astype(np.float32)
            for s in info["shapes"]]
    return info["text"], args


def _best_ratio(slow, fast, rounds=3):
    """min(slow) / min(fast) over interleaved rounds."""
    a, b = [], []
    for _ in range(rounds):
        for fn, out in ((slow, a), (fast, b)):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return min(a) / min(b)


class Eager:
    timeout = 900

    def setup(self):
        self.text, self.args = program((2, 4))
        self.text88, _ = program((8, 8))

    def track_ratio_execute_to_interpret(self):
        return _best_ratio(lambda: sdy_passes.execute(self.text, *self.args),
                           lambda: sdy_passes.interpret(self.text, *self.args))

    def track_ratio_8x8_to_2x4(self):
        return _best_ratio(lambda: sdy_passes.execute(self.text88, *self.args),
                           lambda: sdy_passes.execute(self.text, *self.args))


class Lazy:
    timeout = 900

    def setup(self):
        self.text, self.args = program((2, 4))

    def track_ratio_dask_to_eager(self):
        return _best_ratio(lambda: sdy_passes.execute(self.text, *self.args, backend="dask").global_outputs(),
                           lambda: sdy_passes.execute(self.text, *self.args).global_outputs())
