"""`sdy-import-func-calls`: calls become named computations holding the callee's body."""

import warnings

import pytest

import sdy_passes
from sdy_passes import errors
from tests.sdy_passes.call_graph_texts import DIAMOND, TEXTS
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

NO_EDGES = "sdy-import-func-calls{add-data-flow-edges-on-named-computations=false}"


def test_bodies_move_and_funcs_go(monkeypatch):
    monkeypatch.setattr(errors, "_WARNED", set())
    m = sdy_passes.parse_module(DIAMOND)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sdy_passes.run_passes(m, [NO_EDGES])
    assert [op.properties["sym_name"].value for op in m.funcs()] == ["main"]
    ncs = [op.properties["name"].value for op in m.walk() if op.name == "sdy.named_computation"]
    assert ncs == ["foo", "bar", "bar", "foo", "bar"]
    # one warning per process, at the first call that needs a copy (main's call of bar)
    assert [str(w.message.message) for w in caught] == [
        "function @bar has multiple call ops, we need to clone the function body for each call"]
    assert caught[0].message.location.line == 4
    m = sdy_passes.parse_module(DIAMOND)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sdy_passes.run_passes(m, [NO_EDGES])
    assert caught == []


@pytest.mark.filterwarnings("ignore:.*multiple call ops:sdy_passes.errors.SdyWarning")  # (as jaxlib)
def test_edges_on_named_computations_by_default():
    m = sdy_passes.parse_module(DIAMOND)
    sdy_passes.run_passes(m, ["sdy-import-func-calls"])
    edges = sum(op.name == "sdy.data_flow_edge" for op in m.walk())
    assert edges == 10  # one per body argument and result of each of the 5 computations


@pytest.mark.jaxlib
@pytest.mark.parametrize("flag", ["sdy-import-func-calls", NO_EDGES])
def test_matches_jaxlib(flag):
    assert_match_jaxlib(TEXTS, [flag])


def test_a_call_of_a_declaration_fails_in_the_verifier():
    text = """func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = call @ext(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func private @ext(tensor<8xf32>) -> tensor<8xf32>
"""
    with pytest.raises(sdy_passes.VerificationError, match="sdy.named_computation"):
        sdy_passes.run_passes(sdy_passes.parse_module(text), ["sdy-import-func-calls"])
