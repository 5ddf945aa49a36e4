"""Partial values: the one definition every backend and path of the simulation uses.

An array with unreduced axes holds, on each device, a buffer whose reduction over the devices
that differ only along those axes is the value (data and padding alike). `shard` makes them so:

* `sum`: the devices at coordinate 0 along every unreduced axis hold the buffer (data, and `fill`
  in padding); the others hold the additive identity everywhere, padding included
  (`-0.0` for floats, the exact identity of IEEE addition: `x + -0.0` is `x` bit for bit, even
  for `-0.0`; `0` for integers of any width; `False`);
* `max`/`min`: every device holds the buffer.

A move keeps a device's partials (it only receives from devices with its unreduced coordinates)
and pads a `sum` partial at a non-zero coordinate with the identity, so reshards, reductions and
`shard` agree bit for bit. Reductions run in the array's own dtype, wrapping to its width
(ml_dtypes' int4/uint4/int2/uint2 too, as XLA: int4 `7 + 1 = -8`).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["bits", "identity", "pad_values", "reduce", "reduce_partials", "REDUCTIONS"]

REDUCTIONS = ("sum", "max", "min")
_UFUNC = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def bits(a: np.ndarray) -> np.ndarray:
    """The array's bit patterns, so NaN payloads, -0.0 and bf16/int4 compare exactly."""
    if a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(f"u{a.dtype.itemsize}")
    return np.ascontiguousarray(a).view(np.uint8)


def _is_float(dtype: np.dtype) -> bool:
    if dtype.kind in "fc":
        return True
    try:  # ml_dtypes' floats (bf16, f8, f4...) have kind 'V' but a finfo (ml_dtypes' own before 0.7)
        ml_dtypes.finfo(dtype)
    except (TypeError, ValueError):
        return False
    return True


def identity(dtype) -> np.ndarray:
    """The `sum` identity as a 0-d array of exactly `dtype` (never a promoted type)."""
    dtype = np.dtype(dtype)
    zero = np.zeros((), dtype)
    if not _is_float(dtype):
        return zero
    negative = np.negative(zero)  # -0.0 (types without -0.0, such as f8 *fnuz, negate 0 to 0)
    return negative if negative.dtype == dtype else zero


def pad_values(fill: np.ndarray, partial: np.ndarray, op: str) -> np.ndarray:
    """Per receiver: what its padding holds (`partial`: at a non-zero unreduced coordinate)."""
    out = np.broadcast_to(fill, partial.shape).copy()
    if op == "sum":
        out[partial] = identity(fill.dtype)
    return out


def reduce(values: np.ndarray, axis, op: str) -> np.ndarray:
    """`op` over `axis` (kept, size 1) in the array's own dtype."""
    return _UFUNC[op].reduce(values, axis=axis, keepdims=True, dtype=values.dtype)


def reduce_partials(values: np.ndarray, axis: int, op: str) -> np.ndarray:
    """Reduces partial values along one mesh dim (kept, size 1).

    When the partials are exactly what `shard` made (identity, or copies for max/min), the data
    is taken as is: arithmetic would quiet signalling NaNs and so not be bit-exact.
    """
    first = np.take(values, [0], axis=axis)
    rest = np.take(values, range(1, values.shape[axis]), axis=axis)
    made = first if op != "sum" else np.broadcast_to(identity(values.dtype), first.shape)
    if (bits(rest) == bits(np.ascontiguousarray(made))).all():
        return first
    return reduce(values, axis, op)
