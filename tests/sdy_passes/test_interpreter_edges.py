"""Spec execute.md App. B: XLA:CPU's edge semantics, one test per row, with the values the table
records from XLA (jax 0.10.2) and, where the table has them, the reference interpreter's."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import sdy_passes

I32_MIN, I32_MAX = -2 ** 31, 2 ** 31 - 1


def _run(body: str, *args, ins: tuple[str, ...], outs: tuple[str, ...], numerics="fast"):
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ins))
    text = (f"func.func @main({params}) -> ({', '.join(outs)}) {{\n{body}\n"
            f"  return %r : {', '.join(outs)}\n}}")
    return sdy_passes.interpret(text, *args, numerics=numerics)[0]


def _binary(op: str, a, b, t: str, numerics="fast"):
    return _run(f"  %r = stablehlo.{op} %a0, %a1 : {t}", a, b, ins=(t, t), outs=(t,), numerics=numerics)


def _unary(op: str, a, t: str, out: str | None = None, numerics="fast"):
    out = out or t
    sig = f"{t}" if out == t else f"({t}) -> {out}"
    return _run(f"  %r = stablehlo.{op} %a0 : {sig}", a, ins=(t,), outs=(out,), numerics=numerics)


NUMERICS = ("fast", "reference")


def bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


@pytest.mark.parametrize("numerics", NUMERICS)
def test_divide_i32(numerics):
    a = np.array([7, -7, I32_MIN, I32_MIN], np.int32)
    b = np.array([0, 0, -1, 0], np.int32)
    got = _binary("divide", a, b, "tensor<4xi32>", numerics)
    assert got.tolist() == [-1, -1, I32_MIN, -1]


@pytest.mark.parametrize("numerics", NUMERICS)
def test_remainder_i32(numerics):
    a = np.array([7, -7, I32_MIN, I32_MIN], np.int32)
    b = np.array([0, 0, -1, 0], np.int32)
    got = _binary("remainder", a, b, "tensor<4xi32>", numerics)
    assert got.tolist() == [7, -7, 0, I32_MIN]


def test_divide_remainder_u8():
    a = np.array([7, 0], np.uint8)
    b = np.array([0, 0], np.uint8)
    assert _binary("divide", a, b, "tensor<2xui8>").tolist() == [255, 255]
    assert _binary("remainder", a, b, "tensor<2xui8>")[0] == 7


def test_shift_left_i32():
    x = np.full(4, 5, np.int32)
    got = _binary("shift_left", x, np.array([0, -1, 40, 33], np.int32), "tensor<4xi32>")
    assert got.tolist() == [5, 0, 0, 0]


def test_shift_right_arithmetic_i32():
    got = _binary("shift_right_arithmetic", np.array([I32_MIN, -1, -8], np.int32),
                  np.array([-1, 33, 1], np.int32), "tensor<3xi32>")
    assert got.tolist() == [-1, -1, -4]


def test_shift_right_logical_i32():
    got = _binary("shift_right_logical", np.array([-8, -1], np.int32), np.array([1, 33], np.int32),
                  "tensor<2xi32>")
    assert got.tolist() == [2147483644, 0]


_CONVERT_IN = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.5, -2.5, -0.0], np.float32)


@pytest.mark.parametrize("target, expected", [
    ("i32", [0, I32_MAX, I32_MIN, I32_MAX, I32_MIN, 2, -2, 0]),
    ("ui8", [0, 255, 0, 255, 0, 2, 0, 0]),
    ("i8", [0, 127, -128, 127, -128, 2, -2, 0]),
])
def test_convert_float_to_int_saturates(target, expected):
    got = _unary("convert", _CONVERT_IN, "tensor<8xf32>", f"tensor<8x{target}>")
    assert got.tolist() == expected


def test_convert_float_to_bool():
    got = _unary("convert", _CONVERT_IN, "tensor<8xf32>", "tensor<8xi1>")
    assert got.tolist() == [True] * 7 + [False]


def test_convert_float_to_int4_saturates():
    got = _unary("convert", np.array([9.7, -9.2, 3.5], np.float32), "tensor<3xf32>", "tensor<3xi4>")
    assert got.dtype == ml_dtypes.int4 and got.astype(int).tolist() == [7, -8, 3]


def test_convert_float_to_f8e4m3fn():
    got = _unary("convert", np.array([3.4e38, 464, 500, 1e-40], np.float32), "tensor<4xf32>",
                 "tensor<4xf8E4M3FN>")
    f = got.astype(np.float32)
    assert np.isnan(f[0]) and f[1] == 448 and np.isnan(f[2]) and f[3] == 0


@pytest.mark.parametrize("numerics", NUMERICS)
def test_maximum_minimum_nan_and_signed_zeros(numerics):
    a = np.array([np.nan, 1, -0.0, 0.0], np.float32)
    b = np.array([1, np.nan, 0.0, -0.0], np.float32)
    mx = _binary("maximum", a, b, "tensor<4xf32>", numerics)
    mn = _binary("minimum", a, b, "tensor<4xf32>", numerics)
    assert np.isnan(mx[:2]).all() and np.isnan(mn[:2]).all()
    assert bits(mx[2:]).tolist() == [0, 0]
    assert bits(mn[2:]).tolist() == [0x80000000, 0x80000000]


def _reduce(kind: str, x, init: float, numerics="fast"):
    literal = repr(init) if np.isfinite(init) else f"0x{int(np.float32(init).view(np.uint32)):08X}"  # (MLIR has no `inf`)
    body = (f"  %c = stablehlo.constant dense<{literal}> : tensor<f32>\n"
            f"  %r = stablehlo.reduce(%a0 init: %c) applies stablehlo.{kind} across dimensions = [0] : "
            f"(tensor<{len(x)}xf32>, tensor<f32>) -> tensor<f32>")
    return _run(body, x, ins=(f"tensor<{len(x)}xf32>",), outs=("tensor<f32>",), numerics=numerics)


@pytest.mark.parametrize("numerics", NUMERICS)
def test_reduce_max_of_signed_zeros(numerics):
    got = _reduce("maximum", np.array([-0.0, 0.0, -0.0], np.float32), float("-inf"), numerics)
    assert got == 0  # XLA gives -0.0; the spec compares zeros of max reductions as equal


@pytest.mark.parametrize("numerics", NUMERICS)
def test_reduce_add_of_negative_zeros_from_positive_init(numerics):
    got = _reduce("add", np.array([-0.0, -0.0], np.float32), 0.0, numerics)
    assert bits(got) == 0  # +0.0 as XLA (numpy's own sum gives -0.0)


def test_nan_payloads():
    x = np.array([0x7FC00001, 0xFFC00002, 0x7F800001], np.uint32).view(np.float32)
    t = "tensor<3xf32>"
    assert bits(_unary("negate", x, t)).tolist() == [0xFFC00001, 0x7FC00002, 0xFF800001]
    assert bits(_unary("abs", x, t)).tolist() == [0x7FC00001, 0x7FC00002, 0x7F800001]
    plus_one = _binary("add", x, np.ones(3, np.float32), t)
    assert bits(plus_one)[2] == 0x7FC00001  # the signalling NaN is quieted
    assert bits(_binary("maximum", x, np.zeros(3, np.float32), t)).tolist()[:2] == [0x7FC00001, 0xFFC00002]


def test_rounding():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -0.0], np.float32)
    even = _unary("round_nearest_even", x, "tensor<6xf32>")
    afz = _unary("round_nearest_afz", x, "tensor<6xf32>")
    assert bits(even).tolist() == bits(np.array([0, 2, 2, -0.0, -2, -0.0], np.float32)).tolist()
    assert bits(afz).tolist() == bits(np.array([1, 2, 3, -1, -3, -0.0], np.float32)).tolist()


def test_integer_wrapping():
    t = "tensor<1xi32>"
    big, small = np.array([I32_MAX], np.int32), np.array([I32_MIN], np.int32)
    assert _binary("add", big, big, t).tolist() == [-2]
    assert _binary("multiply", small, small, t).tolist() == [0]
    assert _unary("negate", small, t).tolist() == [I32_MIN]
    assert _unary("abs", small, t).tolist() == [I32_MIN]


@pytest.mark.parametrize("numerics", NUMERICS)
def test_integer_power_wraps(numerics):
    got = _binary("power", np.array([2, 2, 3, -1], np.int32), np.array([31, -1, 2, -3], np.int32),
                  "tensor<4xi32>", numerics)
    assert got.tolist() == [I32_MIN, 0, 9, -1]


def test_int4_add_multiply_wrap():
    t = "tensor<2xi4>"
    a = np.array([7, -8], ml_dtypes.int4)
    assert _binary("add", a, np.array([1, -1], ml_dtypes.int4), t).astype(int).tolist() == [-8, 7]
    assert _binary("multiply", a, np.array([1, -1], ml_dtypes.int4), t).astype(int).tolist() == [7, -8]


def test_int4_arithmetic_then_widening_convert():
    """Contested row: XLA:CPU fuses and gives 8; the reference interpreter and the per-op rule
    give -8. The evaluator rounds (wraps) after every op: -8."""
    body = ("  %c = stablehlo.constant dense<1> : tensor<1xi4>\n"
            "  %s = stablehlo.add %a0, %c : tensor<1xi4>\n"
            "  %r = stablehlo.convert %s : (tensor<1xi4>) -> tensor<1xi8>")
    got = _run(body, np.array([7], ml_dtypes.int4), ins=("tensor<1xi4>",), outs=("tensor<1xi8>",))
    assert got.tolist() == [-8]


def test_multiply_add_within_float_tier_of_fma():
    """XLA:CPU contracts `a*b + c` into an FMA (rounded once); the fast evaluator rounds twice,
    within the float tier (spec §7.3) of the FMA's value."""
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(4096).astype(np.float32) for _ in range(3))
    body = ("  %m = stablehlo.multiply %a0, %a1 : tensor<4096xf32>\n"
            "  %r = stablehlo.add %m, %a2 : tensor<4096xf32>")
    t = "tensor<4096xf32>"
    got = _run(body, a, b, c, ins=(t, t, t), outs=(t,)).astype(np.float64)
    fma = (a.astype(np.float64) * b + c).astype(np.float32).astype(np.float64)
    scale = np.abs(fma).max()
    assert (np.abs(got - fma) <= 2.0 ** -15 * (np.abs(fma) + scale)).all()
