"""Propagation against jaxlib 0.10.2: Shardy's lit cases and random modules.

* `D2_CASES`, `d2_cases(stem)`, `check_case(case)`: the golden propagation cases of
  `shared/sdy_cases_propagation` (all but the 83 that run the whole `sdy-propagation-pipeline`);
  the case's pipeline on its input must print the recorded output and warnings. Propagation
  builds each op's rule just in time from `sdy_passes.op_sharding_rules`, as jaxlib does.
* `check_random_module(text, pipelines)`: a random module through jaxlib (one long-lived child,
  so Hypothesis shrinks a disagreement fast) and here; `check_random(texts, pipeline)` a batch
  (one child per batch). `populate_and_run(texts, pipelines)`: a batch through jaxlib; with
  `populate=True` it first attaches jaxlib's rules (`func.func(sdy-populate-op-sharding-rules)`),
  which isolates propagation from the rule table.
* `lit_case_test(stem)`, `random_module_tests(...)`: the tests each `test_<pass>.py` defines.
"""

from __future__ import annotations

import atexit
import json
import os
import pathlib
import re
import warnings

from hypothesis import HealthCheck, Phase, settings

from tests.conftest import SHARED, needs_shared
from tests.jaxlib_child import ChildFailed, run_child
from tests.sdy_passes.pass_oracle import _RUN_ONE, Verdict, _verdict

CASES_DIR = SHARED / "sdy_cases_propagation"

POPULATE = "builtin.module(func.func(sdy-populate-op-sharding-rules))"
POPULATE_CONSERVATIVE = "builtin.module(func.func(sdy-populate-op-sharding-rules{conservative-propagation=true}))"

_CODE = _RUN_ONE + """
RESULT = []
for text, populate, pipelines in PAYLOAD:
    annotated = run_one(text, populate)
    runs = [run_one(annotated["text"], p) for p in pipelines] if annotated["ok"] else []
    RESULT.append([annotated, runs])
"""


def _populate_for(pipeline: str) -> str:
    return POPULATE_CONSERVATIVE if "conservative-propagation=true" in pipeline else POPULATE


def populate_and_run(texts, pipelines, *, populate=True, timeout=600):
    """Per text: (annotated Verdict, [Verdict per pipeline]); a text whose child crashes alone
    gets crashed verdicts. `populate=False` runs the pipelines on the text as it is."""
    rules = _populate_for(" ".join(pipelines)) if populate else ""
    payload = [[t, rules, list(pipelines)] for t in texts]

    def convert(raw):
        annotated, runs = raw
        return _verdict(annotated), [_verdict(r) for r in runs]
    try:
        return [convert(r) for r in run_child(_CODE, payload, timeout=timeout)]
    except ChildFailed:
        pass
    out = []
    for one in payload:
        try:
            out.append(convert(run_child(_CODE, [one], timeout=timeout)[0]))
        except ChildFailed:
            out.append((Verdict(crashed=True), [Verdict(crashed=True)] * len(pipelines)))
    return out


def run_ours(text: str, pipeline: str) -> tuple[str, list[str]]:
    """Our generic output and the warning messages emitted."""
    import sdy_passes

    module = sdy_passes.parse_module(text)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sdy_passes.run_passes(module, pipeline)
    return sdy_passes.print_module(module, generic=True), [str(w.message) for w in caught]


def _load_cases():
    manifest = CASES_DIR / "manifest.json"
    if not manifest.is_file():
        return []
    return [c for c in json.loads(manifest.read_text())
            if c["issue"] == "D2" and "sdy-propagation-pipeline" not in c["pipeline"]]


D2_CASES = _load_cases()
"""The D2 cases but the 83 that run the whole `sdy-propagation-pipeline` (export passes)."""


def case_path(case, suffix):
    return CASES_DIR / case["pass"] / f"{case['id']}.{suffix}"


def d2_cases(stem: str):
    """The cases whose propagation pass is `sdy-<stem>` (e.g. `basic-propagate`)."""
    return [c for c in D2_CASES if re.search(rf"(^|__)sdy-{stem}($|[._])", c["pass"])]


def known_failure(case) -> str | None:
    """Why a case cannot agree yet (the test then expects it to fail), or None (all agree)."""
    return None


def case_param(case):
    """A pytest param for the case, expected to fail when `known_failure` says so."""
    import pytest

    reason = known_failure(case)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=f"{case['pass']}/{case['id']}", marks=marks)


def run_cli(path: pathlib.Path, pipeline: str) -> tuple[str, list[str]]:
    """`sdy-opt --pass-pipeline=... --mlir-print-op-generic FILE`, in process: the generic
    output and the messages of the warnings it printed."""
    import contextlib
    import io

    from sdy_passes.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([f"--pass-pipeline={pipeline}", "--mlir-print-op-generic", str(path)])
    assert status == 0, err.getvalue()
    return out.getvalue(), re.findall(r"^.*?: warning: (.*)$", err.getvalue(), re.MULTILINE)


def check_case(case) -> None:
    """The case's pipeline, run by the CLI on its input, prints the recorded output (up to SSA
    names) and the recorded warnings."""
    from tests.sdy_passes.ssa import assert_same_up_to_ssa

    ours, warned = run_cli(case_path(case, "in.generic.mlir"), case["pipeline"])
    assert_same_up_to_ssa(ours, case_path(case, "out.mlir").read_text())
    expected = [d["msg"] for d in case.get("diags_generic", []) if d["severity"] == "warning"]
    assert warned == expected


EXAMPLES = int(os.environ.get("SDY_FUZZ_EXAMPLES", "1"))
BATCH = int(os.environ.get("SDY_FUZZ_BATCH", "12"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize="SDY_FUZZ_EXAMPLES" not in os.environ,
                phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
"""Random-module tests: a fixed, derandomized batch of `BATCH` modules by default;
`SDY_FUZZ_EXAMPLES=N` draws N fresh batches (one jaxlib child per batch and pipeline)."""


def check_random(texts, pipeline: str, *, runs: int = 1, populate: bool = False) -> int:
    """`pipeline` must print the same here as in jaxlib on each text (MLIR jaxlib reads; with
    `populate`, after jaxlib attached its rules). With `runs=2` jaxlib runs it twice and a module whose runs differ or crash gets no
    verdict (jaxlib's intermittent user-priority segfault, spec §4.6); nor does one jaxlib fails
    on. Returns the number of modules compared."""
    from tests.sdy_passes.ssa import normalize_ssa

    failures, compared = [], 0
    for annotated, verdicts in populate_and_run(texts, [pipeline] * runs, populate=populate):
        assert annotated.ok or annotated.crashed, f"jaxlib rejected a generated module: {annotated.errors}"
        if not annotated.ok or any(not v.ok for v in verdicts) or len({v.text for v in verdicts}) != 1:
            # A crash, two runs that differ, or jaxlib's verifier rejecting what its own pass made
            # (seen: a data-flow edge of a scalar given a rank-2 sharding): no verdict.
            continue
        compared += 1
        ours, _ = run_ours(annotated.text, pipeline)
        a, b = normalize_ssa(ours).splitlines(), normalize_ssa(verdicts[0].text).splitlines()
        if a != b:
            diff = next((f"line {i + 1}:\n  ours:   {x}\n  jaxlib: {y}"
                         for i, (x, y) in enumerate(zip(a, b)) if x != y), f"{len(a)} vs {len(b)} lines")
            failures.append(f"{pipeline}: outputs differ at {diff}\n--- input ---\n{annotated.text}")
    assert not failures, f"{len(failures)} disagreement(s); first:\n{failures[0]}"
    return compared



MODULE_EXAMPLES = int(os.environ.get("PROPAGATION_FUZZ", "8"))
FUZZ_MODULES = settings(max_examples=MODULE_EXAMPLES, deadline=None, database=None,
                derandomize="PROPAGATION_FUZZ" not in os.environ,
                phases=[Phase.explicit, Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck))
"""`random_module_tests`: a fixed, derandomized sample of 8 modules by default;
`PROPAGATION_FUZZ=N` draws N fresh ones. jaxlib runs in one long-lived child per test module,
so a disagreement shrinks quickly to a minimal module."""

_SERVER_CODE = _RUN_ONE + """
def run_item(item):
    text, pipelines, runs = item
    canonical = run_one(text, "")
    if not canonical["ok"]:
        return [canonical, []]
    return [canonical, [[run_one(canonical["text"], p) for _ in range(runs)] for p in pipelines]]
"""
_SERVERS = {}


def jaxlib_server():
    """This process's jaxlib child for `check_random_module` (started on first use)."""
    if "server" not in _SERVERS:
        from tests.jaxlib_child import JaxlibServer
        _SERVERS["server"] = server = JaxlibServer(_SERVER_CODE)
        atexit.register(server.close)
    return _SERVERS["server"]


def check_random_module(text, pipelines, *, runs: int = 1) -> bool:
    """Each of `pipelines` must print the same here as in jaxlib on `text` (MLIR jaxlib reads),
    up to SSA names. With `runs=2` jaxlib runs each twice and a module whose runs differ or crash
    gets no verdict (jaxlib's intermittent user-priority segfault, spec §4.6); nor does one on
    which jaxlib fails. Returns whether the module was compared."""
    from tests.sdy_passes.ssa import normalize_ssa

    raw = jaxlib_server().run([text, list(pipelines), runs])
    if raw is None:
        return False  # jaxlib crashed
    canonical, per_pipeline = _verdict(raw[0]), raw[1]
    assert canonical.ok, f"jaxlib rejected a generated module: {canonical.errors}\n{text}"
    compared = False
    for pipeline, verdicts in zip(pipelines, per_pipeline):
        verdicts = [_verdict(v) for v in verdicts]
        if any(not v.ok for v in verdicts) or len({v.text for v in verdicts}) != 1:
            # Two runs that differ, or jaxlib's verifier rejecting what its own pass made (seen:
            # a data-flow edge of a scalar given a rank-2 sharding): no verdict.
            continue
        compared = True
        ours, _ = run_ours(canonical.text, pipeline)
        a, b = normalize_ssa(ours).splitlines(), normalize_ssa(verdicts[0].text).splitlines()
        if a != b:
            diff = next((f"line {i + 1}:\n  ours:   {x}\n  jaxlib: {y}"
                         for i, (x, y) in enumerate(zip(a, b)) if x != y), f"{len(a)} vs {len(b)} lines")
            raise AssertionError(f"{pipeline}: outputs differ at {diff}\n--- input ---\n{canonical.text}")
    return compared


# -- the tests each propagation pass's test module defines -----------------------------------------

def lit_case_test(stem: str):
    """`test_lit_case_matches_jaxlib` over the lit cases of pass `sdy-<stem>`."""
    import pytest

    cases = d2_cases(stem)

    @needs_shared(CASES_DIR)
    @pytest.mark.parametrize("case", [case_param(c) for c in cases])
    def test_lit_case_matches_jaxlib(case):
        check_case(case)
    return test_lit_case_matches_jaxlib


def random_module_tests(pipelines, pass_text: str, runs: int = 1):
    """Two tests on random modules: `prop_modules` through each of `pipelines` and through
    add-data-flow-edges, `pass_text`, sink (so propagation crosses the while loops, named and
    manual computations), and `module_gen` modules (all data-flow ops, unregistered ones too)
    through the latter. A disagreement shrinks to a minimal module, shown in the failure."""
    import pytest
    from hypothesis import given

    from tests.sdy_passes.module_gen import modules
    from tests.sdy_passes.propagation_modules import prop_modules

    with_edges = f"builtin.module(sdy-add-data-flow-edges,{pass_text},func.func(sdy-sink-data-flow-edges))"

    @pytest.mark.jaxlib
    @FUZZ_MODULES
    @given(prop_modules(max_ops=15))
    def test_random_modules_match_jaxlib(text):
        check_random_module(text, [*pipelines, with_edges], runs=runs)

    @pytest.mark.jaxlib
    @FUZZ_MODULES
    @given(modules(inline_meshes=False))
    def test_random_data_flow_modules_match_jaxlib(text):
        check_random_module(text, [with_edges], runs=runs)
    return test_random_modules_match_jaxlib, test_random_data_flow_modules_match_jaxlib
