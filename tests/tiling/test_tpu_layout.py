"""`tiling.tpu_layout`: the design doc's TPU default tilings (spec §7)."""

import ml_dtypes
import numpy as np
import pytest

import tiling
from tiling import LayoutError, Shape, tpu_layout


@pytest.mark.parametrize("element, dims, expected", [
    ("f32", (256, 512), "{1,0:T(8,128)}"),                      # 8x128, the common format
    ("f32", (3, 5, 9, 300), "{3,2,1,0:T(8,128)}"),              # batch dims stay in front
    ("f32", (32, 1, 1), "{2,1,0:T(2,128)}"),                    # second-minor 1 -> 2x128
    ("f32", (7, 2, 128), "{2,1,0:T(2,128)}"),                   # second-minor 2 -> 2x128
    ("f32", (3, 128), "{1,0:T(4,128)}"),                        # 3 or 4 -> 4x128
    ("f32", (4, 4, 128), "{2,1,0:T(4,128)}"),
    ("f32", (5, 128), "{1,0:T(8,128)}"),
    ("s32", (0, 7), "{1,0:T(2,128)}"),                          # size 0 is "at most 2"
    ("bf16", (256, 512), "{1,0:T(8,128)(2,1)}"),                # BF16 packing
    ("f16", (1, 512), "{1,0:T(2,128)(2,1)}"),
    ("bf16", (4, 3, 300), "{2,1,0:T(4,128)(2,1)}"),
    ("s8", (256, 512), "{1,0:T(8,128)(4,1)}"),                  # four rows per word
    ("u8", (2, 512), "{1,0:T(4,128)(4,1)}"),                    # at least `packing` rows
    ("f8e4m3fn", (64, 64), "{1,0:T(8,128)(4,1)}"),
    ("pred", (8, 1024), "{1,0:T(8,128)(4,1)}"),                 # PRED is a byte by default
    ("s4", (9216, 6144), "{1,0:T(8,128)(8,1)E(4)}"),
    ("u4", (1, 6), "{1,0:T(8,128)(8,1)E(4)}"),
    ("s2", (40, 300), "{1,0:T(16,128)(16,1)E(2)}"),
    ("f64", (16, 16), "{1,0:T(8,128)}"),
    ("bf16", (3000,), "{0:T(1024)(128)(2,1)}"),                  # rank 1, as in TPU dumps
    ("f32", (3000,), "{0:T(1024)}"),
    ("s8", (5,), "{0:T(1024)(128)(4,1)}"),
    ("s4", (5,), "{0:T(1024)(128)(8,1)E(4)}"),
    ("f32", (), "{}"),                                          # rank 0: untiled
])
def test_default_tilings(element, dims, expected):
    assert str(tpu_layout(element, dims)) == expected


def test_one_bit_pred():
    assert str(tpu_layout("pred", (64, 256), pred_bits=1)) == "{1,0:T(32,128)(32,1)E(1)}"
    assert str(tpu_layout("pred", (2, 3), pred_bits=1)) == "{1,0:T(32,128)(32,1)E(1)}"
    assert str(tpu_layout("pred", (100,), pred_bits=1)) == "{0:T(4096)(128)(32,1)E(1)}"
    assert str(tpu_layout("pred", (), pred_bits=1)) == "{}"
    assert str(tpu_layout("s32", (64, 256), pred_bits=1)) == "{1,0:T(8,128)}"  # PRED only


def test_element_type_spellings():
    for spelling in ("bf16", "BF16", ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16),
                     tiling.ELEMENT_TYPES["bf16"]):
        assert str(tpu_layout(spelling, (16, 256))) == "{1,0:T(8,128)(2,1)}"
    assert str(tpu_layout(np.float32, [16, 256])) == "{1,0:T(8,128)}"
    assert str(tpu_layout(bool, (16, 256))) == "{1,0:T(8,128)(4,1)}"


@pytest.mark.parametrize("element", sorted(tiling.ELEMENT_TYPES))
@pytest.mark.parametrize("dims", [(), (5,), (3, 130), (2, 9, 257)], ids=str)
def test_every_type_gets_an_encodable_layout(element, dims):
    """The proposal is always a layout the codec accepts (the packing tile divides the first)."""
    for pred_bits in (8, 1):
        shape = Shape(element, dims, tpu_layout(element, dims, pred_bits=pred_bits))
        tiling.check_encodable(shape)
        assert tiling.byte_size(shape) > 0


def test_the_docstring_states_the_caveat():
    doc = tpu_layout.__doc__
    assert "guess" in doc and "TPU generation" in doc and "array.format.layout" in doc


@pytest.mark.parametrize("args, kwargs, message", [
    (("f33", (8, 128)), {}, "unknown element type 'f33'"),
    ((np.dtype("U3"), (8, 128)), {}, "no XLA element type"),
    (("f32", (8, -1)), {}, "must be >= 0"),
    (("f32", 8), {}, "sequence of ints"),
    (("pred", (8, 128)), {"pred_bits": 4}, "pred_bits must be 8"),
])
def test_bad_arguments(args, kwargs, message):
    with pytest.raises(LayoutError, match=message):
        tpu_layout(*args, **kwargs)
