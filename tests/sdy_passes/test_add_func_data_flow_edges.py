"""`sdy-add-func-data-flow-edges`: edges on non-main func arguments and call results."""

import pytest

import sdy_passes
from sdy_passes.errors import PassFailedError
from tests.sdy_passes.call_graph_texts import DIAMOND, MESH, TEXTS, func
from tests.sdy_passes.pass_oracle import assert_match_jaxlib


def test_edges_carry_shardings():
    m = sdy_passes.parse_module(DIAMOND)
    sdy_passes.run_passes(m, ["sdy-propagate-sharding-from-func-to-call", "sdy-add-func-data-flow-edges"])
    edges = [op for op in m.walk() if op.name == "sdy.func_data_flow_edge"]
    assert len(edges) == 4 + 2  # results of the 4 calls (main's first), args of foo and bar
    assert [str(e.attributes.get("sdy.sharding")) for e in edges] == [
        '#sdy.sharding_per_value<[<@mesh, [{"x"}]>]>', "None", '#sdy.sharding_per_value<[<@mesh, [{"x"}]>]>',
        "None", "None", "None"]


def test_without_main_fails():
    m = sdy_passes.parse_module(MESH + func("a", private=False) + func("b", private=False))
    with pytest.raises(PassFailedError, match="Failed to lookup function: main"):
        sdy_passes.run_passes(m, ["sdy-add-func-data-flow-edges"])


@pytest.mark.jaxlib
def test_matches_jaxlib():
    single = MESH + func("only", private=False)
    assert_match_jaxlib([*TEXTS, single], ["sdy-add-func-data-flow-edges"])
    assert_match_jaxlib(TEXTS, ["sdy-propagate-sharding-from-func-to-call", "sdy-add-func-data-flow-edges"])
