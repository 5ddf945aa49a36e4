"""Sdy attributes that are not shardings: `#sdy.propagation_edges<...>` (the debug record of
which value's sharding flowed to which, per propagation step)."""

from __future__ import annotations

from dataclasses import dataclass

from sharding import AxisRef, SubAxisInfo

from sdy_passes.attributes import Attribute

__all__ = ["EdgeValueRef", "AxisToPropagationDetails", "PropagationOneStep", "PropagationEdges",
           "ATTRIBUTES"]


@dataclass(frozen=True, slots=True)
class EdgeValueRef(Attribute):
    """`operand-1` / `result-0`: a value of the op carrying the attribute."""

    type: str
    index: int

    def __str__(self) -> str:
        return f"{self.type}-{self.index}"


@dataclass(frozen=True, slots=True)
class AxisToPropagationDetails(Attribute):
    """`{"x" = operand-1 -> [operand-0, result-0]}`."""

    axis: AxisRef
    source: EdgeValueRef
    targets: tuple[EdgeValueRef, ...]

    def __str__(self) -> str:
        return f"{{{self.axis} = {self.source} -> [{', '.join(map(str, self.targets))}]}}"


@dataclass(frozen=True, slots=True)
class PropagationOneStep(Attribute):
    """`{step-2 = [{...}, ...]}`."""

    step_index: int
    axis_entries: tuple[AxisToPropagationDetails, ...]

    def __str__(self) -> str:
        return f"{{step-{self.step_index} = [{', '.join(map(str, self.axis_entries))}]}}"


@dataclass(frozen=True, slots=True)
class PropagationEdges(Attribute):
    """`#sdy.propagation_edges<[{step-0 = [...]}, ...]>`."""

    steps: tuple[PropagationOneStep, ...]

    def __str__(self) -> str:
        return f"#sdy.propagation_edges<[{', '.join(map(str, self.steps))}]>"

    @classmethod
    def parse_body(cls, p) -> PropagationEdges:
        """The text after `#sdy.propagation_edges` (`p` at `<`), verified as Shardy does at
        parse time (`PropagationEdgesAttr::verify`, reported at the `<`)."""
        start = p.skip()
        p._expect_token("<")
        p._expect_token("[")
        steps = []
        while True:
            p._expect_token("{")
            p.expect_keyword("step")
            p._expect_token("-")
            index = p._parse_bounded_int(64, "step index")
            p._expect_token("=")
            p._expect_token("[")
            entries = []
            while True:
                entries.append(_parse_entry(p))
                if not p.parse_optional(","):
                    break
            p._expect_token("]")
            p._expect_token("}")
            steps.append(PropagationOneStep(index, tuple(entries)))
            if not p.parse_optional(","):
                break
        p._expect_token("]")
        p._expect_token(">")
        value = cls(tuple(steps))
        problem = value.problem()
        if problem:
            raise p.error(problem, start)
        return value

    def problem(self) -> str | None:
        seen: set[int] = set()
        for step in self.steps:
            if step.step_index < 0:
                return f"propagation edges have negative step index: {step.step_index}"
            if step.step_index in seen:
                return f"propagation edges have duplicate step index: {step.step_index}"
            seen.add(step.step_index)
            for entry in step.axis_entries:
                targets: set[EdgeValueRef] = set()
                for target in entry.targets:
                    if target == entry.source:
                        return "propagation edges have a source that is the same as a target"
                    if target in targets:
                        return (f"propagation edges have duplicate targets for step index: "
                                f"{step.step_index} and axis: {entry.axis.name}")
                    targets.add(target)
        return None


def _parse_entry(p) -> AxisToPropagationDetails:
    p._expect_token("{")
    name = p.parse_string("axis name")
    sub = None
    if p.parse_optional(":"):
        p._expect_token("(")
        pre = p.parse_int("pre-size")
        p._expect_token(")")
        sub = SubAxisInfo(pre, p.parse_int("size"))
    p._expect_token("=")
    source = _parse_value_ref(p)
    p._expect_token("->")
    p._expect_token("[")
    targets = []
    while True:
        targets.append(_parse_value_ref(p))
        if not p.parse_optional(","):
            break
    p._expect_token("]")
    p._expect_token("}")
    return AxisToPropagationDetails(AxisRef(name, sub), source, tuple(targets))


def _parse_value_ref(p) -> EdgeValueRef:
    pos = p.skip()
    kind = p.parse_bare_id("'operand' or 'result'")
    if kind not in ("operand", "result"):
        raise p.error(f"expected 'operand' or 'result', found '{kind}'", pos)
    p._expect_token("-")
    return EdgeValueRef(kind, p.parse_int("value index"))


ATTRIBUTES = {"#sdy.propagation_edges": PropagationEdges.parse_body}
