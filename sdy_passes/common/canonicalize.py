"""`canonicalize`: MLIR's canonicalizer over Shardy's labelled patterns (`common.canonicalization`)
with the greedy driver (`common.rewrite`): dead pure ops erased, constants uniqued and hoisted,
the enabled patterns applied to a fixed point.

The options and defaults are MLIR's; the export pipeline runs
`canonicalize{enable-patterns={sdy-collective} max-iterations=10 region-simplify=aggressive
top-down=false}`. `enable-patterns` must be given: the unlabelled patterns (manual computation
inlining and input pruning, reshard CSE) and the stablehlo ones are not in this project, so a
plain `canonicalize` is refused rather than run partly.
"""

from __future__ import annotations

from sdy_passes.common.rewrite import apply_patterns_greedily
from sdy_passes.dialects import OPS
from sdy_passes.dialects._base import facet
from sdy_passes.errors import PassFailedError
from sdy_passes.ir import Module, Operation
from sdy_passes.pass_manager import Pass, UnknownPassError

__all__ = ["CanonicalizePass"]

PATTERNS = tuple(p for name in sorted(OPS) if OPS[name].canonicalization for p in facet(OPS[name].canonicalization))
"""Every op's canonicalization patterns, as MLIR collects them (by registering op name)."""
_LABELS = sorted({label for p in PATTERNS for label in p.labels})
_REGION_SIMPLIFY = ("disabled", "normal", "aggressive")


class CanonicalizePass(Pass):
    name = "canonicalize"
    anchor = None  # op-agnostic, as in MLIR: on the module or nested in func.func(...)
    summary = ("MLIR's canonicalizer with Shardy's labelled patterns (enable-patterns="
               + "|".join(_LABELS) + "): dead ops erased, constants uniqued and hoisted")
    options = {"top-down": True, "region-simplify": "normal", "max-iterations": 10,
               "max-num-rewrites": -1, "test-convergence": False, "disable-patterns": (),
               "enable-patterns": (), "cse-between-iterations": False}

    def __init__(self, **options):
        super().__init__(**options)
        o = self.options
        if o["region-simplify"] not in _REGION_SIMPLIFY:
            raise UnknownPassError(f"for the --region-simplify option: Cannot find option named "
                                   f"'{o['region-simplify']}'! (pass 'canonicalize')")
        unknown = [p for p in o["enable-patterns"] if p not in _LABELS]
        if not o["enable-patterns"] or unknown:
            raise UnknownPassError(
                "canonicalize runs only Shardy's labelled patterns here: give enable-patterns="
                f"{{{','.join(_LABELS)}}} (or a part of it)"
                + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
        if o["cse-between-iterations"]:
            raise UnknownPassError("canonicalize{cse-between-iterations=true} is not supported")

    def option_texts(self) -> list[str]:
        # jaxlib prints one more empty option after enable-patterns (two blanks before
        # max-iterations even when enable-patterns is set)
        texts = super().option_texts()
        at = sorted(self.options).index("enable-patterns") + 1
        return texts[:at] + [""] + texts[at:]

    def run(self, op: Module | Operation) -> None:
        root = op.op if isinstance(op, Module) else op
        o = self.options
        enabled, disabled = set(o["enable-patterns"]), set(o["disable-patterns"])
        patterns = [p for p in PATTERNS if enabled & set(p.labels)
                    and p.name not in disabled and not disabled & set(p.labels)]
        converged = apply_patterns_greedily(
            root, patterns, top_down=o["top-down"], max_iterations=o["max-iterations"],
            max_num_rewrites=o["max-num-rewrites"],
            region_simplify=o["region-simplify"] != "disabled")
        if o["test-convergence"] and not converged:
            raise PassFailedError(f"Canonicalizer failed to converge within "
                                  f"{o['max-iterations']} iterations", root.location)
