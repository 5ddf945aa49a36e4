"""The golden cases of the passes after propagation: all of `shared/sdy_cases_export_pipeline`
(Shardy's lit tests of every export pass, the export pipeline's own, and the end-to-end
`sdy-propagation-pipeline` / `sdy-export-pipeline` runs) and the 83 `sdy-propagation-pipeline*`
cases of `shared/sdy_cases_propagation`.

Each case goes through the CLI in process (`sdy-opt FLAGS --mlir-print-op-generic
NNN.in.generic.mlir`), as jaxlib 0.10.2 ran it, as in a fresh process (Shardy warns once per
process): the output equals `NNN.out.mlir` up to SSA renaming and the warnings are jaxlib's
(`diags_generic`, line:col in the generic file); a failing case reports jaxlib's first error at
its line:col. A case whose pipeline needs a pass that is not registered is an expected failure.
The lit cases of `sdy-insert-explicit-reshards` are test_insert_explicit_reshards.py's.
"""

import json

import pytest

from sdy_passes import errors
from sdy_passes.__main__ import _parse_args, main
from sdy_passes._cli import Usage
from sdy_passes.pass_manager import UnknownPassError, build_pipeline
from tests.conftest import SHARED, needs_shared
from tests.sdy_passes.ssa import assert_same_up_to_ssa

EXPORT_DIR = SHARED / "sdy_cases_export_pipeline"
PROPAGATION_DIR = SHARED / "sdy_cases_propagation"


# The 399 lit cases of `sdy-insert-explicit-reshards` run in test_insert_explicit_reshards.py,
# through the same CLI call and compared byte for byte (here: up to SSA renaming).
COVERED_ELSEWHERE = "sdy-insert-explicit-reshards"


def _cases():
    out = []
    if (EXPORT_DIR / "manifest.json").is_file():
        out += [(EXPORT_DIR, c["folder"], c) for c in json.loads((EXPORT_DIR / "manifest.json").read_text())
                if c["pass"] != COVERED_ELSEWHERE]
    if (PROPAGATION_DIR / "manifest.json").is_file():
        out += [(PROPAGATION_DIR, c["pass"], c)
                for c in json.loads((PROPAGATION_DIR / "manifest.json").read_text())
                if "sdy-propagation-pipeline" in c["pipeline"]]
    return out


def _missing_pass(flags) -> str | None:
    """Why the case cannot run here yet: a pass of its pipeline that is not registered (named
    in its flags, or inside a pipeline it names)."""
    try:
        build_pipeline(_parse_args(list(flags))["pipeline"])
    except Usage as e:  # a flag naming no registered pass
        return str(e).split("'")[1].lstrip("-").partition("=")[0]
    except UnknownPassError as e:
        if "does not refer to a registered pass" in str(e):
            return str(e).split("'")[1]
        raise
    return None


def _param(base, folder, case):
    missing = _missing_pass(case["flags"])
    marks = [pytest.mark.xfail(reason=f"its pipeline runs {missing}, which is not registered yet",
                               raises=SystemExit, strict=True)] if missing else []
    return pytest.param(base, folder, case, marks=marks, id=f"{folder}/{case['id']}")


CASES = _cases()
pytestmark = [needs_shared(EXPORT_DIR), needs_shared(PROPAGATION_DIR)]


@pytest.mark.parametrize("base, folder, case", [_param(*c) for c in CASES])
def test_cli_matches_jaxlib(base, folder, case, capsys, monkeypatch):
    monkeypatch.setattr(errors, "_WARNED", set())  # a fresh process for once-only warnings
    path = base / folder / f"{case['id']}.in.generic.mlir"
    code = main([*case["flags"], "--mlir-print-op-generic", str(path)])
    out, err = capsys.readouterr()
    if code == 2:  # the command line was refused (an unregistered pass): the xfail above
        raise SystemExit(err)
    diags = case["diags_generic"]
    warnings = [line for line in err.splitlines() if ": warning: " in line]
    assert warnings == [f"{path}:{d['line']}:{d['col']}: warning: {d['msg']}"
                        for d in diags if d["severity"] == "warning"]
    if case["status"] == "ok":
        assert code == 0, err
        assert_same_up_to_ssa(out, (base / folder / f"{case['id']}.out.mlir").read_text())
    else:
        first = next(d for d in diags if d["severity"] == "error")
        assert code == 1
        assert f"{path}:{first['line']}:{first['col']}: error: {first['msg']}" in err.splitlines()


def test_all_cases_are_listed():
    # 1,517 cases of the export corpus (647 lit, 870 end-to-end) but the 399 of
    # COVERED_ELSEWHERE, and the 83 whole-pipeline cases of the propagation corpus: fewer means
    # the data set is incomplete
    assert len(CASES) == 1517 - 399 + 83
