"""`sdy-flatten-call-graph`: each func ends with one call site; copies `foo_N` keep the origin."""

import pytest

import sdy_passes
from tests.sdy_passes.call_graph_texts import DIAMOND, MESH, TEXTS, func
from tests.sdy_passes.pass_oracle import assert_match_jaxlib


def test_later_calls_get_recursive_copies_named_by_one_counter():
    m = sdy_passes.parse_module(DIAMOND)
    sdy_passes.run_passes(m, ["sdy-flatten-call-graph"])
    callees = [op.properties["callee"].root for op in m.walk() if op.name == "func.call"]
    names = [op.properties["sym_name"].value for op in m.funcs()]
    # bar's first call is foo's (callees first); main's bar and the second foo get copies.
    assert names == ["main", "foo", "bar", "bar_0", "bar_1", "foo_2"]
    assert callees == ["foo", "bar_0", "foo_2", "bar", "bar_1"]
    origins = {op.properties["sym_name"].value: op.attributes["sdy.original_func_name"].value
               for op in m.funcs() if "sdy.original_func_name" in op.attributes}
    assert origins == {"bar_0": "bar", "bar_1": "bar", "foo_2": "foo"}


@pytest.mark.jaxlib
def test_matches_jaxlib():
    assert_match_jaxlib(TEXTS, ["sdy-flatten-call-graph"])


def test_recursion_is_an_error_not_a_stack_overflow():
    text = MESH + func("main", ["foo", "foo"], private=False) + func("foo", ["bar"]) + func("bar", ["foo"])
    with pytest.raises(sdy_passes.PassFailedError, match="cannot clone @foo: it calls itself"):
        sdy_passes.run_passes(sdy_passes.parse_module(text), ["sdy-flatten-call-graph"])
