"""`explain(module, value)`: why propagation gives one value its sharding (beyond Shardy).

For each axis of the value's propagated sharding: the user sharding it started at (Shardy's
`debug-sharding-origins` origin: a func argument or result, a sharding constraint, a manual
computation's in/out sharding, or the value's own `sdy.sharding`) and the chain of
propagation steps that carried it there, each an op, the factor of the op's sharding rule the
axis moved along and the operand/result it came from. Built from the records
`sdy_passes.propagation.source_sharding` keeps while the propagate pass runs (`trace=True`).

The result is an `Explanation`: data (the value, its op and line, its sharding, and per axis the
origin and the steps), whose `str` is the text under a header naming the op and its line. Lines
are those of the module's text (of `print_module(module)` for a `Module`); in a module with
debug info (`lowered.as_text(debug_info=True)`) the header and steps also cite the JAX source
line of each op's location (`model.py:42`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import Sequence

from sharding import AxisRef, TensorSharding
from sharding.axes import contains

from sdy_passes.common._value_shardings import (
    DATA_FLOW_EDGE, func_result_sharding, get_sharding, shardable_value,
)
from sdy_passes.attributes import StringAttr, factor_name
from sdy_passes.propagation.basic_propagation import BasicPropagationPass
from sdy_passes.errors import SdyError, expect, shown, source_line
from sdy_passes.ir import BlockArgument, Module, Operation, OpResult, Value
from sdy_passes.parser import parse_module
from sdy_passes.pass_manager import _run_steps, build_pipeline
from sdy_passes.printer import Printer, print_module
from sdy_passes.verifier import verify_module
from sdy_passes.propagation.source_sharding import (
    CONSTRAINT, CONSTRAINT_ORIGIN, INPUT, MC_INPUT, MC_OUTPUT, OUTPUT, SHARDING_ORIGIN_NAME,
    UNKNOWN, OriginSharding, SourceShardingHandler, Step,
)

__all__ = ["explain", "PIPELINE", "Explanation", "AxisExplanation", "StepExplanation"]

PIPELINE = "sdy-propagation-pipeline"
"""What `jax.jit` runs (explain stops after its propagation step)."""

_NAME = re.compile(r"(?:@([\w.$-]+)\s*:\s*)?(%[\w.$-]+(?:#\d+)?)(?:@(\d+))?")


@dataclass(frozen=True)
class StepExplanation:
    """One propagation step that carried an axis: `text` is its line of the explanation."""

    step: int
    """The propagation step's number (jaxlib's edge order)."""
    op: str
    """The op (or `func.func` for a func result) the axis crossed."""
    line: int | None
    """The op's line in the module's text."""
    source: str | None
    """The JAX source line of the op's location (`model.py:42`), with debug info."""
    text: str


@dataclass(frozen=True)
class AxisExplanation:
    """Where one axis of the value's sharding comes from, and the steps that carried it."""

    axis: AxisRef
    dim: int | str
    """The dim of the value the axis shards (`?` when not recorded)."""
    origin: str | None
    """jaxlib's `debug-sharding-origins` label (`input: 0`, `constraint_1`, ...), or None."""
    origin_text: str
    """`from "input: 0" (the user sharding ... of %arg0)`."""
    steps: tuple[StepExplanation, ...]
    """From the origin to the value."""
    note: str = ""
    """` (a part of ...)`, ` (recorded on the way, not kept in the sharding)` or empty."""

    def lines(self) -> list[str]:
        return ([f"  axis {self.axis} of dim {self.dim}{self.note} {self.origin_text}"]
                + [f"    {s.text}" for s in self.steps])


@dataclass(frozen=True)
class Explanation:
    """Why propagation gives a value its sharding: `axes` (origin and steps per axis) as data;
    `str()` is the text under a header naming the value's op and its line."""

    value: str
    """The value's name, `%3` (`%3 in @f` when not in the explained func)."""
    func: str
    """The function defining it."""
    op: str
    """The op defining it (for a block argument, the op owning the block: `func.func`, ...)."""
    argument: int | None
    line: int | None
    """The op's line in the module's text (`print_module(module)` for a `Module`)."""
    source: str | None
    """The JAX source line of the op's location (`model.py:42`), in a module with debug info."""
    type: str
    sharding: TensorSharding | None
    """The value's sharding after propagation (None: replicated)."""
    axes: tuple[AxisExplanation, ...]
    text: str
    """The explanation without its header."""

    @property
    def header(self) -> str:
        what = self.op if self.argument is None else f"argument {self.argument} of {self.op}"
        where = "" if self.line is None else f", line {self.line}"
        source = "" if self.source is None else f" ({self.source})"
        return f"explain {self.value} in @{self.func}: {what}{where}{source}"

    def __str__(self) -> str:
        return f"{self.header}\n{self.text}"

    def _repr_html_(self) -> str:
        return f"<pre>{escape(str(self))}</pre>"


def explain(module: Module | str, value: Value | str, *, func: str | None = None,
            pipeline: str | Sequence[str] = PIPELINE) -> Explanation:
    """Why propagation gives `value` its sharding, as an `Explanation` (`str()` for the text).

    `module` is a module before propagation, or its text, e.g.
    `jax.jit(f, in_shardings=...).lower(*args).as_text()`. `value` is one of its values: a
    `Value` object, or its SSA name as `print_module(module)` and JAX's `as_text()` print it
    (`"%3"`, `"%arg0"`, `"%cst_1"`, `"%0#1"` for result 1 of a multi-result op), in the
    function `func` (default: the only function, else `@main`); `"@f:%3"` names the function
    too. A name that denotes several values (the same `%3` in sibling regions) is refused with
    the candidates and their lines; `"@f:%3@LINE"` picks the one defined on line LINE. `pipeline` (text or a list, as for `run_passes`) must contain a propagate pass (the
    steps after the last one are left out); the default is jaxlib's `sdy-propagation-pipeline`,
    what JAX runs.

    The pipeline runs on a copy: `module` is not changed. Raises `SdyError` for a name the
    function does not define, a value of another module, a pipeline without a propagate pass,
    or a value the pipeline removed (e.g. an unused value, erased by propagation).
    """
    text = module if isinstance(module, str) else None
    if text is not None:
        module = parse_module(text)
    if not isinstance(module, Module):
        raise SdyError(f"explain: expected a Module or MLIR text, got {type(module).__name__}")
    names = _Names(module, text)
    original = _resolve(module, names, value, func)
    steps = build_pipeline(pipeline)
    passes = [s for s in steps if isinstance(s, BasicPropagationPass)]
    if not passes:
        raise SdyError("explain needs a propagate pass in the pipeline (sdy-basic-propagate, "
                       "sdy-aggressive-propagate, sdy-op-priority-propagate or "
                       "sdy-user-priority-propagate)")
    for p in passes:
        p.trace = True
        p.options["debug-sharding-origins"] = True
    steps = steps[:steps.index(passes[-1]) + 1]  # later passes (sinking edges, export) do not explain
    value_map: dict[Value, Value] = {}
    copy = Module(module.op.clone(value_map))
    # A value the pipeline replaces (a call by a named computation, a constant by one copy per
    # use) is found again as what its first user then uses.
    witness = {new: new.uses[0] for new in value_map.values() if new.has_uses}
    verify_module(copy)
    _run_steps(copy, steps, verify=True)
    back: dict[Value, Value] = {}
    for old, new in value_map.items():
        if (now := _now(copy, new, witness.get(new))) is not None:
            back.setdefault(now, old)
    target = _now(copy, value_map[original], witness.get(value_map[original]))
    if target is None:
        raise SdyError(f"{names.name(original)} is not in the module after the pipeline (an unused "
                       "value is erased by propagation)")
    return _Explainer(names, back, passes[-1].debug_handler, _func_of(original)).explain(original, target)


def _now(module: Module, value: Value, use) -> Value | None:
    """`value`, or what its first `use` uses now, if that is in `module` (None if neither)."""
    if _inside(module, value):
        return value
    if use is None or use.index >= len(use.operation.operands) or not _inside_op(module, use.operation):
        return None
    value = use.operation.operands[use.index]
    if isinstance(value, OpResult) and value.owner.name == DATA_FLOW_EDGE:
        value = value.owner.operands[0]  # the edge stands for its owner
    return value if _inside(module, value) else None


# -- names ------------------------------------------------------------------------------------------

class _Names:
    """The user's module's SSA names, as its pretty print gives them (unique within a func but
    for sibling regions), and each op's line in the module's text."""

    def __init__(self, module: Module, text: str | None):
        self.printer = Printer(generic=False)
        self.printer.use_mlir_names(module.op)
        self.funcs = {_symbol(f): f for f in module.funcs()}
        self.lines = _op_lines(module, text)

    def name(self, value: Value, home: Operation | None = None) -> str:
        """`%3`, with ` in @f` when its func is not `home`."""
        func = _func_of(value)
        where = f" in @{_symbol(func)}" if func is not None and func is not home else ""
        return self.printer.value_name(value) + where

    def values(self, func: Operation) -> dict[str, list[Value]]:
        out: dict[str, list[Value]] = {}
        for op in func.walk():
            for region in op.regions:
                for block in region.blocks:
                    for arg in block.arguments:
                        out.setdefault(self.printer.value_name(arg), []).append(arg)
            if op is not func:
                for r in op.results:
                    out.setdefault(self.printer.value_name(r), []).append(r)
        return out

    def line(self, value: Value) -> int | None:
        return self.lines.get(_op_of(value))


def _op_of(value: Value) -> Operation | None:
    """The op defining `value`: its owner, or the op owning a block argument's block."""
    return value.owner.parent_op if isinstance(value, BlockArgument) else value.owner


_LOC = re.compile(r'"(?:[^"\\]|\\.)*"|(?<=[^\s=])(\s+)loc\(|[()]')


def _strip_locations(text: str) -> str:
    """`text` without the ops' and arguments' trailing `loc(...)` (alias definitions such as
    `#loc3 = loc(...)` stay): the same lines, parsed with the parser's own positions."""
    out, pos, depth, cut = [], 0, 0, None
    for m in _LOC.finditer(text):
        if m.group(0).startswith('"'):
            continue
        if m.group(1) is not None and depth == 0 and cut is None:
            out.append(text[pos:m.start()])
            cut, depth = m.start(), 1
        elif m.group(0) == "(" and cut is not None:
            depth += 1
        elif m.group(0) == ")" and cut is not None:
            depth -= 1
            if depth == 0:
                pos, cut = m.end(), None
    out.append(text[pos:])
    return "".join(out)


def _op_lines(module: Module, text: str | None) -> dict[Operation, int]:
    """Each op's line in `text` (or in `print_module(module)`), from a parse of the same lines
    without locations (debug info replaces the parser's positions)."""
    try:
        plain = parse_module(_strip_locations(text if text is not None else print_module(module)), verify=False)
    except SdyError:
        return {}
    ops, plain_ops = list(module.op.walk()), list(plain.op.walk())
    if [o.name for o in ops] != [o.name for o in plain_ops]:
        return {}
    return {op: p.location.line for op, p in zip(ops, plain_ops) if hasattr(p.location, "line")}


def _symbol(op: Operation) -> str:
    return op.properties["sym_name"].value


def _func_of(value: Value) -> Operation | None:
    op = value.owner.parent_op if isinstance(value, BlockArgument) else value.owner
    if op is None or op.name == "func.func":
        return op
    return op.parent_of_type("func.func")


def _inside(module: Module, value: Value) -> bool:
    return _inside_op(module, value.owner.parent_op if isinstance(value, BlockArgument) else value.owner)


def _inside_op(module: Module, op: Operation | None) -> bool:
    return op is not None and (op is module.op or module.op.is_ancestor_of(op))


def _resolve(module: Module, names: _Names, value: Value | str, func: str | None) -> Value:
    if isinstance(value, Value):
        if not _inside(module, value):
            raise SdyError(f"explain: {shown(value)} is not a value of this module")
        return value
    match = _NAME.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise SdyError(f"explain: expected a value name like '%3', '%arg0' or '@main:%3', "
                       f"got {shown(value)}")
    func = match.group(1) or (func if func is None else expect(func, (str,), "a function name (str) or None",
                                                                 "explain: func"))
    funcs = names.funcs
    if func is None:
        func = next(iter(funcs)) if len(funcs) == 1 else "main"
    if func not in funcs:
        raise SdyError(f"explain: the module has no function @{func} "
                       f"(functions: {', '.join('@' + f for f in funcs) or 'none'})")
    values = names.values(funcs[func])
    found = values.get(match.group(2), [])
    if not found:
        multi = f"{match.group(2)}#0"
        hint = (f" ({match.group(2)} has several results: name one, e.g. {multi})"
                if multi in values else "")
        raise SdyError(f"explain: @{func} defines no value {match.group(2)}{hint}")
    if match.group(3) is not None:
        line = int(match.group(3))
        picked = [v for v in found if names.line(v) == line]
        if len(picked) != 1:
            raise SdyError(f"explain: @{func} defines no value {match.group(2)} on line {line} "
                           f"({_candidates(names, found)})")
        return picked[0]
    if len({_op_of(v) for v in found}) == 1:
        return found[0]  # the arguments of one op's regions (a while's cond and body) share a name
    if len(found) > 1:
        raise SdyError(f"explain: {match.group(2)} names {len(found)} values in @{func} ("
                       f"{_candidates(names, found)}); pick one with '@{func}:{match.group(2)}@LINE', "
                       f"e.g. '@{func}:{match.group(2)}@{names.line(found[0])}'")
    return found[0]


def _candidates(names: _Names, values: list[Value]) -> str:
    return ", ".join(f"line {names.line(v)}: {_op_of(v).name}" for v in values)


# -- the explanation --------------------------------------------------------------------------------

class _Explainer:
    def __init__(self, names: _Names, back: dict[Value, Value], handler: SourceShardingHandler,
                 home: Operation | None):
        self.names, self.back, self.handler, self.home = names, back, handler, home

    def name(self, value: Value) -> str:
        """The user's name of a value of the copy, or what the pipeline made it from."""
        if value in self.back:
            return self.names.name(self.back[value], self.home)
        if isinstance(value, OpResult) and value.owner.name == DATA_FLOW_EDGE:
            return f"the data-flow edge of {self.name(value.owner.operands[0])}"
        if isinstance(value, OpResult):
            return f"result {value.index} of a {value.owner.name} the pipeline added"
        return f"argument {value.index} of a block the pipeline added"

    def explain(self, original: Value, value: Value) -> Explanation:
        sharding = get_sharding(value)
        head = f"{self.names.name(original)}: {value.type}"
        recorded = dict.fromkeys(self.handler.origins.get(shardable_value(value), ()))
        axes: list[AxisExplanation] = []
        if recorded or (sharding is not None and any(d.axes for d in sharding.dim_shardings)):
            for dim, dim_sharding in enumerate(sharding.dim_shardings if sharding is not None else ()):
                for axis in dim_sharding.axes:
                    # A sub-axis that grew ("c":(1)2, then "c":(1)4) may owe its parts to others.
                    for part in sorted(a for a in recorded if a != axis and contains(axis, a)):
                        axes.append(self.axis_chain(value, part, dim, f" (a part of {axis})"))
                        del recorded[part]
                    axes.append(self.axis_chain(value, axis, dim))
                    recorded.pop(axis, None)
            for axis in recorded:  # reached the value along a factor its sharding could not keep
                step = self.handler.trace.get((shardable_value(value), axis))
                dim = step.target_dim if step is not None else "?"
                axes.append(self.axis_chain(value, axis, dim, " (recorded on the way, not kept in the sharding)"))
            text = "\n".join([f"{head}\n  sharding after propagation: {sharding}"]
                             + [line for a in axes for line in a.lines()]) + "\n"
        else:
            text = f"{head}\n  no sharded axis reaches it: no sharding after propagation (replicated)\n"
        op = _op_of(original)
        return Explanation(
            self.names.printer.value_name(original), _symbol(_func_of(original)) if _func_of(original) else "",
            op.name if op is not None else "", original.index if isinstance(original, BlockArgument) else None,
            self.names.line(original),
            source_line(op.location) if op is not None else None, str(value.type), sharding, tuple(axes), text)

    def axis_chain(self, value: Value, axis: AxisRef, dim: int | str, part: str = "") -> AxisExplanation:
        steps: list[Step] = []
        current, seen = shardable_value(value), set()
        while (step := self._first_step(current, axis)) is not None and step not in seen:
            seen.add(step)
            steps.append(step)
            current = shardable_value(step.source)
        origin = self.handler.origin_of(current, axis) if current is not None else UNKNOWN
        return AxisExplanation(axis, dim, None if origin == UNKNOWN else str(origin),
                               self.origin(origin, current, axis),
                               tuple(self.step(s) for s in reversed(steps)), part)

    def _first_step(self, value: Value | None, axis: AxisRef) -> Step | None:
        trace = self.handler.trace
        step = trace.get((value, axis))
        if step is None and axis in self.handler.origins.get(value, ()):
            return None  # a user sharding of the value itself
        if step is None:  # the axis may have been split or merged on the way (reshapes)
            step = next((s for (v, a), s in trace.items()
                         if v is value and (contains(a, axis) or contains(axis, a))), None)
        return step

    def origin(self, origin: OriginSharding, value: Value | None, axis: AxisRef) -> str:
        """Where the chain starts: jaxlib's origin label and the user sharding it names."""
        label = f'"{origin}"'
        func = _func_of(value) if value is not None else None
        user_func = self.names.funcs.get(_symbol(func)) if func is not None else None
        if origin.kind == INPUT and user_func is not None:
            arg = user_func.regions[0].blocks[0].arguments[origin.index]
            return f"from {label} (the user sharding {get_sharding(arg)} of {self.names.name(arg, self.home)})"
        if origin.kind == OUTPUT and user_func is not None:
            return (f"from {label} (the user sharding {func_result_sharding(user_func, origin.index)} "
                    f"of result {origin.index} of @{_symbol(user_func)})")
        if origin.kind == CONSTRAINT_ORIGIN:
            op = self._named_op(func, CONSTRAINT, str(origin))
            if op is not None:
                user = self.back.get(op.result)
                sharding = (user.owner if user is not None else op).properties["sharding"]
                return f"from {label} (the sdy.sharding_constraint {self.name(op.result)} {sharding})"
        if origin.kind in (MC_INPUT, MC_OUTPUT):
            op = self._named_op(func, "sdy.manual_computation", f"mc_{origin.source_id}")
            side = "in_shardings" if origin.kind == MC_INPUT else "out_shardings"
            if op is not None:
                user = self.back.get(op.results[0]) if op.results else None
                sharding = (user.owner if user is not None else op).properties[side].shardings[origin.index]
                return f"from {label} ({side}[{origin.index}] = {sharding} of a sdy.manual_computation)"
        if origin != UNKNOWN or value is None:
            return f"from {label}"
        if isinstance(value, OpResult) and value.owner.name == DATA_FLOW_EDGE:
            value = value.owner.operands[0]  # the edge holds its owner's sharding
        where = self.name(value)
        user = self.back.get(value)
        own = get_sharding(user) if user is not None else None
        if own is not None and any(contains(a, axis) or contains(axis, a) for d in own.dim_shardings for a in d.axes):
            return (f"from the sdy.sharding of {where} given in the input, not a user sharding "
                    '(jaxlib\'s sdy.sharding_origins says ": 0")')
        if any(u.operation.name == "sdy.sharding_group" for u in value.uses):
            return f"from {where}, which got it from its sharding group (not recorded by propagation)"
        return f"from {where} (no recorded source)"

    @staticmethod
    def _named_op(func: Operation | None, op_name: str, origin_name: str) -> Operation | None:
        for op in func.walk() if func is not None else ():
            if op.name == op_name and op.attributes.get(SHARDING_ORIGIN_NAME) == StringAttr(origin_name):
                return op
        return None

    def step(self, s: Step) -> StepExplanation:
        op = s.op
        if op.name == "func.func":
            text = (f"step {s.edge.step}: @{_symbol(op)}'s result sharding -> {self.name(s.target)} "
                    f"(returned), dim {s.target_dim}")
        else:
            if op.name == DATA_FLOW_EDGE:
                what = f"the data-flow edge of {self.name(op.operands[0])}"
            else:
                what = f"{op.name} ({self.name(op.results[0])})" if op.results else op.name
            text = (f"step {s.edge.step}: {what} along factor {factor_name(s.factor)} of size "
                    f"{s.factor_size}: {self.name(s.source)} ({_side(s.edge.source)}, dim {s.source_dim}) "
                    f"-> {self.name(s.target)} ({_side(s.edge.target)}, dim {s.target_dim})")
        source = source_line(op.location)
        user = self._user_op(op)
        return StepExplanation(s.edge.step, op.name, self.names.lines.get(user) if user is not None else None,
                               source, text + (f" [{source}]" if source else ""))

    def _user_op(self, op: Operation) -> Operation | None:
        """The user's op an op of the copy was made from (by one of its results), if any."""
        if op.name == "func.func":
            return self.names.funcs.get(_symbol(op))
        value = op.results[0] if op.results else None
        user = self.back.get(value) if value is not None else None
        return _op_of(user) if user is not None else None


def _side(ref) -> str:
    return f"{ref.type} {ref.index}"
