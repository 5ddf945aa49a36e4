"""`sdy-drop-sharding-and-mesh` against jaxlib's registered pass: JAX's lowered corpus programs,
Shardy's executable global-to-local files (part 1 as written and as our
`sdy-convert-global-to-local` makes it, which the files' RUN lines then run this pass on)."""

from __future__ import annotations

import pytest

from sdy_passes import parse_module, print_module, run_passes
from tests.conftest import SHARED, needs_shared
from tests.sdy_passes.jax_corpus import lower_all
from tests.sdy_passes.pass_oracle import assert_match_jaxlib

FOLDER = SHARED / "sdy_cases_execute"


@pytest.mark.jaxlib
def test_jax_corpus_matches_jaxlib():
    texts = [r["pretty"] for r in lower_all().values() if "pretty" in r]
    assert sum("sdy.sharding" in t for t in texts) >= 10  # the sharded programs are among them
    assert_match_jaxlib(texts, ["sdy-drop-sharding-and-mesh"])


@pytest.mark.jaxlib
@needs_shared(FOLDER / "manifest.json")
def test_shardy_executable_files_match_jaxlib():
    texts = []
    for path in sorted(FOLDER.glob("*.mlir")):
        part1 = path.read_text().split("//--- part1.mlir", 1)[1].split("//--- part2.mlir", 1)[0]
        texts += [part1, print_module(run_passes(parse_module(part1), "sdy-convert-global-to-local"))]
    assert len(texts) == 66
    assert_match_jaxlib(texts, ["sdy-drop-sharding-and-mesh"])


def test_drops_every_sharding_and_mesh():
    text = ('sdy.mesh @m = <["x"=2]>\n'
            'func.func @f(%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>, jax.buffer_donor = true},\n'
            '             %b: tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{}]>})\n'
            '    -> (tensor<4xf32> {sdy.sharding = #sdy.sharding<@m, [{"x"}]>}) {\n'
            '  %0 = stablehlo.add %a, %b {sdy.sharding = #sdy.sharding_per_value<[<@m, [{"x"}]>]>} : tensor<4xf32>\n'
            '  return %0 : tensor<4xf32>\n}\n')
    out = print_module(run_passes(parse_module(text), "sdy-drop-sharding-and-mesh"))
    assert "sdy" not in out.replace("jax.buffer_donor", "")
    assert "jax.buffer_donor = true" in out and "res_attrs" not in print_module(parse_module(out), generic=True)
