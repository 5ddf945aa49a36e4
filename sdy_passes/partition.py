"""`partition(module)`: the global module -> the module each device runs (spec execute.md §1.2,
§2.1): propagation up to `sdy-insert-func-call-reshards`, the export with explicit collectives,
`sdy-resolve-permutation-factors`, `sdy-reshard-to-collectives`, `sdy-convert-global-to-local`."""

from __future__ import annotations

from sdy_passes.export.export_pipeline import canonicalize_step
from sdy_passes.errors import expect
from sdy_passes.ir import Module
from sdy_passes.parser import parse_module
from sdy_passes.pass_manager import run_passes

__all__ = ["partition", "DEFAULT_EXECUTE_PIPELINE", "GLOBAL_STEPS"]

GLOBAL_STEPS = (
    "sdy-import-pipeline, sdy-flatten-call-graph, symbol-dce, sdy-import-func-calls, symbol-dce, "
    "sdy-apply-sharding-constraints, sdy-sharding-group-import, sdy-pre-order-funcs, "
    "sdy-user-priority-propagate{keep-sharding-rules=true}, sdy-export-named-computations, "
    "sdy-propagate-to-func-results, sdy-unflatten-call-graph, symbol-dce, sdy-insert-func-call-reshards, "
    "sdy-export-pipeline{enable-insert-explicit-collectives=true}, "
    "func.func(sdy-resolve-permutation-factors{enable-halo-exchange=true}), "  # its reshard chains folded:
    + canonicalize_step("sdy-reshard") + ", func.func(sdy-reshard-to-collectives)")
"""Steps 2-5 of §2.1: the global program with every collective explicit."""

DEFAULT_EXECUTE_PIPELINE = GLOBAL_STEPS + ", sdy-convert-global-to-local"


def partition(module, *, pipeline: str = DEFAULT_EXECUTE_PIPELINE) -> Module:
    """The partitioned (per-device) module of `module` (a `Module` or MLIR text; not changed)."""
    m = parse_module(module) if isinstance(module, str) else expect(module, (Module,), "a Module or MLIR text",
                                                                      "partition").clone()
    return run_passes(m, pipeline)
