"""`sdy-propagation-pipeline`: jaxlib 0.10.2's propagation pipeline: import, call-graph import,
`sdy-user-priority-propagate`, the call-graph export passes and `sdy-export-pipeline` with its
default options (spec/export.md §1).

Shardy's `propagation/propagation_pipeline.cc`; `str(PassManager.parse(...))` in jaxlib prints the
same passes. With `dedup-functions-fully`, func data-flow edges link callers and callees instead
of flattening the call graph into named computations; `sdy-unflatten-call-graph` runs with its
default options either way, as in jaxlib.
"""

from __future__ import annotations

from sdy_passes.pass_manager import PassPipeline

_CONSERVATIVE_IMPORT = ("sdy-flatten-call-graph, symbol-dce, sdy-import-func-calls, symbol-dce, "
                        "sdy-apply-sharding-constraints, sdy-sharding-group-import")
_PROPAGATE = "sdy-pre-order-funcs, sdy-user-priority-propagate{keep-sharding-rules=true}"
_CONSERVATIVE_EXPORT = "sdy-export-named-computations, sdy-propagate-to-func-results"
_DEDUP_EXPORT = "sdy-propagate-to-func-results, func.func(sdy-sink-func-data-flow-edges)"
_UNFLATTEN = "sdy-unflatten-call-graph, symbol-dce, sdy-insert-func-call-reshards"


class PropagationPipeline(PassPipeline):
    name = "sdy-propagation-pipeline"
    summary = ("sdy-import-pipeline, call-graph import, sdy-user-priority-propagate, the "
               "call-graph export passes and sdy-export-pipeline, as jaxlib runs them")
    options = {"dedup-functions-fully": False}

    def pipeline(self) -> str:
        if self.options["dedup-functions-fully"]:
            steps = ("sdy-import-pipeline{dedup-functions-fully=true}", "sdy-add-func-data-flow-edges",
                     _PROPAGATE, _DEDUP_EXPORT)
        else:
            steps = ("sdy-import-pipeline", _CONSERVATIVE_IMPORT, _PROPAGATE, _CONSERVATIVE_EXPORT)
        return ", ".join((*steps, _UNFLATTEN, "sdy-export-pipeline"))
