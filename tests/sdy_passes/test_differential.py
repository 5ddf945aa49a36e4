"""Differential fuzzing against the real passes in jaxlib 0.10.2.

Random small modules (`module_gen.modules`) are canonicalised by jaxlib (parse + generic print),
then each of the six passes (once, and twice in a row), and the whole import pipeline, runs in
jaxlib and here on the same text. Outputs must be equal up to SSA renaming; when jaxlib fails (a pass error, or the verifier
after a pass), we must fail with the same message. A jaxlib crash is no verdict (spec §11.2).

CI runs a fixed, derandomized sample (3 batches of 10 modules per test: each batch costs a
jaxlib child about 3 s of passes; SDY_FUZZ_EXAMPLES=6 was the default before). For a long run::

    SDY_FUZZ_EXAMPLES=200 python -m pytest tests/sdy_passes/test_differential.py  # random sample

(each example is a batch of `SDY_FUZZ_BATCH` modules, 10 by default, sent to one jaxlib child;
larger batches overflow Hypothesis' example buffer and make generation very slow).
"""

import os

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.sdy_passes.module_gen import modules
from tests.sdy_passes.pass_oracle import compare, run_jaxlib_matrix

# Random call graphs call a func more than once: Shardy warns (once per process), as jaxlib does.
pytestmark = pytest.mark.filterwarnings("ignore::sdy_passes.SdyWarning")

# The six passes of the seed document (its "import pipeline"); jaxlib's real pipeline and the
# passes it adds are run by name below.
PIPELINE = ["sdy-lift-inlined-meshes", "sdy-constant-or-scalar-splitter", "sdy-add-data-flow-edges",
            "sdy-manual-axes-cleanup", "sdy-apply-sharding-constraints", "sdy-sharding-group-import"]
# (symbol-dce, remove-size-one-axes and propagate-sharding-from-func-to-call run inside the pipeline)
JAXLIB_PIPELINES = [["sdy-import-pipeline"], ["sdy-import-pipeline{dedup-functions-fully=true}"],
                    ["sdy-flatten-call-graph"],
                    ["sdy-import-func-calls{add-data-flow-edges-on-named-computations=false}"],
                    ["sdy-add-func-data-flow-edges"],
                    ["sdy-flatten-call-graph", "sdy-import-func-calls", "sdy-pre-order-funcs"]]
# jaxlib's apply-sharding-constraints crashes or corrupts symbols on some inlined meshes
# (spec §11.2-3): modules with inlined meshes skip that pass alone (the pipeline lifts first).
# Each pass once and twice (twice shows we repeat Shardy's own non-idempotence, e.g. renumbered
# groups or re-added edges), and the pipeline.
WITH_INLINE = ([[p] * k for p in PIPELINE if p != "sdy-apply-sharding-constraints" for k in (1, 2)]
               + [PIPELINE] + JAXLIB_PIPELINES[:2])
NAMED_ONLY = [[p] * k for p in PIPELINE for k in (1, 2)] + [PIPELINE] + JAXLIB_PIPELINES

EXAMPLES = int(os.environ.get("SDY_FUZZ_EXAMPLES", "3"))
BATCH = int(os.environ.get("SDY_FUZZ_BATCH", "10"))


def check_batch(texts, pass_lists):
    failures = []
    for text, (canonical, verdicts) in zip(texts, run_jaxlib_matrix(texts, pass_lists)):
        if not canonical.ok:
            assert canonical.crashed or not canonical.ok  # invalid draw or crash: no verdict
            continue
        for passes, verdict in zip(pass_lists, verdicts):
            if verdict.crashed:
                continue
            report = compare(canonical.text, passes, verdict)
            if report:
                failures.append(f"{','.join(passes)}: {report}\n--- input ---\n{canonical.text}")
    assert not failures, f"{len(failures)} disagreement(s); first:\n{failures[0]}"


# A fixed sample by default; a long run (SDY_FUZZ_EXAMPLES set) draws fresh modules every time.
_settings = settings(max_examples=EXAMPLES, deadline=None, database=None,
                     derandomize="SDY_FUZZ_EXAMPLES" not in os.environ,
                     phases=[Phase.explicit, Phase.generate],
                     suppress_health_check=list(HealthCheck))


@pytest.mark.jaxlib
@_settings
@given(st.lists(modules(inline_meshes=True), min_size=BATCH, max_size=BATCH, unique=True))
def test_passes_match_jaxlib_with_inlined_meshes(texts):
    check_batch(texts, WITH_INLINE)


@pytest.mark.jaxlib
@_settings
@given(st.lists(modules(inline_meshes=False), min_size=BATCH, max_size=BATCH, unique=True))
def test_passes_match_jaxlib_on_named_meshes(texts):
    check_batch(texts, NAMED_ONLY)


def _chain(n_ops):
    """The benchmark's module: an element-wise chain fed by one constant, a constraint every 10."""
    lines = ['sdy.mesh @mesh = <["x"=4, "y"=2]>',
             "func.func @main(%arg0: tensor<16x16xf32>) -> tensor<16x16xf32> {",
             "  %0 = stablehlo.constant dense<1.000000e+00> : tensor<16x16xf32>"]
    prev = "%arg0"
    for i in range(1, n_ops):
        if i % 10 == 0:
            lines.append(f'  %{i} = sdy.sharding_constraint {prev} <@mesh, [{{"x"}}, {{"y"}}]> : tensor<16x16xf32>')
        else:
            lines.append(f"  %{i} = stablehlo.add {prev}, %0 : tensor<16x16xf32>")
        prev = f"%{i}"
    return "\n".join(lines + [f"  return {prev} : tensor<16x16xf32>", "}"]) + "\n"


@pytest.mark.jaxlib
def test_import_pipeline_by_name_matches_jaxlib():
    from tests.sdy_passes.pass_oracle import assert_match_jaxlib

    text = _chain(200)
    assert_match_jaxlib([text], ["sdy-import-pipeline"])
    assert_match_jaxlib([text], PIPELINE)


_PLAIN = '''func.func @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg1 : tensor<8x8xf32>
  %1 = stablehlo.dot %0, %arg1 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
'''


@pytest.mark.parametrize("flag", [*PIPELINE, "sdy-constant-splitter", "sdy-import-pipeline",
                                  "symbol-dce", "sdy-remove-size-one-axes",
                                  "sdy-propagate-sharding-from-func-to-call", "sdy-flatten-call-graph",
                                  "sdy-import-func-calls", "sdy-pre-order-funcs"])
def test_nothing_to_do_changes_nothing(flag):
    import sdy_passes

    module = sdy_passes.parse_module(_PLAIN)
    before = sdy_passes.print_module(module, generic=True)
    sdy_passes.run_passes(module, [flag])
    assert sdy_passes.print_module(module, generic=True) == before
