"""The element-type table: XLA names, dtypes, bit widths (spec §1)."""

import ml_dtypes
import numpy as np
import pytest

from tiling import ELEMENT_TYPES, LayoutError
from tiling.dtypes import element_type, element_type_for_dtype

REQUIRED = ["pred", "s4", "s8", "s16", "s32", "s64", "u4", "u8", "u16", "u32", "u64", "f16",
            "bf16", "f32", "f64", "c64", "c128", "f8e5m2", "f8e4m3", "f8e4m3fn",
            "f8e4m3b11fnuz", "f8e3m4", "f8e5m2fnuz", "f8e4m3fnuz", "f8e8m0fnu", "f4e2m1fn",
            "s1", "s2", "u1", "u2"]

# XLA primitive_util::BitWidth
BIT_WIDTH = {"pred": 1, "s1": 1, "u1": 1, "s2": 2, "u2": 2, "s4": 4, "u4": 4, "f4e2m1fn": 4,
             "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16, "bf16": 16, "s32": 32,
             "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64, "c64": 64, "c128": 128}


def test_required_names_present():
    assert set(REQUIRED) <= set(ELEMENT_TYPES)


@pytest.mark.parametrize("name", sorted(ELEMENT_TYPES))
def test_bit_width_and_storage(name):
    et = ELEMENT_TYPES[name]
    assert et.name == name
    expected = BIT_WIDTH.get(name, 8)  # every f8* type is 8 bits
    assert et.bit_width == expected
    assert et.storage_bits == max(8, expected)
    assert et.container.itemsize == et.dtype.itemsize
    assert element_type_for_dtype(et.dtype) is et


def test_dtypes_are_numpy_and_ml_dtypes():
    assert ELEMENT_TYPES["pred"].dtype == np.bool_
    assert ELEMENT_TYPES["bf16"].dtype == ml_dtypes.bfloat16
    assert ELEMENT_TYPES["s4"].dtype == ml_dtypes.int4
    assert ELEMENT_TYPES["u4"].dtype == ml_dtypes.uint4
    assert ELEMENT_TYPES["f8e4m3fn"].dtype == ml_dtypes.float8_e4m3fn
    assert ELEMENT_TYPES["c64"].dtype == np.complex64


def test_signedness():
    signed = {n for n, et in ELEMENT_TYPES.items() if et.is_signed_integer}
    assert signed == {"s1", "s2", "s4", "s8", "s16", "s32", "s64"}
    integer = {n for n, et in ELEMENT_TYPES.items() if et.is_integer}
    assert integer == signed | {"pred", "u1", "u2", "u4", "u8", "u16", "u32", "u64"}


def test_lookup_is_case_insensitive_and_byte_order_blind():
    assert element_type("F32").name == "f32"
    assert element_type_for_dtype(np.dtype(">f4")).name == "f32"


@pytest.mark.parametrize("bad", [np.dtype("U3"), np.dtype(object), np.dtype("M8[s]")])
def test_unknown_dtype(bad):
    with pytest.raises(LayoutError, match="has no XLA element type"):
        element_type_for_dtype(bad)


def test_unknown_name():
    with pytest.raises(LayoutError, match="unknown element type 'f33'"):
        element_type("f33")
