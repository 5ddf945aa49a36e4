"""`sdy-import-pipeline`: Shardy's import pipeline as jaxlib 0.10.2 composes it.

Shardy's `import_pipeline.cc` (`str(PassManager.parse("builtin.module(sdy-import-pipeline)"))`
in jaxlib prints the same list). `sdy-save-module` writes the module to a dump directory when
the pipeline has one; this pipeline has none, so it does nothing (and, as in jaxlib, it has no
flag of its own).
"""

from __future__ import annotations

from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass, PassPipeline


_PASSES = ("symbol-dce, sdy-lift-inlined-meshes, sdy-remove-size-one-axes, "
           "sdy-propagate-sharding-from-func-to-call, sdy-constant-or-scalar-splitter, symbol-dce, "
           "sdy-manual-axes-cleanup, sdy-save-module, sdy-add-data-flow-edges")
_DEDUP_PASSES = "sdy-apply-sharding-constraints, sdy-sharding-group-import"


class ImportPipeline(PassPipeline):
    name = "sdy-import-pipeline"
    summary = f"{_PASSES} (+ {_DEDUP_PASSES} with dedup-functions-fully=true)"
    options = {"dedup-functions-fully": False}

    def pipeline(self) -> str:
        return f"{_PASSES}, {_DEDUP_PASSES}" if self.options["dedup-functions-fully"] else _PASSES


class SaveModulePass(Pass):
    name = "sdy-save-module"
    summary = "Writes the module to the pipeline's dump directory (none here: does nothing)."

    def run(self, module: Module) -> None:
        pass
