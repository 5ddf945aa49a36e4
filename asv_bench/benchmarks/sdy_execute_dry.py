"""`sdy_passes.execute(..., dry=True)` at scale (issue 35, spec execute.md §9.1): JAX's own
transformer block lowered against a 64x64 `AbstractMesh` (bf16, batch over x, heads and MLP
hidden over y; 32 GiB of global activations in, 128 GiB in the MLP), read from `sdy_passes/examples/`
(one block) and `tests/data/` (ten), both
written by `tests/data/make_transformer_block.py`, so jax is not needed here.

* `DryRun.time_dry(blocks)`: the whole dry run (propagation, export, partitioning, report) of 1
  and of 10 blocks in a row (target: <= 10 s for one block).
* `DryRunScaling.track_ratio_10_to_1`: the 10-block dry run over the 1-block one, interleaved rounds in
  one process (linear in the number of ops: about 10).
* `DryRunScaling.track_report_ratio_10_to_1`: the same for the report alone (`execution_report.report`
  on the partitioned modules): no per-device loop, so linear in ops whatever the 4096 devices.
"""

import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
try:
    import sdy_passes
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(ROOT))
    import sdy_passes
from sdy_passes.element_types import numpy_dtype
from sdy_passes.execution_report import report

FILES = {1: ROOT / "sdy_passes" / "examples" / "transformer_block_64x64.mlir",
         10: ROOT / "tests" / "data" / "transformer_10_blocks_64x64.mlir"}


class _Shape:
    def __init__(self, t):
        self.shape, self.dtype = tuple(t.shape), numpy_dtype(t.element_type)


def _load(blocks):
    text = FILES[blocks].read_text()
    types = sdy_passes.parse_module(text).lookup_symbol("main").properties["function_type"].type.inputs
    return text, [_Shape(t) for t in types]


def _dry(text, shapes):
    return sdy_passes.execute(text, *shapes, dry=True)


def _interleaved(fns, rounds=3):
    """The best time of each function, run in turn `rounds` times (so load changes hit all)."""
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


class DryRun:
    params = [1, 10]
    param_names = ["blocks"]
    timeout = 600

    def setup(self, blocks):
        self.text, self.shapes = _load(blocks)
        _dry(self.text, self.shapes)  # imports and first-use caches

    def time_dry(self, blocks):
        _dry(self.text, self.shapes)


class DryRunScaling:
    timeout = 900

    def track_ratio_10_to_1(self):
        one, ten = _load(1), _load(10)
        t1, t10 = _interleaved([lambda: _dry(*one), lambda: _dry(*ten)], rounds=2)
        return t10 / t1

    def track_report_ratio_10_to_1(self):
        runs = [_dry(*_load(n)) for n in (1, 10)]
        calls = [lambda r=r: report(r.local, r.local.lookup_symbol("main"), r.mesh) for r in runs]
        t1, t10 = _interleaved(calls, rounds=5)
        return t10 / t1
