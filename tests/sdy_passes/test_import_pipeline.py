"""`sdy-import-pipeline`: jaxlib 0.10.2's composition, with `dedup-functions-fully`."""

import re

import pytest

import sdy_passes
from sdy_passes.pass_manager import UnknownPassError, parse_pipeline, pipeline_text
from tests.jaxlib_child import run_child
from tests.sdy_passes.call_graph_texts import TEXTS
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

PIPELINES = ["builtin.module(sdy-import-pipeline)",
             "builtin.module(sdy-import-pipeline{dedup-functions-fully=true})"]

_PRINT = """
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import passmanager
with jax_mlir.make_ir_context():
    RESULT = [str(passmanager.PassManager.parse(p)) for p in PAYLOAD]
"""


def _names(text):
    return re.sub(r"\{[^{}]*\}", "", text)  # option values aside (jaxlib prints its defaults)


@pytest.mark.jaxlib
def test_composition_is_jaxlibs():
    printed = run_child(_PRINT, PIPELINES)
    assert [_names(pipeline_text(parse_pipeline(p))) for p in PIPELINES] == [_names(t) for t in printed]


def test_save_module_is_a_step_but_not_a_flag():
    assert "sdy-save-module" in pipeline_text(parse_pipeline(PIPELINES[0]))
    with pytest.raises(UnknownPassError, match="'sdy-save-module' does not refer"):
        parse_pipeline("builtin.module(sdy-save-module)")


def test_the_issue_example_gets_no_sharding_and_no_rule():
    # issue 25: the seed pipeline added `sdy.sharding` to the add and a rule to the constraint
    m = sdy_passes.parse_module("""sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.constant dense<1.0> : tensor<8x8xf32>
  %1 = stablehlo.add %arg0, %0 : tensor<8x8xf32>
  %2 = sdy.sharding_constraint %1 <@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}""")
    sdy_passes.run_passes(m, ["sdy-import-pipeline"])
    text = sdy_passes.print_module(m)
    assert "sdy.sharding =" not in text and "sharding_rule" not in text


@pytest.mark.jaxlib
@pytest.mark.parametrize("flag", ["sdy-import-pipeline", "sdy-import-pipeline{dedup-functions-fully=true}"])
def test_matches_jaxlib_on_calls(flag):
    assert_match_jaxlib(TEXTS, [flag])
