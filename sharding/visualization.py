"""Pictures of a placement, for any rank: a text grid, SVG and PNG.

>>> from sharding import Mesh, TensorSharding, visualize
>>> pic = visualize(TensorSharding.parse('#sdy.sharding<@m, [{"x"}, {}]>'), Mesh.parse('<["x"=2, "y"=2]>'), (4, 3))
>>> print(pic.text())  # print(pic) fits the table to the terminal
#sdy.sharding<@m, [{"x"}, {}]> on <["x"=2, "y"=2]>
global 4x3, tiles 2x1, device buffer 2x3, HloSharding {devices=[2,1,2]<=[4] last_tile_dim_replicate}
┌─────────────┐
│ devices 0,1 │
│ [0:2, 0:3]  │
├─────────────┤
│ devices 2,3 │
│ [2:4, 0:3]  │
└─────────────┘

A grid shows the last two dims (rows, columns); leading dims get one panel per tile. Cells
list the devices holding the block, the global slice and the padding. JAX and DTensor draw
only 1-D and 2-D shardings. matplotlib (PNG only) is imported lazily; SVG needs nothing.
"""

from __future__ import annotations

import itertools
import shutil
import textwrap
from dataclasses import dataclass
from html import escape

import numpy as np

from ._checks import check_full_axes, check_shape, check_uneven
from ._imports import load, pyplot
from ._placement import Placement, place
from .cost import report_table, step_messages
from .errors import ShardingError, as_int, shown
from .hlo import from_named_sharding, is_named_sharding, to_hlo_sharding, to_sdy
from .mesh import Mesh
from .tensor_sharding import TensorSharding

__all__ = ["Block", "ShardingPicture", "TrafficPicture", "visualize", "format_bytes"]

MAX_TEXT_LINES = 100
"""A text table longer than this is condensed: middle rows, columns and panels elided."""

_PALETTE = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
            "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f")


@dataclass(frozen=True, slots=True)
class Block:
    """One distinct tile of the global array and the devices that hold it."""

    tile: tuple[int, ...]
    """Tile index along each dim."""
    slices: tuple[slice, ...]
    """The data part (global indices; may be empty when the buffer is all padding)."""
    padding: tuple[int, ...]
    """Padding elements at the end of the device buffer, per dim."""
    devices: tuple[int, ...]
    """Device ids holding this block (replicas), ascending."""


_CHAR_W = 0.66
"""Width of a monospace character in px per px of font size (DejaVu Sans Mono: 0.602 em, up to 0.64 when hinted small)."""


def _elide(line: str, width: int) -> str:
    """`line` cut to `width` characters, the last one `…` when something was cut."""
    return line if len(line) <= width else line[: max(width - 1, 0)] + "…"


def _ids_text(ids: tuple[int, ...]) -> str:
    # Runs of three or more consecutive ids are written a-b.
    parts, run = [], [ids[0]]
    for i in ids[1:]:
        if i == run[-1] + 1:
            run.append(i)
            continue
        parts.append(run)
        run = [i]
    parts.append(run)
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) >= 3 else ",".join(map(str, r)) for r in parts)


def _ids_short(ids: tuple[int, ...], cap: int = 24) -> str:
    """`_ids_text`, cut at an id boundary to about `cap` characters, with the count when cut."""
    text = _ids_text(ids)
    if len(text) <= cap:
        return text
    cut = text[:cap].rsplit(",", 1)[0]
    return f"{cut},…({len(ids)})"


def _elided(n: int, keep: int) -> list[int | None]:
    """`range(n)`, or its first and last indices around one `None` (the gap) when `n > keep`."""
    if n <= keep:
        return list(range(n))
    head = max(1, (keep + 1) // 2)
    tail = max(1, keep - head)
    return list(range(head)) + [None] + list(range(n - tail, n))


def _slice_text(slices) -> str:
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in slices) + "]"


def save_picture(path, svg, png, error: type) -> None:
    """`svg()`'s text written to a `.svg` path (no dependencies), or `png(name)` called for a
    `.png` one (matplotlib); any other name is `error`."""
    name = str(path)
    if name.lower().endswith(".svg"):
        with open(name, "w", encoding="utf-8") as f:
            f.write(svg())
    elif name.lower().endswith(".png"):
        png(name)
    else:
        raise error(f"expected a .svg or .png file name, found '{name}'")


class ShardingPicture:
    """Which devices hold which block; `str()` is the text table (at the terminal's width),
    `svg()` / `save()` images."""

    def __init__(self, placement: Placement):
        self.placement = placement
        p = placement
        grid = p.device_grid().reshape(-1)
        tiles = p.tile_indices().reshape(grid.size, len(p.shape))
        holders: dict[tuple[int, ...], list[int]] = {}
        for dev, tile in zip(grid, tiles):
            holders.setdefault(tuple(int(t) for t in tile), []).append(int(dev))
        blocks = []
        for tile in sorted(holders):
            slices = p.tile_slices(tile)
            # ragged shards (DTensor) hold no padding
            pad = tuple(0 if p.uneven == "ragged" else c - (s.stop - s.start) for s, c in zip(slices, p.local_shape))
            blocks.append(Block(tile, slices, pad, tuple(sorted(holders[tile]))))
        self.blocks: tuple[Block, ...] = tuple(blocks)
        """Every distinct tile, in tile order."""

    # -- layout shared by text and images --------------------------------------------------

    def _panels(self):
        """`(title, rows, cols, {(r, c): Block})` per panel of the last two dims."""
        p = self.placement
        rank, tiles = len(p.shape), p.num_tiles
        lead = rank - 2 if rank >= 2 else 0
        by_tile = {b.tile: b for b in self.blocks}
        out = []
        for head in itertools.product(*[range(n) for n in tiles[:lead]]):
            rows = tiles[rank - 2] if rank >= 2 else 1
            cols = tiles[rank - 1] if rank >= 1 else 1
            cells = {}
            for r in range(rows):
                for c in range(cols):
                    tail = (r, c) if rank >= 2 else (c,) if rank == 1 else ()
                    cells[(r, c)] = by_tile[head + tail]
            title = ""
            if lead:
                first = by_tile[head + (0,) * (rank - lead)]
                title = ", ".join(f"dim {d}: {s.start}:{s.stop}" + (f" (pad {first.padding[d]})" if first.padding[d] else "")
                                  for d, s in enumerate(first.slices[:lead]))
            out.append((title, rows, cols, cells))
        return out

    def _cell_lines(self, block: Block, short: bool = False) -> list[str]:
        rank = len(self.placement.shape)
        shown = block.slices[max(rank - 2, 0):]
        word = "device" if len(block.devices) == 1 else "devices"
        ids = _ids_short(block.devices) if short else _ids_text(block.devices)
        lines = [f"{word} {ids}", _slice_text(shown) if shown else "[]"]
        pads = block.padding[max(rank - 2, 0):]
        if any(pads):
            data = any(s.stop > s.start for s in block.slices) or not block.slices
            lines.append("pad " + ",".join(map(str, pads)) + ("" if data else " (no data)"))
        return lines

    def header(self) -> list[str]:
        p = self.placement
        def dims(shape):
            return "x".join(map(str, shape)) or "()"

        if p.uneven == "ragged":  # DTensor's shards: no HloSharding describes them
            return [f"{p.sharding} on {p.mesh.body()}, ragged (DTensor torch.chunk per axis)",
                    f"global {dims(p.shape)}, tiles {dims(p.num_tiles)}, largest shard {dims(p.local_shape)}"]
        return [f"{p.sharding} on {p.mesh.body()}",
                f"global {dims(p.shape)}, tiles {dims(p.num_tiles)}, device buffer {dims(p.local_shape)}, "
                f"HloSharding {to_hlo_sharding(p.sharding, p.mesh)}"]

    # -- text ------------------------------------------------------------------------------

    def text(self, width: int | None = None) -> str:
        """The text table; with `width` (e.g. the terminal's), lines stay within it: the header
        wraps, the grid is cut into bands of columns, and a cell wider than the line is elided.
        A table of more than `MAX_TEXT_LINES` lines (a large mesh) is condensed to fit in them."""
        full = self._full_text(width)
        if full.count("\n") < MAX_TEXT_LINES:
            return full
        return self._condensed_text(width)

    def _full_text(self, width: int | None) -> str:
        lines = self.header()
        if width is not None:
            width = max(as_int(width, "width", 1, 10**6), 12)
            lines = [part for line in lines for part in textwrap.wrap(line, width, break_on_hyphens=False)]
        cell = 2 + max(len(line) for b in self.blocks for line in self._cell_lines(b))
        if width is not None:
            cell = min(cell, width - 2)
        height = max(len(self._cell_lines(b)) for b in self.blocks)
        for title, rows, cols, cells in self._panels():
            band = cols if width is None else max(1, (width - 1) // (cell + 1))
            for first in range(0, cols, band):
                shown = range(first, min(first + band, cols))
                heading = title
                if len(shown) < cols:
                    heading = (title + "; " if title else "") + (f"columns {first}-{shown[-1]} of {cols}" if len(shown) > 1 else f"column {first} of {cols}")
                if heading:
                    lines.append(heading if width is None else _elide(heading, width))
                rule = "─" * cell
                lines.append("┌" + "┬".join([rule] * len(shown)) + "┐")
                for r in range(rows):
                    content = [self._cell_lines(cells[(r, c)]) for c in shown]
                    for k in range(height):
                        row = [_elide(" " + (cl[k] if k < len(cl) else ""), cell).ljust(cell) for cl in content]
                        lines.append("│" + "│".join(row) + "│")
                    end = ("├", "┼", "┤") if r < rows - 1 else ("└", "┴", "┘")
                    lines.append(end[0] + end[1].join([rule] * len(shown)) + end[2])
        if any(any(b.padding) for b in self.blocks):
            dims = "r,c" if len(self.placement.shape) >= 2 else "n"
            note = ("pad " + dims + ": padding at the end of the device buffer along each dim (fill values, not data)")
            lines += [note] if width is None else textwrap.wrap(note, width)
        return "\n".join(lines)

    def _condensed_text(self, width: int | None) -> str:
        """At most `MAX_TEXT_LINES` lines: the first and last rows, columns and panels of tiles,
        `⋮` / `…` where some are elided, device lists cut (`…(16)`: 16 devices in all)."""
        p = self.placement
        width = max(width or 160, 40)
        lines = [part for line in self.header() for part in textwrap.wrap(line, width, break_on_hyphens=False)]
        devices = p.mesh.total_size
        replicas = {len(b.devices) for b in self.blocks}
        lines += textwrap.wrap(f"condensed: {devices} devices, {len(self.blocks)} distinct blocks, "
                               f"{'/'.join(map(str, sorted(replicas)))} device(s) each; `⋮` and `…` mark elided "
                               "tiles", width)
        panels = self._panels()
        shown_panels = _elided(len(panels), 2)
        cell = min(2 + max(len(line) for b in self.blocks for line in self._cell_lines(b, short=True)), (width - 8) // 2)
        height = max(len(self._cell_lines(b, short=True)) for b in self.blocks)
        budget = (MAX_TEXT_LINES - len(lines) - 4) // len([i for i in shown_panels if i is not None]) - 2
        for k in shown_panels:
            if k is None:
                lines.append(f"… {len(panels) - 2} more panels of the leading dims")
                continue
            title, rows, cols, cells = panels[k]
            keep_rows = rows if rows * (height + 1) <= budget else max(2, (budget - 2) // (height + 1))
            row_ids = _elided(rows, keep_rows)
            col_ids = _elided(cols, max(2, (width - 1) // (cell + 1) - 1))
            if title:
                lines.append(_elide(title, width))
            rule = ["───" if c is None else "─" * cell for c in col_ids]
            lines.append("┌" + "┬".join(rule) + "┐")
            for n, r in enumerate(row_ids):
                if r is None:
                    lines.append("│" + "│".join(" ⋮ " if c is None else " ⋮".ljust(cell) for c in col_ids) + "│")
                else:
                    content = [None if c is None else self._cell_lines(cells[(r, c)], short=True) for c in col_ids]
                    for k2 in range(height):
                        row = [" … " if cl is None else
                               _elide(" " + (cl[k2] if k2 < len(cl) else ""), cell).ljust(cell) for cl in content]
                        lines.append("│" + "│".join(row) + "│")
                end = ("├", "┼", "┤") if n < len(row_ids) - 1 else ("└", "┴", "┘")
                lines.append(end[0] + end[1].join(rule) + end[2])
        if any(any(b.padding) for b in self.blocks):
            dims = "r,c" if len(p.shape) >= 2 else "n"
            lines += textwrap.wrap("pad " + dims + ": padding at the end of the device buffer along each dim "
                                   "(fill values, not data)", width)
        return "\n".join(lines)

    def __str__(self) -> str:
        """The text table at the terminal's width (`text()` gives it unbroken)."""
        return self.text(width=shutil.get_terminal_size().columns)

    def __repr__(self) -> str:
        return f"ShardingPicture({self.placement.sharding}, {self.placement.mesh.body()}, {self.placement.shape})"

    # -- images ----------------------------------------------------------------------------

    _CELL_W, _CELL_H, _GAP, _TOP = 150, 64, 24, 46
    _MAX_CELL_W, _FONT, _MIN_FONT = 280, 11, 7

    def _shapes(self):
        """Rectangles `(x, y, w, h, fill, hatched)` and texts `(x, y, text, size)` in pixels."""
        rects, texts = [], []
        # Cells widen (up to _MAX_CELL_W) for long labels at a 9 px font; labels then take the
        # largest font (11 px down to 7 px) at which the longest fits, and longer ones are elided.
        longest = max(len(line) for b in self.blocks for line in self._cell_lines(b))
        cell_w = min(max(self._CELL_W, int(longest * _CHAR_W * 9) + 12), self._MAX_CELL_W)
        room = cell_w - 10
        size = max(self._MIN_FONT, min(self._FONT, int(room / (_CHAR_W * longest))))  # one size for all cells
        colors = {b.tile: _PALETTE[i % len(_PALETTE)] for i, b in enumerate(self.blocks)}
        x0 = 10
        y = self._TOP
        row_h = 0
        for title, rows, cols, cells in self._panels():
            w, h = cols * cell_w, rows * self._CELL_H
            if title:
                texts.append((x0, y + 14, title, 12))
            top = y + (20 if title else 4)
            for (r, c), b in cells.items():
                cx, cy = x0 + c * cell_w, top + r * self._CELL_H
                rects.append((cx, cy, cell_w, self._CELL_H, colors[b.tile], False))
                rank = len(self.placement.shape)
                local = self.placement.local_shape
                if rank >= 1 and b.padding[-1]:
                    frac = b.padding[-1] / local[-1]
                    rects.append((cx + cell_w * (1 - frac), cy, cell_w * frac, self._CELL_H, "#ffffff", True))
                if rank >= 2 and b.padding[-2]:
                    frac = b.padding[-2] / local[-2]
                    rects.append((cx, cy + self._CELL_H * (1 - frac), cell_w, self._CELL_H * frac, "#ffffff", True))
                for k, line in enumerate(self._cell_lines(b)):
                    texts.append((cx + 5, cy + 4 + size * (1.4 * k + 1.1), _elide(line, int(room / (_CHAR_W * size))),
                                  size))
            x0 += w + self._GAP
            row_h = max(row_h, h + (20 if title else 4))
        # Header lines are elided to the picture's width (at least 620 px).
        header_chars = int((max(x0, 620) - 20) / (_CHAR_W * 12))
        for line_no, line in enumerate(self.header()):
            texts.append((10, 18 + 16 * line_no, _elide(line, header_chars), 12))
        return rects, texts, max(x0, 620), y + row_h + 10

    def svg(self) -> str:
        """The picture as an SVG document (no dependencies)."""
        rects, texts, width, height = self._shapes()
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'font-family="monospace">',
               '<defs><pattern id="pad" width="6" height="6" patternUnits="userSpaceOnUse" '
               'patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/>'
               '<line x1="0" y1="0" x2="0" y2="6" stroke="#cccccc" stroke-width="2"/></pattern></defs>']
        for x, y, w, h, fill, hatched in rects:
            paint = "url(#pad)" if hatched else fill
            out.append(f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="{paint}" stroke="#333333"/>')
        for x, y, text, size in texts:
            out.append(f'<text x="{x:g}" y="{y:g}" font-size="{size}">{escape(text)}</text>')
        out.append("</svg>")
        return "\n".join(out)

    def _repr_svg_(self) -> str:
        return self.svg()

    def save(self, path) -> None:
        """Writes `.svg` (no dependencies) or `.png` (needs matplotlib)."""
        save_picture(path, self.svg, self._save_png, ShardingError)

    def _save_png(self, name: str) -> None:
        plt = pyplot(ShardingError, "PNG output", ".svg")
        Rectangle = load("matplotlib.patches").Rectangle
        fig = self._png_figure(plt, Rectangle)
        fig.savefig(name, dpi=fig.dpi)
        plt.close(fig)

    def _png_figure(self, plt, Rectangle):
        rects, texts, width, height = self._shapes()
        dpi = 100
        fig = plt.figure(figsize=(width / dpi, height / dpi), dpi=dpi)
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, width)
        ax.set_ylim(height, 0)
        ax.axis("off")
        for x, y, w, h, fill, hatched in rects:
            # light hatch lines keep the cell text readable on top of the padding
            ax.add_patch(Rectangle((x, y), w, h, facecolor=fill, edgecolor="#cccccc" if hatched else "#333333",
                                   hatch="//" if hatched else None))
        for x, y, text, size in texts:  # `size` px at 100 dpi is 0.72 * size pt
            ax.text(x, y, text, fontsize=size * 0.72, family="monospace", va="baseline")
        return fig


def visualize(sharding, mesh=None, global_shape=None, *, uneven: str | None = None):
    """Which devices hold which block of a `global_shape` array under `sharding` on `mesh`.

    `sharding` is a `TensorSharding`, its text or a JAX `NamedSharding`; `mesh` a `Mesh`, a `MeshTable`, a `DeviceMesh`,
    mesh text, or `None` for an inlined mesh. Like `jax.debug.visualize_array_sharding`, an array
    alone is enough: a `ShardedArray` (`visualize(dm.shard(x, s))`) or a `jax.Array` with a
    `NamedSharding` or `SingleDeviceSharding`. Works for any rank; `print()` it for the text
    table, `.svg()` / `.save("x.png")` for images. `uneven` (`padded` or `ragged`) defaults to
    the DeviceMesh's, else `padded`. A `ReshardPlan` gives its `TrafficPicture` (bytes sent per
    device and step, laid out on the mesh).
    """
    if hasattr(sharding, "steps") and hasattr(sharding, "traffic"):  # a ReshardPlan
        if mesh is not None or global_shape is not None:
            raise ShardingError("visualize(plan) takes no mesh or shape: the plan has both")
        return TrafficPicture(sharding)
    is_sharded_array = hasattr(sharding, "placement") and hasattr(sharding, "per_device")
    is_jax_array = hasattr(sharding, "sharding") and hasattr(sharding, "shape")
    if (is_sharded_array or is_jax_array) and (mesh is not None or global_shape is not None):
        raise ShardingError("visualize(array) takes no mesh or shape: the array has both")
    if is_sharded_array:
        return ShardingPicture(sharding.placement)
    if is_jax_array:
        return ShardingPicture(place(*_from_jax(sharding.sharding, len(sharding.shape)), tuple(sharding.shape)))
    if global_shape is None:
        raise ShardingError("expected the global shape: visualize(sharding, mesh, global_shape)")
    if is_named_sharding(sharding):  # its mesh comes with it (inlined)
        sharding = to_sdy(sharding, len(check_shape(global_shape)))
    uneven = "padded" if uneven is None and not hasattr(mesh, "placement") else uneven
    if hasattr(mesh, "placement"):  # a DeviceMesh (not imported here: it needs xarray)
        if uneven is not None and check_uneven(uneven) != mesh.uneven:
            raise ShardingError(f"uneven={shown(uneven)} differs from the device mesh's {shown(mesh.uneven)}")
        return ShardingPicture(mesh.placement(sharding, global_shape))
    if check_uneven(uneven) == "ragged":
        check_full_axes(sharding)
    return ShardingPicture(place(sharding, mesh, global_shape, uneven=uneven))


def _from_jax(jax_sharding, rank: int):
    """`(TensorSharding, Mesh)` of a JAX `NamedSharding` or `SingleDeviceSharding`, through their
    public attributes (`from_named_sharding`)."""
    kind = type(jax_sharding).__name__
    if kind == "SingleDeviceSharding":
        (device,) = jax_sharding.device_set
        return TensorSharding("mesh", ()), Mesh((), (device.id,))
    if not is_named_sharding(jax_sharding):
        raise ShardingError(f"expected a jax.Array with a NamedSharding or SingleDeviceSharding, got: {kind}")
    mesh, sharding = from_named_sharding(jax_sharding, rank)
    return sharding, mesh


# -- traffic of a reshard plan ----------------------------------------------------------------


def format_bytes(n: float) -> str:
    """`n` bytes in B, KiB, MiB, GiB or TiB (binary units)."""
    unit, divisor = _unit(n)
    return f"{n:.0f} B" if unit == "B" else f"{n / divisor:.2f} {unit}"


def _unit(n: float) -> tuple[str, int]:
    """The largest binary unit in which `n` is at least 1."""
    for k, unit in reversed(list(enumerate(("B", "KiB", "MiB", "GiB", "TiB")))):
        if abs(n) >= 1024 ** k or k == 0:
            return unit, 1024 ** k
    raise AssertionError(n)


def _color(frac: float) -> str:
    """White (0) to dark blue (1)."""
    lo, hi = (247, 251, 255), (8, 48, 107)
    return "#" + "".join(f"{round(a + (b - a) * frac):02x}" for a, b in zip(lo, hi))


MAX_PAIRS_DEVICES = 64
"""Sender -> receiver matrices are drawn for meshes of at most this many devices."""


class TrafficPicture:
    """The bytes each device sends in each step of a `ReshardPlan`, laid out on the mesh: a
    heatmap per step over the mesh's two largest axes (the most each device of the other axes
    sends), and a sender -> receiver matrix per step on meshes of up to 64 devices. Units are
    binary (KiB, MiB, GiB), picked per step. `str()` / `text()` give tables, `svg()` the picture."""

    def __init__(self, plan):
        self.plan = plan
        self.mesh = plan.mesh_of(plan.source)
        sizes = self.mesh.shape
        largest = sorted(sorted(range(len(sizes)), key=lambda i: -sizes[i])[:2])
        self.axes = tuple(self.mesh.axes[i].name for i in largest)
        """The mesh axes of the heatmaps' rows and columns (mesh order)."""
        self.other_axes = tuple(a.name for i, a in enumerate(self.mesh.axes) if i not in largest)
        sent = plan.traffic.bytes_sent.values  # (step, device) in mesh order
        grids = sent.reshape((len(plan.steps),) + sizes)
        rest = tuple(1 + i for i in range(len(sizes)) if i not in largest)
        grids = grids.max(axis=rest) if rest else grids
        self.grids = grids.reshape((len(plan.steps),) + (1,) * (2 - len(largest)) + grids.shape[1:])
        """Bytes sent per device, `(step, row, column)` over `axes` (maximum over `other_axes`)."""
        self.pairs = None
        """`(step, sender, receiver)` bytes, indices in mesh order; None above 64 devices."""
        devices = np.asarray(self.mesh.devices, np.int64)
        if 0 < len(devices) <= MAX_PAIRS_DEVICES:
            index = np.zeros(int(devices.max()) + 1, np.int64)
            index[devices] = np.arange(len(devices))
            self.pairs = np.zeros((len(plan.steps), len(devices), len(devices)), np.int64)
            for i in range(len(plan.steps)):
                send, recv, nbytes = step_messages(plan, i)
                np.add.at(self.pairs[i], (index[np.asarray(send, np.int64)], index[np.asarray(recv, np.int64)]),
                          np.asarray(nbytes, np.int64))

    def _title(self, i: int) -> str:
        step = self.plan.steps[i]
        unit, _ = _unit(self.grids[i].max(initial=0))
        over = f" (the most over {', '.join(map(repr, self.other_axes))})" if self.other_axes else ""
        return f"step {i} {step.kind}: {unit} sent per device{over}"

    def text(self) -> str:
        """Per step, the heatmap's numbers as a table (elided beyond 16 rows and columns), and the
        sender -> receiver matrix on meshes of up to 16 devices."""
        if not self.plan.steps:
            return "no collectives: the reshard moves no data"
        lines = []
        for i in range(len(self.plan.steps)):
            grid = self.grids[i]
            _, div = _unit(grid.max(initial=0))
            lines.append(self._title(i))
            names = [[f"{a}={k}" for k in range(n)] for a, n in zip(self.axes, grid.shape[-len(self.axes):])]
            names = ([["-"]] * (2 - len(names)) + names)
            lines += _table(grid / div, _elided(grid.shape[0], 16), _elided(grid.shape[1], 16), *names)
            if self.pairs is not None and len(self.pairs[i]) <= 16 and self.pairs[i].any():
                unit, div = _unit(self.pairs[i].max())
                ids = [f"d{d}" for d in self.mesh.devices]
                lines.append(f"  device (row) sends to device (column), {unit}")
                lines += _table(self.pairs[i] / div, list(range(len(ids))), list(range(len(ids))), ids, ids)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"TrafficPicture({len(self.plan.steps)} steps on {self.mesh.body()})"

    def svg(self) -> str:
        """Heatmaps (and sender -> receiver matrices) per step, as an SVG document."""
        out, y, width = [], 10, 620
        for i in range(len(self.plan.steps)):
            out.append(f'<text x="10" y="{y + 12}" font-size="12">{escape(self._title(i))}</text>')
            y += 22
            h1, w1 = _heatmap_svg(out, self.grids[i], 10, y, 560)
            h2 = 0
            if self.pairs is not None:
                out.append(f'<text x="{w1 + 40}" y="{y - 4}" font-size="11">sender (rows) → receiver (columns)</text>')
                h2, w2 = _heatmap_svg(out, self.pairs[i], w1 + 40, y, 320, labels=False)
                width = max(width, w1 + w2 + 60)
            width = max(width, w1 + 20)
            y += max(h1, h2) + 16
        if not self.plan.steps:
            out.append('<text x="10" y="22" font-size="12">no collectives: the reshard moves no data</text>')
            y = 34
        return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
                          'font-family="monospace">'] + out + ["</svg>"])

    def _repr_svg_(self) -> str:
        return self.svg()

    def save(self, path) -> None:
        """Writes the SVG picture (`.svg`)."""
        name = str(path)
        if not name.lower().endswith(".svg"):
            raise ShardingError(f"expected a .svg file name, got: {name}")
        with open(name, "w", encoding="utf-8") as f:
            f.write(self.svg())


def _table(values: np.ndarray, rows: list, cols: list, row_names: list[str], col_names: list[str]) -> list[str]:
    """Lines of a numeric table (`.` for zero), `None` in `rows`/`cols` drawn as an elision."""
    def cell(r, c):
        return "…" if c is None else "⋮" if r is None else "." if values[r, c] == 0 else f"{values[r, c]:.2f}"

    head = ["", *("…" if c is None else col_names[c] for c in cols)]
    body = [["⋮" if r is None else row_names[r], *(cell(r, c) for c in cols)] for r in rows]
    widths = [max(len(row[k]) for row in [head] + body) for k in range(len(head))]
    return ["  " + "  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in [head] + body]


def _heatmap_svg(out: list[str], values: np.ndarray, x0: int, y0: int, max_width: int, labels: bool = True):
    """Appends rects for a 2-D heatmap of bytes; returns its `(height, width)` in px."""
    rows, cols = values.shape
    cell = max(2, min(48, max_width // max(cols, 1)))
    ch = max(2, min(24, cell))
    top = values.max(initial=0)
    _, div = _unit(top)
    show = labels and cell >= 40 and ch >= 14
    for r in range(rows):
        for c in range(cols):
            frac = values[r, c] / top if top else 0.0
            x, y = x0 + c * cell, y0 + r * ch
            out.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{ch}" fill="{_color(frac)}" stroke="#999999" '
                       f'stroke-width="0.5"><title>[{r}, {c}]: {format_bytes(values[r, c])}</title></rect>')
            if show:
                ink = "#ffffff" if frac > 0.5 else "#000000"
                out.append(f'<text x="{x + 3}" y="{y + ch - 7}" font-size="9" fill="{ink}">'
                           f'{values[r, c] / div:.2f}</text>')
    return rows * ch, cols * cell


# -- notebook views (`_repr_html_`) -----------------------------------------------------------


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>'


def plan_html(plan) -> str:
    """A `ReshardPlan` in a notebook: its ops, the report's table, the traffic heatmaps."""
    head, rows, notes = report_table(plan)
    ops = "\n".join(map(str, plan.steps)) or "(no collectives: the reshard is a no-op)"
    shape = "x".join(map(str, plan.shape)) or "()"
    return (f"<div><p><b>ReshardPlan</b> {escape(str(plan.source))} → {escape(str(plan.target))}, "
            f"{escape(shape)} {escape(str(plan.dtype))}</p><pre>{escape(ops)}</pre>{_html_table(head, rows)}"
            + "".join(f"<p>{escape(n)}</p>" for n in notes) + TrafficPicture(plan).svg() + "</div>")


def sharded_array_html(array) -> str:
    """A `ShardedArray` in a notebook: its shapes and sharding, and the placement picture."""
    pic = ShardingPicture(array.placement)
    drawing = pic.svg() if len(pic.blocks) <= 256 else f"<pre>{escape(pic.text(width=120))}</pre>"
    rows = [["sharding", str(array.sharding)], ["mesh", array.mesh.body()],
            ["global shape", str(array.global_shape)], ["device buffer", str(array.local_shape)],
            ["dtype", str(array.data.dtype)], ["data", type(array.data.data).__module__.split(".")[0]]]
    return f"<div><p><b>ShardedArray</b></p>{_html_table(['', ''], rows)}{drawing}</div>"


def device_mesh_html(dm) -> str:
    """A `DeviceMesh` in a notebook: the device ids laid out over its axes (the last axis across,
    the others down; elided beyond 32 rows or columns)."""
    mesh = dm.mesh
    ids = np.asarray(mesh.devices, np.int64).reshape(mesh.shape or (1,))
    names = mesh.axis_names or ("device",)
    grid = ids.reshape(-1, ids.shape[-1])
    down = list(itertools.product(*[range(n) for n in ids.shape[:-1]]))
    rows = []
    for r in _elided(len(grid), 32):
        label = "⋮" if r is None else ", ".join(f"{n}={i}" for n, i in zip(names[:-1], down[r]))
        rows.append([label] + ["⋮" if r is None else "…" if c is None else str(grid[r, c])
                               for c in _elided(grid.shape[1], 32)])
    head = [""] + ["…" if c is None else f"{names[-1]}={c}" for c in _elided(grid.shape[1], 32)]
    extra = "" if dm.uneven == "padded" else f", uneven={dm.uneven}"
    count = f"{mesh.total_size} device" + ("s" if mesh.total_size != 1 else "")
    return (f"<div><p><b>DeviceMesh</b> {escape(mesh.body())}: {count}{escape(extra)}</p>"
            f"{_html_table(head, rows)}</div>")
