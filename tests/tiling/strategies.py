"""Hypothesis strategies for tiling tests: tiles, layouts, shapes and arrays that fit them; and
the engine's plans (`plan_of`) and the runtime spy `kernels_called`."""

import numpy as np
from hypothesis import strategies as st

from tiling import COMBINE_DIMENSION, ELEMENT_TYPES, Layout, Shape, Tile, _engine, _runtime

STAR = COMBINE_DIMENSION
INT64_MAX = 2**63 - 1


# Tile shapes the strategies draw from: a fixed list, so that a random layout never asks the
# engine for a kernel specialised to a new tile shape (`tiny_tiles` compiles one set per shape:
# a random shape once cost a 60 s cold compile in one test). Short, long, `*` and 1-D tiles.
TILE_SHAPES = ((1,), (2,), (3,), (5,), (1, 1), (2, 2), (2, 3), (3, 1), (4, 4), (1, 5), (5, 2),
               (2, 1, 3), (STAR, 2), (2, STAR, 3), (STAR, STAR, 4), (3, 2, 1, 2),
               (1, STAR, 5, 1), (2, 2, 2, 2, 2))


def tiles(max_len=4, max_size=5, star=True):
    """A valid tile from TILE_SHAPES: at most max_len entries of at most max_size, '*' only
    with `star`, never '*' last."""
    fits = [t for t in TILE_SHAPES if len(t) <= max_len and (star or STAR not in t)
            and all(e == STAR or e <= max_size for e in t)]
    return st.sampled_from(fits).map(Tile)


@st.composite
def layouts(draw, rank, *, max_tiles=3, max_tile_len=None, max_size=5, attributes=True):
    """A valid layout of `rank`, with short, long, repeated and '*' tiles."""
    m2m = draw(st.permutations(range(rank)))
    tile_len = max_tile_len or rank + 2
    ts = draw(st.lists(tiles(tile_len, max_size), max_size=max_tiles))
    kw = {}
    if attributes:
        kw = dict(tail_padding_alignment_in_elements=draw(st.sampled_from([1, 1, 1, 3, 8])),
                  memory_space=draw(st.sampled_from([0, 0, 1, 5])))
    return Layout(tuple(m2m), tuple(ts), **kw)


@st.composite
def printable_layouts(draw):
    """Layouts over the whole int64 range, as `xla_client.Layout` takes them (no S/L/M)."""
    rank = draw(st.integers(0, 6))
    m2m = draw(st.permutations(range(rank)))
    entry = st.one_of(st.integers(1, 300), st.integers(1, INT64_MAX))
    tile = st.tuples(st.lists(st.one_of(entry, st.just(STAR)), max_size=6), entry).map(
        lambda p: tuple(p[0]) + (p[1],))
    ts = draw(st.lists(tile, max_size=4))
    e = draw(st.one_of(st.just(0), st.sampled_from([1, 2, 4, 8, 16, 32, 64]),
                       st.integers(0, 2**31 - 1)))
    return Layout(tuple(m2m), tuple(ts), e)


def element_size_choices(name):
    """E(n) values the codec supports for element type `name`."""
    et = ELEMENT_TYPES[name]
    out = [0, et.storage_bits]
    if et.bit_width < 8:
        out.append(et.bit_width)
    if et.is_integer:
        out += [b for b in (16, 32, 64) if b > et.storage_bits]
    return sorted(set(out))


@st.composite
def shapes(draw, *, max_rank=4, max_dim=7, types=tuple(ELEMENT_TYPES)):
    """A static shape with a layout the codec accepts (nested padding allowed)."""
    name = draw(st.sampled_from(types))
    rank = draw(st.integers(0, max_rank))
    dims = tuple(draw(st.lists(st.integers(0, max_dim), min_size=rank, max_size=rank)))
    layout = draw(layouts(rank))
    e = draw(st.sampled_from(element_size_choices(name)))
    return Shape(name, dims, Layout(layout.minor_to_major, layout.tiles, e,
                                    layout.tail_padding_alignment_in_elements,
                                    layout.memory_space))


def random_array(rng, shape):
    """A seeded random array of `shape.dtype` covering every bit pattern the type allows."""
    et = ELEMENT_TYPES[shape.element_type]
    dims = shape.dimensions
    if et.name == "pred":
        return np.asarray(rng.random(dims) < 0.5)
    if et.bit_width < 8:  # ml_dtypes keeps the value in the low bits of a byte
        raw = rng.integers(0, 1 << et.bit_width, size=dims, dtype=np.uint8)
        return raw.view(et.dtype)
    if et.name == "c128":
        raw = rng.integers(0, 2**64, size=dims + (2,), dtype=np.uint64)
        return raw.view(np.complex128).reshape(dims)
    raw = rng.integers(0, 2 ** (8 * et.dtype.itemsize), size=dims,
                       dtype=np.dtype(f"u{et.dtype.itemsize}"))
    return raw.view(et.dtype)


def bits_of(x):
    """Bit patterns for exact comparison (NaN payloads included)."""
    x = np.asarray(x)
    if x.dtype.itemsize > 8:
        return np.ascontiguousarray(x).reshape(-1).view(np.uint64)
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


def plan_of(x, shape, encode=True, *, cache_bytes=None):
    """The engine's `Plan`, made afresh, encoding arrays like `x` (shape, strides, dtype) into
    `shape`'s layout, or (`encode=False`) decoding into C-order arrays of x's shape and dtype;
    `cache_bytes` stands for the machine's last-level cache size (streaming stores)."""
    et = ELEMENT_TYPES[shape.element_type]
    like = x if encode else np.empty(x.shape, x.dtype)
    return _engine.make_plan(like.view(et.container), shape.layout, et, encode,
                             cache_bytes=cache_bytes)


def kernel_of(plan):
    """The kernel a plan runs, with `_par` when it may take numba's threads."""
    return plan.kernel + "_par" * plan.threads


class _NeverWarm(set):
    def add(self, kernel):
        pass


def kernels_called(monkeypatch):
    """Records the kernels the runtime runs, with fresh plan caches: for the tests of the
    runtime itself (which thread runs a `_par` kernel); dispatch tests inspect `plan_of`."""
    names = []
    real = _runtime._first_call
    # with no kernel ever warm or compiled, every kernel call goes through `_first_call`
    monkeypatch.setattr(_runtime, "_WARM", _NeverWarm())
    monkeypatch.setattr(_runtime, "_compiled", lambda dispatcher, args: False)
    monkeypatch.setattr(_runtime, "_first_call",
                        lambda k, a: names.append(k.__name__) or real(k, a))
    _engine.forget_plans()
    return names


__all__ = ["STAR", "TILE_SHAPES", "tiles", "layouts", "printable_layouts", "shapes", "random_array", "bits_of",
           "element_size_choices", "kernel_of", "kernels_called", "plan_of"]
