"""The 103 golden cases of `shared/sdy_cases` (cut from Shardy's lit tests, run through jaxlib).

Successful cases: parse `NNN.in.generic.mlir`, run the case's pass, print the generic form and
compare with `NNN.out.mlir` up to SSA renaming. Failing cases: the pass reports the message of
`NNN.err.txt` at the same `line:col` when fed the case's own text (`NNN.in.mlir`, whose lines the
locations count), and the same message when fed the generic text.
"""

import json
import re

import pytest

import sdy_passes
from sdy_passes.errors import PassFailedError
from tests.conftest import SDY_CASES, needs_shared
from tests.sdy_passes.ssa import assert_same_up_to_ssa

_LOC_RE = re.compile(r'^loc\("-":(\d+):(\d+)\): (.*)$')


def _cases():
    manifest = SDY_CASES / "manifest.json"
    if not manifest.is_file():
        return []
    return json.loads(manifest.read_text())


CASES = _cases()
pytestmark = needs_shared(SDY_CASES)


def _case_id(case):
    return f"{case['pass']}/{case['id']}"


def _path(case, suffix):
    return SDY_CASES / case["pass"] / f"{case['id']}.{suffix}"


def _run(text, flag):
    module = sdy_passes.parse_module(text)
    sdy_passes.run_passes(module, [flag])
    return sdy_passes.print_module(module, generic=True)


@pytest.mark.parametrize("case", [c for c in CASES if c["status"] == "ok"], ids=_case_id)
def test_output_matches_shardy(case):
    got = _run(_path(case, "in.generic.mlir").read_text(), case["pass"])
    assert_same_up_to_ssa(got, _path(case, "out.mlir").read_text())


def _expected_error(case):
    first = _path(case, "err.txt").read_text().splitlines()[0]
    match = _LOC_RE.match(first)
    assert match, first
    return int(match[1]), int(match[2]), match[3]


@pytest.mark.parametrize("case", [c for c in CASES if c["status"] != "ok"], ids=_case_id)
def test_error_matches_shardy(case):
    line, col, message = _expected_error(case)
    with pytest.raises(PassFailedError) as info:
        _run(_path(case, "in.mlir").read_text(), case["pass"])
    assert info.value.message == message
    assert (info.value.location.line, info.value.location.col) == (line, col)
    assert f"{line}:{col}" in str(info.value)
    with pytest.raises(PassFailedError) as info:
        _run(_path(case, "in.generic.mlir").read_text(), case["pass"])
    assert info.value.message == message


def test_all_cases_are_listed():
    # 97 successful and 6 failing cases: a manifest with fewer means the data set is incomplete.
    assert len(CASES) == 103
    assert sum(c["status"] == "ok" for c in CASES) == 97
