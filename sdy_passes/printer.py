"""Write MLIR text: the generic op form exactly as `mlir-opt --mlir-print-op-generic` prints it
(SSA names aside), or a readable pretty form for the ops in `_pretty.PRETTY_PRINTERS`.

SSA names are numbered across the whole module (`%0`, `%1`, ... for results, `%arg0`, ... for
block arguments); compare with upstream output up to renaming (`tests/sdy_passes/ssa.py`).
"""

from __future__ import annotations

from typing import Callable

from sdy_passes.attributes import UnknownLoc, print_attr_dict, print_result_types
from sdy_passes.ir import Block, Module, Operation, OpResult, Region, Value

__all__ = ["print_module", "print_op", "Printer"]


def print_module(module: Module, *, generic: bool = False, print_locations: bool = False) -> str:
    """The module as text (ending with a newline). `generic=True` gives the generic op form."""
    p = Printer(generic=generic, print_locations=print_locations)
    p.print_op(module.op, 0)
    return "".join(p.out) + "\n"


def print_op(op: Operation, *, generic: bool = True) -> str:
    """One op (and its regions) as text; values defined outside it get fresh names."""
    p = Printer(generic=generic)
    p.print_op(op, 0)
    return "".join(p.out)


class Printer:
    """Accumulates text in `out`; names values on first sight."""

    def __init__(self, *, generic: bool = True, print_locations: bool = False):
        self.generic = generic
        self.print_locations = print_locations
        self.out: list[str] = []
        self._op_names: dict[Operation, str] = {}
        self._arg_names: dict[Value, str] = {}
        self._block_names: dict[Block, str] = {}
        self._next_value = 0
        self._next_arg = 0

    # -- names ----------------------------------------------------------------------------
    def value_name(self, v: Value) -> str:
        if isinstance(v, OpResult):
            op = v.owner
            base = self._op_names.get(op)
            if base is None:
                base = self._name_results(op)
            return base if len(op.results) == 1 else f"{base}#{v.index}"
        name = self._arg_names.get(v)
        if name is None:
            name = self._arg_names[v] = f"%arg{self._next_arg}"
            self._next_arg += 1
        return name

    def _name_results(self, op: Operation) -> str:
        base = self._op_names[op] = f"%{self._next_value}"
        self._next_value += 1
        return base

    def block_name(self, b: Block) -> str:
        # MLIR numbers blocks within their region: every entry block is ^bb0.
        name = self._block_names.get(b)
        if name is None:
            index = next((i for i, x in enumerate(b.parent.blocks) if x is b), 0) if b.parent else 0
            name = self._block_names[b] = f"^bb{index}"
        return name

    def operands(self, values) -> str:
        return ", ".join(self.value_name(v) for v in values)

    # -- ops ------------------------------------------------------------------------------
    def print_op(self, op: Operation, indent: int) -> None:
        out = self.out
        out.append(" " * indent)
        if op.results:
            base = self._op_names.get(op) or self._name_results(op)
            out.append(f"{base}:{len(op.results)} = " if len(op.results) > 1 else f"{base} = ")
        printer = None if self.generic else _pretty_printer(op)
        if printer is None or not printer(self, op, indent):
            self.print_generic_body(op, indent)
        if self.print_locations and not isinstance(op.location, UnknownLoc):
            out.append(f" {op.location}")

    def print_generic_body(self, op: Operation, indent: int) -> None:
        out = self.out
        out.append(f'"{op.name}"({self.operands(op._operands)})')
        if op.successors:
            out.append("[" + ", ".join(self.block_name(b) for b in op.successors) + "]")
        if op.properties:
            out.append(f" <{print_attr_dict(op.properties)}>")
        if op.regions:
            out.append(" (")
            for i, r in enumerate(op.regions):
                if i:
                    out.append(", ")
                self.print_region(r, indent)
            out.append(")")
        if op.attributes:
            out.append(" " + print_attr_dict(op.attributes))
        out.append(" : " + print_function_type(op.operand_types, op.result_types))

    def print_region(self, region: Region, indent: int, *, print_entry_args: bool = True,
                     print_empty_block: bool = True) -> None:
        """`{`, the blocks (entry header only when it has arguments or is empty), `}`."""
        out = self.out
        out.append("{\n")
        for b in region.blocks:
            self.block_name(b)
        for i, b in enumerate(region.blocks):
            header = i > 0 or (print_entry_args and b.arguments) or (print_empty_block and not b.ops)
            if header:
                self.print_block_header(b, indent)
            for op in b.ops:
                self.print_op(op, indent + 2)
                out.append("\n")
        out.append(" " * indent + "}")

    def print_block_header(self, b: Block, indent: int) -> None:
        out = self.out
        out.append(" " * indent + self.block_name(b))
        if b.arguments:
            out.append("(" + ", ".join(self.block_arg(a) for a in b.arguments) + ")")
        out.append(":\n")

    def block_arg(self, a) -> str:
        text = f"{self.value_name(a)}: {a.type}"
        if self.print_locations and not isinstance(a.location, UnknownLoc):
            text += f" {a.location}"
        return text


def print_function_type(inputs, results) -> str:
    return f"({', '.join(map(str, inputs))}) -> {print_result_types(tuple(results))}"


def _pretty_printer(op: Operation) -> Callable | None:
    from sdy_passes._pretty import PRETTY_PRINTERS
    return PRETTY_PRINTERS.get(op.name)
