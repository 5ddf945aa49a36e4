"""One move's traffic figures in closed form, per device, without enumerating its messages.

`collectives.moves` lists every (receiver, operand tile) block, so its cost grows with the number
of messages (an all-gather over 512 of 4096 devices has 2M). The figures it leads to (spec
collectives.md §3.1) factor over tensor dims instead. Per dim `d`, the overlaps `ov_d(tn, to)` of
result tile `tn` with operand tile `to` form a short list (at most one entry per tile boundary).
A receiver `r` gets one block per combination of overlapping operand tiles, of
`prod_d ov_d` elements, except the block of its own operand tile (local). So:

* received(r) = prod_d S_d(tn_d(r)) - local(r), `S_d(tn)` the sum of `ov_d(tn, .)`;
* messages = sum_r prod_d C_d(tn_d(r)) - [local(r) > 0], `C_d` the count of positive overlaps;
* crossing(A) = sum_r prod_d S_d - prod_d M_{A,d}, `M_{A,d}` summing only the operand tiles
  whose digits on `A`'s tile pieces equal `r`'s (the blocks that do not cross `A`);
* sent(s): the sender of a block copies the receiver's coordinates on every piece that does not
  tile the operand, so `s` serves exactly the receivers with its own such coordinates, once each
  for its own tile: `mult * prod_d H_d(s) - local(s)`, `H_d` summing `ov_d(tn, to_d(s))` over the
  tile pieces of `s` that tile result dim `d` (the others only repeat: `mult`). The rule's other
  branch (the replicated pieces of an axis that differs anyway are 0) splits into three such
  sums per axis that has both tile and replicated pieces.

Where the result mesh orders devices differently, or sub-axes do not nest, the caller keeps the
per-message path (`None` here). Tests hold both equal.
"""

from __future__ import annotations

import math

import numpy as np

from ._moves import nested, refs
from ._placement import place
from .mesh import Mesh
from .tensor_sharding import TensorSharding


def _radix(coords: np.ndarray, pieces: list[int], sizes: tuple[int, ...]) -> np.ndarray:
    """Mixed-radix index of `coords[pieces]` (first piece most major)."""
    out = np.zeros(coords.shape[1], np.int64)
    for i in pieces:
        out = out * sizes[i] + coords[i]
    return out


def _digits(tiles: np.ndarray, dims: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    """`(pieces, len(tiles))` coordinates of `tiles` (indices over `dims`, first most major)."""
    out = np.zeros((len(sizes), len(tiles)), np.int64)
    t = tiles.copy()
    for i in reversed(dims):
        out[i] = t % sizes[i]
        t //= sizes[i]
    return out


def _overlaps(b_out, b_in):
    """`(tn, to, ov)` for every result tile `tn` and operand tile `to` sharing `ov > 0` elements."""
    lo, hi = b_out
    first = np.searchsorted(b_in[1], lo, side="right")
    count = np.where(hi > lo, np.maximum(np.searchsorted(b_in[0], hi, side="left") - first, 0), 0)
    tn = np.repeat(np.arange(len(lo)), count)
    to = first[tn] + np.arange(len(tn)) - np.repeat(np.cumsum(count) - count, count)
    ov = np.minimum(hi[tn], b_in[1][to]) - np.maximum(lo[tn], b_in[0][to])
    keep = ov > 0
    return tn[keep], to[keep], ov[keep]


def move_figures(source: TensorSharding, target: TensorSharding, in_mesh: Mesh, out_mesh: Mesh, shape,
                 uneven: str, itemsize: int):
    """`(devices, sent, received, crossing per mesh axis, messages)` of the move from `source` to
    `target` (devices in mesh order, bytes), or None where the per-message path must count."""
    cuts = refs(source) + refs(target)
    if in_mesh.axes != out_mesh.axes or not nested(cuts, in_mesh):
        return None
    dev = np.asarray(in_mesh.devices, np.int64).reshape(-1) if in_mesh.axes else np.zeros(1, np.int64)
    out_dev = np.asarray(out_mesh.devices, np.int64).reshape(-1) if out_mesh.axes else np.zeros(1, np.int64)
    if not np.array_equal(dev, out_dev):
        return None
    pi = place(source, in_mesh, shape, cuts=cuts, uneven=uneven)
    po = place(target, out_mesh, shape, cuts=cuts, uneven=uneven)
    if pi.pieces != po.pieces:
        return None
    tile = set(pi.tile_pieces)
    names = [a.name for a in in_mesh.axes]
    by_axis = {a: [i for i, pc in enumerate(pi.pieces) if pc.name == a] for a in names}
    sizes = pi.piece_sizes
    n = math.prod(sizes)
    coords = np.indices(sizes, dtype=np.int64).reshape(len(sizes), n) if sizes else np.zeros((0, n), np.int64)
    rank = len(pi.dim_pieces)
    total = np.ones(n, np.int64)  # all blocks' elements, per receiver
    blocks = np.ones(n, np.int64)
    local = np.ones(n, np.int64)
    kept = [np.ones(n, np.int64) for _ in names]  # per receiver and axis: blocks not crossing it
    dims = []
    for d in range(rank):
        b_in, b_out = pi.dim_bounds(d), po.dim_bounds(d)
        tn, to, ov = _overlaps(b_out, b_in)
        t_out, t_in = len(b_out[0]), len(b_in[0])
        new, old = _radix(coords, po.dim_pieces[d], sizes), _radix(coords, pi.dim_pieces[d], sizes)
        dims.append((tn, to, ov, t_in, old))
        s_d = np.bincount(tn, ov, t_out).astype(np.int64)
        total *= s_d[new]
        blocks *= np.bincount(tn, minlength=t_out)[new]
        local *= np.maximum(np.minimum(b_out[1][new], b_in[1][old]) - np.maximum(b_out[0][new], b_in[0][old]), 0)
        digits = _digits(to, pi.dim_pieces[d], sizes)
        for a, name in enumerate(names):
            mine = [i for i in pi.dim_pieces[d] if i in by_axis[name]]
            k = math.prod(sizes[i] for i in mine)
            m = np.bincount(tn * k + _radix(digits, mine, sizes), ov, t_out * k).astype(np.int64)
            kept[a] *= m[new * k + _radix(coords, mine, sizes)]

    def served(fixed: set[int]) -> np.ndarray:
        """Per sender `s`: elements of its own tile that the receivers `r` with `r`'s coordinates
        equal to `s`'s on `fixed` pieces need (summed over `r`'s other coordinates)."""
        out = np.full(n, math.prod(sizes[i] for i in range(len(sizes))
                                   if i not in fixed and not any(i in p for p in po.dim_pieces)), np.int64)
        for d, (tn, to, ov, t_in, old) in enumerate(dims):
            key = [i for i in po.dim_pieces[d] if i in fixed]
            k = math.prod(sizes[i] for i in key)
            h = np.bincount(_radix(_digits(tn, po.dim_pieces[d], sizes), key, sizes) * t_in + to, ov, k * t_in)
            out *= h.astype(np.int64)[_radix(coords, key, sizes) * t_in + old]
        return out

    # The sender copies `r`'s coordinates on the pieces that do not tile the operand, except on
    # the replicated pieces of an axis whose tile pieces differ (then 0). Per such mixed axis `A`,
    # [sender = s] = [A same](copy[r = s on A's replicated] - zero(s)) + zero(s): three terms.
    base = {i for i in range(len(sizes)) if i not in tile}
    terms = [(base, np.ones(n, np.int64))]
    for idx in by_axis.values():
        rep = {i for i in idx if i not in tile and i not in pi.unreduced_pieces}
        if not rep or not any(i in tile for i in idx):
            continue
        zero = np.all(coords[sorted(rep)] == 0, axis=0).astype(np.int64)
        same = {i for i in idx if i in tile}
        terms = [((f - rep) | o, c * w) for f, c in terms
                 for o, w in ((same | rep, 1), (same, -zero), (set(), zero))]
    serve = sum(c * served(f) for f, c in terms)
    received = (total - local) * itemsize
    sent = (serve - local) * itemsize
    crossing = np.array([int((total - c).sum()) for c in kept], np.int64) * itemsize
    messages = int(blocks.sum() - np.count_nonzero(local))
    return dev, sent, received, crossing, messages
