"""`sdy-pre-order-funcs`: funcs in call-graph pre-order, after the other top-level ops."""

import pytest

import sdy_passes
from tests.sdy_passes.call_graph_texts import CALLEE_FIRST, TEXTS
from tests.sdy_passes.pass_oracle import assert_match_jaxlib


def test_callers_before_callees():
    m = sdy_passes.parse_module(CALLEE_FIRST)
    sdy_passes.run_passes(m, ["sdy-pre-order-funcs"])
    names = [op.properties["sym_name"].value for op in m.ops]
    assert names == ["mesh", "main", "foo", "unused", "bar"]


@pytest.mark.jaxlib
def test_matches_jaxlib():
    assert_match_jaxlib(TEXTS, ["sdy-pre-order-funcs"])
