"""`sdy-user-priority-propagate` against jaxlib 0.10.2: Shardy's own lit cases (rule-annotated by jaxlib,
see `propagation_oracle`) and random modules."""

from tests.sdy_passes.propagation_oracle import lit_case_test, random_module_tests

test_lit_case_matches_jaxlib = lit_case_test("user-priority-propagate")

# jaxlib runs each module twice: its user-priority pass segfaults intermittently (spec §4.6).
test_random_modules_match_jaxlib, test_random_data_flow_modules_match_jaxlib = random_module_tests((
    "builtin.module(sdy-user-priority-propagate)",
), "sdy-user-priority-propagate", runs=2)
