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

from ._checks import check_full_axes, check_uneven
from ._imports import load
from ._placement import Placement, place
from .axes import AxisRef
from .errors import ShardingError
from .hlo import to_hlo_sharding
from .mesh import Mesh, MeshAxis
from .tensor_sharding import DimensionSharding, TensorSharding

__all__ = ["Block", "ShardingPicture", "visualize"]

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


def _slice_text(slices) -> str:
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in slices) + "]"


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

    def _cell_lines(self, block: Block) -> list[str]:
        rank = len(self.placement.shape)
        shown = block.slices[max(rank - 2, 0):]
        word = "device" if len(block.devices) == 1 else "devices"
        lines = [f"{word} {_ids_text(block.devices)}", _slice_text(shown) if shown else "[]"]
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
        wraps, the grid is cut into bands of columns, and a cell wider than the line is elided."""
        lines = self.header()
        if width is not None:
            width = max(width, 12)
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
        name = str(path)
        if name.lower().endswith(".svg"):
            with open(name, "w", encoding="utf-8") as f:
                f.write(self.svg())
            return
        if not name.lower().endswith(".png"):
            raise ShardingError(f"expected a .svg or .png file name, got: {name}")
        self._save_png(name)

    def _save_png(self, name: str) -> None:
        try:
            load("matplotlib").use("Agg")
            plt = load("matplotlib.pyplot")
            Rectangle = load("matplotlib.patches").Rectangle
        except ImportError:
            raise ShardingError("PNG output needs matplotlib (pip install 'layout-toolkit[plot]'); .svg works "
                                "without it") from None
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


def visualize(sharding, mesh=None, global_shape=None, *, uneven: str | None = None) -> ShardingPicture:
    """Which devices hold which block of a `global_shape` array under `sharding` on `mesh`.

    `sharding` is a `TensorSharding` or its text; `mesh` a `Mesh`, a `MeshTable`, a `DeviceMesh`,
    mesh text, or `None` for an inlined mesh. Like `jax.debug.visualize_array_sharding`, an array
    alone is enough: a `ShardedArray` (`visualize(dm.shard(x, s))`) or a `jax.Array` with a
    `NamedSharding` or `SingleDeviceSharding`. Works for any rank; `print()` it for the text
    table, `.svg()` / `.save("x.png")` for images. `uneven` (`padded` or `ragged`) defaults to
    the DeviceMesh's, else `padded`.
    """
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
    if hasattr(mesh, "placement"):  # a DeviceMesh (not imported here: it needs xarray)
        if uneven is not None and uneven != mesh.uneven:
            raise ShardingError(f"uneven={uneven!r} differs from the device mesh's {mesh.uneven!r}")
        return ShardingPicture(mesh.placement(sharding, global_shape))
    if check_uneven(uneven or "padded") == "ragged":
        check_full_axes(sharding)
    return ShardingPicture(place(sharding, mesh, global_shape, uneven=uneven or "padded"))


def _from_jax(jax_sharding, rank: int):
    """`(TensorSharding, Mesh)` of a JAX `NamedSharding` or `SingleDeviceSharding`, through their
    public attributes. Device ids stay JAX's when they are 0..N-1, else become their ranks."""
    kind = type(jax_sharding).__name__
    if kind == "SingleDeviceSharding":
        (device,) = jax_sharding.device_set
        return TensorSharding("mesh", ()), Mesh((), (device.id,))
    if kind != "NamedSharding":
        raise ShardingError(f"expected a jax.Array with a NamedSharding or SingleDeviceSharding, got: {kind}")
    jmesh, spec = jax_sharding.mesh, jax_sharding.spec
    ids = [d.id for d in jmesh.devices.flat]
    if sorted(ids) != list(range(len(ids))):
        ranks = {i: r for r, i in enumerate(sorted(ids))}
        ids = [ranks[i] for i in ids]
    mesh = Mesh(tuple(MeshAxis(str(n), int(s)) for n, s in zip(jmesh.axis_names, jmesh.devices.shape)), tuple(ids))
    dims = []
    for entry in tuple(spec) + (None,) * (rank - len(spec)):
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        closed = all(isinstance(n, str) for n in names)  # P.UNCONSTRAINED is an open dim
        dims.append(DimensionSharding(tuple(AxisRef(n) for n in names if isinstance(n, str)), closed))
    return TensorSharding("mesh", tuple(dims)), mesh
