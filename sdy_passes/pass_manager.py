"""Passes by Shardy flag name, pipelines, and `run_passes`.

A pass is a small class with a `name` (its flag) and `run(module)`, which mutates the module in
place and raises `PassFailedError(message, op.location)` on failure::

    class LiftInlinedMeshesPass(Pass):
        name = "sdy-lift-inlined-meshes"
        summary = "Lifts inlined meshes in shardings into `sdy.mesh` ops."

        def run(self, module: Module) -> None:
            ...

Registering it is one line in `PASSES` ("module:Class", imported on first use so pass modules
may import this one). `PIPELINES` names pass sequences. Like MLIR's pass manager,
`run_passes` verifies the module before the first pass and after each one.
"""

from __future__ import annotations

import importlib
import re
from typing import ClassVar, Sequence

from sdy_passes.errors import SdyError
from sdy_passes.ir import Module

__all__ = ["Pass", "PASSES", "PIPELINES", "run_passes", "parse_pipeline", "get_pass", "UnknownPassError"]


class Pass:
    """Base class of passes. Options from `name{key=value}` arrive as keyword strings."""

    name: ClassVar[str] = ""
    """The Shardy flag, e.g. `"sdy-lift-inlined-meshes"`."""
    summary: ClassVar[str] = ""
    """One line for `sdy-opt --help`."""

    def __init__(self, **options: str):
        self.options = options

    def run(self, module: Module) -> None:
        raise NotImplementedError


PASSES: dict[str, str | type[Pass]] = {
    # "flag": "sdy_passes.<module>:<Class>",  (one line per pass; the class may be given directly)
    "sdy-lift-inlined-meshes": "sdy_passes.lift_inlined_meshes:LiftInlinedMeshesPass",
    "sdy-constant-or-scalar-splitter":
        "sdy_passes.constant_or_scalar_splitter:ConstantOrScalarSplitterPass",
    "sdy-constant-splitter": "sdy_passes.constant_splitter:ConstantSplitterPass",
    "sdy-add-data-flow-edges": "sdy_passes.add_data_flow_edges:AddDataFlowEdgesPass",
    "sdy-manual-axes-cleanup": "sdy_passes.manual_axes_cleanup:ManualAxesCleanupPass",
    "sdy-apply-sharding-constraints":
        "sdy_passes.apply_sharding_constraints:ApplyShardingConstraintsPass",
    "sdy-sharding-group-import": "sdy_passes.sharding_group_import:ShardingGroupImportPass",
    "sdy-basic-propagate": "sdy_passes.basic_propagation:BasicPropagationPass",
    "sdy-aggressive-propagate": "sdy_passes.aggressive_propagation:AggressivePropagationPass",
    "sdy-op-priority-propagate": "sdy_passes.op_priority_propagation:OpPriorityPropagationPass",
    "sdy-user-priority-propagate": "sdy_passes.user_priority_propagation:UserPriorityPropagationPass",
    "sdy-sink-data-flow-edges": "sdy_passes.sink_data_flow_edges:SinkDataFlowEdgesPass",
}
"""Registry keyed by Shardy flag name."""

PIPELINES: dict[str, tuple[str, ...]] = {
    # "sdy-import-pipeline": ("sdy-lift-inlined-meshes", ...),
    # The six import passes in Shardy's mid-2025 order (spec/sdy_passes.md, top table).
    "sdy-import-pipeline": (
        "sdy-lift-inlined-meshes", "sdy-constant-or-scalar-splitter", "sdy-add-data-flow-edges",
        "sdy-manual-axes-cleanup", "sdy-apply-sharding-constraints", "sdy-sharding-group-import"),
}
"""Named pass sequences (each entry a flag of `PASSES` or another pipeline)."""


class UnknownPassError(SdyError):
    """A pass or pipeline name that is not registered."""


def get_pass(name: str) -> type[Pass]:
    """The pass class registered under `name` (importing its module on first use)."""
    entry = PASSES.get(name)
    if entry is None:
        known = ", ".join(sorted([*PASSES, *PIPELINES])) or "none"
        raise UnknownPassError(f"'{name}' does not refer to a registered pass or pass pipeline "
                               f"(known: {known})")
    if isinstance(entry, str):
        module, _, cls = entry.partition(":")
        entry = PASSES[name] = getattr(importlib.import_module(module), cls)
    return entry


_PIPELINE_ITEM = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*(\{[^{}]*\})?\s*")


def parse_pipeline(text: str) -> list[tuple[str, dict[str, str]]]:
    """`builtin.module(a, b{opt=1})` or `a,b` → [(name, options)], pipelines expanded."""
    text = text.strip()
    m = re.fullmatch(r"builtin\.module\s*\((.*)\)", text, re.S)
    if m:
        text = m.group(1)
    elif text.startswith(("func.func(", "any(")):
        raise UnknownPassError("only module-level pipelines `builtin.module(...)` are supported")
    out: list[tuple[str, dict[str, str]]] = []
    pos = 0
    while pos < len(text):
        item = _PIPELINE_ITEM.match(text, pos)
        if not item or not item.group(1):
            raise UnknownPassError(f"cannot read pass pipeline at position {pos}: {text[pos:pos + 30]!r}")
        opts = {}
        if item.group(2):
            for kv in item.group(2)[1:-1].split():
                k, _, v = kv.partition("=")
                opts[k] = v
        out.extend(_expand(item.group(1), opts))
        pos = item.end()
        if pos < len(text):
            if text[pos] != ",":
                raise UnknownPassError(f"expected ',' in pass pipeline at position {pos}: {text[pos:pos + 30]!r}")
            pos += 1
    return out


def _expand(name: str, opts: dict[str, str]) -> list[tuple[str, dict[str, str]]]:
    if name in PIPELINES:
        return [item for sub in PIPELINES[name] for item in _expand(sub, {})]
    get_pass(name)  # unknown names fail here, before anything runs
    return [(name, opts)]


def run_passes(module: Module, names: str | Sequence[str], *, verify: bool = True) -> Module:
    """Run passes on `module` in place (and return it).

    `names` is a pipeline string (`"builtin.module(a,b)"`, `"a,b"`) or a list of flags / pipeline
    names. With `verify`, the module is verified before and after each pass (as MLIR does);
    a failure raises `VerificationError`, a failing pass `PassFailedError`.
    """
    items = parse_pipeline(names) if isinstance(names, str) else [
        item for n in names for item in parse_pipeline(n)]
    passes = [get_pass(n)(**opts) for n, opts in items]
    if verify:
        from sdy_passes.verifier import verify_module
        verify_module(module)
    for p in passes:
        p.run(module)
        if verify:
            verify_module(module)
    return module
