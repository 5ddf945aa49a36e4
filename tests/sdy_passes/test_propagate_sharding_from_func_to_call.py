"""`sdy-propagate-sharding-from-func-to-call`: calls without shardings take the callee's."""

import pytest

import sdy_passes
from tests.sdy_passes.call_graph_texts import DIAMOND, TEXTS
from tests.sdy_passes.pass_oracle import assert_match_jaxlib


def test_only_calls_without_shardings_change():
    text = DIAMOND.replace("%2 = call @foo(%1) :", "%2 = call @foo(%1) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{?}]>]>} :")
    m = sdy_passes.parse_module(text)
    sdy_passes.run_passes(m, ["sdy-propagate-sharding-from-func-to-call"])
    shardings = [str(op.attributes.get("sdy.sharding")) for op in m.walk() if op.name == "func.call"]
    assert shardings == ['#sdy.sharding_per_value<[<@mesh, [{"x"}]>]>', "None",
                         '#sdy.sharding_per_value<[<@mesh, [{?}]>]>', "None"]


@pytest.mark.jaxlib
def test_matches_jaxlib():
    maximal = DIAMOND.replace('sdy.mesh @mesh = <["x"=2, "y"=2]>',
                              'sdy.mesh @mesh = <["x"=2, "y"=2]>\nsdy.mesh @max = <[], device_ids=[0]>')
    maximal = maximal.replace('(tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>})',
                              '(tensor<8xf32> {sdy.sharding = #sdy.sharding<@max, []>})')
    assert_match_jaxlib([*TEXTS, maximal], ["sdy-propagate-sharding-from-func-to-call"])
