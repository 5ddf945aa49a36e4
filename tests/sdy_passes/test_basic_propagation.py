"""`sdy-basic-propagate`: Shardy's own lit cases (rule-annotated by jaxlib, see
`propagation_oracle`) and random modules against jaxlib 0.10.2."""

import pytest

from tests.sdy_passes.propagation_oracle import CASES_DIR, case_param, check_case, d2_cases

CASES = d2_cases("basic-propagate")


@pytest.mark.jaxlib
@pytest.mark.skipif(not CASES, reason=f"golden cases not found at {CASES_DIR}")
@pytest.mark.parametrize("case", [case_param(c) for c in CASES])
def test_lit_case_matches_jaxlib(case):
    check_case(case)


# -- random modules against jaxlib ----------------------------------------------------------------

import hypothesis.strategies as st
from hypothesis import given

from tests.sdy_passes.module_gen import modules
from tests.sdy_passes.propagation_modules import prop_modules
from tests.sdy_passes.propagation_oracle import BATCH, FUZZ, check_random


@pytest.mark.jaxlib
@FUZZ
@given(st.lists(prop_modules(max_ops=15), min_size=BATCH, max_size=BATCH))
def test_random_modules_match_jaxlib(texts):
    for pipeline in ("builtin.module(sdy-basic-propagate)",
                     "builtin.module(sdy-basic-propagate{conservative-propagation=true})",
                     "builtin.module(sdy-basic-propagate{keep-sharding-rules=true})"):
        assert check_random(texts, pipeline) > BATCH // 2


@pytest.mark.jaxlib
@FUZZ
@given(st.lists(modules(inline_meshes=False), min_size=BATCH, max_size=BATCH))
def test_random_data_flow_modules_match_jaxlib(texts):
    # While, case, barriers, named and manual computations, groups, calls (module_gen).
    pipeline = "builtin.module(sdy-add-data-flow-edges,sdy-basic-propagate,func.func(sdy-sink-data-flow-edges))"
    assert check_random(texts, pipeline) > BATCH // 2
