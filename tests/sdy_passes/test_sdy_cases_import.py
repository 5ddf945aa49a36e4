"""Group D1 of `shared/sdy_cases_propagation`: Shardy's lit cases for the import passes jaxlib
runs before propagation (symbol-dce and friends, `sdy-import-pipeline`, op sharding rules).

Each case goes through the CLI (`sdy-opt FLAGS --mlir-print-op-generic NNN.in.generic.mlir`), as
jaxlib 0.10.2 ran it: the output equals `NNN.out.mlir` up to SSA renaming, and the warnings are
jaxlib's (`diags_generic`, line:col in the generic file), each case as in a fresh process (Shardy
warns once per process).
"""

import json

import pytest

from sdy_passes import errors
from sdy_passes.__main__ import main
from tests.conftest import SHARED, needs_shared
from tests.sdy_passes.ssa import assert_same_up_to_ssa

CASES_DIR = SHARED / "sdy_cases_propagation"


def _cases():
    manifest = CASES_DIR / "manifest.json"
    if not manifest.is_file():
        return []
    return [c for c in json.loads(manifest.read_text()) if c["issue"] == "D1"]


CASES = _cases()
pytestmark = needs_shared(CASES_DIR)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['pass']}/{c['id']}")
def test_cli_output_matches_jaxlib(case, capsys, monkeypatch):
    monkeypatch.setattr(errors, "_WARNED", set())  # a fresh process for once-only warnings
    path = CASES_DIR / case["pass"] / f"{case['id']}.in.generic.mlir"
    code = main([*case["flags"], "--mlir-print-op-generic", str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert_same_up_to_ssa(out, (CASES_DIR / case["pass"] / f"{case['id']}.out.mlir").read_text())
    warnings = [line for line in err.splitlines() if ": warning: " in line]
    assert warnings == [f"{path}:{d['line']}:{d['col']}: warning: {d['msg']}"
                        for d in case["diags_generic"]]


def test_all_d1_cases_are_listed():
    assert len(CASES) == 217
