"""Encode/decode speed for the common TPU formats, against `np.copyto` of the same bytes.

`impl`: "public" is `tiling.encode`/`tiling.decode` (validation + the current engine);
"reference" calls the plain-numpy engine in `tiling._reference` directly. The ratio
`time_encode / time_copyto` is the figure of merit: how far from a plain memory copy we are.

Set `TILING_BENCH_SKIP_LARGE=1` to skip the 4096x4096 cases (64 MiB for f32).
"""

import os
import pathlib
import sys

import numpy as np

try:
    import tiling
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    import tiling
from tiling import _reference

FORMATS = {  # name -> (element type, layout)
    "f32 T(8,128)": ("f32", "{1,0:T(8,128)}"),
    "bf16 T(8,128)(2,1)": ("bf16", "{1,0:T(8,128)(2,1)}"),
    "s8 T(8,128)(4,1)": ("s8", "{1,0:T(8,128)(4,1)}"),
    "pred T(32,128)(32,1)E(1)": ("pred", "{1,0:T(32,128)(32,1)E(1)}"),
}
SIZES = [1024, 4096]
IMPLS = ["public", "reference"]


def _setup_case(fmt, n):
    if n > 1024 and os.environ.get("TILING_BENCH_SKIP_LARGE"):
        raise NotImplementedError("large case skipped (TILING_BENCH_SKIP_LARGE)")
    name, layout = FORMATS[fmt]
    shape = tiling.Shape.parse(f"{name}[{n},{n}]{layout}")
    rng = np.random.default_rng(0)
    et = tiling.ELEMENT_TYPES[name]
    if name == "pred":
        x = rng.random((n, n)) < 0.5
    else:
        x = rng.integers(0, 256, size=(n, n) + (et.dtype.itemsize,), dtype=np.uint8)
        x = x.view(et.dtype).reshape(n, n)
    return shape, et, x


class _Codec:
    params = [list(FORMATS), SIZES, IMPLS]
    param_names = ["format", "size", "impl"]
    timeout = 300

    def setup(self, fmt, n, impl):
        self.shape, self.et, self.x = _setup_case(fmt, n)
        self.buf = tiling.encode(self.x, self.shape)
        self.out_buf = np.empty_like(self.buf)
        self.out_arr = np.empty_like(self.x)
        self.src = np.random.default_rng(1).integers(0, 256, self.buf.size, dtype=np.uint8)
        self.dst = np.empty_like(self.src)
        np.copyto(self.dst, self.src)

    def time_copyto(self, fmt, n, impl):
        """Baseline: copy as many bytes as the tiled buffer holds."""
        np.copyto(self.dst, self.src)


class Encode(_Codec):
    def setup(self, fmt, n, impl):
        super().setup(fmt, n, impl)
        self.time_encode(fmt, n, impl)  # warm up (a compiled engine compiles here)

    def time_encode(self, fmt, n, impl):
        if impl == "public":
            tiling.encode(self.x, self.shape, out=self.out_buf)
        else:
            _reference.encode_into(self.x.view(self.et.container), self.shape.layout, self.et,
                                   self.out_buf)


class Decode(_Codec):
    def setup(self, fmt, n, impl):
        super().setup(fmt, n, impl)
        self.time_decode(fmt, n, impl)

    def time_decode(self, fmt, n, impl):
        if impl == "public":
            tiling.decode(self.buf, self.shape, out=self.out_arr)
        else:
            _reference.decode_into(self.buf, self.shape.layout, self.et,
                                   self.out_arr.view(self.et.container))
