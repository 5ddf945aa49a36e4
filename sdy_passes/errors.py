"""Exceptions of the `sdy_passes` package: one root, `SdyError`, a `ValueError`; and warnings."""

import warnings


class SdyError(ValueError):
    """Any problem reading, verifying or transforming a module."""


class IRParseError(SdyError):
    """MLIR text that cannot be read; the message has line:col, the line and a caret.

    `message` is the bare diagnostic; `filename`, `line`, `col` (1-based) say where;
    `str(e)` is `file:line:col: error: message`, the source line and a caret under the column.
    """

    def __init__(self, message: str, filename: str = "-", line: int = 0, col: int = 0,
                 source_line: str = ""):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        text = f"{filename}:{line}:{col}: error: {message}"
        if source_line:
            text += f"\n{source_line}\n{' ' * (col - 1)}^"
        super().__init__(text)

    @classmethod
    def at(cls, message: str, filename: str, line: int, col: int, source_line: str) -> "IRParseError":
        return cls(message, filename, line, col, source_line)


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


class SdyWarning(UserWarning):
    """A diagnostic that does not stop a pass (Shardy's `emitWarning`), at an op's `location`.

    Issued through Python's `warnings`; `sdy-opt` prints it as `file:line:col: warning: message`.
    """

    def __init__(self, message: str, location=None):
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location is not None else message)


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
