"""Float constants of every MLIR float type print as jaxlib 0.10.2 prints them: dense elements
(splat and not, hex blobs too, and past 100 elements the hex form jaxlib prints) and float attributes written in decimal and in hex (NaN payloads, infinities,
f80 unnormals, FNUZ's NaN at negative zero, f8E8M0FNU's sign), against jaxlib in a child."""

from __future__ import annotations

import os
import random

import ml_dtypes
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sdy_passes
import tiling
from sdy_passes._apfloat import FORMATS
from sdy_passes.attributes import FloatType, float_bits
from sdy_passes.element_types import dense_to_numpy
from sdy_passes.errors import SdyError
from tests.jaxlib_child import run_child

EXAMPLES = int(os.environ.get("SDY_FLOAT_PRINT_EXAMPLES", "1"))  # draws of 10 constants per float type
_CHILD = """
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir
ctx = jax_mlir.make_ir_context()
ctx.enable_multithreading(False)
RESULT = []
with ctx:
    for text in PAYLOAD:
        try:
            RESULT.append({"ok": str(ir.Module.parse(text))})
        except ir.MLIRError as e:
            d = e.error_diagnostics[0]
            RESULT.append({"error": d.message, "at": str(d.location)})
"""


def _literal(rng: random.Random, width: int) -> str:
    kind = rng.random()
    if kind < 0.4:  # bits: NaNs, infinities, subnormals, any pattern of the width
        bits = rng.choice([rng.getrandbits(width), (1 << width) - 1 - rng.getrandbits(2), 1 << (width - 1),
                           rng.getrandbits(3) << (width - 4)])
        return (f"0x{bits:x}" if rng.random() < 0.5 else f"0x{bits:X}")
    if kind < 0.45:
        return rng.choice(["0.0", "-0.0", "1.0", "-1.5", "0.5"])
    if kind < 0.55:  # beyond a double's range: MLIR reads the double (±inf, ±0), then converts it
        return f"{rng.uniform(-9.99, 9.99):.3f}e{rng.choice([309, 400, 4000, -330, -400])}"
    exponent = rng.choice([0, 0, 1, 2, 3, 5, 10, 38, 40, 300, -1, -2, -3, -6, -8, -20, -38, -40, -300])
    value = rng.uniform(-1, 1) * 10.0 ** exponent
    return rng.choice([repr(value) if "." in repr(value) else f"{value:.1f}", f"{value:.3e}", f"{value:.2f}"])


def _module(rng: random.Random, name: str) -> str:
    width = FORMATS[name].width
    n = rng.choice([1, 2, 3, 4]) if rng.random() < 0.9 else rng.randint(100, 130)  # > 100: printed as hex
    values = [_literal(rng, width) for _ in range(n)]
    if n > 1 and rng.random() < 0.3:
        values = [values[0]] * n  # a splat written out
    dense = values[0] if n == 1 and rng.random() < 0.5 else "[" + ", ".join(values) + "]"
    if rng.random() < 0.2:  # a hex blob: whole bytes per element, or one for a splat
        size = -(-width // 8)
        dense = '"0x' + "".join(f"{rng.getrandbits(8):02X}" for _ in range(size * rng.choice([1, n]))) + '"'
    # (a float attribute holds a Python float: f80 and f128 values beyond it are not exact)
    scalar = _literal(rng, width) if name not in ("f80", "f128") else rng.choice(["1.5", "-0.0", "0x0"])
    return (f"func.func @f() attributes {{d = dense<{dense}> : tensor<{n}x{name}>, s = {scalar} : {name}}} {{\n"
            "  return\n}\n")


def _ours(text: str) -> dict:
    try:
        return {"ok": sdy_passes.print_module(sdy_passes.parse_module(text))}
    except SdyError as e:
        return {"error": e.message, "at": f"{e.location.line}:{e.location.col}"}


@pytest.mark.jaxlib
@settings(max_examples=EXAMPLES, deadline=None)
@given(st.integers(0, 2**32))
def test_float_constants_print_as_jaxlib(seed):
    rng = random.Random(seed)
    texts = [_module(rng, name) for name in FORMATS for _ in range(10)]
    for text, theirs in zip(texts, run_child(_CHILD, texts)):
        ours = _ours(text)
        if "ok" in theirs:
            assert ours == {"ok": theirs["ok"] + "\n"} or ours == theirs, text
        else:
            assert ours.get("error") == theirs["error"], text
            assert theirs["at"].endswith(f":{ours['at']})"), text


# What jaxlib printed for the instances the checks found (39 of 108 differed: f64 bits).
@pytest.mark.parametrize("dense, type, printed", [
    ("[0x10, 0x7E, -1.613e+04]", "3xf8E4M3FN", "[3.125000e-02, 4.480000e+02, 0xFF]"),
    ("[0x5E, 3330846054.335155, 1.0326179604592589e-09]", "3xf8E5M2", "[3.840000e+02, 0x7C, 0.000000e+00]"),
    ("[-2.139e+04, -8.244e+39]", "2xf8E4M3FNUZ", "0x80"),
    ("[-0.0, 0x80]", "2xf8E4M3FNUZ", "[0.000000e+00, 0x80]"),
    ("[-3772044586.3957953, -0.0, 0x8]", "3xf4E2M1FN", "[-6.000000e+00, -0.000000e+00, -0.000000e+00]"),
    ("[-9.497e-01]", "1xf6E3M2FN", "-1.000000e+00"),
    ("[1.0e400, -1.0e400, 1.0e39]", "3xf6E2M3FN", "[0.000000e+00, -0.000000e+00, 7.500000e+00]"),
    ("[0x80, 0x00, 0x7F, 0xFF]", "4xf8E8M0FNU", "[2.000000e+00, 5.877470e-39, 1.000000e+00, 0xFF]"),
    ("[-4.022e-01]", "1xf8E8M0FNU", "1.701410e+38"),
    ("[-3.647e-39, -1.0e-39, 1.0]", "3xf8E8M0FNU", "[2.000000e+00, 5.877470e-39, 1.000000e+00]"),
    ("[0x735C9, 0x735C9]", "2xtf32", "-4.371140e+23"),
    ("[0x29b10d7422560b36f3cd, -2.932e+01]", "2xf80", "[0x7FFF0D7422560B36F3CD, -29.3200000000000002842]"),
])
def test_found_instances(dense, type, printed):
    assert str(sdy_passes.parse_attribute(f"dense<{dense}> : tensor<{type}>")) == f"dense<{printed}> : tensor<{type}>"


# What jaxlib printed for scalar attributes beyond a double's range: a type without infinities
# holds APFloat's zero made from the infinity, printed in hex (dense elements print 0.0 there).
@pytest.mark.parametrize("literal, type, printed", [
    ("1.0e400", "f4E2M1FN", "0x0"), ("-1.0e400", "f4E2M1FN", "0x8"), ("9.99e308", "f6E2M3FN", "0x0"),
    ("-1.0e400", "f6E3M2FN", "0x20"), ("1.0e39", "f4E2M1FN", "6.000000e+00"), ("-1.0e400", "f8E8M0FNU", "0xFF"),
    ("1.0e400", "f32", "0x7F800000"), ("-1.0e-400", "f4E2M1FN", "-0.000000e+00"),
])
def test_scalar_attributes_beyond_a_double(literal, type, printed):
    assert str(sdy_passes.parse_attribute(f"{literal} : {type}")) == f"{printed} : {type}"
    module = sdy_passes.parse_module(f"func.func @f() attributes {{s = {literal} : {type}}} {{\n  return\n}}")
    assert f"s = {printed} : {type}" in sdy_passes.print_module(module)


@pytest.mark.parametrize("text, printed", [
    ('dense<"0xFF00FFFF"> : tensor<2x1xi16>', "dense<[[255], [-1]]> : tensor<2x1xi16>"),
    ('dense<"0xFF"> : tensor<2xui8>', "dense<255> : tensor<2xui8>"),
    ('dense<"0x0F"> : tensor<2xi4>', "dense<-1> : tensor<2xi4>"),
    ('dense<"0x0102030405060708"> : tensor<2x2xbf16>',
     "dense<[[9.477420e-38, 1.539900e-36], [2.501450e-35, 4.062510e-34]]> : tensor<2x2xbf16>"),
    ('dense<"0x0000C07F"> : tensor<f32>', "dense<0x7FC00000> : tensor<f32>"),
])
def test_hex_blobs_print_as_their_elements(text, printed):
    # What jaxlib printed: MLIR reads a blob into elements and prints those.
    assert str(sdy_passes.parse_attribute(text)) == printed


def test_a_blob_of_the_wrong_size_is_refused_at_dense():
    with pytest.raises(SdyError) as info:
        sdy_passes.parse_module('func.func @f() attributes {d = dense<"0x0000"> : tensor<2xf32>} {\n  return\n}')
    assert info.value.message == "elements hex data size is invalid for provided type: 'tensor<2xf32>'"
    assert (info.value.line, info.value.col) == (1, 32)


@pytest.mark.parametrize("literal, message, col", [
    ("[inf, 1.0]", "expected element literal of primitive type", 8),
    ("[1.0, -nan]", "expected integer or floating point literal", 14),
    ("[0x1FF, 0x0]", "hexadecimal float constant out of range for type", 8),
])
def test_literals_mlir_refuses(literal, message, col):
    with pytest.raises(SdyError) as info:
        sdy_passes.parse_attribute(f"dense<{literal}> : tensor<2xf8E4M3FN>")
    assert info.value.message == message and info.value.col == col


@pytest.mark.parametrize("name, dtype", [
    ("f6E2M3FN", ml_dtypes.float6_e2m3fn), ("f6E3M2FN", ml_dtypes.float6_e3m2fn), ("f4E2M1FN", ml_dtypes.float4_e2m1fn),
    ("f8E4M3FN", ml_dtypes.float8_e4m3fn), ("f8E5M2", ml_dtypes.float8_e5m2), ("bf16", ml_dtypes.bfloat16),
])
def test_dense_constants_read_into_numpy_with_apfloats_bits(name, dtype):
    """Dense constants read into numpy arrays (the interpreter's constants) hold the bits APFloat
    gives each decimal, overflow and infinities included (a type without infinities makes ±0
    of one); the f6 types too, through `tiling.dtypes.mlir_element_type`, though XLA 0.10.2 has
    no f6 primitive type and no shape text names them."""
    rng = random.Random(name)
    width = FORMATS[name].width
    values = [v for v in (_literal(rng, width) for _ in range(300)) if "0x" not in v]
    values += ["1.0e400", "-1.0e400", "7.7", "-1.0e39", "0.0", "-0.0"]
    array = dense_to_numpy("[" + ", ".join(values) + "]", sdy_passes.parse_type(f"tensor<{len(values)}x{name}>"))
    assert array.dtype == dtype
    assert array.view(f"u{array.dtype.itemsize}").tolist() == [float_bits(float(v), FloatType(name)) for v in values]
    if name.startswith("f6"):
        with pytest.raises(tiling.LayoutError):
            tiling.Shape.parse(f"{name.lower()}[4]")
