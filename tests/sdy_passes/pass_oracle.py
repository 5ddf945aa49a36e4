"""Run the real Shardy passes (jaxlib 0.10.2) on MLIR text, in a child process.

The test process never imports jax (it can abort or hang, spec/sdy_passes.md §11): every call
goes through `tests.jaxlib_child.run_child`, one child per batch. Each input is parsed and run in
its own single-threaded MLIR context, exactly as `shared/oracle/sdy_oracle.py` does.

`run_jaxlib_passes(items)` takes `(text, passes)` pairs (`passes` a list of flags) and returns one
`Verdict` per item: `ok` with the generic-form output, or the error lines. When the child dies
(a segfault, §11.2) the batch is retried one item per child, and the items that still kill their
child get `Verdict(crashed=True)`: no verdict, never a pass.
"""

from dataclasses import dataclass

from tests.jaxlib_child import ChildFailed, run_child

_CODE = r"""
import time
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir, passmanager

def diag_lines(diags):
    out = []
    for d in diags:
        out.append("%s: %s" % (d.location, d.message))
        out.extend("  note %s: %s" % (n.location, n.message) for n in d.notes)
    return out

RESULT = []
for text, pipeline in PAYLOAD:
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
            RESULT.append({"ok": False, "errors": diag_lines(e.error_diagnostics) or [str(e)]})
            continue
        RESULT.append({"ok": True, "text": asm, "seconds": time.perf_counter() - start})
"""

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
