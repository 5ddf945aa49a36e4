"""Command line: `python -m tiling show "bf16[4,8]{1,0:T(2,4)(2,1)}"` prints the memory map.

Subcommands are registered in `_build_parser`; each is a `_cmd_<name>(args) -> int` function.
Errors from the package (`LayoutError`) print their message and exit with status 2.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys

import numpy as np

from tiling.errors import LayoutError
from tiling.layout import (
    Shape, byte_size, check_encodable, linear_index, num_elements, tiled_dimensions,
)


def _format_index(e) -> str:
    return ",".join(str(int(v)) for v in e) if len(e) else "()"


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
    index = np.array(list(itertools.islice(np.ndindex(*dims), shown)), np.int64)
    index = index.reshape(shown, len(dims))
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
    by_slot: dict[int, str] = {int(v): _format_index(e) for v, e in zip(lin, index)}
    listed = min(slots, limit)
    cell = max([len(s) for s in by_slot.values()] + [2])
    lines.append("")
    lines.append(f"memory order (-- = padding), {per_line} slots per line")
    for start in range(0, listed, per_line):
        stop = min(start + per_line, listed)
        cells = " ".join(f"{by_slot.get(k, '--'):>{cell}}" for k in range(start, stop))
        lines.append(f"  {start:>{width}}: {cells}")
    if listed < slots:
        lines.append(f"  ... ({slots - listed} more slots)")
    return "\n".join(lines)


def _cmd_show(args) -> int:
    print(memory_map(Shape.parse(args.shape), limit=args.limit))
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tiling",
                                     description="XLA tiled layouts: inspect and convert.")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print where each element of a shape goes in memory")
    show.add_argument("shape", help='e.g. "bf16[4,8]{1,0:T(2,4)(2,1)}"')
    show.add_argument("--limit", type=int, default=4096,
                      help="list at most this many elements and slots (default 4096)")
    show.set_defaults(func=_cmd_show)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        return args.func(args)
    except LayoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
