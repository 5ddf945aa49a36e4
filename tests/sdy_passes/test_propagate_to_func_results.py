"""`sdy-propagate-to-func-results`: every func but the main one takes its results' shardings."""

import pytest

import sdy_passes
from sdy_passes.errors import PassFailedError
from tests.sdy_passes.call_graph_texts import MESH, S_X, func
from tests.sdy_passes.propagation_pipeline_oracle import (
    assert_lit_file_matches, assert_pass_matches_stages,
)


def test_results_take_the_returned_shardings_and_lose_stale_ones():
    y_sharded = 'stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}]>]>}'
    text = (MESH + func("main", ["foo", "bar"], private=False)
            + func("foo", res_sharding=S_X).replace("stablehlo.negate %arg0", y_sharded)
            + func("bar", res_sharding=S_X)
            + "func.func private @ext(tensor<8xf32>) -> tensor<8xf32>\n")
    m = sdy_passes.parse_module(text)
    sdy_passes.run_passes(m, ["sdy-propagate-to-func-results"])
    foo, bar = m.lookup_symbol("foo"), m.lookup_symbol("bar")
    assert str(foo.properties["res_attrs"]) == '[{sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}]'
    assert "res_attrs" not in bar.properties  # its only entry became empty: MLIR drops the array
    # jaxlib crashes on a declaration (it reads the first block of an empty body); left alone here
    assert "res_attrs" not in m.lookup_symbol("ext").properties


def test_without_main_fails_at_the_first_func():
    m = sdy_passes.parse_module(MESH + func("a", private=False) + func("b", private=False))
    with pytest.raises(PassFailedError, match=r"Failed to lookup function: main \(expected a single "
                                              r"func or a func @main; found funcs: @a, @b\)") as e:
        sdy_passes.run_passes(m, ["sdy-propagate-to-func-results"])
    assert (e.value.location.line, e.value.location.col) == (2, 1)


@pytest.mark.jaxlib
def test_lit_chunks_match_jaxlib():
    assert_lit_file_matches("propagate_to_func_results.mlir", min_changed=5)


@pytest.mark.jaxlib
def test_pipeline_stages_match_jaxlib():
    assert_pass_matches_stages("sdy-propagate-to-func-results", min_changed=10)
