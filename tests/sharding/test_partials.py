"""Partial values (`sharding._partials`): one definition for every dtype, backend and path.

Random reshards with unreduced axes, on uneven shapes, in every dtype family (IEEE floats with
their signed zeros, bf16, f8, complex, sub-byte ints, bool), on numpy and dask: `reshard` gives
`shard(x, target)` bit for bit, padding included (`-0.0` where the identity is), `unshard` gives
`x`; partials that really are partial (random terms that sum, wrapped to the width, to `x`)
reduce back to `x` through `unshard`, `reshard` and `all_reduce` alike.
"""

from __future__ import annotations

import random

import ml_dtypes
import numpy as np
import pytest

from sharding import DeviceMesh, ShardingError, TensorSharding
from sharding._partials import bits, identity
from sharding.collectives import all_reduce
from sharding.simulate import ShardedArray
from tests.sharding.reshard_cases import random_triple
from tiling.dtypes import ELEMENT_TYPES

da = pytest.importorskip("dask.array", reason="dask is not installed (pip install 'layout-toolkit[dask]')")

FLOATS = [np.float32, ml_dtypes.bfloat16, np.float16, np.float64, np.complex64, ml_dtypes.float8_e4m3fn,
          ml_dtypes.float8_e5m2fnuz]
INTS = [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2, ml_dtypes.uint2, np.int8, np.uint16, np.int64]
DTYPES = list(dict.fromkeys(list(map(np.dtype, FLOATS + INTS + [np.bool_]))
                            + [et.dtype for et in ELEMENT_TYPES.values()]))
"""Every element type of the project's table (f8 variants, e8m0 without a zero, s1/u1, c128...)."""


def _same(a, b) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool((bits(a) == bits(b)).all())


def _shards(x) -> dict:
    return {d: np.array(v) for d, v in x.per_device()}


def _info(dtype):
    return ml_dtypes.iinfo(dtype) if np.dtype(dtype).kind == "V" else np.iinfo(dtype)


def _ints(gen, shape, dtype):
    info = _info(dtype)
    return gen.integers(int(info.min), int(info.max) + 1, size=shape).astype(dtype)


def _values(gen, shape, dtype):
    """Any bit pattern for floats (NaN payloads, both zeros), any value for ints."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return gen.integers(0, 2, size=shape).astype(bool)
    if dtype in map(np.dtype, INTS):
        return _ints(gen, shape, dtype)
    raw = gen.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    out = raw.view(dtype).reshape(shape).copy()
    out.reshape(-1)[:: 3] = -np.zeros((), dtype) if dtype.kind != "V" else identity(dtype)  # many -0.0
    return out


def _wrap(values: np.ndarray, dtype) -> np.ndarray:
    """int64 values wrapped to `dtype`'s width (two's complement), as XLA's integer sum."""
    info = _info(dtype)
    if info.bits == 64:
        return values.astype(dtype)  # int64 arithmetic already wrapped
    span = 2 ** info.bits
    low = values & (span - 1)
    return (np.where(low >= span // 2, low - span, low) if info.min < 0 else low).astype(dtype)


def _cases(seed: int, count: int, uneven_only: bool = True):
    """Random `(mesh, source, target, shape)` with unreduced axes that Shardy reshards."""
    rng = random.Random(seed)
    found = 0
    while found < count:
        table, s, t, shape = random_triple(rng)
        if s is None or not s.unreduced_axes or s.unreduced_axes != t.unreduced_axes or t.mesh_or_ref != "mesh":
            continue
        mesh = table["mesh"]
        if mesh.total_size > 32:
            continue
        dm = DeviceMesh(mesh, name="mesh")
        try:
            even = all(c * n == d for c, n, d in zip(dm.placement(s, shape).local_shape,
                                                     dm.placement(s, shape).num_tiles, shape))
            even &= all(c * n == d for c, n, d in zip(dm.placement(t, shape).local_shape,
                                                      dm.placement(t, shape).num_tiles, shape))
            if uneven_only and even:
                continue
            op = rng.choice(["sum", "sum", "max", "min"])
            s = TensorSharding(s.mesh_or_ref, s.dim_shardings, s.replicated_axes, s.unreduced_axes, op)
            t = TensorSharding(t.mesh_or_ref, t.dim_shardings, t.replicated_axes, t.unreduced_axes, op)
            dm.reshard(dm.shard(np.zeros(shape, np.int8), s), t)
        except ShardingError:
            continue  # a plan jaxlib rejects or stops short of
        found += 1
        yield rng, dm, s, t, shape


@pytest.mark.parametrize("backend, path", [("numpy", "shard"), ("numpy", "copy"), ("numpy", "out"), ("dask", "shard")])
def test_reshard_gives_shard_bit_for_bit(backend, path):
    """40 random uneven reshards with unreduced axes: every device's buffer (padding included)
    equals `shard(x, target)`'s, and `unshard` gives `x`, in every dtype, from `shard`'s views,
    from `copy=True` buffers and into `out=`."""
    for i, (rng, dm, s, t, shape) in enumerate(_cases(7, 40)):
        dtype = DTYPES[(i + len(path)) % len(DTYPES)]
        gen = np.random.default_rng(i)
        x = _values(gen, shape, dtype)
        fill = rng.choice([0, 1])
        source = dm.shard(x, s, fill=fill, backend=backend, copy=path == "copy")
        out = np.empty(dm.reshard(source, t, fill=fill)[0].data.shape, x.dtype) if path == "out" else None
        y, _ = dm.reshard(source, t, fill=fill, out=out)
        want = _shards(dm.shard(x, t, fill=fill))
        got = _shards(y)
        assert all(_same(got[d], want[d]) for d in want), (np.dtype(dtype), str(s), str(t), shape)
        assert _same(np.asarray(dm.unshard(y)), x), (np.dtype(dtype), str(s), str(t), shape)


def test_sum_padding_is_the_identity_of_the_dtype():
    """The instance of the issue: f32/bf16 sum partials at non-zero coordinates pad with -0.0
    after a reshard as after `shard`; the identity has the array's own dtype (u4 on dask)."""
    dm = DeviceMesh('<["x"=2, "y"=2]>')
    s = TensorSharding.parse('<@mesh, [{"x"}, {}], unreduced={"y"}>')
    t = TensorSharding.parse('<@mesh, [{}, {"x"}], unreduced={"y"}>')
    for dtype in (np.float32, ml_dtypes.bfloat16, ml_dtypes.uint4, ml_dtypes.int4, ml_dtypes.int2):
        x = np.arange(15).reshape(5, 3).astype(dtype)
        for backend in ("numpy", "dask"):
            y, _ = dm.reshard(dm.shard(x, s, backend=backend), t)
            for d, buf in _shards(y).items():
                assert buf.dtype == np.dtype(dtype)
                if d in (1, 3):  # "y" = 1: the identity everywhere, padding included
                    assert _same(buf, np.broadcast_to(identity(dtype), buf.shape))
            assert _same(np.asarray(dm.unshard(y)), x)
    for dtype in (np.float32, np.float64, ml_dtypes.bfloat16, np.float16, np.complex64):
        assert np.signbit(np.real(identity(dtype))) and identity(dtype).dtype == np.dtype(dtype)
    for dtype in INTS + [np.bool_]:
        assert identity(dtype).dtype == np.dtype(dtype) and not identity(dtype)


def _partial_shards(dm, x, s, gen):
    """Shards of `x` under `s` whose sum partials are random terms summing (wrapped) to `x`."""
    sh = dm.shard(x, s, copy=True)
    p = sh.placement
    plain = TensorSharding(s.mesh_or_ref, s.dim_shardings, s.replicated_axes)
    values = sh.data.values
    total = np.zeros(x.shape, np.int64)
    coords = list(np.ndindex(*[p.pieces[i].size for i in p.unreduced_pieces]))
    for c in coords[1:] + coords[:1]:
        term = _ints(gen, x.shape, x.dtype) if any(c) else _wrap(x.astype(np.int64) - total, x.dtype)
        total += term.astype(np.int64)
        src = dm.shard(term, plain, copy=True).data.transpose(*sh.data.dims).values
        if src.shape != values.shape:
            return None  # the plain sharding cuts the mesh otherwise
        index = [slice(None)] * values.ndim
        for i, ci in zip(p.unreduced_pieces, c):
            index[i] = ci
        values[tuple(index)] = src[tuple(index)]
    return sh


def test_sub_byte_partials_wrap_to_the_width():
    """Real partial sums of s4/u4/s2/u2/s8/u16/s64 (random terms whose wrapped sum is `x`): unshard,
    reshard then unshard, all_reduce then unshard give `x`; dask gives numpy's bits."""
    checked = 0
    for i, (rng, dm, s, t, shape) in enumerate(_cases(11, 60, uneven_only=False)):
        if s.reduction_op != "sum":
            continue
        dtype = INTS[i % len(INTS)]
        gen = np.random.default_rng(i)
        x = _ints(gen, shape, dtype)
        sh = _partial_shards(dm, x, s, gen)
        if sh is None:
            continue
        assert _same(dm.unshard(sh), x), (np.dtype(dtype), str(s))
        y, _ = dm.reshard(sh, t)
        assert _same(dm.unshard(y), x), (np.dtype(dtype), str(s), str(t))
        z = all_reduce(sh, s.unreduced_axes)
        assert _same(dm.unshard(z), x)
        lazy = ShardedArray(sh.data.chunk({d: 1 for d in sh.data.dims[:len(sh.placement.pieces)]}), sh.sharding,
                            sh.mesh, sh.placement, sh.dims, None)
        yl, _ = dm.reshard(lazy, t)
        assert isinstance(yl.data.data, da.Array)
        got, want = _shards(yl), _shards(y)
        assert all(_same(got[d], want[d]) for d in want)
        assert _same(np.asarray(dm.unshard(yl)), x)
        zl = all_reduce(lazy, s.unreduced_axes)
        got, want = _shards(zl), _shards(z)
        assert all(_same(got[d], want[d]) for d in want)
        checked += 1
    assert checked >= 20
