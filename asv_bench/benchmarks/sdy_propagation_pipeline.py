"""The whole `sdy-propagation-pipeline` (both modes, `sdy-export-pipeline` included) on a module
whose `@main` calls one func `n_calls` times in a chain: the call graph is flattened into
`n_calls` clones, imported as named computations, propagated, exported and unflattened again.

Measured: parse + pipeline (verifying after each pass, as MLIR does) + generic print, here with
the cyclic GC paused, and for jaxlib 0.10.2 in a child on the same passes, named one by one
(`PropagationPipeline.pipeline()`: jaxlib registers each name). Targets: linear
(`track_seconds_per_call` flat from 1k to 10k calls); `track_ratio_to_jaxlib` shows the gap
(about 10 at both sizes when written). `SDY_BENCH_NO_JAXLIB` skips jaxlib.
"""

import json
import os
import subprocess
import sys

try:
    from ._common import SkipNotImplemented, sizes
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import SkipNotImplemented, sizes

from .sdy_pipeline import _JAXLIB_CHILD, _best_seconds, _has_jaxlib, sdy_passes
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


class PropagationPipeline:
    params = [sizes([1_000], [10_000]), [False, True]]
    param_names = ["n_calls", "dedup_functions_fully"]
    timeout = 900
    number = 1
    repeat = (1, 3, 60.0)

    def setup(self, n_calls, dedup):
        self.text = calls_module(n_calls)

    def _run(self, text):
        module = sdy_passes.parse_module(text)
        sdy_passes.run_passes(module, [_flag(self.dedup)])
        return sdy_passes.print_module(module, generic=True)

    def _ours_seconds(self, dedup):
        self.dedup = dedup
        return _best_seconds(self._run, self.text)

    def time_pipeline(self, n_calls, dedup):
        self.dedup = dedup
        self._run(self.text)

    def track_seconds_per_call(self, n_calls, dedup):
        return self._ours_seconds(dedup) / n_calls

    track_seconds_per_call.unit = "seconds"

    def track_ratio_to_jaxlib(self, n_calls, dedup):
        """Our seconds / jaxlib's on the same text and passes (< 1: faster than jaxlib)."""
        if not _has_jaxlib():
            raise SkipNotImplemented("jaxlib is not installed (or SDY_BENCH_NO_JAXLIB is set)")
        passes = get_pass("sdy-propagation-pipeline")(
            **{"dedup-functions-fully": dedup}).pipeline()
        proc = subprocess.run([sys.executable, "-c", _JAXLIB_CHILD % passes], input=self.text,
                              capture_output=True, text=True, timeout=900,
                              env=dict(os.environ, JAX_PLATFORMS="cpu"))
        if proc.returncode != 0:
            raise RuntimeError(f"jaxlib child failed: {proc.stderr[-2000:]}")
        theirs = json.loads(proc.stdout.strip().splitlines()[-1])["seconds"]
        return self._ours_seconds(dedup) / theirs

    track_ratio_to_jaxlib.unit = "ratio"
