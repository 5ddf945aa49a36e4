"""JAX programs with `jax.sharding` annotations and `with_sharding_constraint` inside, through
jaxlib's propagation pipeline up to its `sdy-user-priority-propagate` step and through the whole
`sdy-propagation-pipeline` (export included): the project prints jaxlib's pretty output byte for
byte (see `propagation_jax`).

By default a fixed selection of the corpus (one jaxlib child); `PROPAGATION_FUZZ=N` runs every
program with N draws of shardings each.
"""

import os

import pytest

import sdy_passes
from sdy_passes.errors import SdyError
from tests.sdy_passes.jax_corpus import PROGRAMS
from tests.sdy_passes.propagation_jax import EXTRA_PROGRAMS, PIPELINE, run_all

pytestmark = pytest.mark.jaxlib

FUZZ = int(os.environ.get("PROPAGATION_FUZZ", "0"))

DEFAULT = frozenset("""matmul_batched attention concatenate reshape dynamic_update_slice pad
sort_multi cond while gather scatter_add conv2d reduce_window_max nested_jit optimization_barrier
sharding_constraint sharded_matmul shard_map_psum layer_norm
""".split())


def _first_difference(ours: str, theirs: str) -> str:
    a, b = ours.splitlines(), theirs.splitlines()
    return next((f"line {i + 1}:\n  ours:   {x}\n  jaxlib: {y}" for i, (x, y) in enumerate(zip(a, b))
                 if x != y), f"{len(a)} vs {len(b)} lines")


@pytest.mark.parametrize("pipeline", [PIPELINE, "builtin.module(sdy-propagation-pipeline)"],
                         ids=["up-to-propagation", "whole-pipeline"])
def test_sharded_jax_programs_propagate_like_jaxlib(pipeline):
    programs = [*PROGRAMS, *EXTRA_PROGRAMS]
    if not FUZZ:
        programs = [p for p in programs if p[0] in DEFAULT] + EXTRA_PROGRAMS
    failures, compared, constrained = [], 0, 0
    for variant in range(max(FUZZ, 1)):
        for (name, _), r in zip(programs, run_all(programs, variant, pipeline)):
            if r is None:
                continue  # jaxlib crashed (spec/propagation.md §4.6): no verdict
            assert "error" not in r, f"{name} does not lower:\n{r['error']}"
            module = sdy_passes.parse_module(r["text"])
            try:
                sdy_passes.run_passes(module, pipeline)
                ours = sdy_passes.print_module(module)
            except SdyError as e:
                ours = f"error: {e}"
            if "jaxlib_error" in r:
                if not ours.startswith("error: "):
                    failures.append(f"{name}/{variant}: jaxlib failed, we did not: {r['jaxlib_error']}")
                continue
            if r["runs"][0] != r["runs"][1]:
                continue  # two jaxlib runs differ: no verdict
            compared += 1
            constrained += "sdy.sharding_constraint" in r["text"]
            if ours != r["runs"][0]:
                failures.append(f"{name}/{variant}: {_first_difference(ours, r['runs'][0])}\n"
                                f"--- input ---\n{r['text']}")
    assert not failures, f"{len(failures)} disagreement(s); first:\n{failures[0]}"
    assert compared >= len(programs) * max(FUZZ, 1) * 0.9 and constrained >= compared // 3
