"""`sdy-unflatten-call-graph{dedup-functions-fully}`: calls of clones with one origin (and, by
default, the same shardings) call one func again."""

import pytest

import sdy_passes
from tests.sdy_passes.call_graph_texts import MESH, S_X, func
from tests.sdy_passes.propagation_pipeline_oracle import (
    assert_lit_file_matches, assert_pass_matches_stages,
)

ORIGIN = ' attributes {sdy.original_func_name = "foo"}'
S_Y = '#sdy.sharding<@mesh, [{"y"}]>'
# main calls foo_0, foo_1, foo_2: clones of foo; foo_1 and foo_2 return y-sharded, foo_0 x-sharded
CLONES = (MESH + func("main", ["foo_0", "foo_1", "foo_2"], private=False)
          + func("foo_0", res_sharding=S_X, attrs=ORIGIN) + func("foo_1", res_sharding=S_Y, attrs=ORIGIN)
          + func("foo_2", res_sharding=S_Y, attrs=ORIGIN))


@pytest.mark.parametrize("fully, callees", [(False, ["foo_0", "foo_1", "foo_1"]),
                                            (True, ["foo_2", "foo_2", "foo_2"])])
def test_calls_share_the_first_or_the_most_called_clone(fully, callees):
    # fully: the y-sharded key gets more calls at the third call, whose callee is then chosen
    m = sdy_passes.parse_module(CLONES)
    sdy_passes.run_passes(m, [f"sdy-unflatten-call-graph{{dedup-functions-fully={str(fully).lower()}}}"])
    assert [op.properties["callee"].root for op in m.walk() if op.name == "func.call"] == callees
    assert "original_func_name" not in sdy_passes.print_module(m)


@pytest.mark.jaxlib
@pytest.mark.parametrize("file", ["unflatten_call_graph.mlir",
                                  "unflatten_call_graph_dedup_functions_fully_true.mlir"])
def test_lit_chunks_match_jaxlib(file):
    assert_lit_file_matches(file, min_changed=25)


@pytest.mark.jaxlib
def test_pipeline_stages_match_jaxlib():
    assert_pass_matches_stages("sdy-unflatten-call-graph", min_changed=3)
