"""Command line: `python -m tiling show "bf16[4,8]{1,0:T(2,4)(2,1)}"` prints the memory map;
`python -m tiling encode x.npy "{1,0:T(8,128)}" x.bin` and
`python -m tiling decode x.bin "f32[256,512]{1,0:T(8,128)}" x.npy` convert files.

Subcommands are registered in `_build_parser`; each is a `_cmd_<name>(args) -> int` function.
Errors (bad layouts, unreadable or unwritable files) print one `error:` line and exit with
status 1; usage errors exit with status 2, as argparse does. No traceback reaches the user.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from tiling.codec import allocate, decode, encode
from tiling.errors import LayoutError
from tiling.indexing import (
    byte_size, check_encodable, linear_index, logical_index, num_elements, tiled_dimensions,
)
from tiling.layout import Layout, Shape


def _format_index(e) -> str:
    return ",".join(str(int(v)) for v in e) if len(e) else "()"


def _first_indices(dims: tuple[int, ...], count: int) -> np.ndarray:
    """The first `count` indices of `dims` in C order, `count <= prod(dims)` (dims may be huge)."""
    index = np.zeros((count, len(dims)), np.int64)
    rest = np.arange(count, dtype=np.int64)
    for j in range(len(dims) - 1, -1, -1):
        if dims[j] > count:  # (then rest < dims[j])
            index[:, j] = rest
            break
        index[:, j] = rest % dims[j]
        rest //= dims[j]
    return index


def memory_map(shape: Shape, *, limit: int = 4096) -> str:
    """The text `show` prints: sizes, each element's linear index, and the slots in memory order.

    Only the first `limit` elements and slots are listed.
    """
    check_encodable(shape, allow_nested_padding=True)
    dims = shape.dimensions
    slots = num_elements(shape)
    count = math.prod(dims)
    lines = [
        str(shape),
        f"physical dims {shape.physical_dimensions} -> tiled dims {tiled_dimensions(shape)}",
        f"{slots} element slots ({count} elements, {slots - count} padding), "
        f"{shape.element_size_in_bits} bits each, "
        f"{-(-slots * shape.element_size_in_bits // 8)} bytes",
    ]
    try:
        check_encodable(shape)
    except LayoutError:
        lines.append("note: a later tile pads again; XLA (first tile only) sizes the buffer as "
                     "smaller; encode/decode need allow_nested_padding=True")
    else:
        assert byte_size(shape) == -(-slots * shape.element_size_in_bits // 8)
    shown = min(count, limit)
    index = _first_indices(dims, shown)
    lin = np.asarray(linear_index(index, shape)).reshape(-1)
    width = len(str(max(slots - 1, 0)))

    lines.append("")
    lines.append("linear index of each element" + (" (row = last dim)" if len(dims) > 1 else ""))
    if len(dims) == 0:
        lines.append(f"  () -> {int(lin[0])}")
    else:
        rows = dims[-1] or 1
        for start in range(0, shown, rows):
            head = _format_index(index[start][:-1])
            label = f"[{head},:]" if len(dims) > 1 else "[:]"
            cells = " ".join(f"{int(v):>{width}}" for v in lin[start:start + rows])
            lines.append(f"  {label:>{2 * len(dims) + 4}} {cells}")
    if shown < count:
        lines.append(f"  ... ({count - shown} more elements)")

    # Slots in memory order, one first-level tile per line when there is one.
    first = shape.layout.tiles[0].dimensions if shape.layout.tiles else ()
    if first:
        per_line = math.prod(d for d in first if d > 0)
    else:
        per_line = dims[shape.layout.minor_to_major[0]] if dims else 1
    per_line = max(1, min(per_line, 64))
    listed = min(slots, limit)
    held, is_element = logical_index(np.arange(listed), shape)
    names = [_format_index(e) if ok else "--" for e, ok in zip(held, is_element)]
    cell = max([len(name) for name in names] + [2])
    lines.append("")
    lines.append(f"memory order (-- = padding), {per_line} slots per line")
    for start in range(0, listed, per_line):
        cells = " ".join(f"{name:>{cell}}" for name in names[start:start + per_line])
        lines.append(f"  {start:>{width}}: {cells}")
    if listed < slots:
        lines.append(f"  ... ({slots - listed} more slots)")
    return "\n".join(lines)


def _cmd_show(args) -> int:
    print(memory_map(Shape.parse(args.shape), limit=args.limit))
    return 0


class _Progress:
    """A one-line progress bar on stderr for large inputs (silent below `threshold` bytes)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.done, self.enabled = max(total, 1), 0, enabled

    def step(self, nbytes: int, what: str) -> None:
        self.done += nbytes
        if self.enabled:
            frac = min(self.done / self.total, 1.0)
            bar = "#" * int(frac * 30)
            print(f"\r[{bar:<30}] {frac:6.1%} {what:<8}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled:
            print(file=sys.stderr, flush=True)


_CHUNK = 16 << 20
_PROGRESS_THRESHOLD = 64 << 20


def _copy_in_chunks(src: np.ndarray, dst: np.ndarray, progress: _Progress, what: str) -> None:
    """dst[...] = src for flat byte arrays, chunk by chunk so the bar moves."""
    for start in range(0, src.size, _CHUNK):
        stop = min(start + _CHUNK, src.size)
        dst[start:stop] = src[start:stop]
        progress.step(stop - start, what)


def _show_progress(args, nbytes: int) -> bool:
    """`--progress`/`--no-progress`, else a bar for large inputs when stderr is a terminal (a log
    file or a pipe would collect every redraw)."""
    if args.progress is not None:
        return args.progress
    return nbytes >= _PROGRESS_THRESHOLD and sys.stderr.isatty()


def _load_npy(path: str) -> np.ndarray:
    """The array in the .npy file `path` (memory-mapped), or LayoutError saying why not."""
    if os.path.exists(path) and not os.path.isfile(path):
        raise LayoutError(f"{path} is not a regular file (an .npy array is expected)")
    try:
        x = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, EOFError, TypeError) as e:  # empty, garbage, pickled, object arrays
        raise LayoutError(f"{path} is not a readable .npy array: {e}") from None
    if not isinstance(x, np.ndarray):
        raise LayoutError(f"{path} is not a single .npy array")
    return x


def _cmd_encode(args) -> int:
    target = args.layout
    target = Layout.parse(target) if target.lstrip().startswith("{") else Shape.parse(target)
    x = _load_npy(args.input)
    if x.dtype.kind == "V":  # ml_dtypes arrays (bf16, int4, fp8) are saved as raw bytes
        if not isinstance(target, Shape) or target.dtype.itemsize != x.dtype.itemsize:
            raise LayoutError(f"{args.input} holds raw {x.dtype.itemsize}-byte values (how .npy "
                              "stores bf16, int4, fp8); give the full shape, e.g. "
                              f"'bf16[{','.join(map(str, x.shape))}]{{...}}', to say their type")
        x = x.view(target.dtype)
    progress = _Progress(2 * x.nbytes, _show_progress(args, x.nbytes))
    data = np.empty(x.shape, x.dtype)
    _copy_in_chunks(x.reshape(-1).view(np.uint8), data.reshape(-1).view(np.uint8), progress,
                    "read")
    buf = encode(data, target, allow_nested_padding=args.allow_nested_padding)
    progress.step(0, "encode")
    with open(args.output, "wb") as f:
        for start in range(0, buf.size, _CHUNK):
            f.write(buf[start:start + _CHUNK].data)
            progress.step(min(_CHUNK, buf.size - start) * x.nbytes // max(buf.size, 1), "write")
    progress.close()
    print(f"wrote {buf.size} bytes to {args.output}", file=sys.stderr)
    return 0


def _cmd_decode(args) -> int:
    shape = Shape.parse(args.shape)
    nbytes = byte_size(shape, allow_nested_padding=args.allow_nested_padding)
    if os.path.isdir(args.input):
        raise LayoutError(f"{args.input} is a directory, not a buffer file")
    progress = _Progress(2 * nbytes, _show_progress(args, nbytes))
    buf = allocate((nbytes,), np.uint8, f"the buffer of {shape}")
    with open(args.input, "rb") as f:  # read, never mmap: the input may be a pipe or a device
        got = 0
        while got < nbytes:
            n = f.readinto(memoryview(buf)[got:got + _CHUNK])
            if not n:
                break
            got += n
            progress.step(n, "read")
        if got < nbytes or f.read(1):
            progress.close()
            more = "more" if got == nbytes else f"only {got}"
            raise LayoutError(f"{args.input} holds {more} bytes but {shape} takes {nbytes}")
    y = decode(buf, shape, allow_nested_padding=args.allow_nested_padding)
    progress.step(0, "decode")
    with open(args.output, "wb") as f:  # (np.save would write `name.npy` for `name`)
        np.save(f, y, allow_pickle=False)
    progress.step(nbytes, "write")
    progress.close()
    print(f"wrote {shape.element_type}{list(y.shape)} to {args.output}", file=sys.stderr)
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tiling",
                                     description="XLA tiled layouts: inspect and convert.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command",
                                help="show, encode or decode (each has --help)")
    show = sub.add_parser("show", help="print where each element of a shape goes in memory")
    show.add_argument("shape", help='a shape with its layout, e.g. "bf16[4,8]{1,0:T(2,4)(2,1)}"')
    show.add_argument("--limit", type=_count, default=4096,
                      help="list at most this many elements and slots (default 4096)")
    show.set_defaults(func=_cmd_show)
    for name, func, help_, what, what_help in (
            ("encode", _cmd_encode, "write the tiled buffer of an .npy array to a file",
             "layout", 'a layout "{1,0:T(8,128)(2,1)}" or a full shape (needed for bf16, int4, '
                       'fp8 arrays, which .npy stores as raw bytes)'),
            ("decode", _cmd_decode, "read a tiled buffer file back into an .npy array",
             "shape", 'e.g. "bf16[256,512]{1,0:T(8,128)(2,1)}"')):
        cmd = sub.add_parser(name, help=help_)
        cmd.add_argument("input", help="the .npy array to encode" if name == "encode"
                         else "the raw buffer file to decode")
        cmd.add_argument(what, help=what_help)
        cmd.add_argument("output", help="the raw buffer file to write" if name == "encode"
                         else "the .npy file to write (the name is used as given)")
        cmd.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                         help="progress bar on stderr (default: for inputs of 64 MiB or more, on a terminal)")
        cmd.add_argument("--allow-nested-padding", action="store_true",
                         help="accept later tiles that pad again (tiling.check_encodable)")
        cmd.set_defaults(func=func)
    return parser


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count (an integer >= 0), found {text!r}") \
            from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a count (an integer >= 0), found {value}")
    return value


def _version() -> str:
    try:
        return version("layout-toolkit")
    except PackageNotFoundError:
        return "(not installed)"


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()  # (a closed pipe shows here, not at exit)
        return status
    except LayoutError as e:
        message = str(e)
    except OSError as e:
        if isinstance(e, BrokenPipeError):  # e.g. piped into `head`: stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
        name = e.filename or getattr(args, "output", None)  # (a failed write names no file)
        where = f"{name}: " if name else ""
        message = f"{where}{e.strerror or e}"
    except MemoryError:
        message = "out of memory"
    except KeyboardInterrupt:
        return 130
    print(f"error: {message}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
