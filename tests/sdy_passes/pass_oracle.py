"""Run the real Shardy passes (jaxlib 0.10.2) on MLIR text, in a child process.

The test process never imports jax (it can abort or hang, spec/sdy_passes.md §11): every call
goes through `tests.jaxlib_child.run_child`, one child per batch. Each input is parsed and run in
its own single-threaded MLIR context, exactly as `shared/oracle/sdy_oracle.py` does.

`run_jaxlib_passes(items)` takes `(text, passes)` pairs (`passes` a list of flags) and returns one
`Verdict` per item: `ok` with the generic-form output, or the error lines. When the child dies
(a segfault, §11.2) the batch is retried one item per child, and the items that still kill their
child get `Verdict(crashed=True)`: no verdict, never a pass.

`run_jaxlib_matrix(texts, pass_lists)` first canonicalises each text (parse + generic print) and
then runs every pass list on the canonical text, all in one child: it returns, per text, the
canonical `Verdict` and one `Verdict` per pass list.
"""

from dataclasses import dataclass

from tests.jaxlib_child import ChildFailed, cached, run_child

_RUN_ONE = r"""
import time
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir, passmanager

def diag_lines(diags):
    out = []
    for d in diags:
        out.append("%s: %s" % (d.location, d.message))
        out.extend("  note %s: %s" % (n.location, n.message) for n in d.notes)
    return out

def run_one(text, pipeline):
    ctx = jax_mlir.make_ir_context()
    ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        start = time.perf_counter()
        try:
            module = ir.Module.parse(text)
            if pipeline:
                passmanager.PassManager.parse(pipeline).run(module.operation)
            asm = module.operation.get_asm(print_generic_op_form=True)
        except ir.MLIRError as e:
            return {"ok": False, "errors": diag_lines(e.error_diagnostics) or [str(e)]}
        return {"ok": True, "text": asm, "seconds": time.perf_counter() - start}
"""

_CODE = _RUN_ONE + """
RESULT = [run_one(text, pipeline) for text, pipeline in PAYLOAD]
"""

_MATRIX_CODE = _RUN_ONE + """
RESULT = []
for text, pipelines in PAYLOAD:
    canonical = run_one(text, "")
    results = [run_one(canonical["text"], p) for p in pipelines] if canonical["ok"] else []
    RESULT.append([canonical, results])
"""

_PARSE_CODE = r"""
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir
RESULT = []
for text in PAYLOAD:
    ctx = jax_mlir.make_ir_context()
    ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        try:
            m = ir.Module.parse(text)
            RESULT.append({"generic": m.operation.get_asm(print_generic_op_form=True),
                           "pretty": m.operation.get_asm(), "error": None})
        except ir.MLIRError as e:
            d = e.error_diagnostics[0] if e.error_diagnostics else None
            RESULT.append({"error": f"{d.location}: {d.message}" if d else str(e)})
"""


def jaxlib_parse(texts):
    """Parses (and verifies) each text with jaxlib, in one child. Per text a dict: `generic` and
    `pretty` (MLIR's own SSA names) with `error` None, or only `error` (`loc(...): message` of
    the first diagnostic)."""
    return run_child(_PARSE_CODE, list(texts))


def jaxlib_parse_kept(texts):
    """`jaxlib_parse`, its verdicts kept on disk for the next run of the same texts (`cached`)."""
    return cached(["jaxlib_parse", list(texts)], lambda: jaxlib_parse(texts))


# jaxlib 0.10.2 registers only the new name (spec/sdy_passes.md §6.3).
ALIASES = {"sdy-constant-splitter": "sdy-constant-or-scalar-splitter"}


@dataclass(frozen=True, slots=True)
class Verdict:
    """What jaxlib said about one input."""

    ok: bool = False
    text: str = ""
    """Generic-form output when `ok`."""
    errors: tuple[str, ...] = ()
    """`loc(...): message` lines, then `  note ...` lines, when not `ok`."""
    crashed: bool = False
    """The child died on this input: no verdict."""
    seconds: float = 0.0
    """Parse + passes + print time inside the child."""


def pipeline_text(passes):
    """`builtin.module(a,b)` for a list of pass flags (empty: parse and print only)."""
    if not passes:
        return ""
    return "builtin.module(%s)" % ",".join(ALIASES.get(p, p) for p in passes)


def _verdict(raw):
    if raw["ok"]:
        return Verdict(ok=True, text=raw["text"], seconds=raw["seconds"])
    return Verdict(errors=tuple(raw["errors"]))


def run_jaxlib_passes(items, *, timeout=300):
    """Runs each `(text, passes)` through jaxlib; returns a list of `Verdict`."""
    payload = [[text, pipeline_text(passes)] for text, passes in items]
    if not payload:
        return []
    try:
        return [_verdict(r) for r in run_child(_CODE, payload, timeout=timeout)]
    except ChildFailed:
        if len(payload) == 1:
            return [Verdict(crashed=True)]
    verdicts = []
    for one in payload:
        try:
            verdicts.append(_verdict(run_child(_CODE, [one], timeout=timeout)[0]))
        except ChildFailed:
            verdicts.append(Verdict(crashed=True))
    return verdicts



def run_jaxlib_matrix(texts, pass_lists, *, timeout=600):
    """Per text: `(canonical, [one Verdict per pass list])`, run on the canonical text.

    A text whose child crashes (alone) gets `(Verdict(crashed=True), [])`.
    """
    pipelines = [pipeline_text(p) for p in pass_lists]

    def convert(raw):
        canonical, results = raw
        return _verdict(canonical), [_verdict(r) for r in results]

    payload = [[t, pipelines] for t in texts]
    try:
        return [convert(r) for r in run_child(_MATRIX_CODE, payload, timeout=timeout)]
    except ChildFailed:
        pass
    out = []
    for one in payload:
        try:
            out.append(convert(run_child(_MATRIX_CODE, [one], timeout=timeout)[0]))
        except ChildFailed:
            # Find which pass list crashes: run them one child each.
            canonical = run_jaxlib_passes([(one[0], [])])[0]
            if not canonical.ok:
                out.append((canonical, []))
                continue
            out.append((canonical, run_jaxlib_passes([(canonical.text, p) for p in pass_lists])))
    return out


# -- comparing with our passes ---------------------------------------------------------------------

def run_ours(text, passes):
    """(ok, generic text) or (False, (message, location string)) for this library."""
    import sdy_passes
    from sdy_passes.errors import SdyError

    module = sdy_passes.parse_module(text)
    try:
        sdy_passes.run_passes(module, passes)
    except SdyError as e:
        return False, (getattr(e, "message", str(e)), str(getattr(e, "location", "")))
    return True, sdy_passes.print_module(module, generic=True)


def compare(text, passes, verdict):
    """None when this library agrees with jaxlib's `verdict` for `passes` on `text`, else a
    report: outputs equal up to SSA renaming, or the same first error message."""
    from tests.sdy_passes.ssa import normalize_ssa

    ok, ours = run_ours(text, passes)
    if verdict.ok:
        if not ok:
            return f"jaxlib succeeded, we failed: {ours}"
        a, b = normalize_ssa(ours).splitlines(), normalize_ssa(verdict.text).splitlines()
        if a != b:
            diff = next((f"line {i + 1}:\n  ours:   {x}\n  jaxlib: {y}"
                         for i, (x, y) in enumerate(zip(a, b)) if x != y), f"{len(a)} vs {len(b)} lines")
            return f"outputs differ at {diff}"
        return None
    message = verdict.errors[0].partition(": ")[2]
    if ok:
        return f"jaxlib failed with {verdict.errors[0]!r}, we succeeded"
    if ours[0] != message:
        return f"messages differ:\n  ours:   {ours[0]}\n  jaxlib: {message}"
    return None


def assert_match_jaxlib(texts, passes):
    """Every text (any form jaxlib parses) gives the same result here and in jaxlib."""
    failures = []
    for text, (canonical, verdicts) in zip(texts, run_jaxlib_matrix(texts, [passes])):
        assert canonical.ok, f"jaxlib cannot read the input: {canonical.errors}\n{text}"
        if verdicts[0].crashed:
            continue
        report = compare(canonical.text, passes, verdicts[0])
        if report:
            failures.append(f"{report}\n--- input ---\n{canonical.text}")
    assert not failures, f"{len(failures)} disagreement(s); first:\n{failures[0]}"
