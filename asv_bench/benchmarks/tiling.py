"""Encode/decode speed for the common TPU formats, against `np.copyto` of the same bytes.

`impl`: "public" is `tiling.encode`/`tiling.decode` (validation + the current engine);
"reference" calls the plain-numpy engine in `tiling._reference` directly. The ratio
`time_encode / time_copyto` is the figure of merit: how far from a plain memory copy we are.

By default (`asv run --quick`'s budget, issue 36) the arrays are 256x256 and the `time_*` rows
time the kernels (and `Encode`/`Decode` the public call) alone: the `Ratio*` classes time kernel
and baseline back to back, so every target's ratio is measured. `BENCH_LONG=1` adds the targets'
size, 4096x4096 (64 MiB for f32, where the `_par` kernels run), and the baselines' own `time_*`
rows (reference, copyto, copyto x2, numpy, decode+encode); `TILING_BENCH_SKIP_LARGE=1` then skips
the 4096x4096 cases.
"""

import os
import pathlib
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

try:
    from ._common import sizes
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import sizes

try:
    import tiling
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    import tiling
from tiling import _engine, _reference, _runtime

FORMATS = {  # name -> (element type, layout)
    "f32 T(8,128)": ("f32", "{1,0:T(8,128)}"),
    "bf16 T(8,128)(2,1)": ("bf16", "{1,0:T(8,128)(2,1)}"),
    "s8 T(8,128)(4,1)": ("s8", "{1,0:T(8,128)(4,1)}"),
    "pred T(32,128)(32,1)E(1)": ("pred", "{1,0:T(32,128)(32,1)E(1)}"),
}
# A setup's first calls compile kernels (cached on disk for the next run): seconds each on a
# quiet 2-core machine, but 300 s were not enough for two generic kernels under a load of 20.
SETUP_TIMEOUT = 900
SIZES = sizes([256], [1024, 4096])
IMPLS = sizes(["public"], ["reference"])
TPU_SIZES = sizes([256], [4096])  # the TPU, PRED and relayout classes below


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
    timeout = SETUP_TIMEOUT

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


# ---------------------------------------------------------------------------------------------
# The Numba engine against its baselines (issue "tiling at memory-bandwidth speed"). Each class
# times the kernel path, the numpy reference and the baseline in the same run, so the ratios
# (baseline time / kernel time) are taken under the same machine load.


def _random_array(name, dims, seed=0):
    rng = np.random.default_rng(seed)
    et = tiling.ELEMENT_TYPES[name]
    if name == "pred":
        return rng.random(dims) < 0.5
    if et.bit_width < 8:  # ml_dtypes int4: the value in the low bits of a byte
        return rng.integers(0, 1 << et.bit_width, size=dims, dtype=np.uint8).view(et.dtype)
    raw = rng.integers(0, 256, size=tuple(dims) + (et.dtype.itemsize,), dtype=np.uint8)
    return raw.view(et.dtype).reshape(dims)


def _skip_large(nbytes):
    if nbytes > (8 << 20) and os.environ.get("TILING_BENCH_SKIP_LARGE"):
        raise NotImplementedError("large case skipped (TILING_BENCH_SKIP_LARGE)")


_CASES: dict = {}
_PRECOMPILED: set = set()
_HELPER = ThreadPoolExecutor(1)  # the second thread of the "copyto x2" baseline


class _Engine:
    """Common setup: `x` in `shape`, its buffer, outputs, and a copy baseline of x's bytes.

    asv_runner re-runs `setup` before every timed call; the arrays are made once per process
    and reused, so each call meets the same memory (already touched, as in a loop of calls)
    rather than freshly allocated pages and caches emptied by generating random data.
    """

    def _setup(self, text, impl):
        _engine.load_kernels()  # (small arrays would take the reference until numba loads)
        if impl == "kernel" and text not in _PRECOMPILED:
            # the kernels' first calls here, so the timed calls run them, not the numpy engine
            # serving while they compile on the background thread (issue 36 item 2); once per
            # process (asv re-runs setup before every timed call)
            _PRECOMPILED.add(text)
            tiling.precompile(text, allow_nested_padding=True)
            for direction in ("encode", "decode"):
                info = tiling.engine_info(text, direction=direction, allow_nested_padding=True)
                if info["engine"] == "numpy" and info["kernel"] != "copy":
                    raise RuntimeError(f"{text} {direction}: no kernel after precompile: {info}")
        if text not in _CASES:
            shape = tiling.Shape.parse(text)
            _skip_large(int(np.prod(shape.dimensions)) * shape.dtype.itemsize)
            x = _random_array(shape.element_type, shape.dimensions)
            buf = tiling.encode(x, shape, allow_nested_padding=True)
            # np.copyto of the same bytes: the logical array's bytes (what the user holds)
            src = x.reshape(-1).view(np.uint8)
            _CASES[text] = (shape, x, buf, np.empty_like(buf), np.empty_like(x), src,
                            np.empty_like(src))
        (self.shape, self.x, self.buf, self.out_buf, self.out_arr, self.src,
         self.dst) = _CASES[text]
        self.et = tiling.ELEMENT_TYPES[self.shape.element_type]

    def _encode(self, impl):
        if impl == "kernel":
            tiling.encode(self.x, self.shape, out=self.out_buf, allow_nested_padding=True)
        elif impl == "reference":
            _reference.encode_into(self.x.view(self.et.container), self.shape.layout, self.et,
                                   self.out_buf)
        elif impl == "copyto x2":
            self._copy_two_threads()
        else:
            self._baseline_encode()

    def _decode(self, impl):
        if impl == "kernel":
            tiling.decode(self.buf, self.shape, out=self.out_arr, allow_nested_padding=True)
        elif impl == "reference":
            _reference.decode_into(self.buf, self.shape.layout, self.et,
                                   self.out_arr.view(self.et.container))
        elif impl == "copyto x2":
            self._copy_two_threads()
        else:
            self._baseline_decode()

    def _baseline_encode(self):
        np.copyto(self.dst, self.src)

    _baseline_decode = _baseline_encode

    def _copy_two_threads(self):
        """impl "copyto x2": np.copyto in two threads, half the bytes each (numpy drops the GIL
        while it copies): how fast two cores can copy. On a 2-core machine, where the `_par`
        kernels run two threads, it shows how far above np.copyto memory lets them go."""
        h = self.src.size // 2
        half = _HELPER.submit(np.copyto, self.dst[:h], self.src[:h])
        np.copyto(self.dst[h:], self.src[h:])
        half.result()


TPU_FORMATS = {  # target: encode and decode >= 1.2x np.copyto of the array's bytes
    "f32 T(8,128)": "f32[{n},{n}]{{1,0:T(8,128)}}",
    "bf16 T(8,128)(2,1)": "bf16[{n},{n}]{{1,0:T(8,128)(2,1)}}",
    "s8 T(8,128)(4,1)": "s8[{n},{n}]{{1,0:T(8,128)(4,1)}}",
    "s4 T(8,128)(8,1)E(4)": "s4[{n},{n}]{{1,0:T(8,128)(8,1)E(4)}}",
}


class _EncodeTimed:
    """Times encode; `setup` warms up encode only. asv_runner re-runs `setup` before every timed
    call, so a setup that also decoded left the decode's output in the cache instead of the
    timed call's own data (the kernel then looked up to 2x slower than in a loop of calls)."""

    def setup(self, *params):
        self._prepare(*params)
        self._encode(params[-1])

    def time_encode(self, *params):
        self._encode(params[-1])


class _DecodeTimed:
    """Times decode; `setup` warms up decode only (see `_EncodeTimed`)."""

    def setup(self, *params):
        self._prepare(*params)
        self._decode(params[-1])

    def time_decode(self, *params):
        self._decode(params[-1])


class _TPU(_Engine):
    params = [list(TPU_FORMATS), TPU_SIZES, sizes(["kernel"], ["reference", "copyto", "copyto x2"])]
    param_names = ["format", "size", "impl"]
    timeout = SETUP_TIMEOUT

    def _prepare(self, fmt, n, impl):
        self._setup(TPU_FORMATS[fmt].format(n=n), impl)


class EncodeTPU(_EncodeTimed, _TPU):
    pass


class DecodeTPU(_DecodeTimed, _TPU):
    pass


_PACKED: dict = {}  # np.unpackbits' input, made once per process (as `_CASES`)


class _Pred(_Engine):
    params = [TPU_SIZES, sizes(["kernel"], ["reference", "numpy"])]
    param_names = ["size", "impl"]
    timeout = SETUP_TIMEOUT

    def _prepare(self, n, impl):
        self._setup(f"pred[{n},{n}]{{1,0:T(32,128)(32,1)E(1)}}", impl)
        if n not in _PACKED:
            _PACKED[n] = np.packbits(self.x)
        self.packed = _PACKED[n]

    def _baseline_encode(self):
        np.packbits(self.x)

    def _baseline_decode(self):
        np.unpackbits(self.packed)


class PackPred(_EncodeTimed, _Pred):
    """PRED 1-bit `(32,128)(32,1)E(1)` encode; target: <= np.packbits of the same bools."""


class UnpackPred(_DecodeTimed, _Pred):
    """PRED 1-bit `(32,128)(32,1)E(1)` decode; target: <= np.unpackbits of the packed bits."""


GENERIC = {  # target: >= 0.8x np.copyto
    "f32[64,64,64]{0,2,1:T(4,8)(2,1)}": "f32[64,64,64]{0,2,1:T(4,8)(2,1)}",
    "bf16 T(2,*,128)(2,1)": "bf16[64,48,1004]{2,1,0:T(2,*,128)(2,1)}",
    "f32 T(*,*,2,*,3)": "f32[20,7,8,110,10]{4,3,2,1,0:T(*,*,2,*,3)}",
    "bf16[N]{0:T(1024)(128)(2,1)}": "bf16[4194304]{0:T(1024)(128)(2,1)}",
}


class _Generic(_Engine):
    params = [list(GENERIC), sizes(["kernel"], ["reference", "copyto"])]
    param_names = ["layout", "impl"]
    timeout = SETUP_TIMEOUT
    # Samples from 6 processes (asv's default is 2): the 64^3 kernel keeps one speed within a
    # process but changes between processes (encode 30-45 us while np.copyto stays at 23-25
    # us, three fresh processes), so two processes' samples make a lottery of the median.
    rounds = 6

    def _prepare(self, case, impl):
        self._setup(GENERIC[case], impl)


class EncodeGeneric(_EncodeTimed, _Generic):
    pass


class DecodeGeneric(_DecodeTimed, _Generic):
    pass


# ---------------------------------------------------------------------------------------------
# The targets' ratios measured directly: baseline and kernel timed back to back, round after
# round, in one process. The `time_*` classes above time them in separate processes minutes
# apart, and this machine's speed swings over minutes (the 2-thread s8 4096x4096 encode took 350
# us in one minute and 570 us in another while the 1-thread np.copyto took 640-710 us), so a ratio
# of their medians also compares two moments; here each round's two timings share one. They also
# share the cache: each batch starts from what the other left there, which costs most where the
# arrays just fit the last level (s8 4096x4096: 16 MiB each way, plain stores when encoding).

_RATIO_ROUNDS = 25
_BATCH_SECONDS = 2e-3  # calls per timed batch: enough for about this long


def _batch_seconds(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def interleaved_ratio(baseline, kernel, rounds=_RATIO_ROUNDS):
    """Median over `rounds` of baseline time / kernel time per call, each the best of 3 batches
    timed in that round (which goes first alternates); > 1: the kernel is faster."""
    number = max(1, int(_BATCH_SECONDS / min(_batch_seconds(kernel, 1) for _ in range(3))))
    ratios = []
    for r in range(rounds):
        pair = (baseline, kernel) if r % 2 == 0 else (kernel, baseline)
        best = {fn: min(_batch_seconds(fn, number) for _ in range(3)) for fn in pair}
        ratios.append(best[baseline] / best[kernel])
    return float(np.median(ratios))


class _Ratio:
    """`track_ratio`: baseline time / kernel time, the kernel being the public call with out=
    (`interleaved_ratio`, whose first calls warm the kernel up)."""

    def setup(self, *params):
        self._prepare(*params[:-1], "kernel")

    def track_ratio(self, *params):
        op = params[-1]
        if op == "encode":
            return interleaved_ratio(self._baseline_encode, lambda: self._encode("kernel"))
        return interleaved_ratio(self._baseline_decode, lambda: self._decode("kernel"))

    track_ratio.unit = "x baseline"


class RatioTPU(_Ratio, _TPU):
    """Target: >= 1.2 (np.copyto of the array's bytes)."""

    params = [list(TPU_FORMATS), TPU_SIZES, ["encode", "decode"]]
    param_names = ["format", "size", "op"]


class RatioPred(_Ratio, _Pred):
    """Target: >= 1 (np.packbits / np.unpackbits)."""

    params = [TPU_SIZES, ["encode", "decode"]]
    param_names = ["size", "op"]


class RatioGeneric(_Ratio, _Generic):
    """Target: >= 0.8 (np.copyto)."""

    params = [list(GENERIC), ["encode", "decode"]]
    param_names = ["layout", "op"]


_SMALL_TILE: dict = {}


def _small_tile(op, impl):
    """SmallTile's arrays, made on the first call in a benchmark process."""
    if impl == "kernel":
        _engine.load_kernels()
    else:
        _runtime.REFERENCE_BUDGET_SECONDS = float("inf")
    layout = tiling.Layout.parse("{1,0:T(8,128)}")
    x = np.arange(1024, dtype=np.float32).reshape(8, 128)
    state = (layout, tiling.Shape.parse("f32[8,128]{1,0:T(8,128)}"), x,
             np.empty(4096, np.uint8), np.empty_like(x), tiling.encode(x, layout))
    _SMALL_TILE[op, impl] = state
    return state


class SmallTile:
    """One f32[8,128] tile through the public API with out=: per-call overhead (target <= 2 us).

    impl "kernel" loads numba first; "reference" is what a fresh process uses for small arrays
    until numba loads (see `tiling._tuning.SMALL_BYTES`). No `setup` method: asv_runner re-runs
    a class's setup before every timed call, which would time one cold call at a time; the
    arrays are made on the first call instead (the dict lookup is timed with the call), which
    asv's warm-up absorbs given a fixed `number` (left to itself, asv would size `number` on
    that first call, numba's import included, and time single calls).
    """

    params = [["encode", "decode"], ["kernel", "reference"]]
    param_names = ["op", "impl"]
    number = 2000

    def time_call(self, op, impl):
        layout, shape, x, out_buf, out_arr, buf = (_SMALL_TILE.get((op, impl))
                                                   or _small_tile(op, impl))
        if op == "encode":
            tiling.encode(x, layout, out=out_buf)
        else:
            tiling.decode(buf, shape, out=out_arr)


RELAYOUTS = {
    "bf16 (8,128)(2,1) -> row-major": ("bf16[{n},{n}]{{1,0:T(8,128)(2,1)}}", "{1,0}"),
    "f32 T(8,128) -> T(2,128)": ("f32[{n},{n}]{{1,0:T(8,128)}}", "{1,0:T(2,128)}"),
    "bf16 (8,128)(2,1) -> transposed (8,128)(2,1)": ("bf16[{n},{n}]{{1,0:T(8,128)(2,1)}}",
                                                     "{0,1:T(8,128)(2,1)}"),
}


class Relayout(_Engine):
    """One pass (`kernel`) against decode + encode through the logical array, and np.copyto."""

    params = [list(RELAYOUTS), TPU_SIZES, sizes(["kernel"], ["decode+encode", "copyto"])]
    param_names = ["case", "size", "impl"]
    timeout = SETUP_TIMEOUT

    def setup(self, case, n, impl):
        src, dst = RELAYOUTS[case]
        self._setup(src.format(n=n), impl)
        if (case, n) not in _CASES:
            layout = tiling.Layout.parse(dst)
            # the relayout kernel's first call here, in this thread (as `precompile` does for
            # encode and decode), so the timed call runs it rather than the numpy engine
            with _runtime.foreground():
                _CASES[case, n] = (layout, tiling.relayout(self.buf, self.shape, layout))
        self.dst_layout, self.out_dst = _CASES[case, n]
        self.time_relayout(case, n, impl)

    def time_relayout(self, case, n, impl):
        if impl == "kernel":
            tiling.relayout(self.buf, self.shape, self.dst_layout, out=self.out_dst)
        elif impl == "decode+encode":
            tiling.decode(self.buf, self.shape, out=self.out_arr)
            tiling.encode(self.out_arr, self.dst_layout, out=self.out_dst)
        else:
            np.copyto(self.dst, self.src)
