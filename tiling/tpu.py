"""`tpu_layout`: the default TPU tiling the XLA design doc describes (spec §7), as a guess.

>>> str(tpu_layout("f32", (256, 512)))
'{1,0:T(8,128)}'
>>> str(tpu_layout("bf16", (4, 3, 300)))
'{2,1,0:T(4,128)(2,1)}'
>>> str(tpu_layout("s4", (64, 256)))
'{1,0:T(8,128)(8,1)E(4)}'
>>> str(tpu_layout("pred", (64, 256), pred_bits=1))
'{1,0:T(32,128)(32,1)E(1)}'
>>> str(tpu_layout("bf16", (3000,)))
'{0:T(1024)(128)(2,1)}'
"""

from __future__ import annotations

from tiling._checks import read_int, read_ints
from tiling.dtypes import ElementType, element_type, element_type_for_dtype
from tiling.errors import LayoutError
from tiling.layout import Layout

__all__ = ["tpu_layout"]


def _element(value) -> ElementType:
    if isinstance(value, ElementType):
        return value
    if isinstance(value, str):
        return element_type(value)
    if value is None:  # (numpy reads a None dtype as float64)
        raise LayoutError("element_type must be a name like 'bf16' or a dtype, found None")
    return element_type_for_dtype(value)


def tpu_layout(element_type, dims, *, pred_bits: int = 8) -> Layout:
    """The layout the XLA tiled-layout doc names as TPU's default for an array, row-major.

    **This is a guess, not what a given TPU will use.** The choice depends on the TPU generation
    and on the compiler: Mosaic (jax's TPU kernel compiler) gives f32 arrays with a second-minor
    dim of 1 a `(1,128)` tile on TPU v4 and later, where the doc's rule (applied here) says
    `(2,128)`; larger tiles such as `(16,128)` for bf16, `(32,128)(4,1)` for int8 or
    `(64,128)(8,1)E(4)` for int4 exist behind compiler options; and a backend may change a
    requested layout. To encode for real hardware, read the layout back from the array
    (`tiling.Layout.from_jax(array)`, which reads `array.format.layout`) or from an HLO dump.

    Rules (spec §7, the doc's "Examples of tiling formats"):

    * the two most-minor dims get a `(rows,128)` tile: `rows` is 2 when the second-minor dim is
      at most 2, 4 when it is 3 or 4, else 8;
    * 16-bit types add `(2,1)` (two rows per 32-bit word), 8-bit types (and PRED stored as a
      byte) `(4,1)`, 4-bit types `(8,1)` with `E(4)`, 2-bit `(16,1)` with `E(2)`, with `rows`
      raised to at least that many rows so the packing tile divides the first;
    * PRED with `pred_bits=1`, and 1-bit types: `(32,128)(32,1)E(1)`;
    * rank 1: one `(rows*128)` tile (`rows` as for a large second-minor dim), then `(128)(p,1)`
      for packed types, e.g. `bf16[N]{0:T(1024)(128)(2,1)}` as in XLA's TPU dumps;
    * rank 0: untiled, `{}` (dumps show scalars with 1-d tiles such as `T(128)` or `T(256)`
      that depend on where the scalar lives; the doc gives no rule).

    Parameters
    ----------
    element_type : str, numpy dtype or ElementType
        `"bf16"`, `ml_dtypes.bfloat16`, `np.float32`, ...
    dims : sequence of int
        Logical dimensions (numpy order); only the rank and the second-minor size matter.
    pred_bits : {8, 1}
        Storage of PRED: one byte (what TPUs do today) or one bit (the doc's denser format).
    """
    et = _element(element_type)
    dims = read_ints(dims, "dims", 0)
    if read_int(pred_bits, "pred_bits") not in (1, 8):
        raise LayoutError(f"pred_bits must be 8 (one byte) or 1 (one bit), found {pred_bits}")
    rank = len(dims)
    m2m = tuple(range(rank - 1, -1, -1))
    if rank == 0:
        return Layout(())
    bits = pred_bits if et.name == "pred" else et.storage_bits if et.bit_width >= 8 \
        else et.bit_width
    if bits > 32:
        bits = 32  # 64-bit and complex types keep the 32-bit tiling
    packing = 32 // bits
    e_bits = bits if bits < 8 else 0
    if rank == 1:
        rows = max(8, packing)
        tiles = [(rows * 128,)]
        if packing > 1:
            tiles += [(128,), (packing, 1)]
        return Layout(m2m, tuple(tiles), e_bits)
    second_minor = dims[-2]
    rows = 2 if second_minor <= 2 else 4 if second_minor <= 4 else 8
    rows = max(rows, packing)
    tiles = [(rows, 128)]
    if packing > 1:
        tiles.append((packing, 1))
    return Layout(m2m, tuple(tiles), e_bits)

