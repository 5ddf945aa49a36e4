"""Issue 37 item 9: every public function of `tiling` validates its arguments. Each argument of
each entry point gets every hostile value below; the call returns, or raises `LayoutError` not
chained onto an internal exception (`raise ... from None`), never a foreign exception."""

import numpy as np
import pytest

import tiling
from tests.argument_sweep import nested
from tiling import Layout, LayoutError, Shape, Tile, dtypes

HOSTILE = ["ab", "\uff11\uff12", "\U0001d7d9", "\u0664", True, np.True_, 2.5, np.float64(3.0),
           float("nan"), None, -1, 2**63, -(2**63) - 1, 10**5000, [object()], ["1", 2],
           [True, 2], [2.5], b"f32[3]{0}", {"a": 1}, object(), (), [[1, 2], 3], "f32[3",
           "{1,0:T(\u0664)}", "f32[\u0664]", "f32[2,2]{1,0:T(\U0001d7d9,2)}", np.array([1, 2]),
           "", np.int64(3), np.int64(-1), np.uint64(2**63), [[1, [2]]], 10**19, np.float32(8.0),
           float("inf"), np.float32("nan"), np.uint64(2**64 - 1), np.int8(-1), np.array(3), 2**64, (10**5000,),
           ((1,),), (2**63,)]
INNER = [None, -1, 2**63, 10**5000, True, np.True_, 1.5, float("nan"), "\u0662", np.uint64(2**64 - 1), np.array(3),
         [[1]], "8"]
"""Entries nested inside a good tuple argument (`argument_sweep.nested`)."""

SHAPE = "f32[8,128]{1,0:T(8,128)}"
X = np.zeros((8, 128), np.float32)
BUF = np.zeros(4096, np.uint8)

# (name, function, good arguments as a dict): each argument in turn replaced by a hostile value
ENTRY_POINTS = [
    ("Layout", Layout, dict(minor_to_major=(1, 0), tiles=((8, 128),), element_size_in_bits=0,
                            tail_padding_alignment_in_elements=1, memory_space=0,
                            dynamic_shape_metadata_prefix_bytes=0)),
    ("Shape", Shape, dict(element_type="f32", dimensions=(8, 128), layout=None,
                          dynamic_dimensions=())),
    ("Tile", Tile, dict(dimensions=(8, 128))),
    ("Layout.parse", Layout.parse, dict(text="{1,0}")),
    ("Shape.parse", Shape.parse, dict(text=SHAPE)),
    ("Layout.default", Layout.default, dict(rank=2)),
    ("Layout.from_jax", Layout.from_jax, dict(layout=None, dtype=np.float32)),
    ("byte_size", tiling.byte_size, dict(shape=SHAPE, allow_nested_padding=False)),
    ("check_encodable", tiling.check_encodable, dict(shape=Shape.parse(SHAPE))),
    ("tiled_dimensions", tiling.tiled_dimensions, dict(shape=SHAPE)),
    ("linear_index", tiling.linear_index, dict(index=(1, 2), shape=SHAPE)),
    ("logical_index", tiling.logical_index, dict(slots=5, shape=SHAPE)),
    ("encode", tiling.encode, dict(array=X, layout=SHAPE, out=None)),
    ("decode", tiling.decode, dict(buffer=BUF, shape=SHAPE, out=None)),
    ("relayout", tiling.relayout, dict(buffer=BUF, src_shape=SHAPE, dst_layout="{0,1}")),
    ("tpu_layout", tiling.tpu_layout, dict(element_type="f32", dims=(8, 128), pred_bits=8)),
    ("engine_info", tiling.engine_info, dict(shape=SHAPE, dtype=None, direction="encode")),
    ("precompile", tiling.precompile, dict(shapes=["f32[8,128]{1,0}"], dtype=None)),
    ("element_type", dtypes.element_type, dict(name="f32")),
    ("element_type_for_dtype", dtypes.element_type_for_dtype, dict(dtype=np.float32)),
]


def _show(value) -> str:
    try:
        return repr(value)[:40]
    except ValueError:  # (an int past Python's 4,300 digits)
        return f"<{type(value).__name__}>"


def _unchained(e: BaseException) -> bool:
    return e.__cause__ is None and (e.__context__ is None or e.__suppress_context__)


@pytest.mark.parametrize("name, fn, good", ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_hostile_arguments_get_layout_errors(name, fn, good):
    foreign = []
    for arg in good:
        for value in HOSTILE + list(nested(good[arg], INNER)):
            kwargs = dict(good, **{arg: value})
            try:
                fn(**kwargs)
            except LayoutError as e:
                if not _unchained(e):
                    foreign.append((arg, _show(value), "chained", type(e.__context__).__name__))
                str(e)  # (the message itself formats)
            except Exception as e:  # noqa: BLE001 (what the test looks for)
                foreign.append((arg, _show(value), type(e).__name__, str(e)[:100]))
    assert not foreign, foreign


@pytest.mark.parametrize("call", [
    lambda: tiling.tpu_layout("f32", "ab"),
    lambda: tiling.tpu_layout("f32", ["\uff18", 128]),
    lambda: tiling.tpu_layout("f32", [8.0, 128]),
    lambda: Shape("f32", ("8", 128)),
    lambda: Layout((1, 0), (("8", 128),)),
    lambda: Shape.parse("f32[\u0664]"),
    lambda: tiling.byte_size(f"f32[{2**63 - 1},{2**63 - 1}]{{1,0:T(8,128)}}"),
    lambda: tiling.byte_size(f"f32[{2**62},4]{{1,0}}"),
    lambda: Shape("f32", (10**5000,)),
    lambda: Layout.from_jax(object()),
])
def test_issue_instances_are_refused(call):
    with pytest.raises(LayoutError) as caught:
        call()
    assert _unchained(caught.value)
    assert len(str(caught.value)) < 2000


def test_byte_size_stays_an_int64():
    big = f"u8[{2**62},1]{{1,0}}"
    assert tiling.byte_size(big) == 2**62
    with pytest.raises(LayoutError, match="2\\*\\*63"):
        tiling.byte_size(f"u8[{2**62},2]{{1,0}}")
