"""The eight sdy collective ops: parse (pretty and generic), print and verify exactly as jaxlib
0.10.2 on Shardy's `collective_*.mlir` cases (`../shared/sdy_cases_export/collective-ops`,
skipped when absent): printed forms equal jaxlib's, failing chunks give jaxlib's first error at
the same line:col."""

from __future__ import annotations

import json
import re

import pytest

import sdy_passes
from sdy_passes.errors import SdyError
from tests.conftest import SHARED, needs_shared
from tests.sdy_passes.ssa import assert_same_up_to_ssa

EXPORT = SHARED / "sdy_cases_export"
FOLDER = EXPORT / "collective-ops"
_LOC = re.compile(r'^loc\("-":(\d+):(\d+)\): (.*)$')


def _cases():
    manifest = EXPORT / "manifest.json"
    if not manifest.is_file():
        return []
    return [c for c in json.loads(manifest.read_text()) if c["folder"] == "collective-ops"]


CASES = _cases()
pytestmark = needs_shared(EXPORT)


@pytest.mark.parametrize("case", [c for c in CASES if c["status"] == "ok"], ids=lambda c: c["id"])
def test_valid_cases_print_as_jaxlib(case):
    module = sdy_passes.parse_module((FOLDER / f"{case['id']}.in.mlir").read_text())
    sdy_passes.verify_module(module)
    assert_same_up_to_ssa(sdy_passes.print_module(module, generic=True),
                          (FOLDER / f"{case['id']}.in.generic.mlir").read_text())
    pretty = FOLDER / f"{case['id']}.in.pretty.mlir"
    if pretty.is_file():
        assert_same_up_to_ssa(sdy_passes.print_module(module), pretty.read_text())
    # The generic form reads back to the same module.
    again = sdy_passes.parse_module((FOLDER / f"{case['id']}.in.generic.mlir").read_text())
    sdy_passes.verify_module(again)
    assert sdy_passes.print_module(again) == sdy_passes.print_module(module)


@pytest.mark.parametrize("case", [c for c in CASES if c["status"] != "ok"], ids=lambda c: c["id"])
def test_invalid_cases_fail_as_jaxlib(case):
    line, col, message = _LOC.match((FOLDER / f"{case['id']}.err.txt").read_text().splitlines()[0]).groups()
    with pytest.raises(SdyError) as info:
        module = sdy_passes.parse_module((FOLDER / f"{case['id']}.in.mlir").read_text())
        sdy_passes.verify_module(module)
    assert info.value.message == message
    assert (info.value.location.line, info.value.location.col) == (int(line), int(col))


# Shardy `main`'s reduction syntax, which jaxlib 0.10.2 rejects (spec §1): its first diagnostic,
# position included (checked with jaxlib's parser).
NEWER_SYNTAX = [
    ('%0 = sdy.all_reduce max {"x"} %arg0 out_sharding=<@mesh, [{}]> : tensor<8xf32>', 22, "expected '{'"),
    ('%0 = sdy.reduce_scatter max [{"x"}] %arg0 out_sharding=<@mesh, [{"x"}]> : tensor<8xf32>', 26,
     "expected '['"),
    ('%0 = sdy.all_gather [{"x"}] %arg0 out_sharding=<@mesh, [{}], unreduced=max{"y"}> : tensor<8xf32>', 74,
     "expected '{'"),
]


@pytest.mark.parametrize("body, col, message", NEWER_SYNTAX)
def test_newer_reduction_syntax_is_refused(body, col, message):
    text = ('sdy.mesh @mesh = <["x"=2, "y"=2]>\nfunc.func @f(%arg0: tensor<8xf32> {sdy.sharding = '
            '#sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {\n  ' + body + '\n  return %0 : tensor<8xf32>\n}')
    with pytest.raises(SdyError) as info:
        sdy_passes.parse_module(text)
    assert str(info.value).splitlines()[0] == f"-:3:{col}: error: {message}"
