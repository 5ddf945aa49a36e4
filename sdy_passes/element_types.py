"""MLIR element types as numpy dtypes (through `tiling.dtypes`, the project's one table), and
dense constants decoded to numpy arrays.

Imported on first use by `attributes` (so `import sdy_passes` does not load numpy and
ml_dtypes) and at module level by the interpreter.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from sdy_passes.attributes import (
    ComplexType, FloatType, IndexType, IntegerType, RankedTensorType, Type, round_floats,
)
from tiling.dtypes import mlir_element_type

__all__ = ["numpy_dtype", "dense_to_numpy"]


def numpy_dtype(t: Type) -> np.dtype | None:
    """The numpy (ml_dtypes) dtype holding elements of `t` (`index` as int64), or None."""
    if isinstance(t, IndexType):
        return np.dtype(np.int64)
    if isinstance(t, (IntegerType, FloatType, ComplexType)):
        et = mlir_element_type(str(t))
        return et.dtype if et is not None else None
    return None


_NUMBER = re.compile(r"[-+]?(?:0x[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|inf|nan)|true|false")


def _leaf(lit: str, dt: np.dtype, width: int):
    if lit in ("true", "false"):
        return lit == "true"
    if "0x" in lit and dt.kind not in "iub":  # a float's bits (NaN payloads)
        return np.array(int(lit, 16), f"u{dt.itemsize}").view(dt)
    if dt.kind in "iub" or dt.name in ("int4", "uint4", "int2", "uint2"):
        return int(lit, 0)
    return float(lit)


@lru_cache(maxsize=512)
def dense_to_numpy(body: str, t: Type) -> np.ndarray:
    """The value of `dense<body> : t` as a read-only numpy array of `t`'s shape and dtype.

    Splats, nested lists, complex `(re, im)` pairs, float bit patterns and MLIR's hex blobs
    (`"0x..."`: little-endian, one element or all of them) are read; ValueError otherwise."""
    if not isinstance(t, RankedTensorType) or None in t.shape:
        raise ValueError(f"dense constant of type '{t}' has no static shape")
    dt = numpy_dtype(t.element_type)
    if dt is None:
        raise ValueError(f"element type '{t.element_type}' has no numpy dtype")
    shape = tuple(t.shape)
    n = int(np.prod(shape, dtype=np.int64))
    s = body.strip()
    if s.startswith('"0x'):
        raw = bytes.fromhex(s[3:-1])
        if dt == np.bool_:
            flat = np.frombuffer(raw, np.uint8) != 0
        elif dt.kind == "c":
            part = np.dtype(f"<f{dt.itemsize // 2}")
            flat = np.frombuffer(raw, part).astype(f"f{dt.itemsize // 2}").view(dt)
        else:  # little-endian words of the element's width (ml_dtypes' int4/f8/bf16 too)
            flat = np.frombuffer(raw, np.dtype(f"<u{dt.itemsize}")).astype(f"u{dt.itemsize}").view(dt)
        if flat.size not in (1, n):
            raise ValueError(f"hex constant holds {flat.size} elements, expected {n}")
        out = np.broadcast_to(flat, (n,)).reshape(shape) if flat.size == 1 else flat.reshape(shape)
    elif dt.kind == "c":
        pairs = re.findall(r"\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)", s)
        part = np.dtype(f"f{dt.itemsize // 2}")
        vals = np.empty(len(pairs), dt)  # each part a decimal or its float's bits (NaN payloads)
        vals.real = _convert(np.array([_leaf(a, part, part.itemsize) for a, _ in pairs], object), part)
        vals.imag = _convert(np.array([_leaf(b, part, part.itemsize) for _, b in pairs], object), part)
        out = _shaped(vals, shape, n)
    else:
        lits = _NUMBER.findall(s)
        if dt.kind not in "iub" and dt.name[:3] not in ("int", "uin") and not any("0x" in x for x in lits):
            vals = round_floats(np.array([float(x) for x in lits], np.float64), t.element_type)
        else:
            vals = np.array([_leaf(x, dt, dt.itemsize) for x in lits], object)
            vals = _convert(vals, dt)
        out = _shaped(vals, shape, n)
    if out.flags.writeable:  # (splats stay broadcast views, read-only already)
        out.setflags(write=False)
    return out


def _convert(vals: np.ndarray, dt: np.dtype) -> np.ndarray:
    if dt.kind == "b":
        return vals.astype(bool)
    if dt.kind in "iu" or dt.name in ("int4", "uint4", "int2", "uint2"):
        # MLIR reads a signless literal modulo 2^width (`255 : i8` is -1)
        bits = 8 * dt.itemsize if dt.kind in "iu" else int(dt.name[-1])
        ints = [int(v) & ((1 << bits) - 1) for v in vals]
        signed = dt.kind == "i" or dt.name.startswith("int")
        ints = [v - (1 << bits) if signed and v >= 1 << (bits - 1) else v for v in ints]
        return np.array(ints, np.int64).astype(dt)
    out = np.empty(vals.shape, dt)
    for i, v in enumerate(vals):  # float literals round once from f64; bit patterns are kept
        out[i] = v if isinstance(v, np.generic) and v.dtype == dt else np.float64(v).astype(dt)
    return out


def _shaped(vals: np.ndarray, shape, n: int) -> np.ndarray:
    if vals.size == 1:
        return np.broadcast_to(vals.reshape(()), shape)
    if vals.size != n:
        raise ValueError(f"dense constant holds {vals.size} elements, expected {n}")
    return vals.reshape(shape)
