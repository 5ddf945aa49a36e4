"""Passes and pipelines by Shardy flag name, MLIR's textual pipelines, and `run_passes`.

A pass is a small class with a `name` (its flag), its `options` (name → default, which also
gives the type) and `run(op)`, which mutates the IR in place and raises
`PassFailedError(message, op.location)` on failure::

    class ImportFuncCallsPass(Pass):
        name = "sdy-import-func-calls"
        summary = "Turns func calls into named computations."
        options = {"add-data-flow-edges-on-named-computations": True}

        def run(self, module: Module) -> None:
            ... self.options["add-data-flow-edges-on-named-computations"] ...

A module pass (`anchor = "builtin.module"`) gets the `Module`; a func pass
(`anchor = "func.func"`) gets each top-level `func.func` op and must be nested,
`builtin.module(func.func(PASS))`, as in MLIR. A pipeline is a `PassPipeline` subclass whose
`pipeline()` returns pipeline text built from its options.

Registering either is one line in `PASSES` / `PIPELINES` ("module:Class", imported on first
use so pass modules may import this one). Like MLIR's pass manager, `run_passes` verifies the
module before the first pass and after each one.
"""

from __future__ import annotations

import importlib
from typing import ClassVar, Sequence, Union

from sdy_passes.errors import PassFailedError, SdyError, expect
from sdy_passes.verifier import verify_module
from sdy_passes.ir import Module

__all__ = ["Pass", "PassPipeline", "PASSES", "PIPELINES", "run_passes", "build_pipeline",
           "parse_pipeline", "pipeline_text", "get_pass", "UnknownPassError"]

MODULE = "builtin.module"
FUNC = "func.func"


class UnknownPassError(SdyError):
    """A pass or pipeline name that is not registered, or a malformed pipeline or option."""


OptionValue = Union[bool, int, str, tuple]
_TRUE, _FALSE = ("", "true", "TRUE", "True", "1"), ("false", "FALSE", "False", "0")


def _option_value(pass_name: str, key: str, default: OptionValue, text: str) -> OptionValue:
    """`text` read as LLVM's command-line parser reads an option of `default`'s type (a tuple
    default is a list option: `a,b`)."""
    if isinstance(default, bool):
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise UnknownPassError(f"for the --{key} option: '{text}' is invalid value for boolean "
                               f"argument! Try 0 or 1 (pass '{pass_name}')")
    if isinstance(default, int):
        try:
            return int(text, 0)
        except ValueError:
            raise UnknownPassError(f"for the --{key} option: '{text}' value invalid for integer "
                                   f"argument! (pass '{pass_name}')") from None
    if isinstance(default, tuple):
        return tuple(t.strip() for t in text.split(",") if t.strip())
    return text


def _option_text(key: str, value: OptionValue) -> str:
    """How MLIR prints an option: `k=v`, lists as `k={a,b}`, an empty list as nothing."""
    if isinstance(value, tuple):
        return f"{key}={{{','.join(value)}}}" if value else ""
    return f"{key}={str(value).lower() if isinstance(value, bool) else value}"


class Pass:
    """Base class of passes. Options from `name{key=value}` arrive as keyword strings."""

    name: ClassVar[str] = ""
    """The Shardy flag, e.g. `"sdy-lift-inlined-meshes"`."""
    summary: ClassVar[str] = ""
    """One line for `sdy-opt --help`."""
    anchor: ClassVar[str | None] = MODULE
    """The op the pass runs on: `builtin.module` (gets the `Module`) or `func.func`; None: any
    (an op-agnostic pass such as `canonicalize`, which gets the `Module` or the func op)."""
    options: ClassVar[dict[str, OptionValue]] = {}
    """Option name → default; an instance's `options` holds the values in effect."""

    def __init__(self, **options: str | OptionValue):
        declared = type(self).options
        values = dict(declared)
        for key, text in options.items():
            if key not in declared:
                raise UnknownPassError(f"no such option {key} for pass '{self.name}'"
                                       + (f" (options: {', '.join(declared)})" if declared else ""))
            default = declared[key]
            values[key] = (_option_value(self.name, key, default, text) if isinstance(text, str)
                           and not isinstance(default, str) else text)
        self.options = values

    def option_texts(self) -> list[str]:
        """The options as MLIR prints them, sorted by name (`k=v`; an empty list as nothing)."""
        return [_option_text(k, v) for k, v in sorted(self.options.items())]

    def run(self, op) -> None:
        raise NotImplementedError


class PassPipeline(Pass):
    """A named pipeline: `pipeline()` gives its passes as pipeline text, from `self.options`."""

    def pipeline(self) -> str:
        raise NotImplementedError


PASSES: dict[str, str | type[Pass]] = {
    # "flag": "sdy_passes.<module>:<Class>",  (one line per pass; the class may be given directly)
    "sdy-lift-inlined-meshes": "sdy_passes.imports.lift_inlined_meshes:LiftInlinedMeshesPass",
    "sdy-constant-or-scalar-splitter":
        "sdy_passes.imports.constant_or_scalar_splitter:ConstantOrScalarSplitterPass",
    "sdy-constant-splitter": "sdy_passes.imports.constant_splitter:ConstantSplitterPass",
    "sdy-add-data-flow-edges": "sdy_passes.imports.add_data_flow_edges:AddDataFlowEdgesPass",
    "sdy-manual-axes-cleanup": "sdy_passes.imports.manual_axes_cleanup:ManualAxesCleanupPass",
    "sdy-apply-sharding-constraints":
        "sdy_passes.imports.apply_sharding_constraints:ApplyShardingConstraintsPass",
    "sdy-sharding-group-import": "sdy_passes.imports.sharding_group_import:ShardingGroupImportPass",
    "symbol-dce": "sdy_passes.common.symbol_dce:SymbolDCEPass",
    "sdy-remove-size-one-axes": "sdy_passes.imports.remove_size_one_axes:RemoveSizeOneAxesPass",
    "sdy-propagate-sharding-from-func-to-call":
        "sdy_passes.imports.propagate_sharding_from_func_to_call:PropagateShardingFromFuncToCallPass",
    "sdy-flatten-call-graph": "sdy_passes.imports.flatten_call_graph:FlattenCallGraphPass",
    "sdy-import-func-calls": "sdy_passes.imports.import_func_calls:ImportFuncCallsPass",
    "sdy-pre-order-funcs": "sdy_passes.imports.pre_order_funcs:PreOrderFuncsPass",
    "sdy-add-func-data-flow-edges": "sdy_passes.imports.add_func_data_flow_edges:AddFuncDataFlowEdgesPass",
    "sdy-reshard-to-collectives": "sdy_passes.export.reshard_to_collectives:ReshardToCollectivesPass",
    "sdy-populate-op-sharding-rules":
        "sdy_passes.propagation.populate_op_sharding_rules:PopulateOpShardingRulesPass",
    "sdy-basic-propagate": "sdy_passes.propagation.basic_propagation:BasicPropagationPass",
    "sdy-aggressive-propagate": "sdy_passes.propagation.aggressive_propagation:AggressivePropagationPass",
    "sdy-op-priority-propagate": "sdy_passes.propagation.op_priority_propagation:OpPriorityPropagationPass",
    "sdy-user-priority-propagate": "sdy_passes.propagation.user_priority_propagation:UserPriorityPropagationPass",
    "sdy-sink-data-flow-edges": "sdy_passes.export.sink_data_flow_edges:SinkDataFlowEdgesPass",
    # after propagation (jaxlib's sdy-propagation-pipeline)
    "sdy-export-named-computations":
        "sdy_passes.export.export_named_computations:ExportNamedComputationsPass",
    "sdy-propagate-to-func-results": "sdy_passes.export.propagate_to_func_results:PropagateToFuncResultsPass",
    "sdy-unflatten-call-graph": "sdy_passes.export.unflatten_call_graph:UnflattenCallGraphPass",
    "sdy-insert-func-call-reshards": "sdy_passes.export.insert_func_call_reshards:InsertFuncCallReshardsPass",
    "sdy-sink-func-data-flow-edges":
        "sdy_passes.export.sink_func_data_flow_edges:SinkFuncDataFlowEdgesPass",
    # sdy-export-pipeline
    "sdy-constant-or-scalar-merger": "sdy_passes.export.constant_or_scalar_merger:ConstantOrScalarMergerPass",
    "sdy-remove-sharding-groups": "sdy_passes.export.remove_sharding_groups:RemoveShardingGroupsPass",
    "sdy-sharding-constraint-to-reshard":
        "sdy_passes.export.sharding_constraint_to_reshard:ShardingConstraintToReshardPass",
    "sdy-update-non-divisible-input-output-shardings":
        "sdy_passes.export.update_non_divisible_input_output_shardings:UpdateNonDivisibleInputOutputShardingsPass",
    "sdy-remove-sub-axes-in-input-output-shardings":
        "sdy_passes.export.remove_sub_axes_in_input_output_shardings:RemoveSubAxesInInputOutputShardingsPass",
    "sdy-close-shardings": "sdy_passes.export.close_shardings:CloseShardingsPass",
    "sdy-insert-explicit-reshards":
        "sdy_passes.export.insert_explicit_reshards:InsertExplicitReshardsPass",
    "canonicalize": "sdy_passes.common.canonicalize:CanonicalizePass",
    "sdy-drop-sharding-rules": "sdy_passes.export.drop_sharding_rules:DropShardingRulesPass",
    "sdy-remove-all-gather-reduce-scatter-for-cmv1":
        "sdy_passes.export.remove_all_gather_reduce_scatter_for_cmv1:RemoveAllGatherReduceScatterForCmv1Pass",
    "sdy-resolve-permutation-factors":
        "sdy_passes.export.resolve_permutation_factors:ResolvePermutationFactorsPass",
    "sdy-convert-global-to-local": "sdy_passes.export.convert_global_to_local:ConvertGlobalToLocalPass",
    "sdy-drop-sharding-and-mesh": "sdy_passes.export.drop_sharding_and_mesh:DropShardingAndMeshPass",
    "sdy-remove-propagation-debug-info":
        "sdy_passes.export.remove_propagation_debug_info:RemovePropagationDebugInfoPass",
}
"""Registry keyed by Shardy flag name."""

PIPELINES: dict[str, str | type[PassPipeline]] = {
    "sdy-import-pipeline": "sdy_passes.imports.import_pipeline:ImportPipeline",
    "sdy-propagation-pipeline": "sdy_passes.propagation.propagation_pipeline:PropagationPipeline",
    "sdy-export-pipeline": "sdy_passes.export.export_pipeline:ExportPipeline",
}
"""Named pipelines (registered like passes)."""

_UNNAMED: dict[str, str | type[Pass]] = {
    # In jaxlib's pipelines but not registered under a name: usable only inside `PIPELINES`.
    "sdy-save-module": "sdy_passes.imports.import_pipeline:SaveModulePass",
}


def _load(table: dict, name: str):
    entry = table[name]
    if isinstance(entry, str):
        module, _, cls = entry.partition(":")
        entry = table[name] = getattr(importlib.import_module(module), cls)
    return entry


def _unknown(name: str) -> UnknownPassError:
    known = ", ".join(sorted([*PASSES, *PIPELINES]))
    return UnknownPassError(f"'{name}' does not refer to a registered pass or pass pipeline "
                            f"(known: {known})")


def get_pass(name: str) -> type[Pass]:
    """The pass or pipeline class registered under `name` (importing its module on first use)."""
    for table in (PASSES, PIPELINES):
        if name in table:
            return _load(table, name)
    raise _unknown(name)


# -- textual pipelines ----------------------------------------------------------------------------

Step = Union[Pass, tuple[str, list["Step"]]]
"""A pass instance, or `(anchor, steps)`: a nested pipeline run on each op named `anchor`."""


class _PipelineParser:
    """MLIR's textual pass pipeline: `builtin.module(a, b{k=v k2="x y"}, func.func(c))`."""

    def __init__(self, text: str, internal: bool):
        self.text, self.pos, self.internal = text, 0, internal

    def error(self, message: str) -> UnknownPassError:
        return UnknownPassError(f"pass pipeline:1:{self.pos + 1}: {message}: {self.text!r}")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def name(self) -> str:
        self.skip()
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "_-."):
            self.pos += 1
        if start == self.pos:
            raise self.error("expected a pass or pipeline name")
        return self.text[start:self.pos]

    def options(self) -> dict[str, str]:
        """`{key=value key2 key3="a b" key4={x y}}` → strings (a bare key means `true`)."""
        self.pos += 1
        out: dict[str, str] = {}
        while True:
            self.skip()
            if self.pos >= len(self.text):
                raise self.error("expected '}' to close the options")
            if self.text[self.pos] == "}":
                self.pos += 1
                return out
            start = self.pos
            while self.pos < len(self.text) and self.text[self.pos] not in "= }":
                self.pos += 1
            key = self.text[start:self.pos]
            value = ""
            if self.pos < len(self.text) and self.text[self.pos] == "=":
                self.pos += 1
                value = self.value()
            out[key] = value

    def value(self) -> str:
        text, start = self.text, self.pos
        if start < len(text) and text[start] in "\"'":
            end = text.find(text[start], start + 1)
            if end < 0:
                raise self.error("unterminated quoted option value")
            self.pos = end + 1
            return text[start + 1:end]
        depth = 0
        while self.pos < len(text):
            c = text[self.pos]
            if c == "{":
                depth += 1
            elif c == "}":
                if depth == 0:
                    break
                depth -= 1
            elif c.isspace() and depth == 0:
                break
            self.pos += 1
        value = text[start:self.pos]
        return value[1:-1] if value.startswith("{") and value.endswith("}") else value

    def steps(self, anchor: str, closing: str) -> list[Step]:
        out: list[Step] = []
        self.skip()
        if self.text.startswith(closing, self.pos) and closing:
            return out
        while True:
            name = self.name()
            self.skip()
            if self.text.startswith("(", self.pos):  # a nested pipeline on ops named `name`
                if name != FUNC:
                    raise self.error(f"cannot nest a pipeline on '{name}' in '{anchor}' "
                                     f"(only '{FUNC}' inside '{MODULE}')")
                if anchor != MODULE:
                    raise self.error(f"'{FUNC}' pipelines nest only inside '{MODULE}'")
                self.pos += 1
                out.append((FUNC, self.steps(FUNC, ")")))
                self.expect(")")
            else:
                opts = self.options() if self.text.startswith("{", self.pos) else {}
                out.extend(_instantiate(name, opts, anchor, self.internal))
            self.skip()
            if self.pos >= len(self.text) or self.text.startswith(closing, self.pos) and closing:
                return out
            self.expect(",")

    def expect(self, char: str) -> None:
        self.skip()
        if not self.text.startswith(char, self.pos):
            raise self.error(f"expected '{char}'")
        self.pos += 1


def _instantiate(name: str, opts: dict[str, str], anchor: str, internal: bool) -> list[Step]:
    if name in PIPELINES:
        pipeline = _load(PIPELINES, name)(**opts)
        return _parse(pipeline.pipeline(), anchor, internal=True)
    if internal and name in _UNNAMED:
        cls = _load(_UNNAMED, name)
    elif name in PASSES:
        cls = _load(PASSES, name)
    else:
        raise _unknown(name)
    if cls.anchor is not None and cls.anchor != anchor:
        if cls.anchor == FUNC:
            raise UnknownPassError(f"Can't add pass '{name}' restricted to '{FUNC}' on a "
                                   f"PassManager intended to run on '{anchor}', did you intend "
                                   f"to nest? (write '{MODULE}({FUNC}({name}))')")
        raise UnknownPassError(f"pass '{name}' runs on '{cls.anchor}', not nested in '{anchor}'")
    return [cls(**opts)]


def _parse(text: str, anchor: str = MODULE, *, internal: bool = False) -> list[Step]:
    parser = _PipelineParser(text.strip(), internal)
    if parser.text.startswith(MODULE):
        parser.name()
        parser.expect("(")
        steps = parser.steps(MODULE, ")")
        parser.expect(")")
    else:
        steps = parser.steps(anchor, "")
    parser.skip()
    if parser.pos != len(parser.text):
        raise parser.error("unexpected text after the pipeline")
    return steps


def parse_pipeline(text: str) -> list[Step]:
    """`builtin.module(a, b{opt=1}, func.func(c))` or `a,b` → pass instances, pipelines
    expanded; nested func pipelines as `("func.func", [...])`. Unknown names, unknown options
    and func passes outside `func.func(...)` fail here, before anything runs."""
    return _parse(text)


def pipeline_text(steps: Sequence[Step]) -> str:
    """The steps as MLIR prints a pass manager: `builtin.module(a,b{k=v},func.func(c))`."""
    def item(step: Step) -> str:
        if isinstance(step, tuple):
            return f"{step[0]}({','.join(item(s) for s in step[1])})"
        opts = " ".join(step.option_texts())
        return step.name + (f"{{{opts}}}" if opts else "")
    return f"{MODULE}({','.join(item(s) for s in steps)})"


# -- running --------------------------------------------------------------------------------------

def _run_steps(module: Module, steps: Sequence[Step], verify: bool) -> None:
    for step in steps:
        anchor = module.op
        try:
            if isinstance(step, tuple):
                for anchor in [op for op in module.ops if op.name == step[0]]:
                    for p in step[1]:
                        p.run(anchor)
            else:
                step.run(module)
            if verify:
                anchor = module.op
                verify_module(module)
        except RecursionError:
            # The walks are iterative over blocks, calls and chains of values; what nests in
            # Python (regions inside regions, attributes inside attributes) deeper than the
            # stack allows, made through the API, is refused here.
            name = step[0] if isinstance(step, tuple) else step.name
            raise PassFailedError(f"IR nested too deeply for '{name}' (or the verifier after it)",
                                  anchor.location) from None


def build_pipeline(names: str | Sequence[str]) -> list[Step]:
    """The steps `run_passes` runs for `names` (a pipeline string or a list, see there);
    unknown names or options and misplaced func passes fail here."""
    if isinstance(names, str):
        return parse_pipeline(names)
    steps: list[Step] = []
    for n in expect(names, (list, tuple), "a pipeline string or a list of pass names", "pipeline"):
        base = expect(n, (str,), "pass names (str)", "pipeline").partition("{")[0].strip()
        if base in PASSES and get_pass(base).anchor == FUNC:
            n = f"{FUNC}({n})"
        steps.extend(parse_pipeline(n))
    return steps


def run_passes(module: Module, names: str | Sequence[str], *, verify: bool = True) -> Module:
    """Run passes on `module` in place (and return it).

    `names` is a pipeline string (`"builtin.module(a,func.func(b))"`, `"a,b"`) or a list of
    flags / pipeline names / pipeline strings; func passes named alone in the list are nested
    in `func.func(...)` for you, as `sdy-opt` does. With `verify`, the module is verified before
    and after each pass (as MLIR does); a failure raises `VerificationError`, a failing pass
    `PassFailedError`. Warnings are `SdyWarning`s (Python's `warnings`).
    """
    expect(module, (Module,), "a Module", "run_passes")
    steps = build_pipeline(names)
    if verify:
        verify_module(module)
    _run_steps(module, steps, verify)
    return module
