"""Parse and print Shardy's `sdy` attribute text exactly as jaxlib 0.10.2's MLIR does.

The parser follows MLIR's lexer (whitespace and `//` comments between tokens, `"..."` strings
with `\\"`, `\\\\`, `\\n`, `\\t`, `\\XX` escapes, `0x` integers; the rules `sharding._mlir_lexer`
shares with `sdy_passes.parser`) and Shardy's attribute grammar,
and reports the first diagnostic MLIR would report, with its exact text, as a
`ShardingParseError` (`.message`, `.pos` an absolute offset). Meshes are verified while parsing,
as MLIR does when it builds the attribute.

Entry points for text embedded in a larger document (`sdy_passes` uses them) take `(text, pos)`
and return `(value, end)`:

* `parse_attribute`: a full attribute, `#sdy.sharding<...>`, `#sdy.sharding_per_value<[...]>`,
  `#sdy.mesh<...>`, `#sdy<manual_axes{...}>`, the generic `#sdy<sharding<...>>` and the design
  doc's `sharding<...>` / `mesh<...>`;
* `parse_tensor_sharding_body`, `parse_tensor_sharding_per_value_body`, `parse_mesh_body`,
  `parse_manual_axes_body`: the bare forms pretty ops print.

`str(value)` prints the full attribute and `print_body(value)` the bare form.

`shardy_main=True` also accepts Shardy `main`'s reduction forms `unreduced=max{...}`,
`unreduced=min{...}`, `unreduced=sum{...}` and `unreduced{...}` (newer than jaxlib 0.10.2,
which rejects them with `expected '{'` / `expected '='`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, TypeVar, Union

from . import _mlir_lexer as lexer
from .axes import PARSERS, AxisRef, SubAxisInfo
from .errors import ShardingError, ShardingParseError
from .mesh import Mesh, MeshAxis, MeshTable, mesh_verifier_error
from .tensor_sharding import DimensionSharding, ManualAxes, TensorSharding, TensorShardingPerValue

__all__ = [
    "parse_attribute", "parse_tensor_sharding_body", "parse_tensor_sharding_per_value_body",
    "parse_mesh_body", "parse_manual_axes_body", "print_body", "parse_tensor_sharding",
    "parse_tensor_sharding_per_value", "parse_mesh", "parse_mesh_table", "parse_manual_axes",
    "parse_axis_ref", "Attribute", "AxisRefList", "ListOfAxisRefLists", "AllToAllParam", "AllToAllParamList",
    "parse_collective_params", "parse_collective_params_body",
]

Attribute = Union[TensorSharding, TensorShardingPerValue, Mesh, ManualAxes]
T = TypeVar("T")

_INT64_MAX = 2**63 - 1
_SPACE = lexer.SPACE
_BARE = lexer.BARE_ID
_DIGITS = re.compile(r"[0-9]+")
_FLOAT_TAIL = re.compile(r"\.[0-9]*(?:[eE][-+]?[0-9]+)?")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_PUNCT = frozenset("<>[]{}(),=:?*+|-")
_FAST_TOKEN = re.compile(
    r"""(?>(?:[ \t\n\r]+|//[^\n]*)*)(?:
      "(?P<string>[^"\\\n\v\f]*)"
    | (?P<punct>->|[<>\[\]{}(),=:?*+|])
    | (?P<id>[A-Za-z_][A-Za-z0-9_$.]*)
    | @(?P<at>[A-Za-z_][A-Za-z0-9_$.]*)
    | (?P<digits>[0-9]{1,18})(?![.0-9x])
    )""",
    re.X,
)
# Fast path: (whitespace, token) pairs for a whole window in one call; a token this does not
# know comes out as one character and sends the parser to the precise path.
_FAST_SPLIT = re.compile(
    r"""((?>[ \t\n\r]*))(
      "[^"\\\n\v\f]*"
    | ->|[<>\[\]{}(),=:?*+|]
    | [0-9]{1,18}(?![.0-9x])
    | [A-Za-z_][A-Za-z0-9_$.]*
    | @[A-Za-z_][A-Za-z0-9_$.]*
    | \#[A-Za-z_][A-Za-z0-9_$.]*(?=<)
    | .|\n|\Z
    )""",
    re.X,
)
_FAST_PUNCT = frozenset("<>[]{}(),=:?*+|-")
_WINDOW = 4096
_to_int = lexer.to_int


Token = tuple  # (kind, start, end, value); kind is 'string', 'int', 'float', 'id', 'at', 'hash',
# 'eof', 'error' (value: the lexer's ShardingParseError) or the punctuation itself.


class _Retry(Exception):
    """The fast path met something it does not handle (or an error): rerun precisely."""


def _lex_string(text: str, pos: int, kind: str) -> Token:
    try:
        end, value = lexer.lex_string(text, pos)
    except lexer.LexError as e:
        raise ShardingParseError(e.message, text, e.pos) from None
    return (kind, pos, end, value)


class _Parser:
    """A one-token-lookahead parser over `text`, MLIR style.

    The current token is `kind`, `value`, `start`, `end`. With `fast=True` the tokens come
    from one regex pass over a window of the text, without positions; anything unusual or
    wrong raises `_Retry`, and the caller reparses precisely (positions, exact errors).
    """

    __slots__ = ("text", "kind", "value", "start", "end", "prev_end", "shardy_main", "fast", "tokens", "i", "pos0")

    def __init__(self, text: str, pos: int, shardy_main: bool = False, fast: bool = False):
        self.text = text
        self.shardy_main = shardy_main
        self.prev_end = pos
        self.fast = fast
        self.pos0 = pos
        if fast:
            window = text[pos : pos + _WINDOW]
            if "//" in window:
                raise _Retry  # comments need positions for MLIR's bracket pre-scan
            self.tokens = _FAST_SPLIT.findall(window)
            while self.tokens and not self.tokens[-1][1]:
                self.tokens.pop()  # trailing whitespace
            if self.tokens and pos + _WINDOW < len(text):
                self.tokens.pop()  # may be cut by the window
            self.i = -1
            self.kind, self.value, self.start, self.end = "", None, -1, -1
            self._next_fast()
        else:
            self.kind, self.start, self.end, self.value = self._lex(pos)

    # -- lexer ---------------------------------------------------------------------------

    def error(self, message: str, pos: int | None = None) -> Exception:
        if self.fast:
            return _Retry()
        if self.kind == "error":
            # As in MLIR, a lexer error replaces the parser's complaint about that token.
            return self.value  # type: ignore[return-value]
        return ShardingParseError(message, self.text, self.start if pos is None else pos)

    def _next_fast(self) -> None:
        self.i += 1
        if self.i >= len(self.tokens):
            if self.pos0 + _WINDOW < len(self.text):
                raise _Retry  # ran past the window
            self.kind = "eof"
            return
        text = self.tokens[self.i][1]
        c = text[0]
        if c == '"':
            if len(text) < 2 or text[-1] != '"':
                raise _Retry
            self.kind, self.value = "string", text[1:-1]
        elif c in _FAST_PUNCT:
            self.kind = text
        elif "0" <= c <= "9":
            self.kind, self.value = "int", _to_int(text)
        elif c == "@" or c == "#":
            if len(text) < 2:
                raise _Retry
            self.kind, self.value = ("at" if c == "@" else "hash"), text[1:]
        elif c.isascii() and (c.isalpha() or c == "_"):
            self.kind, self.value = "id", text
        else:
            raise _Retry

    def fast_end(self) -> int:
        """The offset after the consumed tokens (fast mode)."""
        return self.pos0 + sum(len(ws) + len(tok) for ws, tok in self.tokens[: self.i])

    def _lex(self, pos: int) -> Token:
        # One regex for the common tokens (the group name is the token kind).
        m = _FAST_TOKEN.match(self.text, pos)
        if m is not None:
            kind = m.lastgroup
            value = m.group(kind)  # type: ignore[arg-type]
            if kind == "punct":
                return (value, m.start(kind), m.end(), None)  # type: ignore[arg-type]
            if kind == "digits":
                return ("int", m.start(kind), m.end(), _to_int(value))  # type: ignore[arg-type]
            # Strings and symbols: the token starts one character before the group.
            return (kind, m.start(kind) - 1 if kind != "id" else m.start(kind), m.end(), value)  # type: ignore[arg-type]
        # Lexer errors surface only when the parser looks at the token: text after a complete
        # attribute embedded in a larger document may be anything.
        try:
            return self._lex_slow(pos)
        except ShardingParseError as e:
            return ("error", e.pos, e.pos, e)

    def _lex_slow(self, pos: int) -> Token:
        text = self.text
        pos = _SPACE.match(text, pos).end()
        if pos >= len(text):
            return ("eof", len(text), len(text), None)
        c = text[pos]
        if c == '"':
            return _lex_string(text, pos, "string")
        if c in _PUNCT:
            if c == "-" and text.startswith("->", pos):
                return ("->", pos, pos + 2, None)
            return (c, pos, pos + 1, None)
        if "0" <= c <= "9":
            m = _HEX.match(text, pos)
            if m:
                return ("int", pos, m.end(), _to_int(m.group()[2:], 16))
            end = _DIGITS.match(text, pos).end()
            f = _FLOAT_TAIL.match(text, end)
            if f and end < len(text) and text[end] == ".":
                return ("float", pos, f.end(), None)
            return ("int", pos, end, _to_int(text[pos:end], 10))
        if c.isascii() and (c.isalpha() or c == "_"):
            end = _BARE.match(text, pos).end()
            return ("id", pos, end, text[pos:end])
        if c == "@":
            if pos + 1 < len(text) and text[pos + 1] == '"':
                _, _, end, value = _lex_string(text, pos + 1, "at")
                return ("at", pos, end, value)
            m = _BARE.match(text, pos + 1)
            if not m:
                raise ShardingParseError("invalid symbol reference", text, pos)
            return ("at", pos, m.end(), m.group())
        if c == "#":
            m = _BARE.match(text, pos + 1) or _DIGITS.match(text, pos + 1)
            if not m:
                raise ShardingParseError("invalid attribute name", text, pos)
            return ("hash", pos, m.end(), m.group())
        if c == ".":
            if text.startswith("...", pos):
                return ("...", pos, pos + 3, None)
            raise ShardingParseError("expected three consecutive dots for an ellipsis", text, pos)
        if c in "%^!":
            m = _BARE.match(text, pos + 1) or _DIGITS.match(text, pos + 1)
            if m:
                return (c + "id", pos, m.end(), m.group())
        raise ShardingParseError("unexpected character", text, pos)

    # -- token helpers -------------------------------------------------------------------

    def advance(self) -> object:
        """Consumes the current token; returns its value."""
        value = self.value
        if self.fast:
            self._next_fast()
        else:
            self.prev_end = self.end
            self.kind, self.start, self.end, self.value = self._lex(self.end)
        return value

    def jump(self, pos: int) -> None:
        """Continues lexing at `pos` (precise mode)."""
        self.prev_end = pos
        self.kind, self.start, self.end, self.value = self._lex(pos)

    def optional(self, kind: str) -> bool:
        if self.kind == kind:
            self.advance()
            return True
        return False

    def expect(self, kind: str) -> None:
        if self.kind != kind:
            # MLIR reports a wrong token at the end of the previous one.
            raise self.error(f"expected '{kind}'", self.prev_end)
        self.advance()

    def optional_keyword(self, word: str) -> bool:
        if self.kind == "id" and self.value == word:
            self.advance()
            return True
        return False

    def string(self) -> str:
        if self.kind != "string":
            raise self.error("expected string")
        return self.advance()  # type: ignore[return-value]

    def integer(self) -> int:
        start = self.start
        negative = self.optional("-")
        if self.kind != "int":
            raise self.error("expected integer value")
        value = self.advance()
        value = -value if negative else value  # type: ignore[operator]
        if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
            raise self.error("integer value too large", start)
        return value

    def comma_list(self, element: Callable[[], T]) -> list[T]:
        return lexer.comma_list(element, self.optional)

    # -- grammar -------------------------------------------------------------------------

    def mesh_axis(self) -> MeshAxis:
        start = self.start
        name = self.string()
        self.expect("=")
        size = self.integer()
        if size <= 0:
            raise self.error(f"axis size must be at least 1, got: {size}", start)
        return MeshAxis(name, size)

    def mesh(self) -> Mesh:
        start = self.start
        self.expect("<")
        self.expect("[")
        axes: list[MeshAxis] = []
        if not self.optional("]"):
            axes = self.comma_list(self.mesh_axis)
            self.expect("]")
        device_ids: list[int] = []
        if self.optional(","):
            if not self.optional_keyword("device_ids"):
                raise self.error("expected 'device_ids'")
            self.expect("=")
            self.expect("[")
            device_ids = self.comma_list(self.integer)
            self.expect("]")
        self.expect(">")
        # Like Shardy's attribute builder, drop iota device ids before verifying.
        mesh = Mesh(tuple(axes), tuple(device_ids))
        message = mesh_verifier_error(mesh.axes, mesh.device_ids)
        if message:
            raise self.error(message, start)
        return mesh

    def sub_axis_info(self) -> SubAxisInfo:
        self.expect("(")
        pre_size = self.integer()
        self.expect(")")
        return SubAxisInfo(pre_size, self.integer())

    def axis_ref(self) -> AxisRef:
        name = self.string()
        if self.optional(":"):
            return AxisRef(name, self.sub_axis_info())
        return AxisRef(name)

    def dimension_sharding(self) -> DimensionSharding:
        self.expect("{")
        axes: list[AxisRef] = []
        is_closed = True
        while not self.optional("}"):
            if axes:
                self.expect(",")
            if self.optional("?"):
                is_closed = False
                self.expect("}")
                break
            axes.append(self.axis_ref())
        priority = None
        if self.kind == "id":
            word = self.advance()
            digits = word[1:]  # type: ignore[index]
            if len(word) < 2 or word[0] != "p" or not digits.isdigit() or not digits.isascii():  # type: ignore[index]
                raise self.error(f"expecting priority in format 'p<number>', got: {word}")
            if digits.startswith("0") and len(digits) > 1:
                raise self.error(f"priorities with leading zeros are not allowed, got: {word}")
            priority = _to_int(digits, 10)
            if priority > _INT64_MAX:
                raise self.error(f"expecting integer priority, got: {word}")
        return DimensionSharding(tuple(axes), is_closed, priority)

    def mesh_or_ref(self) -> str | Mesh:
        if self.optional_keyword("mesh"):
            return self.mesh()
        kind, start = self.kind, self.start
        if kind == "at":
            name = self.advance()
            if self.kind == ":" and (self.fast or self.text.startswith("::", self.start)):
                raise self.error("invalid kind of attribute specified", start)
            return name  # type: ignore[return-value]
        if kind in ("string", "int", "float") or (kind == "id" and self.value in ("true", "false", "unit")):
            raise self.error("invalid kind of attribute specified")
        raise self.error("expected attribute value")

    def axis_list(self) -> list[AxisRef]:
        self.expect("{")
        axes = self.comma_list(self.axis_ref)
        self.expect("}")
        return axes

    def tensor_sharding(self) -> TensorSharding:
        self.expect("<")
        mesh_or_ref = self.mesh_or_ref()
        self.expect(",")
        self.expect("[")
        dims: list[DimensionSharding] = []
        if not self.optional("]"):
            dims = self.comma_list(self.dimension_sharding)
            self.expect("]")
        replicated: list[AxisRef] = []
        unreduced: list[AxisRef] = []
        reduction = "sum"
        while self.optional(","):
            if not replicated and self.optional_keyword("replicated"):
                self.expect("=")
                replicated = self.axis_list()
            elif not unreduced and self.optional_keyword("unreduced"):
                if self.shardy_main:
                    if self.optional("="):
                        for op in ("sum", "max", "min"):
                            if self.optional_keyword(op):
                                reduction = op
                                break
                else:
                    self.expect("=")
                unreduced = self.axis_list()
            else:
                raise self.error(
                    "failed to parse Sdy_TensorSharding, expected valid named axis list after comma"
                )
        self.expect(">")
        return TensorSharding(mesh_or_ref, tuple(dims), tuple(replicated), tuple(unreduced), reduction)

    def tensor_sharding_per_value(self) -> TensorShardingPerValue:
        self.expect("[")
        shardings: list[TensorSharding] = []
        if not self.optional("]"):
            shardings = self.comma_list(self.per_value_element)
            self.expect("]")
        return TensorShardingPerValue(tuple(shardings))

    def per_value_element(self) -> TensorSharding:
        """A bare `<...>` or a whole `#sdy.sharding<...>` (MLIR's custom-attribute fallback)."""
        if self.kind != "hash":
            return self.tensor_sharding()
        start = self.start
        value = self.attribute()
        if not isinstance(value, TensorSharding):
            raise self.error("invalid kind of attribute specified", start)
        return value

    def manual_axes(self) -> ManualAxes:
        self.expect("{")
        names: list[str] = []
        if not self.optional("}"):
            names = self.comma_list(self.manual_axis_name)
            self.expect("}")
        return ManualAxes(tuple(names))

    def manual_axis_name(self) -> str:
        kind = self.kind
        if kind == "string":
            return self.advance()  # type: ignore[return-value]
        if kind in ("int", "float", "at") or (kind == "id" and self.value in ("true", "false", "unit")):
            raise self.error("invalid kind of attribute specified")
        raise self.error("expected attribute value")

    def mnemonic_body(self, mnemonic: str) -> Attribute:
        if mnemonic == "sharding":
            return self.tensor_sharding()
        if mnemonic == "mesh":
            return self.mesh()
        if mnemonic == "sharding_per_value":
            self.expect("<")
            value = self.tensor_sharding_per_value()
            self.expect(">")
            return value
        if mnemonic == "manual_axes":
            return self.manual_axes()
        if mnemonic in _COLLECTIVE_PARAMS:
            value = _COLLECTIVE_PARAMS[mnemonic](self)
            return AxisRefList(value) if mnemonic == "axis_ref_list" else value
        raise self.error(f"unknown attribute `{mnemonic}` in dialect `sdy`", self.prev_end)

    def attribute(self) -> Attribute:
        if self.kind == "hash":
            name, name_end = self.value, self.end
            if name == "sdy":
                # Generic dialect form: #sdy<mnemonic body>. MLIR cuts the body by bracket
                # matching and lets the attribute parser ignore whatever it leaves before the
                # closing '>' (`#sdy<manual_axes{} x>` parses).
                if self.fast:
                    raise _Retry
                self.advance()
                if self.kind != "<" or self.start != name_end:
                    raise self.error("expected '<'")
                end = _check_balanced(self.text, self.start)
                self.advance()
                value = self.mnemonic_body(self._mnemonic())
                if self.prev_end > end - 1:
                    raise self.error("expected '>'")
                self.jump(end)
                return value
            if isinstance(name, str) and name.startswith("sdy."):
                mnemonic = name[4:]
                self.advance()
                # (The fast lexer only makes `#name` tokens that a '<' follows directly.)
                if self.kind != "<" or not (self.fast or self.start == name_end):
                    raise self.error("expected '<'")
                return self._pretty_body(lambda: self.mnemonic_body(mnemonic))
            if self.fast:
                raise _Retry
            if "." not in name and not self.text.startswith("<", name_end):  # type: ignore[operator]
                raise self.error(f"undefined symbol alias id '{name}'")
            raise self.error(f"expected an sdy attribute, got: #{name}")
        return self.mnemonic_body(self._mnemonic())

    def _pretty_body(self, parse: Callable[[], Attribute]) -> Attribute:
        """MLIR first cuts the `<...>` body of `#sdy.x<...>` by bracket matching, then parses it.

        The bracket scan can only fail where the grammar fails too, or where a comment hides
        brackets from the grammar; it runs only then (it costs as much as the parse).
        """
        if self.fast:
            return parse()  # no comments in fast mode; any error reruns precisely
        start = self.start
        try:
            value = parse()
        except ShardingParseError:
            _check_balanced(self.text, start)
            raise
        body = self.text[start : self.prev_end]
        if "//" in body or "->" in body or "\x00" in body:
            _check_balanced(self.text, start)
        return value

    def _mnemonic(self) -> str:
        if self.kind != "id":
            raise self.error("expected an sdy attribute mnemonic (sharding, mesh, sharding_per_value, manual_axes)")
        return self.advance()  # type: ignore[return-value]


def _check_balanced(text: str, pos: int) -> int:
    """MLIR first cuts a dialect attribute's `<...>` body by bracket matching; returns its end."""
    try:
        return lexer.scan_balanced(text, pos)
    except lexer.LexError as e:
        raise ShardingParseError(e.message, text, e.pos) from None


# -- entry points ------------------------------------------------------------------------------


def _check_text(text) -> None:
    if not isinstance(text, str):
        raise ShardingError(f"expected text (str), got: {type(text).__name__}")


def _run(text: str, pos: int, rule: Callable[[_Parser], T], shardy_main: bool = False) -> tuple[T, int]:
    _check_text(text)
    try:
        parser = _Parser(text, pos, shardy_main, fast=True)
        return rule(parser), parser.fast_end()
    except Exception:  # noqa: BLE001 - the fast path is only an optimisation: any doubt reruns precisely
        pass
    parser = _Parser(text, pos, shardy_main)
    value = rule(parser)
    return value, parser.prev_end


def _whole(text: str, rule: Callable[[_Parser], T], shardy_main: bool = False) -> T:
    _check_text(text)
    try:
        parser = _Parser(text, 0, shardy_main, fast=True)
        value = rule(parser)
        if parser.kind == "eof":
            return value
    except Exception:  # noqa: BLE001 - the fast path is only an optimisation: any doubt reruns precisely
        pass
    parser = _Parser(text, 0, shardy_main)
    value = rule(parser)
    if parser.kind != "eof":
        raise parser.error("unexpected text after the attribute")
    return value


def parse_attribute(text: str, pos: int = 0, *, shardy_main: bool = False) -> tuple[Attribute, int]:
    """Parses one full sdy attribute at `pos`; returns it and the offset just after it."""
    return _run(text, pos, _Parser.attribute, shardy_main)


def parse_tensor_sharding_body(text: str, pos: int = 0, *, shardy_main: bool = False) -> tuple[TensorSharding, int]:
    """`<@mesh, [{"x"}, {}]>` or `<mesh<["a"=2]>, [{}]>`."""
    return _run(text, pos, _Parser.tensor_sharding, shardy_main)


def parse_tensor_sharding_per_value_body(
    text: str, pos: int = 0, *, shardy_main: bool = False
) -> tuple[TensorShardingPerValue, int]:
    """`[<@m, [...]>, <...>]`."""
    return _run(text, pos, _Parser.tensor_sharding_per_value, shardy_main)


def parse_mesh_body(text: str, pos: int = 0) -> tuple[Mesh, int]:
    """`<["x"=2, "y"=4]>` (verified like Shardy)."""
    return _run(text, pos, _Parser.mesh)


def parse_manual_axes_body(text: str, pos: int = 0) -> tuple[ManualAxes, int]:
    """`{"x", "y"}`."""
    return _run(text, pos, _Parser.manual_axes)


def _expect_kind(value: object, cls: type[T], text: str) -> T:
    if not isinstance(value, cls):
        raise ShardingParseError(f"expected a {cls.__name__} attribute, got: {type(value).__name__}", text, 0)
    return value


def _attribute_or_body(body: Callable[[_Parser], T], cls: type[T], shardy_main: bool = False):
    def rule(p: _Parser) -> T:
        if p.kind in ("<", "[", "{"):
            return body(p)
        return _expect_kind(p.attribute(), cls, p.text)

    return lambda text: _whole(text, rule, shardy_main)


def parse_tensor_sharding(text: str, *, shardy_main: bool = False) -> TensorSharding:
    """A whole string: `#sdy.sharding<...>`, `sharding<...>` or a bare `<...>` body."""
    return _attribute_or_body(_Parser.tensor_sharding, TensorSharding, shardy_main)(text)


def parse_tensor_sharding_per_value(text: str, *, shardy_main: bool = False) -> TensorShardingPerValue:
    """A whole string: `#sdy.sharding_per_value<[...]>` or a bare `[...]` list."""
    return _attribute_or_body(_Parser.tensor_sharding_per_value, TensorShardingPerValue, shardy_main)(text)


def parse_mesh(text: str) -> Mesh:
    """A whole string: `#sdy.mesh<...>`, `mesh<...>`, a bare `<...>` body or one
    `sdy.mesh @name = <...>` op (the name is dropped; `MeshTable.parse` keeps it)."""
    _check_text(text)
    if text.lstrip().startswith("sdy.mesh"):
        table = parse_mesh_table(text)
        if len(table) != 1:
            raise ShardingParseError(f"expected one sdy.mesh op, got {len(table)}", text, 0)
        return table.meshes[0][1]
    return _attribute_or_body(_Parser.mesh, Mesh)(text)


def parse_manual_axes(text: str) -> ManualAxes:
    """A whole string: `#sdy<manual_axes{...}>`, `manual_axes{...}` or a bare `{...}`."""
    return _attribute_or_body(_Parser.manual_axes, ManualAxes)(text)


def parse_axis_ref(text: str) -> AxisRef:
    """`"x"` or `"x":(2)4`."""
    return _whole(text, _Parser.axis_ref)


def parse_mesh_table(text: str) -> MeshTable:
    """`sdy.mesh @name = <...>` ops, one after another."""

    def rule(p: _Parser) -> MeshTable:
        meshes: list[tuple[str, Mesh]] = []
        seen: set[str] = set()
        while p.kind != "eof":
            if not (p.kind == "id" and p.value == "sdy.mesh"):
                raise p.error("expected 'sdy.mesh'")
            p.advance()
            if p.kind != "at":
                raise p.error("expected valid '@'-identifier for symbol name")
            name_start = p.start
            name: str = p.advance()  # type: ignore[assignment]
            p.expect("=")
            mesh = p.mesh()
            if name in seen:
                raise p.error(f"redefinition of symbol named '{name}'", name_start)
            seen.add(name)
            meshes.append((name, mesh))
        return MeshTable(tuple(meshes))

    return _whole(text, rule)


def print_body(value: Attribute) -> str:
    """The bare form pretty sdy ops print: `<@m, [...]>`, `[<...>, ...]`, `<[...]>`, `{...}`."""
    return value.body()


# -- collective parameters ------------------------------------------------------------------
# The parameter attributes of Shardy's collective ops (`sdy.all_gather [{}, {"x"}]`, ...):
# frozen values; `str` prints the full attribute (`#sdy<list_of_axis_ref_lists[...]>`) and
# `body()` the bare form pretty ops write (`[{}, {"x"}]`).


def _refs_text(axes: tuple[AxisRef, ...]) -> str:
    return "{" + ", ".join(map(str, axes)) + "}"


@dataclass(frozen=True, slots=True)
class AxisRefList:
    """`{"x", "y"}`: the axes of `sdy.all_reduce` and `sdy.replicated_to_unreduced`."""

    axes: tuple[AxisRef, ...] = ()

    def body(self) -> str:
        return _refs_text(self.axes)

    def __str__(self) -> str:
        return f"#sdy<axis_ref_list{self.body()}>"


@dataclass(frozen=True, slots=True)
class ListOfAxisRefLists:
    """`[{}, {"x"}]`: one axis list per tensor dim (all-gather, all-slice, reduce-scatter, s2u)."""

    lists: tuple[tuple[AxisRef, ...], ...] = ()

    def body(self) -> str:
        return "[" + ", ".join(map(_refs_text, self.lists)) + "]"

    def __str__(self) -> str:
        return f"#sdy<list_of_axis_ref_lists{self.body()}>"


@dataclass(frozen=True, slots=True)
class AllToAllParam:
    """`{"x", "y"}: 0->2`: axes moved from the end of `src_dim` to the end of `tgt_dim`."""

    axes: tuple[AxisRef, ...]
    src_dim: int
    tgt_dim: int

    def __str__(self) -> str:
        return f"{_refs_text(self.axes)}: {self.src_dim}->{self.tgt_dim}"


@dataclass(frozen=True, slots=True)
class AllToAllParamList:
    """`[{"x"}: 0->2, {"y"}: 1->3]`: the params of `sdy.all_to_all`."""

    params: tuple[AllToAllParam, ...] = ()

    def body(self) -> str:
        return "[" + ", ".join(map(str, self.params)) + "]"

    def __str__(self) -> str:
        return f"#sdy<all_to_all_param_list{self.body()}>"


def _axis_refs(p: _Parser) -> tuple[AxisRef, ...]:
    p.expect("{")
    if p.optional("}"):
        return ()
    axes = p.comma_list(p.axis_ref)
    p.expect("}")
    return tuple(axes)


def _bracket_list(p: _Parser, element: Callable[[], T]) -> tuple[T, ...]:
    p.expect("[")
    if p.optional("]"):
        return ()
    items = p.comma_list(element)
    p.expect("]")
    return tuple(items)


def _list_of_lists(p: _Parser) -> ListOfAxisRefLists:
    return ListOfAxisRefLists(_bracket_list(p, lambda: _axis_refs(p)))


def _all_to_all_param(p: _Parser) -> AllToAllParam:
    axes = _axis_refs(p)
    p.expect(":")
    src = p.integer()
    p.expect("->")
    return AllToAllParam(axes, src, p.integer())


def _all_to_all_params(p: _Parser) -> AllToAllParamList:
    return AllToAllParamList(_bracket_list(p, lambda: _all_to_all_param(p)))


_COLLECTIVE_PARAMS = {"axis_ref_list": _axis_refs, "list_of_axis_ref_lists": _list_of_lists,
                      "all_to_all_param_list": _all_to_all_params}


def parse_collective_params_body(text: str, kind: str, pos: int = 0):
    """The pretty form of a collective parameter at `pos`: `kind` is `axis_ref_list`,
    `list_of_axis_ref_lists` or `all_to_all_param_list`. Returns the value and its end."""
    rule = _COLLECTIVE_PARAMS[kind]
    value, end = _run(text, pos, lambda p: rule(p))
    return (AxisRefList(value) if kind == "axis_ref_list" else value), end


def parse_collective_params(text: str):
    """A whole `#sdy<axis_ref_list{...}>`, `#sdy<list_of_axis_ref_lists[...]>` or
    `#sdy<all_to_all_param_list[...]>`."""
    value = _whole(text, _Parser.attribute)
    if not isinstance(value, (AxisRefList, ListOfAxisRefLists, AllToAllParamList)):
        raise ShardingParseError(f"expected a collective parameter attribute, got: {type(value).__name__}", text, 0)
    return value


PARSERS.update(axis_ref=parse_axis_ref, mesh=parse_mesh, mesh_table=parse_mesh_table,
               tensor_sharding=parse_tensor_sharding, tensor_sharding_per_value=parse_tensor_sharding_per_value,
               manual_axes=parse_manual_axes)
