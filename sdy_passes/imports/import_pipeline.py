"""`sdy-import-pipeline`: Shardy's import pipeline as jaxlib 0.10.2 composes it.

Shardy's `import_pipeline.cc` (`str(PassManager.parse("builtin.module(sdy-import-pipeline)"))`
in jaxlib prints the same list). `sdy-save-module` writes the module to a dump directory when
the pipeline has one; this pipeline has none, so it does nothing (and, as in jaxlib, it has no
flag of its own).
"""

from __future__ import annotations

import os
import sys

from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass, PassPipeline
from sdy_passes.printer import print_module


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
    """Shardy's `SaveModuleOpPass`: with a `dump-directory` (only `sdy-export-pipeline` gives
    one), writes the module's pretty form to `DIR/NN.FILE.mlir` (`NN` the dump index); a failed
    write is an `error when writing file` line on stderr and the pipeline goes on."""

    name = "sdy-save-module"
    summary = "Writes the module to the pipeline's dump directory (none: does nothing)."
    options = {"dump-directory": "", "file-name": "", "dump-index": 0}

    def option_texts(self) -> list[str]:
        return []  # jaxlib prints the pass without its (constructor-only) settings

    def run(self, module: Module) -> None:
        directory = self.options["dump-directory"]
        if not directory:
            return
        path = os.path.join(directory, f"{self.options['dump-index']:02}.{self.options['file-name']}.mlir")
        try:
            with open(path, "w") as f:
                f.write(print_module(module))
        except OSError as e:
            sys.stderr.write(f"error when writing file {path}: {e.strerror}\n")
