"""`sdy-aggressive-propagate`: Shardy's own lit cases (rule-annotated by jaxlib, see `propagation_oracle`)
against jaxlib 0.10.2."""

import pytest

from tests.sdy_passes.propagation_oracle import CASES_DIR, case_param, check_case, d2_cases

CASES = d2_cases("aggressive-propagate")


@pytest.mark.jaxlib
@pytest.mark.skipif(not CASES, reason=f"golden cases not found at {CASES_DIR}")
@pytest.mark.parametrize("case", [case_param(c) for c in CASES])
def test_lit_case_matches_jaxlib(case):
    check_case(case)
