"""`tiling.relayout`: bit-identical to encoding the logical array in the destination layout."""

import importlib
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tiling
from tiling import Layout, LayoutError, Shape, UnsupportedLayoutError, relayout
from tiling import _engine, _reference
from tiling.dtypes import ELEMENT_TYPES

from .strategies import element_size_choices, kernels_called, layouts, random_array, shapes


_engine.load_kernels()  # small arrays would otherwise take the reference engine
relayout_module = importlib.import_module("tiling.relayout")  # (`tiling.relayout` is the function)


def _relayout_plan(shape, dst):
    return relayout_module.relayout_plan(shape.dimensions, shape.layout, Layout.parse(dst),
                                         ELEMENT_TYPES[shape.element_type])


def _reference_bytes(x, shape):
    """Bytes of `x` in `shape`, from the plain-numpy reference engine."""
    et = ELEMENT_TYPES[shape.element_type]
    out = np.empty(tiling.byte_size(shape, allow_nested_padding=True), np.uint8)
    _reference.encode_into(np.asarray(x).view(et.container), shape.layout, et, out)
    return out


def _check(x, src, dst_layout):
    dst = Shape(src.element_type, src.dimensions, dst_layout)
    buf = _reference_bytes(x, src)
    expected = _reference_bytes(x, dst)
    got = relayout(buf, src, dst_layout, allow_nested_padding=True)
    assert np.array_equal(got, expected), f"{src} -> {dst_layout}"
    garbage = np.full(expected.size, 0xEE, np.uint8)
    assert relayout(buf, src, dst, out=garbage, allow_nested_padding=True) is garbage
    assert np.array_equal(garbage, expected), f"{src} -> {dst_layout} into a reused out"


@pytest.mark.parametrize("src, dst", [
    ("bf16[37,300]{1,0:T(8,128)(2,1)}", "{1,0}"),                 # TPU dump to row-major
    ("bf16[37,300]{1,0}", "{1,0:T(8,128)(2,1)}"),                 # and back
    ("f32[5,37,300]{2,1,0:T(8,128)}", "{2,1,0:T(2,128)}"),        # big tiles to small tiles
    ("f32[5,37,300]{2,1,0:T(8,128)}", "{1,2,0:T(4,128)}"),        # and transposed
    ("s8[9,260]{1,0:T(8,128)(4,1)}", "{0,1:T(32,128)(4,1)}"),
    ("s4[70,300]{1,0:T(64,128)(8,1)E(4)}", "{1,0:E(4)}"),          # packed int4 to packed row-major
    ("s4[70,300]{1,0:T(8,128)(8,1)E(4)}", "{1,0}"),                # to one byte per element
    ("pred[33,129]{1,0:T(32,128)(32,1)E(1)}", "{1,0:T(8,128)(4,1)}"),
    ("pred[8,8,8]{0,2,1:T(8,128)E(32)}", "{2,1,0}"),
    ("bf16[2,3,1004]{2,1,0:T(2,*,128)(2,1)}", "{0,1,2:T(8,128)(2,1)}"),
    ("bf16[3000]{0:T(1024)(128)(2,1)}", "{0:T(8,128)}"),
    ("c128[3,5]{0,1:T(2,2)}", "{1,0:T(2,2)L(7)}"),
    ("c128[3,5]{0,1:T(2,2)}", "{1,0}"),
    ("f32[]{:T(256)}", "{}"),
    ("f32[0,130]{1,0:T(8,128)}", "{0,1:T(2,128)}"),
    ("f32[64,64,64]{2,1,0}", "{0,2,1:T(4,8)(2,1)}"),
])
def test_relayout_matches_encoding_in_the_destination(src, dst):
    shape = Shape.parse(src)
    _check(random_array(np.random.default_rng(5), shape), shape, Layout.parse(dst))


@pytest.mark.parametrize("src, dst", [
    ("f32[3,37,300]{2,1,0:T(8,128)}", "{2,1,0:T(2,128)}"),        # batch dims, uneven rows
    ("bf16[9,40,260]{2,1,0:T(8,128)(2,1)}", "{2,1,0:T(16,128)(2,1)}"),
    ("s8[90,260]{1,0:T(8,128)(4,1)}", "{1,0:T(3,128)}"),           # bands of lcm(8, 3) rows
    ("s4[70,300]{1,0:T(64,128)(8,1)E(4)}", "{1,0:T(8,128)(8,1)E(4)}"),
    ("pred[70,300]{1,0:T(32,128)(32,1)E(1)}", "{1,0:T(8,128)(4,1)}"),
    ("bf16[3072]{0:T(1024)(128)(2,1)}", "{0:T(8,128)}"),             # rank 1: one row
    ("f32[5,37,300]{2,1,0:T(8,128)}", "{2,1,0:T(2,128)L(1024)}"),   # tail padding
    ("c128[7,9]{1,0:T(2,2)}", "{1,0:T(4,8)}"),                      # two words per element
    ("pred[9,70]{1,0:T(8,128)E(32)}", "{1,0:T(2,128)}"),            # widened storage
])
def test_banded_relayouts(src, dst, monkeypatch):
    """Same physical order, tiles on the two minor dims only: band by band (bands shrunk here
    so that every case takes several); the fast formats never reach `move`."""
    monkeypatch.setattr(relayout_module, "BAND_BYTES", 1024)
    names, bands = kernels_called(monkeypatch), []
    real_band = relayout_module._band_temporary
    monkeypatch.setattr(relayout_module, "_band_temporary",
                        lambda *a: bands.append(a) or real_band(*a))
    shape = Shape.parse(src)
    _check(random_array(np.random.default_rng(6), shape), shape, Layout.parse(dst))
    assert len(bands) >= 2, bands  # (_check relayouts twice; one row is a single band)
    fast = shape.element_type != "c128" and "E(32)" not in src
    assert not fast or (names and "move" not in names), names
    assert _relayout_plan(shape, dst).kernel == "bands"


@pytest.mark.parametrize("src, dst", [
    ("bf16[300,200]{1,0:T(8,128)(2,1)}", "{0,1:T(8,128)(2,1)}"),  # bands of 128 rows, last short
    ("f32[3,270,37]{2,1,0:T(8,128)}", "{1,2,0:T(2,128)}"),        # batch dims
    ("s8[300,90]{1,0:T(8,128)(4,1)}", "{0,1:T(32,128)(4,1)}"),
    ("s4[300,70]{1,0:T(64,128)(8,1)E(4)}", "{0,1:T(8,128)(8,1)E(4)}"),
    ("pred[300,70]{1,0:T(32,128)(32,1)E(1)}", "{0,1:T(32,128)(32,1)E(1)}"),
    ("f32[2,260,37]{2,1,0:T(8,128)}", "{1,2,0:T(8,128)L(1024)}"),  # tail padding
    ("f32[260,40]{1,0:T(128)}", "{0,1:T(8,128)}"),                 # one-row source tiles
    ("f32[256,256]{1,0:T(8,128)}", "{0,1:T(8,128)}"),              # whole bands only
])
def test_transposed_relayouts(src, dst, monkeypatch):
    """Swapping the two minor physical dims: source bands go, transposed, into bands of tile
    columns of the destination (bands shrunk to 128 rows here); never `move`."""
    monkeypatch.setattr(relayout_module, "BAND_BYTES", 1024)
    names = kernels_called(monkeypatch)
    shape = Shape.parse(src)
    _check(random_array(np.random.default_rng(7), shape), shape, Layout.parse(dst))
    assert names and "move" not in names, names
    assert _relayout_plan(shape, dst).kernel == "transposed bands"


# Long fuzz runs: TILING_FUZZ_EXAMPLES=5000 python -m pytest tests/tiling -k random
FUZZ = settings(max_examples=int(os.environ["TILING_FUZZ_EXAMPLES"])) \
    if os.environ.get("TILING_FUZZ_EXAMPLES") else settings()


@FUZZ
@given(shapes(), st.data(), st.integers(0, 2**32 - 1))
def test_random_relayouts(src, data, seed):
    e = data.draw(st.sampled_from(element_size_choices(src.element_type)))
    lay = data.draw(layouts(src.rank))
    dst = Layout(lay.minor_to_major, lay.tiles, e, lay.tail_padding_alignment_in_elements)
    _check(random_array(np.random.default_rng(seed), src), src, dst)


def test_tpu_dump_to_row_major_is_the_array():
    x = np.random.default_rng(1).standard_normal((16, 256)).astype(ml_dtypes.bfloat16)
    dump = tiling.encode(x, "{1,0:T(8,128)(2,1)}")
    flat = relayout(dump, "bf16[16,256]{1,0:T(8,128)(2,1)}", "{1,0}")
    assert np.array_equal(flat.view(np.uint16), x.view(np.uint16).reshape(-1))


def test_relayout_plans_are_cached():
    src = Shape.parse("f32[9,130]{1,0:T(8,128)}")
    buf = tiling.encode(np.ones((9, 130), np.float32), src)
    relayout(buf, src, "{1,0:T(2,128)}")
    n = len(_engine._PLANS)
    relayout(buf, src, "{1,0:T(2,128)}")
    assert len(_engine._PLANS) == n


@pytest.mark.parametrize("call, message", [
    (lambda b: relayout(b[:-1], "f32[3,5]{1,0:T(2,2)}", "{1,0}"), "exactly 96 bytes, found 95"),
    (lambda b: relayout(b.view(np.int8), "f32[3,5]{1,0:T(2,2)}", "{1,0}"), "uint8"),
    (lambda b: relayout(b[::2], "f32[3,5]{1,0:T(2,2)}", "{1,0}"), "exactly 96 bytes"),
    (lambda b: relayout(np.repeat(b, 2)[::2], "f32[3,5]{1,0:T(2,2)}", "{1,0}"),
     "C-contiguous"),
    (lambda b: relayout(b, "f32[3,5]{1,0:T(2,2)}", "{0}"), "rank 1"),
    (lambda b: relayout(b, "f32[3,5]{1,0:T(2,2)}", "f32[5,3]{1,0}"), "dimensions"),
    (lambda b: relayout(b, "f32[3,5]{1,0:T(2,2)}", "s32[3,5]{1,0}"), "element type"),
    (lambda b: relayout(b, "f32[3,5]{1,0:T(2,2)}", "{1,0}", out=np.empty(59, np.uint8)),
     "exactly 60 bytes, found 59"),
    (lambda b: relayout(b, "f32[3,5]{1,0:T(2,2)}", "{1,0}", out=b[:60]), "overlap"),
    (lambda b: relayout(b, "f32[3,5]{1,0:T(2,2)}", "{1,0:E(4)}"), "E\\(4\\)"),
    (lambda b: relayout(b, "f32[3,5]{1,0:T(2,2)}", 7), "expected a Layout"),
])
def test_bad_inputs_raise_layout_error(call, message):
    buf = tiling.encode(np.zeros((3, 5), np.float32), "{1,0:T(2,2)}")
    with pytest.raises(LayoutError, match=message):
        call(buf)


def test_nested_padding_needs_the_flag():
    buf = np.zeros(64, np.uint8)
    with pytest.raises(UnsupportedLayoutError, match="pads again"):
        relayout(buf, "f32[4,4]{1,0}", "{1,0:T(4,4)(3)}")
    out = relayout(buf, "f32[4,4]{1,0}", "{1,0:T(4,4)(3)}", allow_nested_padding=True)
    assert out.size == 96 and not out.any()


def test_bytes_input():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    out = relayout(x.tobytes(), "s32[2,3]{1,0}", "{0,1}")
    assert np.array_equal(out.view(np.int32), x.T.reshape(-1))
