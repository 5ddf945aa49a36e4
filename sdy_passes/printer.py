"""Write MLIR text: the generic op form exactly as `mlir-opt --mlir-print-op-generic` prints it
(SSA names aside), or the pretty form each op's `OpDef` in `sdy_passes.dialects` prints.

SSA names are numbered across the whole module (`%0`, `%1`, ... for results, `%arg0`, ... for
block arguments); compare with upstream output up to renaming (`tests/sdy_passes/ssa.py`).
"""

from __future__ import annotations

import re

from sdy_passes.attributes import Location, loc_children, print_attr_dict, print_function_type
from sdy_passes.dialects import lookup
from sdy_passes.errors import SdyError, expect
from sdy_passes.ir import PRINTERS, Block, Module, Operation, OpResult, Region, Value

__all__ = ["print_module", "print_op", "print_function_type", "Printer"]


def print_module(module: Module, *, generic: bool = False, print_locations: bool = False,
                 mlir_names: bool = True) -> str:
    """The module as text (ending with a newline). `generic=True` gives the generic op form.

    Values are named the way MLIR's printer names them (pretty form: `%0` again in each
    function, `%cst`, `%c_0`, `%iterArg`, `%output_state`; generic form: MLIR's module-wide
    order, e.g. `%arg51` in the first function): the text is exactly what `mlir-opt` / jaxlib
    print. `mlir_names=False` numbers them across the module in print order instead.
    `print_locations=True` is `--mlir-print-debuginfo`: every op's and block argument's
    `loc(...)`, with MLIR's `#loc` alias tables before and after the module.
    """
    expect(module, (Module,), "a Module", "print_module")
    p = Printer(generic=generic, print_locations=print_locations)
    if mlir_names:
        p.use_mlir_names(module.op)
    _print_guarded(p, module.op)
    text = "".join(p.out) + "\n"
    return p.with_location_aliases(text) if print_locations else text


def print_op(op: Operation, *, generic: bool = True) -> str:
    """One op (and its regions) as text; values defined outside it get fresh names."""
    expect(op, (Operation,), "an Operation", "print_op")
    p = Printer(generic=generic)
    _print_guarded(p, op)
    return "".join(p.out)


def _print_guarded(p: Printer, op: Operation) -> None:
    try:
        p.print_op(op, 0)
    except RecursionError:
        raise SdyError("cannot print: the IR is nested too deeply") from None


class Printer:
    """Accumulates text in `out`; names values on first sight."""

    def __init__(self, *, generic: bool = True, print_locations: bool = False):
        self.generic = generic
        self.print_locations = print_locations
        self.out: list[str] = []
        self._op_names: dict[Operation, str | tuple[str, ...]] = {}
        """An op's result name base (`%0` -> `%0#1`) or one name per result (`%values`)."""
        self._arg_names: dict[Value, str] = {}
        """Block arguments' names, and op results' once written."""
        self._block_names: dict[Block, str] = {}
        self._next_value = 0
        self._next_arg = 0
        self._locs: dict[Location, list] = {}
        """With locations: each one seen, in MLIR's alias walk order -> [alias depth, deferrable]."""
        self._loc_marks: list[tuple[Location, bool]] = []
        """Locations written as `\0k\0` marks (k an index here) until aliases are numbered."""

    # -- names ----------------------------------------------------------------------------
    def use_mlir_names(self, root: Operation) -> None:
        """Name every value under `root` as MLIR's `SSANameState` does (see `_MlirNames`)."""
        names = _MlirNames()
        if self.generic:
            names.number_generic(root)
        else:
            for region in root.regions:
                names.number_region(region, 0, 0, 0, ())
        self._op_names.update(names.ops)
        self._arg_names.update(names.args)

    def value_name(self, v: Value) -> str:
        name = self._arg_names.get(v)
        if name is not None:
            return name
        if isinstance(v, OpResult):
            op = v.owner
            base = self._op_names.get(op)
            if base is None:
                base = self._name_results(op)
            if isinstance(base, tuple):
                name = base[v.index]
            else:
                name = base if len(op.results) == 1 else f"{base}#{v.index}"
        else:
            name = f"%arg{self._next_arg}"
            self._next_arg += 1
        self._arg_names[v] = name
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
        if self.print_locations:  # MLIR's alias walk visits an op's location before its regions
            self._visit_loc(op.location, True)
        out.append(" " * indent)
        if op.results:
            base = self._op_names.get(op) or self._name_results(op)
            if isinstance(base, tuple):
                out.append(", ".join(base) + " = ")
            else:
                out.append(f"{base}:{len(op.results)} = " if len(op.results) > 1 else f"{base} = ")
        opdef = None if self.generic else lookup(op.name)
        if opdef is None or opdef.print is None or not self._print_pretty(opdef, op, indent):
            self.print_generic_body(op, indent)
        if self.print_locations:
            out.append(f" loc({self._loc_mark(op.location, True)})")

    def _print_pretty(self, opdef, op: Operation, indent: int) -> bool:
        """The op's pretty form; False (and nothing written) when its hook declines or cannot
        print this op (attributes missing or of another kind: the generic form says it all)."""
        mark = len(self.out)
        try:
            if opdef.print(self, op, indent):
                return True
        except (KeyError, IndexError, AttributeError, TypeError, ValueError):
            pass
        del self.out[mark:]
        return False

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
        out.append(" : " + print_function_type([v.type for v in op._operands], [r.type for r in op.results]))

    def print_region(self, region: Region, indent: int, *, print_entry_args: bool = True,
                     print_empty_block: bool = True) -> None:
        """`{`, the blocks (entry header only when it has arguments or is empty), `}`."""
        out = self.out
        out.append("{\n")
        for i, b in enumerate(region.blocks):
            self._block_names.setdefault(b, f"^bb{i}")
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
        return f"{self.value_name(a)}: {a.type}{self.arg_location(a)}"

    # -- locations (`--mlir-print-debuginfo`) ---------------------------------------------
    def arg_location(self, a) -> str:
        """` loc(...)` after a block argument, written out (MLIR gives block arguments no alias,
        only the locations nested in theirs), or "" without locations."""
        if not self.print_locations:
            return ""
        self._visit_loc(a.location, False)
        return f" loc({self._loc_mark(a.location, False)})"

    def _visit_loc(self, loc: Location, deferrable: bool) -> int:
        """MLIR's `AliasInitializer::visit`: every location gets a `#loc` alias; its depth is
        1 + its children's; one use where aliases cannot be deferred (block arguments) moves it
        and its children to the table before the module."""
        info = self._locs.get(loc)
        if info is not None:
            if not deferrable:
                self._mark_non_deferrable(loc)
            return info[0]
        info = self._locs[loc] = [1, deferrable]
        info[0] = 1 + max((self._visit_loc(c, deferrable) for c in loc_children(loc)), default=0)
        return info[0]

    def _mark_non_deferrable(self, loc: Location) -> None:
        info = self._locs[loc]
        if info[1]:
            info[1] = False
            for c in loc_children(loc):
                self._mark_non_deferrable(c)

    def _loc_mark(self, loc: Location, alias: bool) -> str:
        self._loc_marks.append((loc, alias))
        return f"\0{len(self._loc_marks) - 1}\0"

    def with_location_aliases(self, text: str) -> str:
        """`text` with its location marks written, between the alias tables MLIR prints: those
        that cannot be deferred before it, the others after it. Aliases are numbered by depth,
        then by first sight (`#loc`, `#loc1`, ...)."""
        order = sorted(self._locs, key=lambda loc: self._locs[loc][0])
        names = {loc: f"#loc{i or ''}" for i, loc in enumerate(order)}

        def mark(m: re.Match) -> str:
            loc, alias = self._loc_marks[int(m.group(1))]
            return names[loc] if alias else loc.body(names.get)

        def table(deferred: bool) -> str:
            return "".join(f"{names[loc]} = loc({loc.body(names.get)})\n"
                           for loc in order if self._locs[loc][1] == deferred)

        return table(False) + re.sub("\0([0-9]+)\0", mark, text) + table(True)


class _MlirNames:
    """MLIR's default SSA names for a pretty-printed module.

    Each region starts from the counters its parent region had *after* numbering all of the
    parent's ops (so a function restarts at `%0` and nested regions number after the ops that
    follow them), entry block arguments are `%argN`, other values `%N` (one number per op), and
    name hints (each `OpDef`'s `result_names` and `block_arg_name`: `%c`/`%cst` for constants,
    `%iterArg` for while arguments) are made unique with `_N` from one conflict counter per
    region.
    """

    def __init__(self):
        self.ops: dict[Operation, str] = {}
        self.args: dict[Value, str] = {}

    def number_region(self, region: Region, next_value: int, next_arg: int, next_conflict: int,
                      used: tuple[set, ...]) -> None:
        scope: set[str] = set()
        chain = (*used, scope)
        state = [next_value, next_arg, next_conflict]

        def unique(name: str) -> str:
            if any(name in s for s in chain):
                while True:
                    probe = f"{name}_{state[2]}"
                    state[2] += 1
                    if not any(probe in s for s in chain):
                        name = probe
                        break
            scope.add(name)
            return "%" + name

        parent = lookup(region.parent.name) if region.parent is not None else None
        if parent is not None and parent.block_arg_name and region.blocks:
            for a in region.blocks[0].arguments:
                self.args[a] = unique(parent.block_arg_name)
        for i, block in enumerate(region.blocks):
            for a in block.arguments:
                if a in self.args:
                    continue
                if i == 0:
                    self.args[a] = unique(f"arg{state[1]}")
                    state[1] += 1
                else:
                    self.args[a] = f"%{state[0]}"
                    state[0] += 1
            for op in block.ops:
                if not op.results:
                    continue
                opdef = lookup(op.name)
                hints = opdef.result_names(op) if opdef is not None and opdef.result_names else None
                if hints and len(hints) == 1:
                    self.ops[op] = unique(hints[0])
                elif hints:
                    self.ops[op] = tuple(unique(h) for h in hints)
                else:
                    self.ops[op] = f"%{state[0]}"
                    state[0] += 1
        for block in region.blocks:
            for op in block.ops:
                for r in op.regions:
                    self.number_region(r, state[0], state[1], state[2], chain)


    def number_generic(self, root: Operation) -> None:
        """The generic form's names: one set of counters for the whole module, regions taken
        from a stack (last pushed first), each pushing its ops' regions after numbering itself.
        Hence `%arg51` in the first function and a while body numbered before its condition."""
        next_value = next_arg = 0
        stack = list(root.regions)
        while stack:
            region = stack.pop()
            for i, block in enumerate(region.blocks):
                for a in block.arguments:
                    if i == 0:
                        self.args[a] = f"%arg{next_arg}"
                        next_arg += 1
                    else:
                        self.args[a] = f"%{next_value}"
                        next_value += 1
                for op in block.ops:
                    if op.results:
                        self.ops[op] = f"%{next_value}"
                        next_value += 1
            for block in region.blocks:
                for op in block.ops:
                    stack.extend(op.regions)


PRINTERS.update(op=print_op, module=print_module)
