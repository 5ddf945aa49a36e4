"""Read MLIR text: the generic op form of any op, and the pretty form of the ops Shardy's import
passes meet (each op's syntax is its `OpDef` in `sdy_passes.dialects`).

`parse_module(text)` returns a `Module`; top-level ops without an enclosing `module` are wrapped
in one, as MLIR does. Errors are `IRParseError` with `file:line:col`, the source line and a caret.
`split_input(text)` cuts `// -----` chunks like `--split-input-file`.

The parser is recursive descent over the raw string (no token list), with `parse_X` (must be
there) / `parse_optional_X` (returns None and consumes nothing) pairs, xdsl-style. MLIR's lexical
rules (strings and escapes, dialect bodies' bracket matching) are `sharding._mlir_lexer`'s, shared
with `sharding.syntax`.
"""

from __future__ import annotations

import bisect
import gc
import math
import re
from dataclasses import dataclass
from typing import Callable, TypeVar

from sharding import _mlir_lexer as lexer
from sdy_passes import _sdy_syntax as sdy_syntax
from sdy_passes._lazy import load
from sdy_passes.attributes import (
    F64, I1, I32, I64, ArrayAttr, Attribute, BoolAttr, ComplexType, DenseArrayAttr,
    DenseElementsAttr, DictionaryAttr, HEX_ELEMENTS_LIMIT, FileLineColLoc, FloatAttr, FloatType, FunctionType,
    IndexType, IntegerAttr, IntegerType, NoneType, OpaqueAttr, OpaqueType, Location, NameLoc,
    CallSiteLoc, fused_loc,
    OpShardingRule, RankedTensorType, StringAttr, SymbolRefAttr, TupleType, Type, TypeAttr,
    UnitAttr, UnknownLoc, UnrankedTensorType, factor_name, float_bits, float_value, format_float,
    format_float_bits, round_float as _round_float, round_floats, escape_string,
)
from sdy_passes._apfloat import FINITE_ONLY, FORMATS, stored_bits
from sdy_passes.errors import IRParseError
from sdy_passes.dialects import ATTRIBUTES, COMPLETE_DIALECTS, DEFAULT_DIALECT, JAXLIB_DIALECTS, lookup
from sdy_passes.dialects._base import ATTRIBUTE_KINDS, SEGMENT_SIZES, add_operands, segment_sizes, set_results
from sdy_passes.ir import Block, Module, Operation, Region, Value
from sdy_passes.verifier import verify_module

__all__ = ["parse_module", "parse_attribute", "parse_type", "split_input", "Parser"]

_WS = lexer.SPACE
_BARE_ID = lexer.BARE_ID
_SUFFIX_ID = re.compile(r"(?:[0-9]+|[A-Za-z$._-][A-Za-z0-9$._-]*)")
_VALUE_REF = re.compile(r"%((?:[0-9]+|[A-Za-z$._-][A-Za-z0-9$._-]*))(?:#([0-9]+))?")
_CARET_ID = re.compile(r"\^((?:[0-9]+|[A-Za-z$._-][A-Za-z0-9$._-]*))")
_SYMBOL = re.compile(r"@([A-Za-z_$.][A-Za-z0-9_$.-]*)")
_NUMBER = re.compile(r"[-+]?(?:0x[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*(?:[eE][-+]?[0-9]+)?)?)")
_INT = re.compile(r"-?[0-9]+")
_SIMPLE_TENSOR = re.compile(r"tensor<((?:[0-9]+x)*)([a-z][a-z0-9A-Z]*)>")
_COLON_TENSOR = re.compile(r"[ \t]*:[ \t]*(tensor<(?:[0-9]+x)*[a-z][a-z0-9A-Z]*>)")
FLOAT_TYPES = frozenset(
    "bf16 f16 tf32 f32 f64 f80 f128 f4E2M1FN f6E2M3FN f6E3M2FN f8E5M2 f8E4M3 f8E4M3FN f8E5M2FNUZ "
    "f8E4M3FNUZ f8E4M3B11FNUZ f8E3M4 f8E8M0FNU".split())
"""MLIR's builtin float types (`BuiltinTypes.td`); any other `f...` word is not a type."""
_INT_TYPE = re.compile(r"([su]?)i([0-9]+)(?![A-Za-z0-9_])")
_SPLIT = re.compile(r"^// -----.*$", re.MULTILINE)
_TOKEN_TEXT = re.compile(r'[A-Za-z0-9_.$%#@^!-]+|"[^"\n]*"?|.')
_DIALECT_TYPE = re.compile(r"![A-Za-z_][A-Za-z0-9_$.]*")
_DIM = re.compile(r"(\?|[0-9]+)x")
_DIM_WITHOUT_X = re.compile(r"[0-9]+(?![.0-9])|\?")
"""A dimension not followed by `x` (MLIR: `expected 'x' in dimension list`)."""
_HASH_NAME = re.compile(r"#[A-Za-z_][A-Za-z0-9_$.-]*")
_FACTORS = re.compile(r"[A-Za-z0-9_]*")
_BLOCK_ARG = re.compile(r"%(" + _SUFFIX_ID.pattern + ")")
_ALIAS_DEF = re.compile(r"([#!])([A-Za-z_][A-Za-z0-9_$.]*)")
_RESULT_NAME = re.compile(r"%(" + _SUFFIX_ID.pattern + r")(?::([0-9]+))?")
_ONE_RESULT = re.compile(r"%(" + _SUFFIX_ID.pattern + r")[ \t]*=[ \t]*")  # `%name = `
_TWO_REFS = re.compile(r"(?>" + _VALUE_REF.pattern + r"(?:[ \t]*,[ \t]*" + _VALUE_REF.pattern + r")?)(?![ \t]*,[ \t]*%)")
"""One or two value references alone on their line: the usual operands."""
_VALUE_REFS = re.compile(_VALUE_REF.pattern + r"(?:[ \t]*,[ \t]*" + _VALUE_REF.pattern + ")*")
"""`%a, %b#1, %c` on one line (the usual operand list)."""
# Spans used as cache keys (the full parser decides; a key is only stored when it parsed
# exactly that span): an sdy attribute nested at most three levels, with plain strings, and
# an op signature of bracket-free types `(tensor<8xf32>, i32) -> tensor<8xf32>`.
_STR = r'"[^"\\\n]*"'
_SDY_BODY = re.compile(rf'<(?:[^<>"]|{_STR}|<(?:[^<>"]|{_STR}|<(?:[^<>"]|{_STR})*>)*>)*>')
_SDY_ATTR = re.compile(r"#sdy[a-z_.]*" + _SDY_BODY.pattern)
_TYPE_TEXT = r"[A-Za-z0-9_.?!*]+(?:<[A-Za-z0-9_.?!*]*>)?"  # no separators inside: no backtracking
_TYPES_TEXT = rf"\((?:{_TYPE_TEXT}(?:, {_TYPE_TEXT})*)?\)"
_SIGNATURE = re.compile(rf"{_TYPES_TEXT} -> (?:{_TYPES_TEXT}|{_TYPE_TEXT})")

_GENERIC_HEAD = re.compile(
    r'"([A-Za-z_][A-Za-z0-9_$.]*)"\(((?:%(?:[0-9]+|[A-Za-z$._-][A-Za-z0-9$._-]*)(?:#[0-9]+)?(?:, (?=%))?)*)\)')
_SPACED_KEYWORDS = frozenset(("dense", "array", "loc", "affine_map", "affine_set", "strided", "dense_resource",
                              "sparse", "opaque", "distinct"))
"""Attribute keywords followed by `<`, `(` or `[` (MLIR's lexer allows space between the two tokens)."""
_NOT_SPACE = frozenset(chr(c) for c in range(128)) - set(" \t\r\n\x00/")


_CLOSERS = {"<": ">", "(": ")", "[": "]", "{": "}"}
T = TypeVar("T")
_SDY_NAME = re.compile(r"(?:#sdy(?:\.[a-z_]+)?)?")
MAX_NESTING = 100
"""Deepest nesting of attributes/types, and of regions, the parser accepts (the printer and
the passes recurse over both)."""
MAX_INT_WIDTH = 16777215
"""MLIR's largest integer type width."""
_TYPE_CACHE: dict[str, Type] = {}  # tensor type text -> type, shared by all parses
_TYPE_CACHE_MAX_CHARS = 1 << 20  # bounded: cleared when its keys reach this many characters
_type_cache_chars = 0


def _cache_type(key: str, t: Type) -> None:
    global _type_cache_chars
    if _type_cache_chars + len(key) > _TYPE_CACHE_MAX_CHARS:
        _TYPE_CACHE.clear()
        _type_cache_chars = 0
    _TYPE_CACHE[key] = t
    _type_cache_chars += len(key)


def as_text(text, filename: str = "-") -> str:
    """`text` (str, or UTF-8 bytes as jaxlib's `Module.parse` takes) as a str; `IRParseError`
    for anything else or bytes that are not UTF-8."""
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            return bytes(text).decode("utf-8")
        except UnicodeDecodeError as e:
            raise IRParseError(f"input is not UTF-8: byte 0x{e.object[e.start]:02x} at offset {e.start}",
                               filename) from None
    raise IRParseError(f"expected MLIR text (str or bytes), found {type(text).__name__}", filename)


def split_input(text: str) -> list[str]:
    """The chunks between `// -----` lines (like `--split-input-file`)."""
    return _SPLIT.split(as_text(text))


def parse_module(text: str, *, filename: str = "-", verify: bool = True,
                 allow_unregistered_dialect: bool = True) -> Module:
    """Parse MLIR text (generic or pretty form) into a `Module`.

    With `verify` (the default, as MLIR's parser) the module is then verified: an invalid one
    raises `VerificationError`. `allow_unregistered_dialect=False` refuses ops, attributes and
    types of dialects jaxlib does not register where MLIR's parser does (as `sdy-opt` without
    `--allow-unregistered-dialect`).
    """
    parser = Parser(text, filename, allow_unregistered_dialect)
    # The IR is a graph of reference cycles that all stay alive: collecting while building it
    # only costs time (it grows with the module size).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        module = parser.parse_module()
    except RecursionError:
        raise parser.error("nesting too deep", parser.pos) from None
    finally:
        if gc_was_enabled:
            gc.enable()
    if verify:
        verify_module(module)
    return module


def parse_attribute(text: str) -> Attribute:
    """Parse one attribute, e.g. `dense<1> : tensor<i32>` or `#sdy.sharding<@m, [{}]>`."""
    p = Parser(text)
    attr = p.parse_attribute()
    p.expect_end()
    return attr


def parse_type(text: str) -> Type:
    """Parse one type, e.g. `tensor<8x?xf32>`."""
    p = Parser(text)
    t = p.parse_type()
    p.expect_end()
    return t


class _Scope:
    """SSA names defined in one region, and forward references made in it."""

    __slots__ = ("values", "forward", "blocks", "forward_blocks")

    def __init__(self):
        self.values: dict[str, tuple[Value, ...]] = {}
        self.forward: dict[str, tuple[Value, int]] = {}
        self.blocks: dict[str, Block] = {}
        self.forward_blocks: dict[str, int] = {}


class _ForwardRef(Value):
    """Placeholder for a value used before its definition."""

    __slots__ = ()


class Parser:
    """Position-based recursive-descent MLIR parser. One instance per text."""

    def __init__(self, text: str, filename: str = "-", allow_unregistered_dialect: bool = True):
        if not isinstance(filename, str):
            raise IRParseError(f"expected a file name (str), found {type(filename).__name__}")
        self.text = as_text(text, filename)
        self.pos = 0
        self.filename = filename
        self._line_starts: list[int] | None = None
        self.scopes: list[_Scope] = []
        self.attr_aliases: dict[str, Attribute] = {}
        self.type_aliases: dict[str, Type] = {}
        self._sdy_cache: dict[object, Attribute] = {}  # attribute text (or reader, text) -> value
        self._depth = 0  # nesting of the attribute/type being parsed
        self._region_depth = 0
        self._default_dialects = ["builtin"]  # MLIR's defaultDialectStack
        self._custom_ops: list[str | None] = [None]  # the op whose custom assembly is being read
        self._signature_cache: dict[str, FunctionType] = {}
        self._deferred_locs: list[_DeferredLoc] | None = None  # a list while a module is read
        self.allow_unregistered_dialect = allow_unregistered_dialect

    def check_dialect(self, dialect: str, what: str, pos: int) -> None:
        """MLIR's parser error for an op, attribute or type of a dialect jaxlib does not register,
        at `pos`; nothing when unregistered dialects are allowed (the API's default)."""
        if self.allow_unregistered_dialect or dialect in JAXLIB_DIALECTS:
            return
        if what == "operation":
            raise self.error("operation being parsed with an unregistered dialect. If this is intended, please use "
                             "-allow-unregistered-dialect with the MLIR tool used", pos)
        raise self.error(f"{what} created with unregistered dialect. If this is intended, please call "
                         "allowUnregisteredDialects() on the MLIRContext, or use -allow-unregistered-dialect with "
                         "the MLIR opt tool used", pos)

    def check_dialect_name(self, name: str, body: str, pos: int) -> None:
        """`check_dialect` for a dialect attribute or type `name` (`#d.x`, `!d`) with `body` (`<...>`),
        as MLIR reports it: `#"d"<"x<...>">`, at the mnemonic after `d.` or at the sigil."""
        dialect, dot, mnemonic = name[1:].partition(".")
        if self.allow_unregistered_dialect or dialect in JAXLIB_DIALECTS:
            return
        inner = mnemonic + body if dot else body[1:-1]
        spelled = f'{name[0]}"{dialect}"<"{inner}">'
        what = f"`{spelled}` type" if name[0] == "!" else f"{spelled} : 'none' attribute"
        self.check_dialect(dialect, what, pos + len(dialect) + 2 if dot else pos)

    # -- diagnostics ----------------------------------------------------------------------
    def line_col(self, pos: int) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        line = bisect.bisect_right(self._line_starts, pos)
        return line, pos - self._line_starts[line - 1] + 1

    def error(self, message: str, pos: int | None = None, found: str = "") -> IRParseError:
        pos = self.pos if pos is None else pos
        line, col = self.line_col(pos)
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        source = self.text[start:end if end >= 0 else len(self.text)]
        return IRParseError.at(message, self.filename, line, col, source, found)

    def wrong_token_pos(self) -> int:
        """Where MLIR's `emitWrongTokenError` puts an error about the next token: at it when
        only spaces precede it on its line, else just after the text before it (over blank
        lines and `//` comments); at end of input one character back."""
        pos = max(self.pos - 1, 0) if self.pos >= len(self.text) else self.pos
        text = self.text
        end = pos
        while True:
            while end > 0 and text[end - 1] in " \t":
                end -= 1
            if end == 0:
                return pos
            if text[end - 1] not in "\n\r":
                return end
            end -= 1
            line_start = max(text.rfind("\n", 0, end), text.rfind("\r", 0, end)) + 1
            comment = text.find("//", line_start, end)
            if comment >= 0:
                end = comment

    def location(self, pos: int) -> FileLineColLoc:
        line, col = self.line_col(pos)
        return FileLineColLoc(self.filename, line, col)

    # -- lexing ---------------------------------------------------------------------------
    def skip(self) -> int:
        """Move past whitespace and comments; returns the new position."""
        pos = self.pos
        if self.text[pos:pos + 1] in _NOT_SPACE:  # the common case: a token is next
            return pos
        self.pos = _WS.match(self.text, pos).end()
        return self.pos

    def peek(self, s: str) -> bool:
        return self.text.startswith(s, self.skip())

    def parse_optional(self, s: str) -> bool:
        """Consume punctuation `s` if it is next."""
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str | None = None) -> None:
        if not self.parse_optional(s):
            self.fail_expected(what or f"'{s}'")

    def fail_expected(self, what: str):
        """MLIR's error for a token that is not `what`: its lexer's first when the next
        character starts no token, else `expected ...` where `wrong_token_pos` says."""
        pos = self.skip()
        if pos < len(self.text) and self.text[pos] not in _TOKEN_STARTS:
            raise self.error("unexpected character", pos)
        raise self.error(f"expected {what}", self.wrong_token_pos(), self.describe_next())

    def describe_next(self) -> str:
        if self.pos >= len(self.text):
            return "end of input"
        m = _TOKEN_TEXT.match(self.text, self.pos)
        return f"'{m.group(0)}'"

    def parse_optional_regex(self, rx: re.Pattern) -> re.Match | None:
        self.skip()
        m = rx.match(self.text, self.pos)
        if m:
            self.pos = m.end()
        return m

    def parse_optional_keyword(self, word: str) -> bool:
        """Consume the bare word `word` (not a prefix of a longer identifier)."""
        self.skip()
        m = _BARE_ID.match(self.text, self.pos)
        if m and m.group(0) == word:
            self.pos = m.end()
            return True
        return False

    def expect_keyword(self, word: str) -> None:
        if not self.parse_optional_keyword(word):
            self.fail_custom(f"expected '{word}'", f"'{word}'")

    def fail_custom(self, message: str, what: str):
        """MLIR's `OpAsmParser` error inside an op's custom assembly: `custom op 'name' message`
        at the next token; elsewhere `fail_expected(what)`."""
        op = self._custom_ops[-1]
        if op is None:
            self.fail_expected(what)
        pos = self.skip()
        if pos < len(self.text) and self.text[pos] not in _TOKEN_STARTS:
            raise self.error("unexpected character", pos)
        raise self.error(f"custom op '{op}' {message}", pos, self.describe_next())

    def parse_optional_bare_id(self) -> str | None:
        m = self.parse_optional_regex(_BARE_ID)
        return m.group(0) if m else None

    def parse_bare_id(self, what: str = "identifier") -> str:
        s = self.parse_optional_bare_id()
        if s is None:
            self.fail_expected(what)
        return s

    def parse_optional_string(self) -> str | None:
        pos = self.skip()
        if not self.text.startswith('"', pos):
            return None
        try:
            self.pos, value = lexer.lex_string(self.text, pos)
        except lexer.LexError as e:
            raise self.error(e.message, e.pos) from None
        return value

    def parse_string(self, what: str = "string literal") -> str:
        s = self.parse_optional_string()
        if s is None:
            self.fail_expected(what)
        return s

    def parse_optional_symbol(self) -> str | None:
        self.skip()
        if not self.text.startswith("@", self.pos):
            return None
        if self.text.startswith('@"', self.pos):
            self.pos += 1
            return self.parse_string()
        m = _SYMBOL.match(self.text, self.pos)
        if not m:
            raise self.error("expected symbol name after '@'")
        self.pos = m.end()
        return m.group(1)

    def parse_symbol(self) -> str:
        s = self.parse_optional_symbol()
        if s is None:
            self.fail_custom("expected valid '@'-identifier for symbol name", "symbol name (@name)")
        return s

    def parse_int(self, what: str = "integer") -> int:
        """A decimal integer that fits 64 bits (MLIR's `parseInteger` into an `int64_t`)."""
        return self._parse_bounded_int(64, what)

    def comma_list(self, element: Callable[[], T]) -> list[T]:
        """`element (, element)*`."""
        return lexer.comma_list(element, self.parse_optional)

    def balanced(self, what: str, *, dialect_body: bool = True) -> str:
        """Consume the bracketed span (`<...>`, `(...)`, `[...]`, `{...}`) starting here and
        return its text, cut as MLIR cuts a dialect attribute's body (or, not `dialect_body`,
        with the token parser's `expected ']'`)."""
        pos = self.skip()
        if self.text[pos:pos + 1] not in _CLOSERS:
            self.fail_expected(f"'<' to open the {what}")
        try:
            end = lexer.scan_balanced(self.text, pos, dialect_body=dialect_body)
        except lexer.LexError as e:
            raise self.error(e.message, e.pos) from None
        s = self.text[self.pos:end]
        self.pos = end
        return s

    def expect_end(self) -> None:
        self.skip()
        if self.pos != len(self.text):
            raise self.error(f"unexpected {self.describe_next()} after the end")

    # -- types ----------------------------------------------------------------------------
    def parse_type(self) -> Type:
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise self.error(f"types and attributes nested more than {MAX_NESTING} levels deep")
        t = self.parse_optional_type()
        if t is None:
            self.fail_expected("non-function type")
        self._depth -= 1
        return t

    def parse_optional_type(self) -> Type | None:
        self.skip()
        text, pos = self.text, self.pos
        m = _SIMPLE_TENSOR.match(text, pos)
        if m:  # fast path: static shape, builtin element type
            key = m.group(0)
            t = _TYPE_CACHE.get(key)
            if t is None:
                el = self._element_type(m.group(2), pos)
                if el is None:
                    m = None
                else:
                    dims = m.group(1).split("x")[:-1]
                    if any(len(d) > 18 for d in dims):
                        m = None  # the slow path says which dimension is invalid
                    else:
                        t = RankedTensorType(tuple(map(int, dims)), el)  # (at most 18 ASCII digits)
                        _cache_type(key, t)
            if m:
                self.pos = m.end()
                return t
        c = text[pos:pos + 1]
        if c == "(":
            return self.parse_function_type()
        if c == "!":
            m = _DIALECT_TYPE.match(text, pos)
            if not m:
                raise self.error("expected dialect type after '!'")
            self.pos = m.end()
            name = m.group(0)
            if text.startswith("<", self.pos):
                body = self.balanced("type")
                self.check_dialect_name(name, body, pos)
                return OpaqueType(name + body)
            if "." not in name:
                if name in self.type_aliases:
                    return self.type_aliases[name]
                raise self.error(f"undefined symbol alias id '{name[1:]}'", pos)
            self.check_dialect_name(name, "", pos)
            return OpaqueType(name)
        word = _BARE_ID.match(text, pos)
        if not word:
            return None
        w = word.group(0)
        if w == "tensor":
            self.pos = word.end()
            return self._parse_tensor_body()
        if w in ("complex", "tuple", "vector", "memref"):
            self.pos = word.end()
            if not self.peek("<"):
                self.fail_expected("'<'")
            if w == "complex":
                self.pos += 1
                el = self.parse_type()
                self.expect(">")
                return ComplexType(el)
            if w == "tuple":
                self.pos += 1
                types = [] if self.peek(">") else self.parse_type_list()
                self.expect(">")
                return TupleType(tuple(types))
            body_pos = self.pos
            body = self.balanced("type")
            bad = _NON_ASCII_OUTSIDE_STRINGS.match(body)
            if bad.end() < len(body):
                raise self.error("unexpected character", body_pos + bad.end())
            return OpaqueType(w + body)
        el = self._element_type(w, pos)
        if el is not None:
            self.pos = word.end()
            return el
        return None

    def _element_type(self, word: str, pos: int) -> Type | None:
        try:
            return _builtin_element_type(word)
        except lexer.LexError as e:
            raise self.error(e.message, pos) from None

    def _dim(self, text: str, pos: int) -> int:
        value = read_int(text, 1 << 63)
        if value is None:
            raise self.error("invalid dimension", pos)
        return value

    def _parse_tensor_body(self) -> Type:
        self.expect("<")
        if self.parse_optional("*"):
            self.expect("x")
            el = self.parse_type()
            self.expect(">", "'>' in tensor type")
            return UnrankedTensorType(el)
        dims: list[int | None] = []
        while True:
            self.skip()
            m = _DIM.match(self.text, self.pos)
            if not m:
                break
            dims.append(None if m.group(1) == "?" else self._dim(m.group(1), self.pos))
            self.pos = m.end()
        dim = _DIM_WITHOUT_X.match(self.text, self.pos)
        if dim:
            self.pos = dim.end()
            self.fail_expected("'x' in dimension list")
        el = self.parse_type()
        enc = self.parse_attribute() if self.parse_optional(",") else None
        self.expect(">", "'>' in tensor type")
        return RankedTensorType(tuple(dims), el, enc)

    def parse_type_list(self) -> list[Type]:
        return self.comma_list(self.parse_type)

    def parse_paren_type_list(self) -> list[Type]:
        self.expect("(")
        if self.parse_optional(")"):
            return []
        types = self.parse_type_list()
        self.expect(")")
        return types

    def parse_optional_colon_known_type(self) -> tuple[Type, int] | None:
        """`: tensor<...>` on this line, of a type read before: (the type, its position); None
        (nothing consumed) otherwise. The usual op's `: T`, without the general machinery."""
        m = _COLON_TENSOR.match(self.text, self.pos)
        if m:
            t = _TYPE_CACHE.get(m.group(1))
            if t is not None:
                self.pos = m.end()
                return t, m.start(1)
        return None

    def parse_function_type(self) -> FunctionType:
        inputs = self.parse_paren_type_list()
        self.expect("->", "'->' in function type")
        return FunctionType(tuple(inputs), tuple(self.parse_result_types()))

    def parse_result_types(self) -> list[Type]:
        """`T` or `(T1, T2)` (a parenthesised single function type stays a function type)."""
        if self.peek("("):
            save = self.pos
            types = self.parse_paren_type_list()
            if self.peek("->"):  # it was the inputs of a function type
                self.pos = save
                return [self.parse_function_type()]
            return types
        return [self.parse_type()]

    # -- attributes -----------------------------------------------------------------------
    def parse_attribute(self) -> Attribute:
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise self.error(f"types and attributes nested more than {MAX_NESTING} levels deep")
        a = self.parse_optional_attribute()
        if a is None:
            self.fail_expected("attribute value")
        self._depth -= 1
        return a

    def parse_optional_attribute(self) -> Attribute | None:
        self.skip()
        text, pos = self.text, self.pos
        c = text[pos:pos + 1]
        if c == "#":
            return self._parse_hash_attribute()
        if c == '"':
            s = self.parse_string()
            return StringAttr(s)
        if c == "@":
            root = self.parse_symbol()
            nested = []
            while self.parse_optional("::"):
                nested.append(self.parse_symbol())
            return SymbolRefAttr(root, tuple(nested))
        if c == "[":
            self.pos += 1
            elems = []
            if not self.parse_optional("]"):
                elems.append(self.parse_attribute())
                while self.parse_optional(","):
                    elems.append(self.parse_attribute())
                self.expect("]", "',' or ']' in array attribute")
            return ArrayAttr(tuple(elems))
        if c == "{":
            return DictionaryAttr.from_dict(self.parse_attr_dict())
        if c == "-" or c == "+" or c.isdigit():
            return self._parse_number_attr()
        word = _BARE_ID.match(text, pos)
        if word:
            w = word.group(0)
            if w in ("true", "false"):
                self.pos = word.end()
                return BoolAttr(w == "true")
            if w == "unit":
                self.pos = word.end()
                return UnitAttr()
            after = _WS.match(text, word.end()).end() if w in _SPACED_KEYWORDS else 0  # (tokens may be spaced)
            if w == "dense" and text.startswith("<", after):
                self.pos = after
                return self._parse_dense()
            if w == "array" and text.startswith("<", after):
                self.pos = after
                return self._parse_dense_array()
            if w == "loc" and text.startswith("(", after):
                return self.parse_location()
            if w in ("affine_map", "affine_set", "strided", "dense_resource", "sparse", "opaque",
                     "distinct") and text[after:after + 1] in ("<", "["):
                self.pos = after
                body = self.balanced("attribute")
                if w == "distinct":
                    body += self.balanced("attribute")
                return self._with_optional_type(OpaqueAttr(w + body))
        t = self.parse_optional_type()
        if t is not None:
            return TypeAttr(t)
        return None

    def _with_optional_type(self, attr: OpaqueAttr) -> OpaqueAttr:
        if attr.text.startswith(("dense_resource", "sparse", "opaque")) and self.parse_optional(":"):
            return OpaqueAttr(f"{attr.text} : {self.parse_type()}")
        return attr

    def _parse_hash_attribute(self) -> Attribute:
        text, start = self.text, self.pos
        for prefix in ("#sdy.sharding_per_value<", "#sdy.sharding<", "#sdy.mesh<", "#sdy<manual_axes",
                       "#sdy<list_of_axis_ref_lists", "#sdy<axis_ref_list", "#sdy<all_to_all_param_list"):
            if text.startswith(prefix, start):
                # The same sharding text recurs on many ops: parse each distinct one once.
                m = _SDY_ATTR.match(text, start)
                if m:
                    value = self._sdy_cache.get(m.group(0))
                    if value is not None:
                        self.pos = m.end()
                        return value
                value = self.parse_sdy(sdy_syntax.parse_attribute, start)
                if m and self.pos == m.end():
                    self._sdy_cache[m.group(0)] = value
                return value
        if text.startswith("#sdy.op_sharding_rule<", start):
            self.pos = start + len("#sdy.op_sharding_rule")
            return self._parse_sharding_rule()
        if text.startswith(("#stablehlo", "#sdy.propagation_edges<"), start):
            for prefix, parse in ATTRIBUTES.items():
                if text.startswith(prefix, start):
                    self.pos = start + len(prefix)
                    return parse(self)
        m = _HASH_NAME.match(text, start)
        if not m:
            raise self.error("expected attribute name after '#'")
        self.pos = m.end()
        name = m.group(0)
        if text.startswith("<", self.pos):
            body = self.balanced("attribute")
            self.check_dialect_name(name, body, start)
            return OpaqueAttr(_canonical_opaque(name + body))
        if name in self.attr_aliases:
            return self.attr_aliases[name]
        if "." in name:
            self.check_dialect_name(name, "", start)
            return OpaqueAttr(name)
        raise self.error(f"undefined symbol alias id '{name[1:]}'", start)

    def parse_sdy(self, fn: Callable, pos: int):
        """An sdy attribute body read by `sharding.syntax` function `fn` at `pos`."""
        self.skip()
        text = self.text
        # `fn` may look at a few kilobytes past `pos`: give it just the attribute (its brackets
        # balance), so each attribute costs its own length; the whole text gives exact errors.
        hash_end = _SDY_NAME.match(text, pos).end()
        m = _SDY_BODY.match(text, hash_end)
        try:
            end = m.end() if m else lexer.scan_balanced(text, hash_end) if text[hash_end:hash_end + 1] in _CLOSERS else -1
        except lexer.LexError:
            end = -1
        if end > 0:
            # The same text recurs on many ops: read each distinct one once.
            key = (fn, text[pos:end])
            value = self._sdy_cache.get(key)
            if value is None:
                try:
                    value, used = fn(key[1], 0)
                    if used == end - pos:
                        self._sdy_cache[key] = value
                    else:
                        value = None
                except sdy_syntax.ShardingParseError:
                    pass
            if value is not None:
                self.pos = end
                return value
        try:
            value, end = fn(text, pos)
        except sdy_syntax.ShardingParseError as e:
            raise self.error(e.message, e.pos) from None
        self.pos = end
        return value

    def _parse_number_attr(self) -> Attribute:
        start = self.pos
        m = self.parse_optional_regex(_NUMBER)
        if not m:
            raise self.error("expected number")
        lit = m.group(0)
        is_float = "." in lit
        typ = self.parse_type() if self.parse_optional(":") else None
        if typ is None:
            typ = F64 if is_float else I64
        if isinstance(typ, FloatType):
            if "0x" in lit:
                bits = int(lit, 16)
                if bits >> _float_width(typ):
                    raise self.error("hexadecimal float constant out of range for type", start)
                return FloatAttr(float_value(bits, typ), typ)
            value = float(lit)
            finite_only_inf = math.isinf(value) and FORMATS[typ.name].nonfinite == FINITE_ONLY
            return FloatAttr(value if finite_only_inf else _round_float(value, typ), typ)
        if is_float:
            raise self.error(f"floating point value not valid for specified type '{typ}'", start)
        if lit.startswith("-") and isinstance(typ, IntegerType) and typ.signedness == "u":
            raise self.error("negative integer literal not valid for unsigned integer type", start + 1)
        value = self._int_literal(lit, typ, start)
        if typ == I1:
            if value not in (0, 1):
                raise self.error("integer constant out of range for attribute", start)
            return BoolAttr(bool(value))
        if isinstance(typ, IntegerType) and not _fits(value, typ):
            raise self.error("integer constant out of range for attribute", start)
        return IntegerAttr(value, typ)

    def _int_literal(self, lit: str, typ: Type, pos: int) -> int:
        """`lit` as an int, refusing literals too long for `typ` before converting them."""
        width = typ.width if isinstance(typ, IntegerType) else 64
        digits = len(lit.lstrip("+-").removeprefix("0x").lstrip("0"))
        too_long = digits > width // 4 + 2 if "0x" in lit else digits > width * 0.302 + 2
        value = None if too_long else _int_literal(lit, width + 1)
        if value is None:
            raise self.error("integer constant out of range for attribute", pos)
        return value

    def _parse_dense(self) -> DenseElementsAttr:
        """`dense<literal> : type`, read as MLIR reads it: the literal (syntax errors first),
        then the type, then the literal's elements as the type's."""
        start = self.pos - len("dense")
        body_start = self.pos + 1
        fast = _DECIMAL_LIST.match(self.text, body_start)  # a decimal list: scanned at once
        if fast and self.text.startswith(">", fast.end()):
            lit, self.pos = None, fast.end() + 1
        else:
            lit, self.pos = self._scan_dense(body_start)
        body_end = self.pos - 1
        try:
            self.expect(":", "':' and a type after dense<...>")
            tp = self.skip()
            typ = self.parse_type()
            if isinstance(typ, UnrankedTensorType) or (isinstance(typ, RankedTensorType)
                                                       and not typ.has_static_shape):
                raise self.error("elements literal type must have static shape", start)
            if not isinstance(typ, (RankedTensorType, OpaqueType)):
                raise self.error(f"elements literal type must be a shaped type, got '{typ}'", tp)
        except IRParseError:
            if lit is None:
                self._scan_dense(body_start)
            raise
        body = self.text[body_start:body_end].strip()
        if (lit is None and isinstance(typ, RankedTensorType) and isinstance(typ.element_type, FloatType)
                and math.prod(typ.shape) > HEX_ELEMENTS_LIMIT):
            text = _decimal_dense_body(body, typ)
            if text is not None:
                return DenseElementsAttr(text, typ)
        if lit is None:
            lit = self._scan_dense(body_start)[0]
        if isinstance(typ, OpaqueType):
            return DenseElementsAttr(body, typ)
        try:
            text = _dense_body(lit, typ)
        except lexer.LexError as e:
            raise self.error(e.message, start if e.pos == _AT_DENSE else e.pos) from None
        return DenseElementsAttr(body if text is None else text, typ)

    def _scan_dense(self, pos: int) -> tuple[_DenseLiteral, int]:
        """The literal at `pos` and the position after its closing '>'."""
        try:
            return _scan_dense(self.text, pos)
        except lexer.LexError as e:
            raise self.error(e.message, e.pos) from None

    def _parse_dense_array(self) -> DenseArrayAttr:
        self.expect("<")
        el = self.parse_type()
        values = []
        if self.parse_optional(":"):
            while True:
                self.skip()
                if el == I1:
                    w = self.parse_optional_bare_id()
                    if w not in ("true", "false"):
                        self.fail_expected("'true' or 'false'")
                    values.append(w == "true")
                else:
                    m = self.parse_optional_regex(_NUMBER)
                    if not m:
                        self.fail_expected("number in dense array")
                    if isinstance(el, FloatType):
                        values.append(float(m.group(0)))
                    else:
                        lit = m.group(0)
                        digits = len(lit.lstrip("+-").removeprefix("0x"))
                        width = el.width if isinstance(el, IntegerType) else 64
                        value = None if digits > width + 2 else _int_literal(lit, width + 1)
                        if value is None or (isinstance(el, IntegerType) and not _fits(value, el)):
                            raise self.error("integer constant out of range", self.skip())
                        values.append(value)
                if not self.parse_optional(","):
                    break
        self.expect(">")
        return DenseArrayAttr(el, tuple(values))

    def _parse_sharding_rule(self) -> OpShardingRule:
        """`<([i, j])->([i, j]) {i=8, j=8} reduction={j} ..., custom>` after the name, as
        Shardy's parser reads it (factor sizes in iota order `i`, `j`, ...)."""
        self._expect_token("<")
        operands = self._rule_tensors()
        self._expect_token("->")
        results = self._rule_tensors()
        sizes: list[int] = []
        if self.parse_optional("{"):
            while True:
                symbol = self.parse_bare_id("factor symbol")
                here = self.skip()
                index, rest = self._factor_symbol(symbol)
                if index != len(sizes):
                    raise self.error(
                        "expecting factor indices to be ordered like an iota ([0,1,2,...], e.g. "
                        f"{{i=#, j=#, ...}}). Expecting factor index symbol '{factor_name(len(sizes))}', "
                        f"received: '{_factor_symbol_string(index)}'", here)
                if rest:
                    raise self.error(f"expecting single factor symbol: {rest}", here)
                self._expect_token("=")
                sizes.append(self._parse_bounded_int(32, "factor size"))
                if not self.parse_optional(","):
                    break
            self._expect_token("}")
        special: dict[str, tuple[int, ...]] = {}
        for key in ("reduction", "need_replication", "permutation", "blocked_propagation"):
            if not self.parse_optional_keyword(key):
                continue
            self._expect_token("=")
            braces = self.parse_optional("{")
            factors = []
            while True:
                symbol = self.parse_bare_id("factor symbol")
                self.skip()
                factors.append(self._factor_symbol(symbol)[0])
                if not self.parse_optional(","):
                    break
            if braces:
                self._expect_token("}")
            special[key] = tuple(factors)
        custom = self.parse_optional(",")
        if custom and not self.parse_optional_keyword("custom"):
            raise self.error("expected 'custom'", self.skip())  # keywords: at the token
        self._expect_token(">")
        return OpShardingRule(
            operands, results, tuple(sizes), special.get("reduction", ()),
            special.get("need_replication", ()), special.get("permutation", ()),
            special.get("blocked_propagation", ()), custom)

    def _rule_tensors(self) -> tuple:
        """`([i, j], [k])`: one mapping per tensor, one factor tuple per dim."""
        self._expect_token("(")
        tensors = []
        while True:  # at least one tensor: `()` is "expected '['"
            self._expect_token("[")
            dims = []
            if not self.parse_optional("]"):
                while True:
                    symbols = self.parse_optional_bare_id()
                    here = self.skip()
                    factors = []
                    while symbols:
                        index, symbols = self._factor_symbol(symbols, here)
                        factors.append(index)
                    dims.append(tuple(factors))
                    if not self.parse_optional(","):
                        break
                self._expect_token("]")
            tensors.append(tuple(dims))
            if not self.parse_optional(","):
                break
        self._expect_token(")")
        return tuple(tensors)

    def _token_error_pos(self) -> int:
        """Where MLIR reports a wrong token: the end of the previous token."""
        pos = self.skip()
        while pos > 0 and self.text[pos - 1] in " \t\r\n":
            pos -= 1
        return pos

    def _expect_token(self, token: str) -> None:
        """`expect` with MLIR's own message and position (`expected ']'`)."""
        if not self.parse_optional(token):
            raise self.error(f"expected '{token}'", self._token_error_pos())

    def pos_of(self, error: IRParseError) -> int:
        """The text position of an error made by this parser."""
        self.line_col(0)
        return self._line_starts[error.line - 1] + error.col - 1

    def _factor_symbol(self, text: str, pos: int | None = None) -> tuple[int, str]:
        """The index of the first factor symbol in `text` and the rest (`'z_2k'` -> 19, `'k'`)."""
        pos = self.pos if pos is None else pos
        if not text.startswith("z_"):
            if not "i" <= text[0] <= "z":
                raise self.error(f"expecting symbol from 'i' to 'z'. Received: '{text[0]}'", pos)
            return ord(text[0]) - ord("i"), text[1:]
        digits = re.match(r"[0-9]*", text[2:]).group(0)
        if not digits:
            raise self.error(f"expecting integer after 'z_'. Received: '{text}'", pos)
        if digits[0] == "0":
            raise self.error(f"expecting positive integer without leading zeros. Received: '{digits}'", pos)
        index = read_int(digits, 1 << 63)
        if index is None:
            raise self.error(f"expecting symbol index <=2^63-1. Received: '{digits}'", pos)
        index += 17
        if index >= 1 << 63:  # Shardy's int64 sum wraps
            index -= 1 << 64
        return index, text[2 + len(digits):]

    def _parse_bounded_int(self, bits: int, what: str) -> int:
        """A signed integer that must fit `bits` bits (MLIR's `parseInteger` into a C++ int)."""
        pos = self.skip()
        m = _INT.match(self.text, pos)
        if not m:
            self.fail_expected(what)
        value = _int_literal(m.group(0), bits)
        if value is None or not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            raise self.error("integer value too large", pos)
        self.pos = m.end()
        return value

    def parse_attr_dict(self) -> dict[str, Attribute]:
        """`{name = value, unit_name, "quoted" = value}` → dict (after checking duplicates)."""
        self.expect("{")
        out: dict[str, Attribute] = {}
        if self.parse_optional("}"):
            return out
        text = self.text
        while True:
            p = self.skip()
            key = _BARE_ID.match(text, p)
            if key is not None:
                name = key.group()
                self.pos = key.end()
            else:
                name = self.parse_optional_string()
                if not name:
                    raise self.error("expected valid attribute name", p)
            if name in out:
                raise self.error(f"duplicate key '{name}' in dictionary attribute", p)
            out[name] = self.parse_attribute() if self.parse_optional("=") else UnitAttr()
            if not self.parse_optional(","):
                break
        self.expect("}", "'}' in attribute dictionary")
        return out

    def parse_optional_attr_dict(self) -> dict[str, Attribute]:
        return self.parse_attr_dict() if self.peek("{") else {}

    def parse_location(self, deferrable: bool = False) -> Attribute:
        """`loc(...)`. With `deferrable` (an op's or block argument's trailing location, as in
        MLIR) `loc(#alias)` may name an alias defined later in the module."""
        self.expect_keyword("loc")
        self.expect("(", "'(' in location")
        self.skip()
        m = _ALIAS_DEF.match(self.text, self.pos)
        if m and m.group(1) == "#" and m.group(0) not in self.attr_aliases and deferrable \
                and self._deferred_locs is not None:
            loc = _DeferredLoc(m.group(0), self.pos)
            self._deferred_locs.append(loc)
            self.pos = m.end()
        else:
            loc = self._parse_location_instance()
        self.expect(")", "')' in location")
        return loc

    def _parse_location_instance(self) -> Attribute:
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise self.error(f"types and attributes nested more than {MAX_NESTING} levels deep")
        loc = self._parse_location_kind()
        self._depth -= 1
        return loc

    def _parse_location_kind(self) -> Attribute:
        start = self.skip()
        text = self.text
        if text.startswith("#", start):
            loc = self.parse_attribute()
            if not isinstance(loc, Location.__args__):
                raise self.error("expected location attribute", start)
            return loc
        name = self.parse_optional_string()
        if name is not None:
            if self.parse_optional(":"):
                line = self.parse_int("line number")
                if not self.parse_optional(":"):
                    return FileLineColLoc(name, line, 0, line_only=True)
                col = self.parse_int("column number")
                if not self.parse_optional_keyword("to"):
                    return FileLineColLoc(name, line, col)
                end_line = None
                if not self.parse_optional(":"):
                    end_line = self.parse_int("line number")
                    self.expect(":", "':' in location")
                return FileLineColLoc(name, line, col, end_line, self.parse_int("column number"))
            if self.parse_optional("("):
                child = self._parse_location_instance()
                self.expect(")", "')' after child location of NameLoc")
                return NameLoc(name, child)
            return NameLoc(name)
        word = self.parse_optional_bare_id()
        if word == "unknown":
            return UnknownLoc()
        if word == "callsite":
            self.expect("(", "'(' in callsite location")
            callee = self._parse_location_instance()
            self.expect_keyword("at")
            caller = self._parse_location_instance()
            self.expect(")", "')' in callsite location")
            return CallSiteLoc(callee, caller)
        if word == "fused":
            metadata = None
            if self.parse_optional("<"):
                metadata = self.parse_attribute()
                self.expect(">", "'>' after fused location metadata")
            self.expect("[", "'[' in fused location")
            locs = []
            if not self.parse_optional("]"):
                locs.append(self._parse_location_instance())
                while self.parse_optional(","):
                    locs.append(self._parse_location_instance())
                self.expect("]", "']' in fused location")
            return fused_loc(locs, metadata)
        raise self.error("expected location instance", start)

    def parse_optional_trailing_location(self):
        pos = self.skip()
        if self.text.startswith("loc", pos):
            word = _BARE_ID.match(self.text, pos)
            if word.group(0) == "loc" and self.text.startswith("(", _WS.match(self.text, word.end()).end()):
                return self.parse_location(deferrable=True)
        return None

    def _resolve_deferred_locs(self, op: Operation) -> None:
        """Replace `loc(#alias)` read before its alias was defined (MLIR's deferred locations)."""
        for d in self._deferred_locs:
            attr = self.attr_aliases.get(d.name)
            if attr is None:
                raise self.error("operation location alias was never defined", d.pos)
            if not isinstance(attr, Location.__args__):
                raise self.error(f"expected location, but found '{attr}'", d.pos)

        def fix(holder):
            if isinstance(holder.location, _DeferredLoc):
                holder.location = self.attr_aliases[holder.location.name]

        for o in op.walk():
            fix(o)
            for region in o.regions:
                for block in region.blocks:
                    for a in block.arguments:
                        fix(a)

    # -- SSA values -----------------------------------------------------------------------
    def parse_value_ref(self) -> tuple[str, int, int]:
        """`%name` or `%name#3` → (name, result number, position)."""
        p = self.skip()
        m = _VALUE_REF.match(self.text, p)
        if not m:
            if self.text.startswith("%", p):  # MLIR's lexer refuses the token first
                raise self.error("invalid SSA name", p)
            self.fail_expected("SSA operand")
        self.pos = m.end()
        return m.group(1), _result_number(m.group(2)), p

    def parse_optional_value_ref_list(self) -> list[tuple[str, int, int]]:
        p = self.skip()
        m = _TWO_REFS.match(self.text, p)
        if m:
            name, index, name2, index2 = m.groups()
            refs = [(name, _result_number(index), p)]
            if name2 is not None:
                refs.append((name2, _result_number(index2), m.start(3) - 1))
        else:
            m = _VALUE_REFS.match(self.text, p)
            if not m:
                return []
            refs = [(r.group(1), _result_number(r.group(2)), p + r.start()) for r in _VALUE_REF.finditer(m.group())]
        self.pos = m.end()
        while self.peek(",") and self.text.startswith("%", _WS.match(self.text, self.pos + 1).end()):
            self.pos += 1
            refs.append(self.parse_value_ref())
        return refs

    def resolve(self, ref: tuple[str, int, int], typ: Type) -> Value:
        name, idx, pos = ref
        group = self.scopes[-1].values.get(name)  # most values are used in their own region
        if group is None:
            group = next((g for scope in reversed(self.scopes) if (g := scope.values.get(name)) is not None), None)
        if group is not None:
            if idx >= 1 << 32:  # (`_result_number`'s mark for more than an unsigned int holds)
                raise self.error("invalid SSA value result number", pos + 1 + len(name))
            if idx >= len(group):
                raise self.error("reference to invalid result number", pos)
            v = group[idx]
        else:
            key = f"{name}#{idx}"
            for scope in reversed(self.scopes):
                if key in scope.forward:
                    v = scope.forward[key][0]
                    break
            else:
                v = _ForwardRef(typ)
                self.scopes[-1].forward[key] = (v, pos)
        if v.type is not typ and v.type != typ:
            raise self.error(
                f"use of value '%{name}' expects different type than prior uses: '{typ}' vs '{v.type}'", pos)
        return v

    def resolve_all(self, refs, types, pos: int) -> list[Value]:
        if len(refs) != len(types):
            raise self.error(f"{len(refs)} operands present, but expected {len(types)}", pos)
        return [self.resolve(r, t) for r, t in zip(refs, types)]

    def define(self, name: str, values: tuple[Value, ...], pos: int) -> None:
        for s in self.scopes:  # MLIR lets no region redefine a name visible from its parents
            if name in s.values:
                raise self.error(f"redefinition of SSA value '%{name}'", pos)
        scope = self.scopes[-1]
        scope.values[name] = values
        for s in self.scopes:
            if s.forward:
                break
        else:
            return  # no forward reference waits for a definition
        for i, v in enumerate(values):
            fwd = scope.forward.pop(f"{name}#{i}", None)
            if fwd is None:
                for outer in self.scopes[:-1]:
                    fwd = outer.forward.pop(f"{name}#{i}", None)
                    if fwd:
                        break
            if fwd is not None:
                placeholder, ppos = fwd
                if placeholder.type != v.type:
                    raise self.error(
                        f"definition of SSA value '%{name}#{i}' has type '{v.type}', but it was used with type '{placeholder.type}'", pos)
                placeholder.replace_all_uses_with(v)

    def push_scope(self) -> _Scope:
        s = _Scope()
        self.scopes.append(s)
        return s

    def pop_scope(self) -> None:
        s = self.scopes.pop()
        if s.forward and self.scopes:
            # MLIR resolves a forward reference anywhere later in the module (the verifier then
            # checks dominance), so unresolved ones move out to the enclosing region.
            self.scopes[-1].forward.update(s.forward)
        elif s.forward:
            name, (_, pos) = min(s.forward.items(), key=lambda kv: kv[1][1])
            raise self.error("use of undeclared SSA value name", pos, f"'%{name.removesuffix('#0')}'")
        if s.forward_blocks:
            name, pos = min(s.forward_blocks.items(), key=lambda kv: kv[1])
            raise self.error(f"reference to an undefined block '^{name}'", pos)

    # -- blocks and regions ---------------------------------------------------------------
    def parse_block_arg_list(self) -> list[tuple[str, Type, object, int]]:
        """`(%a: T loc(...), ...)` → [(name, type, location, pos)]; the `(` is next."""
        self.expect("(")
        args = []
        if self.parse_optional(")"):
            return args
        while True:
            p = self.skip()
            m = _BLOCK_ARG.match(self.text, p)
            if not m:
                self.fail_expected("block argument (%name: type)")
            self.pos = m.end()
            self.expect(":")
            t = self.parse_type()
            loc = self.parse_optional_trailing_location()
            args.append((m.group(1), t, loc, p))
            if not self.parse_optional(","):
                break
        self.expect(")", "',' or ')' in block argument list")
        return args

    def _get_block(self, name: str, pos: int, *, defining: bool) -> Block:
        scope = self.scopes[-1]
        block = scope.blocks.get(name)
        if block is None:
            block = Block()
            scope.blocks[name] = block
            if not defining:
                scope.forward_blocks[name] = pos
        elif defining:
            if name not in scope.forward_blocks:
                raise self.error(f"redefinition of block '^{name}'", pos)
        if defining:
            scope.forward_blocks.pop(name, None)
        return block

    def parse_region(self, entry_args: list | None = None) -> Region:
        """`{ ops }` with optional `^label(args):` blocks; `entry_args` come from a pretty op."""
        self._region_depth += 1
        if self._region_depth > MAX_NESTING:
            raise self.error(f"regions nested more than {MAX_NESTING} levels deep")
        self.expect("{", "'{' to begin a region")
        region = Region()
        self.push_scope()
        block: Block | None = None
        if entry_args is not None:
            for name, _, _, p in entry_args:
                if any(name in s.values or f"{name}#0" in s.forward for s in self.scopes):
                    raise self.error(f"region entry argument '%{name}' is already in use", p)
            block = region.add_block(Block())
            self._add_block_args(block, entry_args)
        while True:
            self.skip()
            if self.text.startswith("}", self.pos):
                self.pos += 1
                break
            if self.text.startswith("^", self.pos):
                p = self.pos
                m = _CARET_ID.match(self.text, p)
                if not m:
                    raise self.error("expected block name after '^'")
                self.pos = m.end()
                block = self._get_block(m.group(1), p, defining=True)
                region.add_block(block)
                if self.peek("("):
                    self._add_block_args(block, self.parse_block_arg_list())
                self.expect(":", "':' after block label")
                continue
            if self.pos >= len(self.text):
                self.fail_expected("operation name in quotes")  # MLIR reads an op at the end
            if block is None:
                block = region.add_block(Block())
            self.parse_operation(block)
        self.pop_scope()
        self._region_depth -= 1
        return region

    def _add_block_args(self, block: Block, args) -> None:
        for name, t, loc, p in args:
            arg = block.add_argument(t, loc or self.location(p))
            self.define(name, (arg,), p)

    # -- operations -----------------------------------------------------------------------
    def parse_module(self) -> Module:
        self._deferred_locs = []
        self.push_scope()
        top = Block()
        while True:
            self.skip()
            if self.pos >= len(self.text):
                break
            c = self.text[self.pos]
            if c in "#!" and self._parse_optional_alias_def():
                continue
            self.parse_operation(top)
        self.pop_scope()
        if len(top.ops) == 1 and top.ops[0].name == "builtin.module":
            module = Module(top.ops[0].detach())
        else:
            module = Module.create()
            module.op.location = FileLineColLoc(self.filename, 0, 0)  # as MLIR: no position
            ops = list(top.ops)
            top.set_ops(())
            module.body.set_ops(ops)
        if self._deferred_locs:
            self._resolve_deferred_locs(module.op)
        return module

    def _parse_optional_alias_def(self) -> bool:
        start = self.pos
        m = _ALIAS_DEF.match(self.text, start)
        if not m or "." in m.group(2):
            return False
        self.pos = m.end()
        if not self.parse_optional("="):
            self.pos = start
            return False
        if m.group(1) == "#":
            self.attr_aliases[m.group(0)] = self.parse_attribute()
        else:
            self.type_aliases[m.group(0)] = self.parse_type()
        return True

    def parse_operation(self, block: Block) -> Operation:
        start = self.skip()
        results: list[tuple[str, int, int]] = []
        one = _ONE_RESULT.match(self.text, start)
        if one:
            results.append((one.group(1), 1, start))
            self.pos = one.end()
        elif self.text.startswith("%", start):
            while True:
                p = self.skip()
                m = _RESULT_NAME.match(self.text, p)
                if not m:
                    self.fail_expected("result name")
                self.pos = m.end()
                count = read_int(m.group(2), 1 << 32) if m.group(2) else 1
                if not count:  # MLIR: 0, or more than an unsigned int holds
                    raise self.error("expected named operation to have at least 1 result", m.start(2))
                results.append((m.group(1), count, p))
                if not self.parse_optional(","):
                    break
            self.expect("=", "'=' after SSA name")
        op_pos = self.skip()
        if self.text.startswith('"', op_pos):
            self._custom_ops.append(None)
            op = self.parse_generic_op()
            self._custom_ops.pop()
        else:
            name = _BARE_ID.match(self.text, op_pos)
            if not name:
                self.fail_expected("operation name in quotes")
            self.pos = name.end()
            word = name.group(0)
            full = word if "." in word else f"{self._default_dialects[-1]}.{word}"
            opdef = lookup(full)
            if opdef is None or opdef.parse is None:
                raise self.error(_unknown_op_message(word, full, opdef is not None), op_pos)
            op = Operation(full)
            op.results = []
            self._default_dialects.append(DEFAULT_DIALECT.get(full, ""))
            self._custom_ops.append(full)
            opdef.parse(self, op, len(results) if one else sum(n for _, n, _ in results))
            self._custom_ops.pop()
            self._default_dialects.pop()
        loc = self.parse_optional_trailing_location()
        if loc is not None:
            op.location = loc
        elif isinstance(op.location, UnknownLoc):  # a pretty parser may have set it
            op.location = self.location(op_pos)  # MLIR: the op name
        expected = len(results) if one else sum(n for _, n, _ in results)
        if expected and expected != len(op.results):  # (MLIR: results need not be bound)
            raise self.error(
                f"operation defines {len(op.results)} results but was provided {expected} to bind", start)
        if one:
            self.define(one.group(1), tuple(op.results), start)
        else:
            i = 0
            for name, n, p in results:
                self.define(name, tuple(op.results[i:i + n]), p)
                i += n
        block.append(op)
        return op

    def parse_generic_op(self) -> Operation:
        p = self.skip()
        text = self.text
        head = _GENERIC_HEAD.match(text, p)
        if head:  # fast path for the usual `"dialect.op"(%a, %b#1)`
            op = Operation(head.group(1))
            name_end = head.end(1) + 1
            base = head.start(2)
            refs = [(m.group(1), _result_number(m.group(2)), base + m.start())
                    for m in _VALUE_REF.finditer(head.group(2))]
            self.pos = head.end()
        else:
            name = self.parse_string("operation name")
            name_end = self.pos
            op = Operation(name)
            self.expect("(")
            refs = self.parse_optional_value_ref_list()
            self.expect(")", "')' to end operand list")
        dialect = op.name.split(".", 1)[0]
        self.check_dialect(dialect, "operation", name_end)
        if dialect in COMPLETE_DIALECTS and lookup(op.name) is None:
            raise self.error(f"unregistered operation '{op.name}' found in dialect ('{dialect}') that does not "
                             "allow unknown operations", p)
        if self.parse_optional("["):
            while True:
                bp = self.skip()
                m = _CARET_ID.match(self.text, bp)
                if not m:
                    self.fail_expected("successor block (^name)")
                self.pos = m.end()
                op.successors.append(self._get_block(m.group(1), bp, defining=False))
                if not self.parse_optional(","):
                    break
            self.expect("]")
        has_properties = self.peek("<")
        if has_properties:
            self.pos += 1
            if not self.peek("{"):
                self.fail_expected("'{' of properties")
            op.properties = self.parse_attr_dict()
            self.expect(">", "'>' after properties")
            self._check_property_kinds(op, p)
        if self.peek("(") and self.text.startswith("{", _WS.match(self.text, self.pos + 1).end()):
            self.pos += 1
            while True:
                op.add_region(self.parse_region())
                if not self.parse_optional(","):
                    break
            self.expect(")", "')' after regions")
        attrs = self.parse_optional_attr_dict()
        self.expect(":", "':' and the op's function type")
        tp = self.skip()
        m = _SIGNATURE.match(self.text, tp)
        ftype = self._signature_cache.get(m.group(0)) if m else None
        if ftype is not None:
            self.pos = m.end()
        else:
            ftype = self.parse_type()
            if not isinstance(ftype, FunctionType):
                raise self.error(f"expected function type, found '{ftype}'", tp)
            if m and self.pos == m.end():
                self._signature_cache[m.group(0)] = ftype
        if has_properties:  # MLIR reads inherent attributes from `{...}` only without `<{...}>`
            op.attributes.update(attrs)
        else:
            self.set_attrs(op, attrs)
        op._operands = []
        for v in self.resolve_all(refs, ftype.inputs, p):
            op._add_operand(v)
        set_results(op, ftype.results)
        return op

    def _check_property_kinds(self, op: Operation, pos: int) -> None:
        """MLIR converts `<{...}>` into the op's properties struct and refuses an attribute
        of another kind than the struct stores."""
        opdef = lookup(op.name)
        for name, kind in opdef.attribute_kinds if opdef is not None else ():
            value = op.properties.get(name)
            if value is not None and not ATTRIBUTE_KINDS[kind].stores(value):
                raise self.error(f"invalid properties {DictionaryAttr.from_dict(op.properties)} for op "
                                 f"{op.name}: Invalid attribute `{name}` in property conversion: {value}", pos)
        for name, n in zip(SEGMENT_SIZES, opdef.segments if opdef is not None else ()):
            value = op.properties.get(name)
            if n and value is not None and not segment_sizes(value, n):
                found = (f"size mismatch in attribute conversion: {len(value.values)} vs {n}"
                         if isinstance(value, DenseArrayAttr) and value.element_type == I32
                         else "expected DenseI32ArrayAttr")
                raise self.error(f"invalid properties {DictionaryAttr.from_dict(op.properties)} for op "
                                 f"{op.name}: for `{name}`: {found}", pos)

    def set_attrs(self, op: Operation, attrs: dict[str, Attribute]) -> None:
        """Add a parsed attribute dictionary to `op`: its inherent attributes (as the op's
        definition names them) go to `properties`, the others to `attributes`."""
        opdef = lookup(op.name)
        inherent = opdef.properties if opdef is not None else ()
        for k, v in attrs.items():
            if k in inherent and k not in op.properties:
                op.properties[k] = v
            else:
                op.attributes[k] = v

    # helpers for pretty ops ------------------------------------------------------------
    def parse_trailing_type_signature(self, op: Operation, refs, num_results: int) -> None:
        """`: T` (all operands and results have type T) or `: (A, B) -> R`."""
        self.expect(":", "':' and the op's type")
        p = self.skip()
        if self.peek("("):
            ft = self.parse_function_type()
            ins, outs = ft.inputs, ft.results
        else:
            t = self.parse_type()
            ins, outs = (t,) * len(refs), (t,) * max(num_results, 1)
        add_operands(op, self.resolve_all(refs, ins, p))
        set_results(op, outs)


def _builtin_element_type(w: str) -> Type | None:
    """The builtin scalar type named `w`; `LexError` for an integer width MLIR refuses."""
    m = _INT_TYPE.fullmatch(w)
    if m:
        width = read_int(m.group(2), 1 << 32)
        if width is None:
            raise lexer.LexError("invalid integer width", 0)
        if width > MAX_INT_WIDTH:
            raise lexer.LexError(f"integer bitwidth is limited to {MAX_INT_WIDTH} bits", 0)
        return IntegerType(width, m.group(1))
    if w in FLOAT_TYPES:
        return FloatType(w)
    if w == "index":
        return IndexType()
    if w == "none":
        return NoneType()
    return None


@dataclass(frozen=True, slots=True)
class _DeferredLoc:
    """`loc(#alias)` before the alias is defined; replaced when the module is read."""

    name: str
    pos: int


def _unknown_op_message(word: str, full: str, known: bool) -> str:
    """MLIR's error for pretty op `word` (resolved to `full`) it cannot parse; for an op jaxlib
    may know but this package reads in generic form only, how to write it."""
    dialect = full.split(".", 1)[0]
    tried = f" (tried '{full}' as well)" if full != word else ""
    if dialect not in JAXLIB_DIALECTS:
        return f"Dialect `{dialect}' not found for custom op '{word}' {tried}"
    if not known and dialect in COMPLETE_DIALECTS:
        return f"custom op '{word}' is unknown{tried}"
    return (f"custom assembly form of '{full}' is not supported; write it in the generic "
            f'form ("{full}"(...) ... : (...) -> ...)')


def read_int(digits: str, bound: int) -> int | None:
    """ASCII decimal `digits` (leading zeros allowed) as an int when below `bound`, else None.

    The one way every reader here turns digits into a number: it never converts more digits
    than `bound` has (Python's `int()` refuses 4,301 digits, and is slow far below that)."""
    digits = digits.lstrip("0") or "0"
    if len(digits) > bound.bit_length() // 3 + 1:  # (10**k >= 2**(3k))
        return None
    value = 0
    for i in range(0, len(digits), 4000):
        chunk = digits[i:i + 4000]
        value = value * 10 ** len(chunk) + int(chunk)
    return value if value < bound else None


def _int_literal(lit: str, bits: int = 1 << 24) -> int | None:
    """`12`, `-007` (decimal, leading zeros allowed) or `0x1F` (hex), as MLIR reads them; None
    when its magnitude needs more than `bits` bits."""
    body = lit.lstrip("+-")
    if body.startswith("0x"):
        body = body[2:].lstrip("0") or "0"
        value = int(body, 16) if len(body) <= bits // 4 + 1 else None
        value = value if value is not None and value.bit_length() <= bits else None
    else:
        value = read_int(body, 1 << bits)
    return None if value is None else -value if lit.startswith("-") else value


def _result_number(digits: str | None) -> int:
    """`#N` of a value use; a number past any result (`use of undeclared` or out of range
    later) when it does not fit an unsigned int, as MLIR's `getHashIdentifierNumber`."""
    if not digits:
        return 0
    n = read_int(digits, 1 << 32)
    return (1 << 32) if n is None else n


def _factor_symbol_string(i: int) -> str:
    """Shardy's `factorSymbolString`, wrapped indices included (`'i' + i` as a C char)."""
    return chr((ord("i") + i) % 256) if i < 17 else f"z_{i - 17}"


def _fits(value: int, t: IntegerType) -> bool:
    """Whether an integer literal fits type `t` (signless types accept both readings)."""
    w = t.width
    if w == 0:
        return value == 0
    if t.signedness == "u":
        return 0 <= value < 1 << w
    if t.signedness == "s":
        return -(1 << (w - 1)) <= value < 1 << (w - 1)
    return -(1 << (w - 1)) <= value < 1 << w


def _float_width(t: FloatType) -> int:
    """Bits of a float type (`f32` -> 32, `bf16` -> 16, `f8E4M3FN` -> 8, `tf32` -> 19)."""
    return FORMATS[t.name].width


_NON_ASCII_OUTSIDE_STRINGS = re.compile(r'(?:' + lexer.STRING.pattern + r'|[\x00-\x21\x23-\x7f])*')
"""Matches up to the first character outside ASCII that is not in a string literal."""
_NEWLINE_WS = re.compile(lexer.STRING.pattern + r"|\s*\n\s*")


def _canonical_opaque(text: str) -> str:
    """Verbatim dialect attribute text, with the layout MLIR would print.

    Line breaks go (none after an opening or before a closing bracket, one space elsewhere), and
    `#stablehlo.mesh` is written the way its printer does (`axes=[<name = "x", size = 2>]`).
    """
    if "\n" in text:
        def fix(m: re.Match) -> str:
            tok = m.group(0)
            if tok.startswith('"'):
                return tok
            before = text[m.start() - 1] if m.start() else ""
            after = text[m.end():m.end() + 1]
            return "" if before in "<[({" or after in ">])}," else " "
        text = _NEWLINE_WS.sub(fix, text)
    if "#stablehlo.mesh<" in text:
        text = re.sub(r"#stablehlo\.mesh<\s*axes\s*=\s*\[", "#stablehlo.mesh<axes=[", text)
        text = text.replace("#stablehlo.mesh_axis<", "<")
        text = re.sub(r"\]\s*,\s*device_ids\s*=\s*", "], device_ids=", text)
    return text


_DENSE_TOKEN = re.compile(r'(?:[ \t\n\r]+|//[^\n]*)*(?:([\[\](),])|(-)(?!>)|(' + lexer.STRING.pattern
                          + r')|([0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?)|(0x[0-9A-Fa-f]+|[0-9]+)'
                          r'|(true|false)(?![A-Za-z0-9_$.])|)')
"""One token of a dense literal: punctuation, '-', a string, a float, an integer, a bool, or
nothing (the end, or a token the literal cannot hold)."""
_T_PUNCT, _T_MINUS, _T_STRING, _T_FLOAT, _T_INT, _T_BOOL = range(1, 7)
_AT_DENSE = -1
"""A `LexError` position that names the `dense` keyword."""
_HEX_DIGITS = re.compile(r"[0-9A-Fa-f]*")
_TOKEN_STARTS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:,.(){}[]<>=?+*-@#%^!|\"")
"""Characters that start an MLIR token; the lexer refuses any other (`unexpected character`)."""


@dataclass(frozen=True, slots=True)
class _DenseLiteral:
    """MLIR's `TensorLiteralParser` state after reading a literal: a hex string (text, pos), or
    the shape of its nested lists (None for no list) and its elements `(negative, kind, text,
    pos)` in order, a complex element being two."""

    hex: tuple[str, int] | None
    shape: tuple[int, ...] | None
    storage: list


def _scan_dense(s: str, pos: int) -> tuple[_DenseLiteral, int]:
    """Read the dense literal at `pos` of `s` as MLIR's `TensorLiteralParser::parse` does
    (iteratively: lists and complex parentheses nest without bound); the literal and the position
    after its closing '>'. `LexError` with MLIR's message and position."""
    storage: list = []

    def token():
        m = _DENSE_TOKEN.match(s, pos)
        at = m.start(m.lastindex) if m.lastindex else m.end()
        if not m.lastindex and at < len(s):
            if s[at] == '"':
                lexer.lex_string(s, at)  # raises MLIR's error for the unterminated string
            if s[at] not in _TOKEN_STARTS:
                fail("unexpected character", at)
            if s[at] == "." and not s.startswith("...", at):
                fail("expected three consecutive dots for an ellipsis", at + 1)
        return m, at

    def fail(message, at):
        raise lexer.LexError(message, at)

    def here(message, at):
        """MLIR's `emitError` at the current token (at the end of the text: the last character)."""
        fail(message, at - (at == len(s)))

    def wrong(message, at):
        """MLIR's `emitWrongTokenError`: at the end of the token before (past blank space)."""
        at -= at == len(s)
        while at and s[at - 1] in " \t\r\n":
            at -= 1
        fail(message, at)

    def element(m, at):
        """One element (complex pairs iteratively); returns the position after it."""
        nonlocal pos
        open_pairs = []  # per '(' still open: whether its ',' was read
        while True:
            while m.lastindex == _T_PUNCT and m.group(_T_PUNCT) == "(":
                pos = m.end()
                open_pairs.append(False)
                m, at = token()
            k = m.lastindex
            negative = k == _T_MINUS
            if negative:
                pos = m.end()
                m, at = token()
                k = m.lastindex
                if k not in (_T_FLOAT, _T_INT):
                    here("expected integer or floating point literal", at)
            elif k not in (_T_STRING, _T_FLOAT, _T_INT, _T_BOOL):
                here("expected element literal of primitive type", at)
            storage.append((negative, k, m.group(k), at))
            pos = m.end()
            while open_pairs:
                m, at = token()
                if not open_pairs[-1]:
                    if m.group(_T_PUNCT) != ",":
                        wrong("expected ',' between complex elements", at)
                    pos = m.end()
                    open_pairs[-1] = True
                    break
                if m.group(_T_PUNCT) != ")":
                    wrong("expected ')' after complex elements", at)
                pos = m.end()
                open_pairs.pop()
            else:
                return
            m, at = token()

    hex_text = shape = None
    m, at = token()
    if m.lastindex == _T_STRING:
        hex_text = (m.group(_T_STRING), at)
        pos = m.end()
    elif m.group(_T_PUNCT) == "[":
        frames = []  # per open list: [size, dims of its first element or None]
        pos = m.end()
        frames.append([0, None])
        while True:
            m, at = token()
            if m.group(_T_PUNCT) == "[":
                pos = m.end()
                frames.append([0, None])
                m, at = token()
                if m.group(_T_PUNCT) != "]":
                    continue
                pos = m.end()
                frames.pop()
                dims = (0,)
            elif m.group(_T_PUNCT) == "]" and frames[-1][0] == 0 and frames[-1][1] is None:
                pos = m.end()
                frames.pop()
                dims = (0,)
            else:
                element(m, at)
                dims = ()
            while True:  # `dims` closes one element of the innermost open list
                if not frames:
                    shape = dims
                    break
                frame = frames[-1]
                m, at = token()
                frame[0] += 1
                if frame[1] is None:
                    frame[1] = dims
                elif frame[1] != dims:
                    here("tensor literal is invalid; ranks are not consistent between elements", at)
                if m.group(_T_PUNCT) == ",":
                    pos = m.end()
                    break
                if m.group(_T_PUNCT) != "]":
                    wrong("expected ']'", at)
                pos = m.end()
                frames.pop()
                dims = (frame[0],) + frame[1]
            if shape is not None:
                break
    elif not s.startswith(">", at):
        element(m, at)
    m, at = token()
    if not s.startswith(">", at):
        wrong("expected '>'", at)
    return _DenseLiteral(hex_text, shape, storage), at + 1


def _storage_bytes(el: Type) -> int | None:
    """Bytes per element in MLIR's dense storage (and in its hex form), or None for an element
    type a hex literal cannot hold."""
    if isinstance(el, ComplexType):
        part = _storage_bytes(el.element_type)
        return None if part is None else 2 * part
    if isinstance(el, IndexType):
        return 8
    if isinstance(el, IntegerType):
        return -(-el.width // 8)
    if isinstance(el, FloatType):
        return -(-_float_width(el) // 8)
    return None


def _dense_body(lit: _DenseLiteral, typ: RankedTensorType) -> str | None:
    """MLIR's `TensorLiteralParser::getAttr` and the printer: the canonical body of literal
    `lit` as `typ` (None: strings, kept as written). `LexError` (position in the literal; `_AT_DENSE` for the `dense` keyword)
    with MLIR's message where it refuses."""
    el = typ.element_type
    n = math.prod(typ.shape)
    width = _storage_bytes(el)
    if lit.hex is not None and width is not None:
        text, at = lit.hex
        digits = text[1:-1].removeprefix("0x")
        if not text.startswith('"0x') or len(digits) % 2 or not _HEX_DIGITS.fullmatch(digits):
            raise lexer.LexError("expected string containing hex digits starting with `0x`", at)
        if len(digits) // 2 not in (width, width * n):
            raise lexer.LexError(f"elements hex data size is invalid for provided type: '{typ}'", _AT_DENSE)
        dt = load("sdy_passes.element_types").numpy_dtype(el)
        if dt is None:  # (tf32, f80, f128, f6, i7, ui12, ...): word by word
            if isinstance(el, FloatType):  # bits above the width are stored, not read
                mask, text_of = (1 << FORMATS[el.name].width) - 1, format_float_bits
            elif isinstance(el, IntegerType):
                mask, text_of = -1, _int_word_text
            else:
                return text
            raw = bytes.fromhex(digits)
            words = [int.from_bytes(raw[i:i + width], "little") & mask for i in range(0, len(raw), width)]
            if not words:
                return ""
            if all(w == words[0] for w in words):
                return text_of(words[0], el)
            if n > HEX_ELEMENTS_LIMIT:
                return '"0x' + digits.upper() + '"'
            return _nested([text_of(w, el) for w in words], typ)
        raw = load("numpy").frombuffer(bytes.fromhex(digits), "u1")
        return _body_of_values(raw.view(dt), typ, n)  # (i1: a splat only of equal bytes)
    if lit.hex is not None:
        return None  # (a hex string of another element type is that type's string)
    if lit.shape is not None and lit.shape != tuple(typ.shape):
        raise lexer.LexError("inferred shape of elements literal ([%s]) does not match type ([%s])"
                             % (", ".join(map(str, lit.shape)), ", ".join(map(str, typ.shape))), _AT_DENSE)
    storage = lit.storage
    if not storage and n:
        raise lexer.LexError(f"parsed zero elements, but type ('{typ}') expected at least 1", _AT_DENSE)
    if isinstance(el, ComplexType):
        if lit.shape is None and n and len(storage) != 2:
            raise lexer.LexError(f"parsed {len(storage)} elements, but type ('{el}') expected 2 elements", _AT_DENSE)
        if lit.shape is not None and len(storage) != 2 * n:
            raise lexer.LexError(f"parsed {len(storage)} elements, but type ('{typ}') expected {2 * n} elements", _AT_DENSE)
        part = el.element_type
    else:
        if 1 < len(storage) < n:  # (complex pairs in a list of scalars; jaxlib reads past them)
            raise lexer.LexError(f"parsed {len(storage)} elements, but type ('{typ}') expected {n} elements", _AT_DENSE)
        part = el
    if isinstance(part, FloatType):
        leaves = [_float_leaf(e, part) for e in storage]
    elif isinstance(part, (IntegerType, IndexType)):
        leaves = [_int_leaf(e, part) for e in storage]
    else:  # MLIR reads the elements of other types as strings
        for _, kind, text, _ in storage:
            if kind != _T_STRING:
                raise lexer.LexError(f"expected string token, got {text}", _AT_DENSE)
        texts = [escape_string(lexer.decode_escapes(text[1:-1])) for _, _, text, _ in storage]
        if not texts:
            return ""
        return texts[0] if all(x == texts[0] for x in texts) else _nested(texts[:n], typ)
    return _print_leaves(leaves, el, n, typ)


def _float_leaf(element, t: FloatType) -> tuple[bool, float | int]:
    """MLIR's `parseFloatFromLiteral` of one element: (False, the f64 value) of a decimal, or
    (True, the bits) of a hexadecimal integer."""
    negative, kind, text, at = element
    if kind == _T_FLOAT:
        return False, -float(text) if negative else float(text)  # beyond f64: inf, as MLIR
    if kind != _T_INT:
        raise lexer.LexError("expected floating point literal", at)
    if not text.startswith("0x"):
        raise lexer.LexError("unexpected decimal integer literal for a floating point value", at)
    if negative:
        raise lexer.LexError("hexadecimal float literal should not have a leading minus", at)
    bits = _int_literal(text, _float_width(t))
    if bits is None:
        raise lexer.LexError("hexadecimal float constant out of range for type", at)
    return True, bits


def _int_leaf(element, t: IntegerType | IndexType) -> int:
    """MLIR's `buildAttributeAPInt` of one element, as the value printed (signless as signed)."""
    negative, kind, text, at = element
    unsigned = isinstance(t, IntegerType) and t.signedness == "u"
    if negative and unsigned:
        raise lexer.LexError("expected unsigned integer elements, but parsed negative value", at)
    if kind == _T_FLOAT:
        raise lexer.LexError("expected integer elements, but parsed floating-point", at)
    width = t.width if isinstance(t, IntegerType) else 64
    if kind == _T_BOOL:
        if width != 1 or not isinstance(t, IntegerType):
            raise lexer.LexError("expected i1 type for 'true' or 'false' values", at)
        return int(text == "true")
    m = _int_literal(text, width) if kind == _T_INT else None
    half = 1 << (width - 1) if width else 0
    if (m is None or (negative and not 0 < m <= half)
            or (not negative and not unsigned and (isinstance(t, IndexType) or t.signedness == "s") and m >= half)):
        raise lexer.LexError("integer constant out of range for type", at)
    if negative:
        return -m
    return m - (1 << width) if not unsigned and width > 1 and m >= half else m


def _print_leaves(leaves: list, el: Type, n: int, typ: RankedTensorType) -> str:
    """The canonical body of the element values read (`_float_leaf`/`_int_leaf` results, two
    per complex element): one is a splat, as are more that agree bitwise (MLIR prints
    those as one), else the first `n`, nested as `typ`."""
    np = load("numpy")
    numpy_dtype = load("sdy_passes.element_types").numpy_dtype
    complex_part = el.element_type if isinstance(el, ComplexType) else None
    part = complex_part or el
    dt = numpy_dtype(el)  # (complex: None unless numpy has the pair, complex<f32|f64>)
    if dt is not None and isinstance(part, FloatType):
        values = round_floats(np.array([0.0 if h else v for h, v in leaves], np.float64), part)
        bits = values.view(f"u{values.dtype.itemsize}")
        for i, (h, v) in enumerate(leaves):
            if h:
                bits[i] = v
        values = values.view(dt)
    elif dt is not None:
        values = np.array(leaves, dtype=dt)
    elif isinstance(el, FloatType):  # tf32, f80, f128, f6: each element's bits as APFloat makes them
        fmt = FORMATS[el.name]
        bits = [stored_bits(v, fmt) if h else float_bits(v, el) for h, v in leaves]
        if not bits:
            return ""
        if all(b == bits[0] for b in bits):
            return format_float_bits(bits[0], el)
        if len(bits) > HEX_ELEMENTS_LIMIT:
            size = -(-fmt.width // 8)
            return '"0x' + b"".join(b.to_bytes(size, "little") for b in bits[:n]).hex().upper() + '"'
        return _nested([format_float_bits(b, el) for b in bits[:n]], typ)
    else:
        texts = [_leaf_text(x, part) for x in leaves]
        if complex_part is not None:
            texts = [f"({a},{b})" for a, b in zip(texts[::2], texts[1::2])]
        if not texts:
            return ""
        if all(x == texts[0] for x in texts):
            return texts[0]
        return _nested(texts[:n], typ)
    return _body_of_values(values, typ, n)


def _leaf_text(leaf, t: Type) -> str:
    """One element's text for an element type numpy lacks."""
    if not isinstance(t, FloatType):
        return ("true" if leaf else "false") if isinstance(t, IntegerType) and t.width == 1 else str(leaf)
    hexa, v = leaf
    if hexa:
        return f"0x{v:0{-(-_float_width(t) // 4)}X}"
    return format_float(_round_float(v, t), t)


def _nested(items: list[str], typ: RankedTensorType) -> str:
    for d in reversed(typ.shape[1:]):
        items = ["[" + ", ".join(items[i:i + d]) + "]" for i in range(0, len(items), d)]
    return "[" + ", ".join(items) + "]"


def _body_of_values(values, typ: RankedTensorType, n: int) -> str:
    """MLIR's print of dense values (one, or at least `n`): a splat when all have the same
    bits, else the first `n` as each element's bytes (little-endian, upper-case hex) above
    HEX_ELEMENTS_LIMIT elements, or as a list nested as the shape."""
    if not values.size:
        return ""
    complex_parts = values.dtype.kind == "c"
    parts = values.view(values.real.dtype) if complex_parts else values
    bits = parts.view(f"u{parts.dtype.itemsize}")
    per = 2 if complex_parts else 1
    if (bits.reshape(-1, per) == bits[:per]).all():
        return _element_text(values[0], bits[:per], typ.element_type)
    if n > HEX_ELEMENTS_LIMIT:
        return '"0x' + bits[:n * per].astype(f"<u{parts.dtype.itemsize}").tobytes().hex().upper() + '"'
    el = typ.element_type
    return _nested([_element_text(values[i], bits[i * per:(i + 1) * per], el) for i in range(n)], typ)


def _element_text(value, bits, el: Type) -> str:
    if isinstance(el, ComplexType):
        return (f"({_element_text(value.real, bits[:1], el.element_type)},"
                f"{_element_text(value.imag, bits[1:], el.element_type)})")
    if isinstance(el, FloatType):
        w = _float_width(el)
        if w < 8:  # a hex blob's bits above the width are stored, not read
            value = load("numpy").array(int(bits[0]) & ((1 << w) - 1), "u1").view(value.dtype)
        v = float(value)
        return format_float(v, el) if math.isfinite(v) else f"0x{int(bits[0]):0{2 * bits.dtype.itemsize}X}"
    if isinstance(el, IntegerType):
        return _int_word_text(int(bits[0]), el)
    return str(int(value))


def _int_word_text(word: int, el: IntegerType) -> str:
    """An integer element printed from its stored word, as MLIR's `readBits` and `APInt::print`
    print it (a hex blob's bits above the width are stored and not cleared)."""
    w = el.width
    if w == 1:
        return "true" if word else "false"
    if el.signedness == "u":
        return str(word)
    low = word & ((1 << w) - 1)
    value = low - (1 << w) if low >> (w - 1) else low
    return str(value) if value or not word else ""  # (APInt::toString prints no digit of 0 then)



_DECIMAL = r"-?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?"
_DECIMAL_LIST = re.compile(rf"[ \t\n\r\[]*{_DECIMAL}(?:[ \t\n\r\]]*,[ \t\n\r\[]*{_DECIMAL})*[ \t\n\r\]]*")
_NOT_A_DIGIT = str.maketrans("", "", "[] \t\n\r")
_ONLY_BRACKETS = str.maketrans("", "", "0123456789.eE+- \t\n\r")


def _skeleton(shape: tuple[int, ...]) -> str:
    """The brackets and commas of a literal nested as `shape` (`[[,,],[,,]]` for 2x3)."""
    inner = ""
    for d in reversed(shape):
        inner = "[" + ",".join([inner] * d) + "]"
    return inner


def _decimal_dense_body(s: str, typ: RankedTensorType) -> str | None:
    """The canonical body of `s`, a list of decimal literals (`_DECIMAL_LIST`), as `typ`,
    read at once (as the element-wise path reads each: the nearest f64, then the nearest value of
    the element type), or None when it is not nested as `typ`'s shape (the element-wise path then
    says why) or numpy lacks the element type."""
    np = load("numpy")
    if s.translate(_ONLY_BRACKETS) != _skeleton(typ.shape):
        return None
    parts = s.translate(_NOT_A_DIGIT).split(",")
    values = round_floats(np.fromiter(map(float, parts), np.float64, len(parts)), typ.element_type)
    return None if values is None else _body_of_values(values, typ, len(parts))
