"""Exceptions of the `sdy_passes` package: one root, `SdyError`, a `ValueError`; and warnings."""

import os
import warnings


class SdyError(ValueError):
    """Any problem reading, verifying or transforming a module."""


class IRParseError(SdyError):
    """MLIR text that cannot be read; the message has line:col, the line and a caret.

    `message` is the bare diagnostic, in MLIR's words; `found` what the text has instead of
    what was expected ("" when the message says it); `filename`, `line`, `col` (1-based) say
    where; `str(e)` is `file:line:col: error: message (found ...)`, the source line and a caret
    under the column.
    """

    def __init__(self, message: str, filename: str = "-", line: int = 0, col: int = 0,
                 source_line: str = "", found: str = ""):
        self.message = message
        self.found = found
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        text = f"{filename}:{line}:{col}: error: {message}" + (f" (found {found})" if found else "")
        if source_line:
            text += f"\n{source_line}\n{' ' * (col - 1)}^"
        super().__init__(text)

    @classmethod
    def at(cls, message: str, filename: str, line: int, col: int, source_line: str,
           found: str = "") -> "IRParseError":
        return cls(message, filename, line, col, source_line, found)


class _LocatedError(SdyError):
    """An error about an op: `message` (Shardy's text) and the op's `location` (or None).

    `str(e)` is `loc("file":line:col): message`, the way jaxlib reports diagnostics.
    """

    def __init__(self, message: str, location=None):
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location is not None else message)


class VerificationError(_LocatedError):
    """A module that fails verification; the message carries the op's location."""


class PassFailedError(_LocatedError):
    """A pass reported an error (Shardy's message, at the op's location)."""


def source_line(location) -> str | None:
    """`model.py:42`: the JAX source line of a location with debug info (the first file position
    inside JAX's `NameLoc` / `CallSiteLoc` / `FusedLoc` chains, callee before caller, or a bare
    position in a `.py` file); None for the parser's own positions and unknown locations."""
    def find(loc, nested: bool) -> str | None:
        if hasattr(loc, "filename") and hasattr(loc, "line"):
            if nested or loc.filename.endswith(".py"):
                return f"{os.path.basename(loc.filename)}:{loc.line}"
            return None
        children = [getattr(loc, k, None) for k in ("child", "callee", "caller")] + list(getattr(loc, "locations", ()))
        return next((found for c in children if c is not None and (found := find(c, True))), None)

    return find(location, False) if location is not None else None


def shown(value) -> str:
    """A value for a message, at most 40 characters: never Python's own error (an int past
    4,300 digits, a container of them, a failing `repr`)."""
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an int of {value.bit_length()} bits"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 (any repr may fail; the message must not)
        return f"a {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."


def expect(value, kinds: tuple, what: str, where: str, error: type = SdyError):
    """`value` when it is one of `kinds` (bool never counts as an int here), else `error`
    naming the argument, what it takes and the type found."""
    if not isinstance(value, kinds) or (type(value) is bool and bool not in kinds):
        raise error(f"{where}: expected {what}, found {type(value).__name__} {shown(value)}")
    return value


class SdyWarning(UserWarning):
    """A diagnostic that does not stop a pass (Shardy's `emitWarning`), at an op's `location`.

    Issued through Python's `warnings`; `sdy-opt` prints it as `file:line:col: warning: message`.
    In a module with debug info (`lowered.as_text(debug_info=True)`), the text ends with the JAX
    source line of the location, `(model.py:42)`; `source` holds it (None without debug info).
    """

    def __init__(self, message: str, location=None):
        self.message = message
        self.location = location
        self.source = source_line(location)
        text = f"{location}: {message}" if location is not None else message
        super().__init__(text + (f" ({self.source})" if self.source else ""))


_WARNED: set[str] = set()


def emit_warning_once(key: str, message: str, location) -> None:
    """Shardy's `emitOpWarningOnce`: a warning the first time `key` is seen in this process."""
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(SdyWarning(message, location), stacklevel=2)


class ExecutionError(SdyError):
    """A program that cannot run as given: bad arguments (naming the argument, expected and
    found), a malformed op met while running; `str(e)` starts with the op's `line:col`."""

    def __init__(self, message: str, location=None):
        self.message = message
        self.location = location
        where = _position(location)
        super().__init__(f"{where}: {message}" if where else message)


class UnsupportedOpError(ExecutionError):
    """An op (or custom_call target) the interpreter has no evaluator for."""


def _position(location) -> str:
    """`line:col` of a file location (the first one inside a name/callsite/fused location)."""
    if location is None:
        return ""
    line, col = getattr(location, "line", None), getattr(location, "col", None)
    if line is not None:
        return f"{line}:{col}"
    for child in (getattr(location, "child", None), getattr(location, "callee", None),
                  *getattr(location, "locations", ())):
        where = _position(child)
        if where:
            return where
    return str(location) if type(location).__name__ != "UnknownLoc" else ""
