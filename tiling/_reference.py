"""The reference engine: plain numpy, pad → reshape → transpose per tile level.

Written for clarity; faster engines must produce the same bytes. Both functions work on bit
patterns: the logical array arrives viewed as its unsigned container (`uint8/16/32/64`, a 16-byte
void for c128), so no float math happens and NaN payloads survive. `codec.py` validates every
input before calling them; nothing here raises for user errors.

The executable spec these follow is `shared/reference/tiling_ref.py` (spec `tiled_layout.md` §3.6
and §5): elements little-endian, sub-byte `E(n)` packed LSB-first, padding written as zeros.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from tiling.dtypes import ElementType
from tiling.indexing import TileStep, tile_steps
from tiling.layout import Layout

assert sys.byteorder == "little", "buffers are little-endian; big-endian hosts are unsupported"


def _interleaved_to_tiled(p: int, k: int) -> list[int]:
    # (..., n0, t0, n1, t1, ...) -> (..., n0, n1, ..., t0, t1, ...)
    return list(range(p)) + [p + 2 * j for j in range(k)] + [p + 2 * j + 1 for j in range(k)]


def tile_forward(a: np.ndarray, step: TileStep) -> np.ndarray:
    """Applies one tile: reshape (1s, `*` merges), zero-pad, split each dim, move tiles minor."""
    a = a.reshape(step.combined)
    k = len(step.tile)
    p = len(step.combined) - k
    padded = step.combined[:p] + tuple(n * t for n, t in zip(step.after[p:p + k], step.tile))
    if padded != step.combined:
        grown = np.zeros(padded, dtype=a.dtype)
        grown[tuple(slice(0, m) for m in step.combined)] = a
        a = grown
    split = list(step.combined[:p])
    for n, t in zip(step.after[p:p + k], step.tile):
        split += [n, t]
    return a.reshape(split).transpose(_interleaved_to_tiled(p, k))


def tile_backward(a: np.ndarray, step: TileStep) -> np.ndarray:
    """Undoes `tile_forward`: move tiles back, merge, drop padding, un-merge."""
    k = len(step.tile)
    p = len(step.combined) - k
    a = a.reshape(step.after).transpose(np.argsort(_interleaved_to_tiled(p, k)))
    a = a.reshape(step.combined[:p] + tuple(n * t for n, t in zip(step.after[p:p + k],
                                                                 step.tile)))
    a = a[tuple(slice(0, m) for m in step.combined)]
    return a.reshape(step.before)


def _storage_bits(layout: Layout, element: ElementType) -> int:
    return layout.element_size_in_bits or element.storage_bits


def _low_bits_mask(bits: int) -> int:
    return (1 << bits) - 1


def pack(flat: np.ndarray, element: ElementType, bits: int, out: np.ndarray) -> None:
    """Stores container values `flat` in `out` (uint8) at `bits` per element; zeroes the rest."""
    n = flat.size
    natural = flat.dtype.itemsize * 8
    if bits == natural:
        used = n * flat.dtype.itemsize
        out[:used] = np.ascontiguousarray(flat).view(np.uint8)
    elif bits < 8:  # LSB-first inside each byte (XLA's PackIntN)
        per = 8 // bits
        values = flat & np.uint8(_low_bits_mask(bits))
        used = -(-n // per)
        packed = np.zeros(used, np.uint8)
        for j in range(per):
            part = values[j::per]
            packed[: part.size] |= part << np.uint8(j * bits)
        out[:used] = packed
    else:  # wider than the container: sign-extend signed integers, zero-extend the rest
        wide = np.dtype(f"i{bits // 8}" if element.is_signed_integer else f"u{bits // 8}")
        if element.bit_width == natural:
            values = flat.view(flat.dtype.str.replace("u", "i")) if element.is_signed_integer \
                else flat
            widened = values.astype(wide)
        else:  # sub-byte value in the low bits of a uint8
            low = (flat & np.uint8(_low_bits_mask(element.bit_width))).astype(wide)
            if element.is_signed_integer:
                sign = wide.type(1 << (element.bit_width - 1))
                low = (low ^ sign) - sign
            widened = low
        used = n * bits // 8
        out[:used] = widened.view(np.uint8)
    out[used:] = 0


def unpack(buf: np.ndarray, element: ElementType, bits: int, n: int) -> np.ndarray:
    """Inverse of `pack`: the first `n` elements of `buf` as container values."""
    container = element.container
    natural = container.itemsize * 8
    if bits == natural:
        return buf[: n * container.itemsize].view(container)
    if bits < 8:
        per = 8 // bits
        used = -(-n // per)
        values = np.empty(used * per, np.uint8)
        mask = np.uint8(_low_bits_mask(bits))
        for j in range(per):
            values[j::per] = (buf[:used] >> np.uint8(j * bits)) & mask
        return values[:n]
    wide = buf[: n * bits // 8].view(np.dtype(f"u{bits // 8}"))
    keep = wide & wide.dtype.type(_low_bits_mask(element.bit_width))
    return keep.astype(container)


def encode_into(bits: np.ndarray, layout: Layout, element: ElementType, out: np.ndarray) -> None:
    """Writes the logical array `bits` (container view, any strides) into `out` (uint8)."""
    a = bits.transpose(layout.major_to_minor)
    for step in tile_steps(a.shape, layout.tiles):
        a = tile_forward(a, step)
    pack(a.reshape(-1), element, _storage_bits(layout, element), out)


def decode_into(buf: np.ndarray, layout: Layout, element: ElementType, out: np.ndarray) -> None:
    """Reads `buf` (uint8) into `out`, the container view of the logical result array."""
    physical = tuple(out.shape[a] for a in layout.major_to_minor)
    steps = tile_steps(physical, layout.tiles)
    final = steps[-1].after if steps else physical
    a = unpack(buf, element, _storage_bits(layout, element), math.prod(final)).reshape(final)
    for step in reversed(steps):
        a = tile_backward(a, step)
    out[...] = a.transpose(np.argsort(layout.major_to_minor))
