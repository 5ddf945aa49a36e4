"""`sdy-sink-data-flow-edges` on its own: jaxlib propagates the inputs of Shardy's
`basic_propagation_manual_computation` / `basic_propagation_token` lit cases (which end with this
pass), and our sink on jaxlib's propagated module must print what jaxlib's sink prints."""

import pytest

from tests.conftest import needs_shared
from tests.sdy_passes.propagation_oracle import (
    CASES_DIR, D2_CASES, case_path, populate_and_run, run_ours,
)
from tests.sdy_passes.ssa import assert_same_up_to_ssa

PROPAGATE = "builtin.module(sdy-add-data-flow-edges,sdy-basic-propagate)"
SINK = "builtin.module(func.func(sdy-sink-data-flow-edges))"
CASES = [c for c in D2_CASES if c["pass"] == "sdy-add-data-flow-edges__sdy-basic-propagate__sdy-sink-data-flow-edges"]


@pytest.mark.jaxlib
@needs_shared(CASES_DIR)
def test_sink_after_jaxlib_propagation_matches_jaxlib():
    texts = [case_path(c, "in.generic.mlir").read_text() for c in CASES]
    propagated = populate_and_run(texts, [PROPAGATE], populate=False)
    sunk = populate_and_run([runs[0].text for _, runs in propagated], [SINK], populate=False)
    checked = 0
    for case, (_, [before]), (_, [after]) in zip(CASES, propagated, sunk):
        assert before.ok and after.ok, case["id"]
        ours, _ = run_ours(before.text, SINK)
        assert_same_up_to_ssa(ours, after.text)
        checked += 1
    assert checked == len(CASES) == 29
