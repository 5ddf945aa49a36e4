"""`sdy-export-pipeline`: Shardy's export passes as jaxlib 0.10.2 composes them
(`export/export_pipeline.cc`; `str(PassManager.parse("builtin.module(sdy-export-pipeline{...})"))`
in jaxlib prints the same list for every option, spec/export.md §1).

With a `dump-directory`, `sdy-save-module` writes the module there as Shardy names the
files (`00.after_propagation.mlir`, then `01.after_explicit_reshards.mlir` and
`02.after_partitioner_with_global_shapes.mlir` with explicit collectives, else
`01.after_minimal_partitioner_with_global_shapes.mlir`); `avoid-reshards-on-calls` changes
nothing in jaxlib 0.10.2's composition.
"""

from __future__ import annotations

from sdy_passes.pass_manager import PassPipeline

__all__ = ["ExportPipeline", "canonicalize_step"]


def canonicalize_step(label: str) -> str:
    """The canonicalizer as Shardy adds it (`createCanonicalizerPass(GreedyRewriteConfig(), {},
    {label})`): bottom-up, aggressive region simplification, 10 iterations."""
    return (f"canonicalize{{cse-between-iterations=false enable-patterns={{{label}}} "
            "max-iterations=10 max-num-rewrites=-1 region-simplify=aggressive "
            "test-convergence=false top-down=false}")


class ExportPipeline(PassPipeline):
    name = "sdy-export-pipeline"
    summary = ("Shardy's export passes after propagation: sinks edges, closes shardings, inserts "
               "explicit reshards, canonicalizes collectives, drops sharding rules")
    options = {"dump-directory": "", "avoid-export-for-partitioning": False,
               "enable-insert-explicit-collectives": False,
               "remove-all-gather-reduce-scatter-for-cmv1": False, "keep-sharding-rules": False,
               "dump-sharding-origins": False, "dump-propagation-edges": False,
               "avoid-reshards-on-calls": False,
               "update-non-divisible-input-output-shardings": True}

    def pipeline(self) -> str:
        o = self.options
        collectives = o["enable-insert-explicit-collectives"]
        dumps = iter(range(3))

        def save(name: str) -> str:
            index = next(dumps)
            if not o["dump-directory"]:
                return "sdy-save-module"
            return (f"sdy-save-module{{dump-directory=\"{o['dump-directory']}\" file-name={name} "
                    f"dump-index={index}}}")

        steps = ["func.func(sdy-constant-or-scalar-merger)",
                 "func.func(sdy-sink-data-flow-edges{sink-debug-propagation-edge-sharding="
                 f"{str(o['dump-propagation-edges']).lower()} sink-debug-sharding-origins="
                 f"{str(o['dump-sharding-origins']).lower()}}})"]
        if not o["avoid-export-for-partitioning"]:
            steps += ["sdy-remove-sharding-groups", "func.func(sdy-sharding-constraint-to-reshard)"]
        if o["update-non-divisible-input-output-shardings"]:
            steps += ["sdy-update-non-divisible-input-output-shardings",
                      "sdy-remove-sub-axes-in-input-output-shardings"]
        steps += ["sdy-close-shardings", save("after_propagation")]
        if not o["avoid-export-for-partitioning"]:
            steps.append("func.func(sdy-insert-explicit-reshards{enable-full-version="
                         f"{str(collectives).lower()}}})")
            if collectives:
                steps += [save("after_explicit_reshards"), canonicalize_step("sdy-reshard"),
                          "func.func(sdy-reshard-to-collectives{keep-redundant-reshards=false})"]
            steps.append(canonicalize_step("sdy-collective"))
            if collectives and o["remove-all-gather-reduce-scatter-for-cmv1"]:
                steps.append("func.func(sdy-remove-all-gather-reduce-scatter-for-cmv1)")
            steps.append(save("after_partitioner_with_global_shapes" if collectives
                              else "after_minimal_partitioner_with_global_shapes"))
        if o["dump-propagation-edges"] or o["dump-sharding-origins"]:
            steps.append("sdy-remove-propagation-debug-info")
        if not o["keep-sharding-rules"]:
            steps.append("func.func(sdy-drop-sharding-rules)")
        return ", ".join(steps)
