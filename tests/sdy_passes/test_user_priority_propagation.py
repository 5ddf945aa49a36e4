"""`sdy-user-priority-propagate`: Shardy's own lit cases (rule-annotated by jaxlib, see `propagation_oracle`)
against jaxlib 0.10.2."""

import hypothesis.strategies as st
import pytest
from hypothesis import given

from tests.sdy_passes.module_gen import modules
from tests.sdy_passes.propagation_modules import prop_modules
from tests.sdy_passes.propagation_oracle import (
    BATCH, CASES_DIR, FUZZ, case_param, check_case, check_random, d2_cases,
)

CASES = d2_cases("user-priority-propagate")


@pytest.mark.jaxlib
@pytest.mark.skipif(not CASES, reason=f"golden cases not found at {CASES_DIR}")
@pytest.mark.parametrize("case", [case_param(c) for c in CASES])
def test_lit_case_matches_jaxlib(case):
    check_case(case)


@pytest.mark.jaxlib
@FUZZ
@given(st.lists(prop_modules(max_ops=15), min_size=BATCH, max_size=BATCH))
def test_random_modules_match_jaxlib(texts):
    # jaxlib runs twice: its user-priority pass segfaults intermittently (spec §4.6).
    for pipeline in ("builtin.module(sdy-user-priority-propagate)",):
        assert check_random(texts, pipeline, runs=2) > BATCH // 2


@pytest.mark.jaxlib
@FUZZ
@given(st.lists(modules(inline_meshes=False), min_size=BATCH, max_size=BATCH))
def test_random_data_flow_modules_match_jaxlib(texts):
    pipeline = "builtin.module(sdy-add-data-flow-edges,sdy-user-priority-propagate,func.func(sdy-sink-data-flow-edges))"
    assert check_random(texts, pipeline, runs=2) > BATCH // 2
