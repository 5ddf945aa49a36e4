"""Propagation against jaxlib 0.10.2, on inputs whose ops carry jaxlib's own sharding rules.

The project has no op sharding rule table yet (propagation asks `_rule_for`, which gives none),
so every input is first run through jaxlib's `func.func(sdy-populate-op-sharding-rules)` in the
child: each op then carries the `sdy.sharding_rule` jaxlib's registry gives it, and both sides
propagate that same rule-annotated module. jaxlib keeps a pre-existing rule as it is and removes
all non-custom rules at the end (unless `keep-sharding-rules`), so for the golden cases its output
on the annotated input equals the recorded output (checked for all 253 non-pipeline D2 cases).

* `populate_and_run(texts, pipelines)`: per text, the rule-annotated text and jaxlib's verdict
  for each pipeline on it (`Verdict(crashed=True)` when the child died on it, twice).
* `run_ours(text, pipeline)`: this library's generic output (or raises).
* `D2_CASES`, `d2_cases(stem)`: the golden propagation cases of `shared/sdy_cases_propagation`.
"""

from __future__ import annotations

import functools
import json
import os
import pathlib
import re
import warnings

from hypothesis import HealthCheck, Phase, settings

from tests.jaxlib_child import ChildFailed, run_child
from tests.sdy_passes.pass_oracle import _RUN_ONE, Verdict, _verdict

CASES_DIR = pathlib.Path(__file__).resolve().parents[3] / "shared" / "sdy_cases_propagation"

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


@functools.lru_cache(maxsize=None)
def annotated_case_inputs() -> dict[str, str]:
    """`pass/id` → the case's input with jaxlib's rules attached (one child for all cases)."""
    by_populate: dict[str, list] = {}
    for case in D2_CASES:
        by_populate.setdefault(_populate_for(case["pipeline"]), []).append(case)
    result = {}
    for populate, cases in by_populate.items():
        payload = [[case_path(c, "in.generic.mlir").read_text(), populate, []] for c in cases]
        for case, (annotated, _) in zip(cases, run_child(_CODE, payload, timeout=600)):
            assert annotated["ok"], annotated
            result[f"{case['pass']}/{case['id']}"] = annotated["text"]
    return result


# Cases that cannot agree yet, with the reason (the test expects them to fail).
NEEDS_RULE_TABLE = {f"sdy-basic-propagate/{i}" for i in ("112", "113", "114", "115")}
"""Sharding-group sync inserts constraints during the pass; jaxlib gives them their rule just in
time from its registry, which the project does not have yet (`_rule_for`)."""


def known_failure(case) -> str | None:
    key = f"{case['pass']}/{case['id']}"
    if key in NEEDS_RULE_TABLE:
        return "needs the op sharding rule table: constraints created by group sync have no rule"
    if "debug-" in case["pipeline"]:
        return "debug-sharding-origins / debug-propagation-edge-sharding are not implemented"
    return None


def case_param(case):
    """A pytest param for the case, expected to fail when `known_failure` says so."""
    import pytest

    reason = known_failure(case)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=f"{case['pass']}/{case['id']}", marks=marks)


def check_case(case) -> None:
    """The case's pipeline on its rule-annotated input prints the recorded output (up to SSA
    names) and emits the recorded warnings."""
    from tests.sdy_passes.ssa import assert_same_up_to_ssa

    text = annotated_case_inputs()[f"{case['pass']}/{case['id']}"]
    ours, warned = run_ours(text, case["pipeline"])
    assert_same_up_to_ssa(ours, case_path(case, "out.mlir").read_text())
    expected = [d["msg"] for d in case.get("diags_generic", []) if d["severity"] == "warning"]
    assert [w.partition(": ")[2] for w in warned] == expected


EXAMPLES = int(os.environ.get("SDY_FUZZ_EXAMPLES", "1"))
BATCH = int(os.environ.get("SDY_FUZZ_BATCH", "12"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize="SDY_FUZZ_EXAMPLES" not in os.environ,
                phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
"""Random-module tests: a fixed, derandomized batch of `BATCH` modules by default;
`SDY_FUZZ_EXAMPLES=N` draws N fresh batches (one jaxlib child per batch and pipeline)."""


def check_random(texts, pipeline: str, *, runs: int = 1) -> int:
    """Each text (MLIR jaxlib reads) gets jaxlib's rules; `pipeline` must print the same here as
    in jaxlib. With `runs=2` jaxlib runs it twice and a module whose runs differ or crash gets no
    verdict (jaxlib's intermittent user-priority segfault, spec §4.6); nor does one jaxlib fails
    on. Returns the number of modules compared."""
    from tests.sdy_passes.ssa import normalize_ssa

    failures, compared = [], 0
    for annotated, verdicts in populate_and_run(texts, [pipeline] * runs):
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


# -- the tests each propagation pass's test module defines -----------------------------------------

def lit_case_test(stem: str):
    """`test_lit_case_matches_jaxlib` over the lit cases of pass `sdy-<stem>`."""
    import pytest

    cases = d2_cases(stem)

    @pytest.mark.jaxlib
    @pytest.mark.skipif(not cases, reason=f"golden cases not found at {CASES_DIR}")
    @pytest.mark.parametrize("case", [case_param(c) for c in cases])
    def test_lit_case_matches_jaxlib(case):
        check_case(case)
    return test_lit_case_matches_jaxlib


def random_module_tests(pipelines, pass_text: str, runs: int = 1):
    """Two tests on fixed random batches: `prop_modules` through each of `pipelines`, and
    `module_gen` modules (data-flow ops) through add-data-flow-edges, `pass_text`, sink."""
    import hypothesis.strategies as st
    import pytest
    from hypothesis import given

    from tests.sdy_passes.module_gen import modules
    from tests.sdy_passes.propagation_modules import prop_modules

    @pytest.mark.jaxlib
    @FUZZ
    @given(st.lists(prop_modules(max_ops=15), min_size=BATCH, max_size=BATCH))
    def test_random_modules_match_jaxlib(texts):
        for pipeline in pipelines:
            assert check_random(texts, pipeline, runs=runs) > BATCH // 2

    @pytest.mark.jaxlib
    @FUZZ
    @given(st.lists(modules(inline_meshes=False), min_size=BATCH, max_size=BATCH))
    def test_random_data_flow_modules_match_jaxlib(texts):
        pipeline = f"builtin.module(sdy-add-data-flow-edges,{pass_text},func.func(sdy-sink-data-flow-edges))"
        assert check_random(texts, pipeline, runs=runs) > BATCH // 2
    return test_random_modules_match_jaxlib, test_random_data_flow_modules_match_jaxlib
