"""XLA element types and the numpy/ml_dtypes dtypes that hold them.

One table, `ELEMENT_TYPES`, maps XLA's primitive-type names to an `ElementType`; adding a dtype
is one row. `bit_width` is XLA's `primitive_util::BitWidth`; without `E(n)` an element takes
`storage_bits = 8 * ceil(bit_width / 8)` bits (so PRED and s4 take one byte each).

>>> ELEMENT_TYPES["bf16"].dtype.name, ELEMENT_TYPES["bf16"].bit_width
('bfloat16', 16)
>>> ELEMENT_TYPES["pred"].bit_width, ELEMENT_TYPES["pred"].storage_bits
(1, 8)
>>> element_type_for_dtype(np.dtype(np.float32)).name
'f32'
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tiling._checks import describe
from tiling.errors import LayoutError

__all__ = ["ELEMENT_TYPES", "ElementType", "element_type", "element_type_for_dtype", "mlir_element_type"]


@dataclass(frozen=True, slots=True)
class ElementType:
    """One XLA primitive type."""

    name: str
    """XLA's lowercase name, as printed in shapes (`bf16`)."""
    dtype: np.dtype
    """The numpy dtype of a logical array of this type (ml_dtypes for bf16, int4, fp8, ...)."""
    bit_width: int
    """XLA's `BitWidth`: the number of meaningful bits (pred 1, s4 4, c64 64)."""
    is_signed_integer: bool
    """Two's-complement integer (`s*`): widened storage sign-extends."""

    @property
    def storage_bits(self) -> int:
        """Bits per stored element when the layout has no `E(n)`: whole bytes."""
        return -(-self.bit_width // 8) * 8

    @property
    def is_integer(self) -> bool:
        """pred, `s*` or `u*`: the types whose storage may be widened by `E(n)`."""
        return self.name == "pred" or self.name[0] in "su"

    @property
    def container(self) -> np.dtype:
        """Unsigned dtype of the same itemsize, used to move bit patterns (no float math).

        c128 has no 128-bit unsigned integer; it moves as a 16-byte void.
        """
        size = self.dtype.itemsize
        return np.dtype(f"u{size}") if size <= 8 else np.dtype((np.void, size))


def _table() -> dict[str, ElementType]:
    rows = [  # (XLA name, dtype, BitWidth)
        ("pred", np.bool_, 1),
        ("s1", ml_dtypes.int1, 1), ("s2", ml_dtypes.int2, 2), ("s4", ml_dtypes.int4, 4),
        ("s8", np.int8, 8), ("s16", np.int16, 16), ("s32", np.int32, 32), ("s64", np.int64, 64),
        ("u1", ml_dtypes.uint1, 1), ("u2", ml_dtypes.uint2, 2), ("u4", ml_dtypes.uint4, 4),
        ("u8", np.uint8, 8), ("u16", np.uint16, 16), ("u32", np.uint32, 32), ("u64", np.uint64, 64),
        ("f16", np.float16, 16), ("bf16", ml_dtypes.bfloat16, 16),
        ("f32", np.float32, 32), ("f64", np.float64, 64),
        ("c64", np.complex64, 64), ("c128", np.complex128, 128),
        ("f8e5m2", ml_dtypes.float8_e5m2, 8), ("f8e4m3", ml_dtypes.float8_e4m3, 8),
        ("f8e4m3fn", ml_dtypes.float8_e4m3fn, 8),
        ("f8e4m3b11fnuz", ml_dtypes.float8_e4m3b11fnuz, 8),
        ("f8e3m4", ml_dtypes.float8_e3m4, 8), ("f8e5m2fnuz", ml_dtypes.float8_e5m2fnuz, 8),
        ("f8e4m3fnuz", ml_dtypes.float8_e4m3fnuz, 8), ("f8e8m0fnu", ml_dtypes.float8_e8m0fnu, 8),
        ("f4e2m1fn", ml_dtypes.float4_e2m1fn, 4),
    ]
    return {
        name: ElementType(name, np.dtype(dt), bits, name[0] == "s")
        for name, dt, bits in rows
    }


ELEMENT_TYPES: dict[str, ElementType] = _table()
_BY_DTYPE = {et.dtype: et for et in ELEMENT_TYPES.values()}
_MLIR_ONLY = {name: ElementType(name, np.dtype(dt), 6, False)
              for name, dt in (("f6e2m3fn", ml_dtypes.float6_e2m3fn), ("f6e3m2fn", ml_dtypes.float6_e3m2fn))}
"""MLIR float types that ml_dtypes holds but XLA 0.10.2 has no primitive type for (no shape
text names them): `mlir_element_type` only."""


def element_type(name: str) -> ElementType:
    """The `ElementType` named `name` (case-insensitive: the design doc writes `F32`)."""
    et = ELEMENT_TYPES.get(name.lower()) if isinstance(name, str) else None
    if et is None:
        raise LayoutError(
            f"unknown element type {describe(name)}; expected one of {', '.join(ELEMENT_TYPES)}")
    return et


def element_type_for_dtype(dtype) -> ElementType:
    """The `ElementType` whose arrays have `dtype` (byte order ignored)."""
    if dtype is None:  # (numpy reads None as float64)
        raise LayoutError("expected a numpy dtype, found None")
    try:
        dt = np.dtype(dtype)
    except Exception:  # (numpy's TypeError, or whatever an object's `dtype` attribute raises)
        raise LayoutError(f"expected a numpy dtype, found {type(dtype).__name__}") from None
    if dt.byteorder not in "=|":
        dt = dt.newbyteorder("=")
    et = _BY_DTYPE.get(dt)
    if et is None:
        raise LayoutError(f"dtype {dt} has no XLA element type; supported: "
                          + ", ".join(str(d) for d in _BY_DTYPE))
    return et


def mlir_element_type(name: str) -> ElementType | None:
    """The `ElementType` of an MLIR element type as StableHLO writes it (`i1`, `i32`, `ui8`,
    `si16`, `bf16`, `f8E4M3FN`, `f6E2M3FN`, `complex<f32>`), or None (`index`, `tf32`, opaque types).

    >>> mlir_element_type("ui4").name, mlir_element_type("f8E4M3FN").name, mlir_element_type("i1").name
    ('u4', 'f8e4m3fn', 'pred')
    """
    if name == "i1":
        return ELEMENT_TYPES["pred"]
    if name.startswith("complex<"):
        inner = {"f32": "c64", "f64": "c128"}.get(name[len("complex<"):-1])
        return ELEMENT_TYPES.get(inner) if inner else None
    for prefix, xla in (("ui", "u"), ("si", "s"), ("i", "s")):
        if name.startswith(prefix) and name[len(prefix):].isdigit():
            return ELEMENT_TYPES.get(xla + name[len(prefix):])
    return (ELEMENT_TYPES.get(name.lower()) or _MLIR_ONLY.get(name.lower())) if name[:1] in "fb" else None
