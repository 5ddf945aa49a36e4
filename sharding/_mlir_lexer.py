"""MLIR's lexical rules, shared by `sharding.syntax` (sdy attribute text) and
`sdy_passes.parser` (whole modules): whitespace and `//` comments, bare identifiers, string
literals and their escapes, integers, comma lists, and the bracket matching that cuts a dialect
attribute's `<...>` body.

Errors are `LexError(message, pos)` with MLIR's message and its offset in the text; each package
turns it into its own located error (`ShardingParseError`, `sdy_passes.IRParseError`).
"""

from __future__ import annotations

import re
from typing import Callable, TypeVar

__all__ = ["LexError", "SPACE", "BARE_ID", "STRING", "lex_string", "decode_escapes", "scan_balanced",
           "to_int", "comma_list"]

T = TypeVar("T")

SPACE = re.compile(r"(?:[ \t\n\r\x00]+|//[^\n]*)*")
"""Whitespace and `//` comments between tokens (a NUL too: MLIR's lexer skips one inside the buffer)."""
BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
"""MLIR's `bare-id` (keywords, attribute names, op names)."""
STRING = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["\\nt]|[0-9a-fA-F]{2}))*"')
"""A well-formed string literal (what `lex_string` accepts), quotes included."""
_SIMPLE_STRING = re.compile(r'"([^"\\\n\v\f]*)"')
_HEXDIGITS = frozenset("0123456789abcdefABCDEF")
_BALANCE_STOP = re.compile(r'[<>\[\](){}"\x00]|->')
_OPENERS = {">": "<", "]": "[", ")": "(", "}": "{"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}


class LexError(ValueError):
    """Text MLIR's lexer refuses: `message` (MLIR's) at offset `pos`."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.message = message
        self.pos = pos


def lex_string(text: str, pos: int) -> tuple[int, str]:
    """The string literal starting with the `"` at `pos`: (its end, its decoded value).

    As MLIR's lexer: a line break (or `\\v`, `\\f`) or the end of the text before the closing
    quote is `expected '"' in string literal` there; escapes are `\\"`, `\\\\`, `\\n`, `\\t`
    and `\\XX` (two hex digits), anything else is `unknown escape in string literal`.
    """
    m = _SIMPLE_STRING.match(text, pos)
    if m:
        return m.end(), m.group(1)
    i = pos + 1
    n = len(text)
    while True:
        if i >= n or text[i] in "\n\v\f":
            raise LexError("expected '\"' in string literal", min(i, n))
        c = text[i]
        if c == '"':
            return i + 1, decode_escapes(text[pos + 1 : i])
        if c == "\\":
            nxt = text[i + 1 : i + 2]
            if nxt and nxt in '"\\nt':
                i += 2
                continue
            if i + 2 < n and text[i + 1] in _HEXDIGITS and text[i + 2] in _HEXDIGITS:
                i += 3
                continue
            raise LexError("unknown escape in string literal", i)
        i += 1


def decode_escapes(raw: str) -> str:
    """The value of a string literal's body `raw` (its escapes checked by `lex_string`).

    MLIR strings are bytes: `\\XX` is one byte, and bytes that are not UTF-8 survive as
    surrogates (`surrogateescape`), so printing gives back the same bytes.
    """
    if "\\" not in raw:
        return raw
    out = bytearray()
    i = 0
    while i < len(raw):
        j = raw.find("\\", i)
        if j < 0:
            j = len(raw)
        out += raw[i:j].encode("utf-8", "surrogateescape")
        if j == len(raw):
            break
        nxt = raw[j + 1]
        if nxt in '"\\':
            out.append(ord(nxt))
            i = j + 2
        elif nxt == "n":
            out.append(10)
            i = j + 2
        elif nxt == "t":
            out.append(9)
            i = j + 2
        else:
            out.append(int(raw[j + 1 : j + 3], 16))
            i = j + 3
    return out.decode("utf-8", "surrogateescape")


def scan_balanced(text: str, pos: int, *, dialect_body: bool = True) -> int:
    """The end (exclusive) of the bracketed text opened at `pos` (which must hold `<`, `[`, `(`
    or `{`).

    MLIR's `parseDialectSymbolBody`: strings are lexed (and may hold brackets), `->` is not a
    closing `>`, a NUL character ends the text as MLIR's buffer does. A closer that does not
    match, or the end, is `unbalanced '(' character in pretty dialect name` (naming the open
    bracket), reported where MLIR's current token is: the last string lexed in the body, or
    the opening bracket. With `dialect_body=False` (spans MLIR reads token by token, as dense
    literals) it is the token parser's `expected ']'` (what the innermost bracket wants), at
    the closer that does not match or at the end.
    """
    stack: list[str] = []
    token = pos
    i = pos
    while True:
        m = _BALANCE_STOP.search(text, i)
        c = "\x00" if m is None else m.group()
        if c in _OPENERS and stack[-1] == _OPENERS[c]:
            stack.pop()
            if not stack:
                return m.end()
        elif c in "<[({":
            stack.append(c)
        elif c == '"':
            token = m.start()
            i = lex_string(text, token)[0]
            continue
        elif c != "->":  # a closer that does not match, or the end
            if not dialect_body:
                raise LexError(f"expected '{_CLOSERS[stack[-1]]}'", len(text) if m is None else m.start())
            raise LexError(f"unbalanced '{stack[-1]}' character in pretty dialect name", token)
        i = m.end()


def to_int(digits: str, base: int = 10) -> int:
    """`int(digits, base)`; anything longer than 40 digits is out of any range MLIR reads
    (2**64 stands for it), without Python's huge-int conversion."""
    return int(digits, base) if len(digits) <= 40 else 2**64


def comma_list(element: Callable[[], T], optional: Callable[[str], bool]) -> list[T]:
    """`element (, element)*`: `optional(",")` consumes a comma if one is next."""
    items = [element()]
    while optional(","):
        items.append(element())
    return items
