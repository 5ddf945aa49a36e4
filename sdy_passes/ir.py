"""The IR: values with use lists, operations, blocks, regions, a module and its symbol table.

Attribute and type *values* (`sdy_passes.attributes`, `sharding`) are frozen and compared by
value; the graph objects here (`Operation`, `Block`, `Region`, `Value`) are mutable and compared
by identity, as in MLIR and xdsl.

Ownership and invariants (kept by every method below; do not assign the private fields):

* An `Operation` has `operands` (values it uses), `results` (`OpResult`s it defines),
  `properties` (inherent attributes, printed `<{...}>` in generic form), `attributes`
  (discardable ones, printed `{...}`), `regions`, `successors` (blocks, for branch terminators)
  and a `location`. `parent` is the `Block` holding it (None while detached).
* A `Block` has `arguments` (`BlockArgument`s) and `ops` (a Python list, in order); `parent` is
  its `Region`. A `Region` has `blocks`; `parent` is its `Operation`.
* Every `Value` keeps its uses, in the order they were made, as `Use(operation, index)`
  records: `value.uses`, `value.users`. Setting an operand (`op.set_operand`,
  `value.replace_all_uses_with`, ...) updates both sides.

Typical pass code::

    for op in list(module.walk()):                  # pre-order over the whole module
        if op.name == "stablehlo.add":
            x = op.result
            edge = Operation.create("sdy.data_flow_edge", [x], [x.type], location=op.location)
            edge.insert_after(op)
            x.replace_all_uses_except(edge.result, [edge])

`properties` and `attributes` map names to attribute values; mutate them directly
(`op.attributes["sdy.sharding"] = ...`, `del op.properties["sharding"]`).

Every edit — an op's fields, dicts and lists, a block's ops and arguments, a region's blocks,
a value's type — counts in `edit_count()`, so that the verifier can skip a module no edit has
touched since it last passed (a pipeline verifies after every pass; most passes change nothing).
The dicts and lists are `EditedDict`/`EditedList`s (assigning a plain one converts it).
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from sdy_passes.attributes import Attribute, Location, StringAttr, Type, UnknownLoc

__all__ = [
    "Use", "Value", "OpResult", "BlockArgument", "Operation", "Block", "Region", "Module",
    "SymbolTable",
]


_UNKNOWN = UnknownLoc()  # a frozen value: every new op shares it


class _Edits:
    count = 0


def edit_count() -> int:
    """The number of edits made to any IR in this process so far: the same count at two
    moments means no IR changed in between."""
    return _Edits.count


def _counted(method: Callable) -> Callable:
    def edit(self, *args, **kwargs):
        _Edits.count += 1
        return method(self, *args, **kwargs)
    edit.__name__ = method.__name__
    return edit


def _same(old, new) -> bool:
    """Whether storing `new` where `old` is changes nothing the verifier reads: attribute and
    type values are frozen and read by value."""
    return old is new or type(old) is type(new) and old == new


class EditedDict(dict):
    """An op's `properties` or `attributes`: a dict whose changes count in `edit_count()`
    (storing an equal value is none)."""

    __slots__ = ()

    def __setitem__(self, key, value) -> None:
        if key not in self or not _same(dict.__getitem__(self, key), value):
            _Edits.count += 1
            dict.__setitem__(self, key, value)


class EditedList(list):
    """An op's results, regions or successors, a block's ops or arguments, a region's blocks:
    a list whose changes count in `edit_count()`."""

    __slots__ = ()

    def append(self, item) -> None:  # (the parser's one call per op: no wrapper)
        _Edits.count += 1
        list.append(self, item)


for _name in ("__delitem__", "__ior__", "pop", "popitem", "clear", "update", "setdefault"):
    setattr(EditedDict, _name, _counted(getattr(dict, _name)))
for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "extend", "insert",
              "pop", "remove", "clear", "sort", "reverse"):
    setattr(EditedList, _name, _counted(getattr(list, _name)))


def _edited(value, kind: type):
    """`value` as the field's counted container (itself if it is one already)."""
    return value if type(value) is kind else kind(value)


PRINTERS: dict = {}
"""`op` and `module`: the printer's `print_op` and `print_module`, which `str()` of an op or a
module calls; `sdy_passes.printer` (imported with the package) fills it, as it builds on this
module."""


class Use(NamedTuple):
    """One use of a value: operand number `index` of `operation` (a named tuple: values keep
    their uses as dict keys, and a tuple is made and hashed fastest)."""

    operation: Operation
    """The op using the value (compared by identity)."""
    index: int
    """Operand position within `operation.operands`."""


_set = object.__setattr__


class Value:
    """An SSA value: an `OpResult` or a `BlockArgument`. Compared by identity."""

    __slots__ = ("type", "_uses", "__weakref__")

    def __init__(self, type: Type):
        _set(self, "type", type)
        """The value's type (a frozen `Type`); may be reassigned."""
        self._uses: dict[Use, None] = {}  # an ordered set: O(1) add/remove, creation order kept

    def __setattr__(self, name: str, value) -> None:
        if name == "type" and not _same(self.type, value):
            _Edits.count += 1
        _set(self, name, value)

    @property
    def uses(self) -> tuple[Use, ...]:
        """The uses of this value, in the order they were created."""
        return tuple(self._uses)

    @property
    def users(self) -> list[Operation]:
        """The ops using this value, each once, in order of their first use."""
        return list(dict.fromkeys(u.operation for u in self._uses))

    @property
    def num_uses(self) -> int:
        return len(self._uses)

    @property
    def has_uses(self) -> bool:
        return bool(self._uses)

    @property
    def has_one_use(self) -> bool:
        return len(self._uses) == 1

    def replace_all_uses_with(self, new: Value) -> None:
        """Make every user of this value use `new` instead."""
        self.replace_uses_where(new, lambda use: True)

    def replace_uses_where(self, new: Value, predicate: Callable[[Use], bool]) -> None:
        """Replace the uses for which `predicate(use)` is true by `new`."""
        if new is self:
            return
        for use in list(self._uses):
            if predicate(use):
                use.operation.set_operand(use.index, new)

    def replace_all_uses_except(self, new: Value, exceptions: Iterable[Operation]) -> None:
        """Replace every use whose op is not in `exceptions` (compared by identity)."""
        skip = {id(op) for op in exceptions}
        self.replace_uses_where(new, lambda use: id(use.operation) not in skip)

    @property
    def parent_block(self) -> Block | None:
        """The block the value is defined in (block of the defining op, or the arg's block)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.type}>"


class OpResult(Value):
    """Result number `index` of the operation `owner`."""

    __slots__ = ("owner", "index")

    def __init__(self, type: Type, owner: Operation, index: int):
        _set(self, "type", type)  # (Value.__init__, inlined: a module has one result per op or more)
        _set(self, "_uses", {})
        _set(self, "owner", owner)
        _set(self, "index", index)

    @property
    def parent_block(self) -> Block | None:
        return self.owner.parent

    def __repr__(self) -> str:
        return f"<OpResult #{self.index} of {self.owner.name}: {self.type}>"


class BlockArgument(Value):
    """Argument number `index` of the block `owner`."""

    __slots__ = ("owner", "index", "location")

    def __init__(self, type: Type, owner: Block, index: int, location: Location | None = None):
        super().__init__(type)
        self.owner = owner
        self.index = index
        self.location: Location = location or UnknownLoc()

    @property
    def parent_block(self) -> Block | None:
        return self.owner

    def __repr__(self) -> str:
        return f"<BlockArgument #{self.index}: {self.type}>"


class Operation:
    """An MLIR operation. Create with `Operation.create(...)`; compared by identity."""

    __slots__ = ("name", "_operands", "results", "properties", "attributes", "regions",
                 "successors", "location", "parent", "_index_hint", "__weakref__")

    def __init__(self, name: str):
        _Edits.count += 1
        _set(self, "name", name)
        """Full op name with dialect, e.g. `"stablehlo.add"`."""
        _set(self, "_operands", [])
        _set(self, "results", EditedList())
        _set(self, "properties", EditedDict())
        """Inherent attributes (`<{...}>` in generic form)."""
        _set(self, "attributes", EditedDict())
        """Discardable attributes (`{...}` in generic form), e.g. `sdy.sharding`."""
        _set(self, "regions", EditedList())
        _set(self, "successors", EditedList())
        _set(self, "location", _UNKNOWN)
        _set(self, "parent", None)
        _set(self, "_index_hint", 0)  # last known position in the parent's op list (see Block.index_of)

    def __setattr__(self, name: str, value) -> None:
        kind = _OP_FIELDS.get(name)
        if kind is not None:
            _Edits.count += 1
            if kind is not str:
                value = _edited(value, kind)
        _set(self, name, value)

    @classmethod
    def create(cls, name: str, operands: Sequence[Value] = (), result_types: Sequence[Type] = (),
               properties: Mapping[str, Attribute] | None = None,
               attributes: Mapping[str, Attribute] | None = None,
               regions: Sequence[Region] = (), successors: Sequence[Block] = (),
               location: Location | None = None) -> Operation:
        """A new detached op; `regions` must be detached (their `parent` is set to the op)."""
        op = cls(name)  # (its fields set directly below: the new op's creation is the edit)
        for v in operands:
            op._add_operand(v)
        if result_types:
            _set(op, "results", EditedList([OpResult(t, op, i) for i, t in enumerate(result_types)]))
        if properties:
            _set(op, "properties", EditedDict(properties))
        if attributes:
            _set(op, "attributes", EditedDict(attributes))
        for r in regions:
            op.add_region(r)
        if successors:
            _set(op, "successors", EditedList(successors))
        if location is not None:
            _set(op, "location", location)
        return op

    # -- operands -------------------------------------------------------------------------
    @property
    def operands(self) -> tuple[Value, ...]:
        """The values used, in order (a snapshot: change them with `set_operand(s)`)."""
        return tuple(self._operands)

    @property
    def num_operands(self) -> int:
        return len(self._operands)

    def _add_operand(self, value: Value) -> None:
        _Edits.count += 1
        value._uses[Use(self, len(self._operands))] = None
        self._operands.append(value)

    def set_operand(self, index: int, value: Value) -> None:
        """Use `value` as operand `index` (updating both use lists)."""
        _Edits.count += 1
        old = self._operands[index]
        use = Use(self, index)
        del old._uses[use]
        self._operands[index] = value
        value._uses[use] = None

    def set_operands(self, values: Sequence[Value]) -> None:
        """Replace the whole operand list (its length may change)."""
        self.drop_operand_uses()
        for v in values:
            self._add_operand(v)

    def drop_operand_uses(self) -> None:
        """Remove this op's operands (and their uses); used before erasing an op."""
        _Edits.count += 1
        for i, v in enumerate(self._operands):
            del v._uses[Use(self, i)]
        self._operands = []

    @property
    def operand_types(self) -> tuple[Type, ...]:
        return tuple(v.type for v in self._operands)

    # -- results --------------------------------------------------------------------------
    @property
    def result(self) -> OpResult:
        """The single result (error if the op has not exactly one)."""
        if len(self.results) != 1:
            raise ValueError(f"'{self.name}' has {len(self.results)} results, not 1")
        return self.results[0]

    @property
    def result_types(self) -> tuple[Type, ...]:
        return tuple(r.type for r in self.results)

    @property
    def num_results(self) -> int:
        return len(self.results)

    def has_uses(self) -> bool:
        """Whether any result is used."""
        for r in self.results:  # (no generator: the propagation driver asks for every op it pops)
            if r._uses:
                return True
        return False

    # -- regions and position -------------------------------------------------------------
    def add_region(self, region: Region | None = None) -> Region:
        """Append a (detached or new empty) region and return it."""
        region = region if region is not None else Region()
        if region.parent is not None:
            raise ValueError("region already belongs to an op")
        region.parent = self
        self.regions.append(region)
        return region

    @property
    def parent_region(self) -> Region | None:
        return self.parent.parent if self.parent is not None else None

    @property
    def parent_op(self) -> Operation | None:
        """The op whose region holds this op (None at top level or detached)."""
        r = self.parent_region
        return r.parent if r is not None else None

    def ancestors(self) -> Iterator[Operation]:
        """Enclosing ops, innermost first (not including self)."""
        op = self.parent_op
        while op is not None:
            yield op
            op = op.parent_op

    def parent_of_type(self, name: str) -> Operation | None:
        """The nearest enclosing op named `name`, or None."""
        return next((op for op in self.ancestors() if op.name == name), None)

    def is_ancestor_of(self, other: Operation) -> bool:
        """True if `other` is nested (at any depth) inside this op's regions."""
        return any(a is self for a in other.ancestors())

    @property
    def next_op(self) -> Operation | None:
        """The op after this one in its block, or None."""
        if self.parent is None:
            return None
        ops = self.parent.ops
        i = self.parent.index_of(self)
        return ops[i + 1] if i + 1 < len(ops) else None

    @property
    def prev_op(self) -> Operation | None:
        if self.parent is None:
            return None
        i = self.parent.index_of(self)
        return self.parent.ops[i - 1] if i > 0 else None

    def is_before_in_block(self, other: Operation) -> bool:
        """Whether this op comes before `other`; both must be in the same block."""
        if self.parent is None or self.parent is not other.parent:
            raise ValueError("is_before_in_block needs two ops of one block")
        return self.parent.index_of(self) < self.parent.index_of(other)

    # -- mutation -------------------------------------------------------------------------
    def insert_before(self, anchor: Operation) -> None:
        """Insert this detached op right before `anchor` (moves it if attached)."""
        self.detach_if_attached()
        block = _attached(anchor)
        block.insert(block.index_of(anchor), self)

    def insert_after(self, anchor: Operation) -> None:
        """Insert this detached op right after `anchor` (moves it if attached)."""
        self.detach_if_attached()
        block = _attached(anchor)
        block.insert(block.index_of(anchor) + 1, self)

    move_before = insert_before
    move_after = insert_after

    def replace_with(self, new: Operation) -> None:
        """Put the detached op `new` where this op is, in O(1), and detach this one (uses and
        operands untouched)."""
        block = _attached(self)
        index = block.index_of(self)
        if new.parent is not None:
            raise ValueError(f"'{new.name}' is already in a block; detach it first")
        block.ops[index] = new
        _set(new, "parent", block)
        _set(new, "_index_hint", index)
        _set(self, "parent", None)

    def detach(self) -> Operation:
        """Remove from the parent block, keeping operands and uses; returns self."""
        block = _attached(self)
        block.ops.pop(block.index_of(self))
        _set(self, "parent", None)
        return self

    def detach_if_attached(self) -> None:
        if self.parent is not None:
            self.detach()

    def erase(self, *, drop_uses: bool = False) -> None:
        """Detach and destroy this op and everything nested in it.

        Its results must be unused (MLIR asserts the same) unless `drop_uses=True`, which
        is only for erasing a group of ops that use each other; all of them must go.
        """
        if not drop_uses:
            for r in self.results:
                if r._uses:
                    users = ", ".join(sorted({u.operation.name for u in r._uses}))
                    raise ValueError(f"cannot erase '{self.name}': result #{r.index} still used by {users}")
        if self.parent is not None:
            self.detach()
        for op in self.walk(post_order=True):
            op.drop_operand_uses()

    def clone(self, value_map: dict[Value, Value] | None = None,
              block_map: dict[Block, Block] | None = None) -> Operation:
        """A detached deep copy (regions included).

        Operands found in `value_map` are remapped; others are reused as they are. The map is
        extended with old → new results and nested block arguments, so cloning a sequence of
        ops with one map rewires them to each other (like MLIR's `IRMapping`).
        """
        value_map = {} if value_map is None else value_map
        block_map = {} if block_map is None else block_map
        new = Operation.create(
            self.name, [value_map.get(v, v) for v in self._operands], self.result_types,
            self.properties, self.attributes, location=self.location)
        for old_r, new_r in zip(self.results, new.results):
            value_map[old_r] = new_r
        for region in self.regions:
            new.add_region(region.clone(value_map, block_map))
        new.successors = [block_map.get(b, b) for b in self.successors]
        return new

    # -- traversal ------------------------------------------------------------------------
    def walk(self, *, post_order: bool = False) -> Iterator[Operation]:
        """This op and all nested ops: pre-order (op, then its regions) or post-order.

        Each block's op list is snapshotted when entered, so erasing or moving the op just
        yielded is safe.
        """
        if not post_order:
            yield self
        yield from self._walk_inside(post_order)
        if post_order:
            yield self

    def _walk_inside(self, post_order: bool) -> Iterator[Operation]:
        # One explicit stack of (op, its regions, the region's blocks, the block's ops): nesting
        # costs neither Python's stack nor a chain of generators that every yield climbs.
        frames = [[self, iter(self.regions), iter(()), iter(())]]
        while frames:
            frame = frames[-1]
            for op in frame[3]:
                if post_order and op.regions:
                    frames.append([op, iter(op.regions), iter(()), iter(())])
                    break
                yield op
                if op.regions and not post_order:  # (regions read after the yield, as given)
                    frames.append([op, iter(op.regions), iter(()), iter(())])
                    break
            else:
                block = next(frame[2], None)
                if block is not None:
                    frame[3] = iter(list(block.ops))
                    continue
                region = next(frame[1], None)
                if region is not None:
                    frame[2] = iter(list(region.blocks))
                    continue
                frames.pop()
                if post_order and frames:
                    yield frame[0]

    def __repr__(self) -> str:
        return f"<Operation {self.name} at {id(self):#x}>"

    def __str__(self) -> str:
        return PRINTERS["op"](self, generic=True)


class Block:
    """A basic block: typed `arguments` and a list of `ops`. Compared by identity."""

    __slots__ = ("arguments", "ops", "parent", "__weakref__")

    def __init__(self, arg_types: Sequence[Type] = (), ops: Iterable[Operation] = ()):
        self.arguments: list[BlockArgument] = [BlockArgument(t, self, i) for i, t in enumerate(arg_types)]
        self.ops: list[Operation] = []
        """The ops in order. Read freely; change through `append`/`insert`/op methods."""
        self.parent: Region | None = None
        for op in ops:
            self.append(op)

    def __setattr__(self, name: str, value) -> None:
        _Edits.count += 1
        _set(self, name, _edited(value, EditedList) if name in ("arguments", "ops") else value)

    @property
    def arg_types(self) -> tuple[Type, ...]:
        return tuple(a.type for a in self.arguments)

    def add_argument(self, type: Type, location: Location | None = None) -> BlockArgument:
        return self.insert_argument(len(self.arguments), type, location)

    def insert_argument(self, index: int, type: Type, location: Location | None = None) -> BlockArgument:
        arg = BlockArgument(type, self, index, location)
        self.arguments.insert(index, arg)
        for i in range(index + 1, len(self.arguments)):
            self.arguments[i].index = i
        return arg

    def erase_argument(self, index: int) -> None:
        """Remove an unused argument."""
        if self.arguments[index]._uses:
            raise ValueError(f"cannot erase block argument #{index}: it is still used")
        del self.arguments[index]
        for i in range(index, len(self.arguments)):
            self.arguments[i].index = i

    def index_of(self, op: Operation) -> int:
        """Position of `op` in this block (by identity).

        Each op remembers where it was last seen, so lookups near recent edits are O(1); a miss
        scans the list once and refreshes every op's position.
        """
        ops = self.ops
        hint = op._index_hint
        if hint < len(ops) and ops[hint] is op:
            return hint
        for i in range(max(0, hint - 8), min(len(ops), hint + 9)):
            if ops[i] is op:
                _set(op, "_index_hint", i)
                return i
        try:
            found = ops.index(op)  # ops compare by identity
        except ValueError:
            raise ValueError(f"{op!r} is not in this block") from None
        for i, o in enumerate(ops):
            _set(o, "_index_hint", i)
        return found

    def append(self, op: Operation) -> Operation:
        """Append a detached op; returns it."""
        if op.parent is not None:
            raise ValueError(f"'{op.name}' is already in a block; detach it first")
        _set(op, "_index_hint", len(self.ops))  # (insert's steps, for the parser's one call per op)
        self.ops.append(op)
        _set(op, "parent", self)
        return op

    def insert(self, index: int, op: Operation) -> Operation:
        """Insert a detached op at position `index`; returns it."""
        if op.parent is not None:
            raise ValueError(f"'{op.name}' is already in a block; detach it first")
        self.ops.insert(index, op)
        _set(op, "parent", self)
        _set(op, "_index_hint", index if index >= 0 else len(self.ops) - 1)
        return op

    def prepend(self, op: Operation) -> Operation:
        return self.insert(0, op)

    def set_ops(self, ops: Sequence[Operation]) -> None:
        """Replace the op list in one O(n) step, for batched inserts and removals.

        Ops left out are detached (operands and uses untouched, as `detach`); ops added must be
        detached or already in this block.
        """
        new = list(ops)
        if new == self.ops:  # (ops compare by identity)
            return
        kept = {id(op) for op in new}
        for op in self.ops:
            if id(op) not in kept:
                _set(op, "parent", None)
        for i, op in enumerate(new):
            if op.parent is not None and op.parent is not self:
                raise ValueError(f"'{op.name}' is already in another block; detach it first")
            _set(op, "parent", self)
            _set(op, "_index_hint", i)
        self.ops[:] = new

    @property
    def first_op(self) -> Operation | None:
        return self.ops[0] if self.ops else None

    @property
    def terminator(self) -> Operation | None:
        """The last op (MLIR blocks in these dialects end with their terminator)."""
        return self.ops[-1] if self.ops else None

    @property
    def parent_op(self) -> Operation | None:
        return self.parent.parent if self.parent is not None else None

    def clone(self, value_map: dict[Value, Value], block_map: dict[Block, Block]) -> Block:
        new = Block([a.type for a in self.arguments])
        for old_a, new_a in zip(self.arguments, new.arguments):
            new_a.location = old_a.location
            value_map[old_a] = new_a
        block_map[self] = new
        return new

    def __repr__(self) -> str:
        return f"<Block ({len(self.arguments)} args, {len(self.ops)} ops) at {id(self):#x}>"


class Region:
    """A list of blocks owned by an op. Compared by identity."""

    __slots__ = ("blocks", "parent", "__weakref__")

    def __init__(self, blocks: Iterable[Block] = ()):
        self.blocks: list[Block] = []
        self.parent: Operation | None = None
        for b in blocks:
            self.add_block(b)

    def __setattr__(self, name: str, value) -> None:
        _Edits.count += 1
        _set(self, name, _edited(value, EditedList) if name == "blocks" else value)

    def add_block(self, block: Block) -> Block:
        if block.parent is not None:
            raise ValueError("block already belongs to a region")
        block.parent = self
        self.blocks.append(block)
        return block

    @property
    def block(self) -> Block:
        """The entry (first) block; most regions here have exactly one."""
        return self.blocks[0]

    @property
    def is_empty(self) -> bool:
        return not self.blocks

    def clone(self, value_map: dict[Value, Value], block_map: dict[Block, Block]) -> Region:
        # Blocks first (so branches may refer forward), then their ops.
        new_blocks = [b.clone(value_map, block_map) for b in self.blocks]
        for old, new in zip(self.blocks, new_blocks):
            for op in old.ops:
                new.append(op.clone(value_map, block_map))
        return Region(new_blocks)

    def __repr__(self) -> str:
        return f"<Region ({len(self.blocks)} blocks) at {id(self):#x}>"


_OP_FIELDS = {"name": str, "_operands": list, "results": EditedList, "regions": EditedList,
              "successors": EditedList, "properties": EditedDict, "attributes": EditedDict}
"""The op fields whose assignment is an edit, and their containers (`location`, `parent` and
`_index_hint` are not: a location does not change what verifies, a parent changes with its
block's op list)."""


def _attached(op: Operation) -> Block:
    if op.parent is None:
        raise ValueError(f"'{op.name}' is not in a block")
    return op.parent


class Module:
    """A parsed module: the `builtin.module` op `op` and helpers over its body.

    `Module.create()` makes an empty one. Ops at top level (`sdy.mesh`, `func.func`) are
    `module.ops`; `module.walk()` visits every op *inside* the module (not the module op).
    """

    __slots__ = ("op",)

    def __init__(self, op: Operation):
        if op.name != "builtin.module":
            raise ValueError(f"a Module wraps a 'builtin.module' op, not '{op.name}'")
        self.op = op

    @classmethod
    def create(cls, ops: Iterable[Operation] = ()) -> Module:
        return cls(Operation.create("builtin.module", regions=[Region([Block(ops=ops)])]))

    @property
    def body(self) -> Block:
        return self.op.regions[0].block

    @property
    def ops(self) -> list[Operation]:
        return self.body.ops

    def walk(self, *, post_order: bool = False) -> Iterator[Operation]:
        """All ops inside the module, pre-order or post-order (see `Operation.walk`)."""
        for op in list(self.body.ops):
            yield from op.walk(post_order=post_order)

    def funcs(self) -> list[Operation]:
        """The top-level `func.func` ops, in order."""
        return [op for op in self.body.ops if op.name == "func.func"]

    def meshes(self) -> list[Operation]:
        """The top-level `sdy.mesh` ops, in order."""
        return [op for op in self.body.ops if op.name == "sdy.mesh"]

    def symbol_table(self) -> SymbolTable:
        return SymbolTable(self)

    def lookup_symbol(self, name: str) -> Operation | None:
        """The top-level op whose `sym_name` is `name` (func or mesh), or None."""
        return SymbolTable(self).lookup(name)

    def clone(self) -> Module:
        """An independent deep copy."""
        return Module(self.op.clone())

    def __str__(self) -> str:
        return PRINTERS["module"](self)

    def __repr__(self) -> str:
        return f"<Module ({len(self.ops)} top-level ops) at {id(self):#x}>"


def symbol_name(op: Operation) -> str | None:
    """The op's `sym_name` property as a Python string, or None."""
    attr = op.properties.get("sym_name")
    return attr.value if isinstance(attr, StringAttr) else None


class SymbolTable:
    """Name → op for the module's top-level symbols (funcs and meshes together).

    Built once from the module; keep it current through `insert`, `rename` and `erase`.
    """

    __slots__ = ("module", "_symbols")

    def __init__(self, module: Module):
        self.module = module
        self._symbols: dict[str, Operation] = {}
        for op in module.body.ops:
            name = symbol_name(op)
            if name is not None:
                self._symbols.setdefault(name, op)

    def lookup(self, name: str) -> Operation | None:
        return self._symbols.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._symbols

    def names(self) -> list[str]:
        return list(self._symbols)

    def unique_name(self, base: str, counter: Iterator[int]) -> str:
        """`base` if free, else `base_N` with N from `counter` (one per pass run, spec §3)."""
        name = base
        while name in self._symbols:
            name = f"{base}_{next(counter)}"
        return name

    def insert(self, op: Operation, base: str, counter: Iterator[int] | None = None,
               *, after: Operation | None = None, before: Operation | None = None) -> str:
        """Give `op` a unique `sym_name` from `base`, place it and register it.

        Placement: after `after`, before `before`, else appended to the module body.
        Returns the name used.
        """
        name = self.unique_name(base, counter if counter is not None else itertools.count())
        op.properties["sym_name"] = StringAttr(name)
        if after is not None:
            op.insert_after(after)
        elif before is not None:
            op.insert_before(before)
        else:
            self.module.body.append(op)
        self._symbols[name] = op
        return name

    def rename(self, op: Operation, new_name: str) -> None:
        """Change `op`'s symbol name (references elsewhere are not updated)."""
        old = symbol_name(op)
        if old is not None and self._symbols.get(old) is op:
            del self._symbols[old]
        op.properties["sym_name"] = StringAttr(new_name)
        self._symbols[new_name] = op

    def erase(self, op: Operation) -> None:
        """Forget `op` and erase it from the module."""
        name = symbol_name(op)
        if name is not None and self._symbols.get(name) is op:
            del self._symbols[name]
        op.erase()


def replace_ops(replacements: dict[Operation, Sequence[Operation]]) -> None:
    """Put each op's replacement list where the op is (detached ops; the op itself may be in it
    to keep it), rebuilding each affected block's op list once: editing a block op by op shifts
    the list every time, quadratic in a block of many edits. Ops left out are only detached
    (operands and uses untouched, as `detach`): erase them after."""
    blocks = {id(op.parent): op.parent for op in replacements if op.parent is not None}
    for block in blocks.values():
        ops: list[Operation] = []
        for op in block.ops:
            ops.extend(replacements.get(op, (op,)))
        block.set_ops(ops)


def erase_ops(ops: Iterable[Operation]) -> None:
    """Erase many ops (whose results are unused), each block's op list rebuilt once."""
    ops = list(ops)
    replace_ops({op: () for op in ops})
    for op in ops:
        op.erase()
