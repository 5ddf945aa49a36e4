"""What `sdy-opt` and `sdy-run` share: reading the input, writing the output (a closed pipe or
stdout is one error line, not a traceback), the `PROG: error: ...` line and the
`FILE:LINE:COL: error: ...` diagnostic with the source line and a caret."""

from __future__ import annotations

import os
import sys

from sdy_passes.attributes import FileLineColLoc
from sdy_passes.errors import IRParseError, source_line


class Usage(Exception):
    """A bad command line: one `error:` line, exit 2."""


class Failure(Exception):
    """Input or output that cannot be read or written: one `error:` line, exit 1."""


def error(prog: str, message: str) -> None:
    if sys.stderr is not None:
        try:
            print(f"{prog}: error: {message}", file=sys.stderr)
        except (OSError, ValueError):
            pass


def render(severity: str, err, filename: str, text: str) -> str:
    """`file:line:col: error: message` plus the source line and a caret, like mlir-opt."""
    if isinstance(err, IRParseError):
        return str(err)
    loc = getattr(err, "location", None)
    message = getattr(err, "message", str(err))
    if isinstance(loc, FileLineColLoc) and loc.line >= 1:
        lines = text.splitlines()
        source = lines[loc.line - 1] if loc.line <= len(lines) else ""
        head = f"{filename}:{loc.line}:{loc.col}: {severity}: {message}"
        return f"{head}\n{source}\n{' ' * (loc.col - 1)}^" if source else head
    if (where := source_line(loc)) is not None:  # debug info: the JAX source line
        return f"{filename}: {severity}: {message} ({where})"
    return f"{filename}: {severity}: {message}"


def read(path: str) -> str:
    """The UTF-8 text of `path` ('-': stdin)."""
    try:
        if path == "-":
            if sys.stdin is None:
                raise Failure("cannot read stdin: it is closed")
            data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as e:
        raise Failure(f"cannot read '{path}': {e.strerror or e}") from None
    except ValueError as e:  # a closed stdin file object
        raise Failure(f"cannot read stdin: {e}") from None
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        name = "stdin" if path == "-" else f"'{path}'"
        raise Failure(f"{name} is not UTF-8 text: byte 0x{data[e.start]:02x} at offset "
                      f"{e.start} cannot be decoded") from None


def write(result: str, output: str | None) -> None:
    """`result` to the file `output`, or stdout (None)."""
    try:
        if output:
            with open(output, "w", encoding="utf-8") as f:
                f.write(result)
            return
        if sys.stdout is None:
            raise Failure("cannot write the output: stdout is closed (use -o FILE)")
        sys.stdout.write(result)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        raise Failure("output closed before everything was written (broken pipe)") from None
    except OSError as e:
        if not output:
            _silence_stdout()
        where = f"'{output}'" if output else "stdout"
        raise Failure(f"cannot write to {where}: {e.strerror or e}") from None
    except ValueError as e:  # a closed stdout file object
        raise Failure(f"cannot write the output: {e}") from None


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
