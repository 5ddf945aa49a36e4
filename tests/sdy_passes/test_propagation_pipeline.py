"""`sdy-propagation-pipeline{dedup-functions-fully}`: jaxlib 0.10.2's composition up to and
including `sdy-insert-func-call-reshards`; it stops before `sdy-export-pipeline`."""

import io
import sys

import pytest

import sdy_passes
from sdy_passes.__main__ import main
from sdy_passes.errors import PassFailedError
from sdy_passes.pass_manager import get_pass, parse_pipeline, pipeline_text
from tests.conftest import needs_shared
from tests.sdy_passes.call_graph_texts import MESH, func
from tests.sdy_passes.propagation_pipeline_oracle import (
    CASE_FOLDERS, CASES_DIR, FIRST_EXPORT_PASS, FLAGS, pipeline_stages, run_here, same,
)

pytestmark = pytest.mark.jaxlib


@pytest.mark.parametrize("dedup", [False, True])
def test_composition_is_jaxlibs_up_to_the_export_pipeline(dedup):
    theirs = pipeline_stages()[0]["steps"][dedup]
    ours = pipeline_text(parse_pipeline(f"builtin.module({FLAGS[dedup]})"))
    assert ours == "builtin.module(" + ",".join(theirs[:theirs.index(FIRST_EXPORT_PASS)]) + ")"


def _check(select) -> int:
    failures, compared = [], 0
    for name, dedup, stages in pipeline_stages()[1]:
        if not select(name) or stages is None:  # None: jaxlib's propagation crashed (spec §4.6)
            continue
        ours = run_here(stages[0][1], [FLAGS[dedup]])
        compared += 1
        if not same(ours, stages[-1][1]):
            failures.append(f"{name} ({FLAGS[dedup]})")
    assert not failures, f"{len(failures)} of {compared} differ from jaxlib: {failures[:5]}"
    return compared


@needs_shared(CASES_DIR)
def test_matches_jaxlib_on_the_propagation_pipeline_cases():
    # the 83 cases of Shardy's propagation_pipeline*.mlir; jaxlib runs the explicit pass list
    assert _check(lambda name: name.split("/")[0] in CASE_FOLDERS.values()) >= 80


def test_matches_jaxlib_on_jax_programs_with_calls():
    assert _check(lambda name: "/" not in name) >= 14


def test_help_says_where_it_stops(capsys, monkeypatch):
    assert "stops before sdy-export-pipeline" in get_pass("sdy-propagation-pipeline").summary
    assert main(["--help"]) == 0
    assert "stops before sdy-export-pipeline" in capsys.readouterr().out


def test_without_main_fails_with_a_location(capsys, monkeypatch):
    text = MESH + func("a", private=False) + func("b", private=False)
    with pytest.raises(PassFailedError, match="Failed to lookup function: main"):
        sdy_passes.run_passes(sdy_passes.parse_module(text), ["sdy-propagation-pipeline"])
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert main(["--sdy-propagation-pipeline", "-"]) == 1
    err = capsys.readouterr().err
    # at the first func, which sdy-pre-order-funcs made @b (line 6)
    assert "<stdin>:6:1: error: Failed to lookup function: main" in err and "Traceback" not in err
