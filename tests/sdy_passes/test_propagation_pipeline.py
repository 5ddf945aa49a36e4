"""`sdy-propagation-pipeline{dedup-functions-fully}`: jaxlib 0.10.2's composition, import to
`sdy-export-pipeline`."""

import io
import sys

import hypothesis.strategies as st
import pytest
from hypothesis import given

import sdy_passes
from sdy_passes.__main__ import main
from sdy_passes.errors import PassFailedError
from sdy_passes.pass_manager import get_pass, parse_pipeline, pipeline_text
from tests.conftest import needs_shared
from tests.sdy_passes.call_graph_texts import MESH, func
from tests.sdy_passes.propagation_oracle import BATCH, FUZZ
from tests.sdy_passes.propagation_pipeline_oracle import (
    CASE_FOLDERS, CASES_DIR, FIRST_EXPORT_PASS, FLAGS, call_graph_modules, check_random_pipeline,
    pipeline_stages, run_here, same,
)

@pytest.mark.jaxlib
@pytest.mark.parametrize("dedup", [False, True])
def test_composition_is_jaxlibs(dedup):
    theirs = pipeline_stages()[0]["steps"][dedup]
    ours = pipeline_text(parse_pipeline(f"builtin.module({FLAGS[dedup]})"))
    assert ours == "builtin.module(" + ",".join(theirs) + ")"
    assert FIRST_EXPORT_PASS in theirs


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


@pytest.mark.jaxlib
@needs_shared(CASES_DIR)
def test_matches_jaxlib_on_the_propagation_pipeline_cases():
    # the 83 cases of Shardy's propagation_pipeline*.mlir; jaxlib runs the explicit pass list
    assert _check(lambda name: name.split("/")[0] in CASE_FOLDERS.values()) >= 80


@pytest.mark.jaxlib
def test_matches_jaxlib_on_jax_programs_with_calls():
    assert _check(lambda name: "/" not in name) >= 14


def test_help_says_it_ends_with_the_export_pipeline(capsys):
    assert "sdy-export-pipeline" in get_pass("sdy-propagation-pipeline").summary
    assert main(["--help"]) == 0
    assert "sdy-export-pipeline" in capsys.readouterr().out


def test_without_main_fails_with_a_location(capsys, monkeypatch):
    text = MESH + func("a", private=False) + func("b", private=False)
    with pytest.raises(PassFailedError, match="Failed to lookup function: main"):
        sdy_passes.run_passes(sdy_passes.parse_module(text), ["sdy-propagation-pipeline"])
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    assert main(["--sdy-propagation-pipeline", "-"]) == 1
    err = capsys.readouterr().err
    # at the first func, which sdy-pre-order-funcs made @b (line 6)
    assert "<stdin>:6:1: error: Failed to lookup function: main" in err and "Traceback" not in err


def _after_propagation(n):
    """A chain of `n` named computations "foo" as propagation leaves them (edges with
    shardings; every other one's body sharded differently from its result edge)."""
    lines = ['sdy.mesh @mesh = <["x"=2, "y"=2]>',
             'func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {',
             "  %e0 = stablehlo.negate %arg0 : tensor<8xf32>"]
    for i in range(n):
        inner = '"y"' if i % 2 else '"x"'
        lines += [f"  %c{i} = sdy.named_computation<\"foo\">(%e{i}) (%a: tensor<8xf32>) {{",
                  '    %x = sdy.data_flow_edge %a sharding=<@mesh, [{"x"}]> : tensor<8xf32>',
                  f"    %y = stablehlo.abs %x {{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{{{inner}}}]>]>}} : tensor<8xf32>",
                  "    sdy.return %y : tensor<8xf32>",
                  "  } : (tensor<8xf32>) -> tensor<8xf32>",
                  f'  %e{i + 1} = sdy.data_flow_edge %c{i} sharding=<@mesh, [{{"x"}}]> : tensor<8xf32>']
    return "\n".join(lines + [f"  return %e{n} : tensor<8xf32>", "}"])


TAIL = ("sdy-export-named-computations,sdy-propagate-to-func-results,sdy-unflatten-call-graph,"
        "symbol-dce,sdy-insert-func-call-reshards,sdy-add-func-data-flow-edges,"
        "func.func(sdy-sink-func-data-flow-edges)")


def test_the_passes_after_propagation_and_verification_are_linear():
    from sdy_passes.verifier import verify_module
    from tests.sdy_passes.test_scaling import _assert_linear
    sdy_passes.run_passes(module := sdy_passes.parse_module(_after_propagation(2)), TAIL)
    assert "sdy.reshard" in sdy_passes.print_module(module)
    # 150 and 1500 computations (editing a block op by op made the export quadratic: 0.2 s at
    # 3000 computations, 30 s at 30000), then the exported module's 150 and 1500 funcs and calls
    # (a symbol table built per call op: verifying 3000 calls took 20 s)
    parsed = {}

    def make(n):
        parsed[n] = sdy_passes.parse_module(_after_propagation(n), verify=False)
        return parsed[n]
    _assert_linear(make, lambda module: sdy_passes.run_passes(module.clone(), TAIL, verify=False), n=150)
    for module in parsed.values():
        sdy_passes.run_passes(module, "sdy-export-named-computations", verify=False)
    _assert_linear(parsed.get, verify_module, n=150)


@pytest.mark.jaxlib
@FUZZ
@given(st.lists(call_graph_modules(), min_size=BATCH, max_size=BATCH, unique=True))
def test_random_modules_with_calls_match_jaxlib(texts):
    assert check_random_pipeline(texts) > BATCH  # of 2 * BATCH (module, mode) pairs
