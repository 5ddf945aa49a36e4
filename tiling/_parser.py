"""The text form of shapes and layouts: a tokenizer and recursive-descent parser for XLA's HLO
grammar (spec `tiled_layout.md` §2.2), behind `Shape.parse` and `Layout.parse`.

Kept apart from the values so `tiling.layout` reads as the data model: the parser returns the
fields (`layout()` the `Layout` constructor's keyword arguments, `shape()` the `Shape`'s
arguments), which `tiling.layout` builds, so this module imports no value type. Errors carry a
position and a caret (`LayoutParseError`), and reuse the constructors' checks
(`tiling._checks`) so text and constructor calls are refused for the same reasons.
"""

from __future__ import annotations

from tiling._checks import (
    COMBINE_DIMENSION, INT64_MAX, UNBOUNDED_SIZE, int_text, minor_to_major_problem, tile_problem,
)
from tiling.dtypes import ELEMENT_TYPES
from tiling.errors import LayoutError, LayoutParseError

_ATTRIBUTE_ORDER = ("D", "T", "L", "#", "*", "E", "S", "SC", "P", "M")
_SPARSE_ONLY = {
    "#": "'#(...)' (index_primitive_type) is for sparse arrays only",
    "*": "'*(...)' (pointer_primitive_type) is for sparse arrays only",
    "P": "'P(...)' (physical_shape) is for sparse arrays only",
    "SC": "'SC(...)' (split_configs) is not supported: it spreads a buffer over memories",
}
_PUNCTUATION = "{}()[],:*#?+~"


class _Parser:
    def __init__(self, text: str):
        if not isinstance(text, str):
            raise LayoutError(f"expected layout or shape text (str), found {type(text).__name__}")
        self.text = text
        self.tokens = self._tokenize(text)
        self.i = 0

    def error(self, message: str, pos: int | None = None) -> LayoutParseError:
        return LayoutParseError(message, self.text, self.tokens[self.i][2] if pos is None else pos)

    def _tokenize(self, s: str) -> list[tuple[str, object, int]]:
        tokens, i, n = [], 0, len(s)
        while i < n:
            c = s[i]
            if c.isspace():
                i += 1
            elif c in "0123456789" or (c == "-" and i + 1 < n and s[i + 1] in "0123456789"):
                j = i + 1
                while j < n and s[j] in "0123456789":
                    j += 1
                digits = s[i:j].lstrip("-").lstrip("0")
                if len(digits) > 19:  # (also keeps int() under Python's 4,300-digit limit)
                    raise LayoutParseError(f"integer of {len(digits)} digits does not fit in "
                                           "int64", s, i)
                tokens.append(("int", int(s[i:j]), i))
                i = j
            elif c.isascii() and (c.isalpha() or c == "_"):
                j = i + 1
                while j < n and s[j].isascii() and (s[j].isalnum() or s[j] == "_"):
                    j += 1
                tokens.append(("id", s[i:j], i))
                i = j
            elif s.startswith("<=", i):
                tokens.append(("<=", "<=", i))
                i += 2
            elif c in _PUNCTUATION:
                tokens.append((c, c, i))
                i += 1
            else:
                raise LayoutParseError(f"unexpected character {c!r}", s, i)
        tokens.append(("end", None, n))
        return tokens

    # -- token access --
    def kind(self, ahead: int = 0) -> str:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)][0]

    def pos(self) -> int:
        return self.tokens[self.i][2]

    def at_id(self, name: str) -> bool:
        kind, value, _ = self.tokens[self.i]
        return kind == "id" and value == name

    def eat(self, kind: str) -> bool:
        if self.kind() == kind:
            self.i += 1
            return True
        return False

    def expect(self, kind: str, what: str):
        tok_kind, value, pos = self.tokens[self.i]
        if tok_kind != kind:
            found = "end of text" if tok_kind == "end" else repr(value)
            raise LayoutParseError(f"expected {what}, found {found}", self.text, pos)
        self.i += 1
        return value

    def expect_end(self):
        self.expect("end", "end of text")

    def int64(self, what: str, low: int = 0) -> int:
        pos = self.pos()
        value = self.expect("int", what)
        if not low <= value <= INT64_MAX:
            raise LayoutParseError(f"{what} must be >= {int_text(low)}, found {int_text(value)}",
                                   self.text, pos)
        return value

    def paren_int(self, what: str, low: int) -> int:
        self.expect("(", f"'(' after {what[0]}")
        value = self.int64(what, low)
        self.expect(")", f"')' closing {what[0]}(...)")
        return value

    # -- grammar --
    def shape(self) -> tuple:
        """(element type, dimensions, layout fields or None, dynamic dimensions)."""
        pos = self.pos()
        name = self.expect("id", "an element type like f32")
        if name.lower() not in ELEMENT_TYPES:
            raise LayoutParseError(
                f"unknown element type {name!r}; expected one of {', '.join(ELEMENT_TYPES)}",
                self.text, pos)
        self.expect("[", "'[' after the element type")
        dims, dyn = [], []
        if self.kind() != "]":
            while True:
                if self.eat("?"):
                    dims.append(UNBOUNDED_SIZE)
                    dyn.append(True)
                else:
                    dyn.append(self.eat("<="))
                    dims.append(self.int64("a dimension size"))
                if not self.eat(","):
                    break
        self.expect("]", "',' or ']' in the dimensions")
        layout, layout_pos = None, self.pos()
        if self.kind() == "{" and self.kind(1) not in ("int", ":"):
            raise self.error("a layout after ']' starts with a dimension number or ':' "
                             "(XLA reads no layout here, then fails on the '{')")
        if self.kind() == "{":
            layout = self.layout()
            if len(layout["minor_to_major"]) != len(dims):
                raise LayoutParseError(
                    f"Dimensions size is {len(dims)}, but minor to major size is "
                    f"{len(layout['minor_to_major'])}.", self.text, layout_pos)
        return name, tuple(dims), layout, tuple(dyn)

    def layout(self) -> dict:
        """The `Layout` constructor's keyword arguments."""
        self.expect("{", "'{' starting a layout")
        m2m, m2m_pos = [], []
        if self.kind() == "int":
            while True:
                m2m_pos.append(self.pos())
                m2m.append(self.int64("a minor_to_major entry"))
                if not self.eat(","):
                    break
        problem = minor_to_major_problem(tuple(m2m))
        if problem:
            raise LayoutParseError(problem[1], self.text, m2m_pos[problem[0]])
        fields = {"minor_to_major": tuple(m2m)}
        if self.eat(":"):
            done = -1  # index in _ATTRIBUTE_ORDER of the last attribute parsed
            while self.kind() != "}":
                pos, name = self.pos(), self._attribute_name()
                order = _ATTRIBUTE_ORDER.index(name)
                if order <= done:
                    raise LayoutParseError(
                        f"layout attribute {name} " + ("is repeated" if order == done else
                                                       f"must come before {_ATTRIBUTE_ORDER[done]}")
                        + "; attributes must appear once each in the order "
                        + ", ".join(_ATTRIBUTE_ORDER), self.text, pos)
                done = order
                if name in _SPARSE_ONLY:
                    raise LayoutParseError(_SPARSE_ONLY[name], self.text, pos)
                self.i += 1
                if name == "D":
                    self._dim_level_types()  # parsed and dropped, as XLA does
                elif name == "T":
                    fields["tiles"] = self._tiles()
                elif name == "L":
                    fields["tail_padding_alignment_in_elements"] = self.paren_int("L(n)", 1)
                elif name == "E":
                    fields["element_size_in_bits"] = self.paren_int("E(n)", 0)
                elif name == "S":
                    fields["memory_space"] = self.paren_int("S(n)", -2**63)
                else:
                    fields["dynamic_shape_metadata_prefix_bytes"] = self.paren_int("M(n)", 0)
        self.expect("}", "'}' closing the layout")
        return fields

    def _attribute_name(self) -> str:
        kind, value, pos = self.tokens[self.i]
        if kind in ("#", "*"):
            return kind
        if kind == "id" and value in _ATTRIBUTE_ORDER:
            return value
        found = "end of text" if kind == "end" else repr(value)
        raise LayoutParseError(
            f"expected a layout attribute (one of {' '.join(_ATTRIBUTE_ORDER)}) or '}}', "
            f"found {found}", self.text, pos)

    def _tiles(self) -> tuple[tuple[int, ...], ...]:
        tiles = []
        while self.kind() == "(":
            start = self.pos()
            self.i += 1
            dims, dim_pos = [], []
            if self.kind() != ")":
                while True:
                    dim_pos.append(self.pos())
                    if self.eat("*"):
                        dims.append(COMBINE_DIMENSION)
                    else:
                        dims.append(self.expect("int", "a tile dimension (integer or '*')"))
                    if not self.eat(","):
                        break
            self.expect(")", "',' or ')' in a tile")
            problem = tile_problem(tuple(dims))
            if problem:
                raise LayoutParseError(problem[1], self.text,
                                       dim_pos[problem[0]] if dims else start)
            tiles.append(tuple(dims))
        if not tiles:
            raise self.error("expected '(' starting a tile after T")
        return tuple(tiles)

    def _dim_level_types(self):
        self.expect("(", "'(' after D")
        if self.kind() != ")":
            while True:
                pos = self.pos()
                level = self.expect("id", "a dim level type (D, C, S or H)")
                if level not in ("D", "C", "S", "H"):
                    raise LayoutParseError(
                        f"unknown dim level type {level!r}: expected D, C, S or H",
                        self.text, pos)
                self.eat("+")
                self.eat("~")
                if not self.eat(","):
                    break
        self.expect(")", "')' closing D(...)")

