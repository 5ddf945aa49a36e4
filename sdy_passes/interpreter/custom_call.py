"""`stablehlo.custom_call` targets JAX's CPU lowering emits (spec execute.md §4.8): LAPACK
factorizations through `numpy.linalg` (batched over leading dims, `info` 0 on success), and
`ApproxTopK` (XLA:CPU's exact fallback). Callbacks and any other target raise
`UnsupportedOpError`: the program text does not hold what they run.

Operands arrive as logical arrays: the column-major `operand_layouts` JAX writes are how XLA
stores them, not a different value. Adding a target is one function and one row of `TARGETS`.
"""

from __future__ import annotations

import numpy as np

from sdy_passes.attributes import DictionaryAttr
from sdy_passes.errors import UnsupportedOpError
from sdy_passes.interpreter import elementwise
from sdy_passes.interpreter._core import dtype_of, is_float, up
from sdy_passes.interpreter.reduction import _descending


def _config(op) -> dict:
    cfg = op.attributes.get("mhlo.backend_config")
    return cfg.as_dict() if isinstance(cfg, DictionaryAttr) else {}


def _char(op, key: str, default: str) -> str:
    a = _config(op).get(key)
    return chr(a.value) if a is not None else default


def _info(op, shape, failed) -> np.ndarray:
    return np.where(failed, 1, 0).astype(dtype_of(op.results[-1].type, op)).reshape(shape)


def potrf(op, args, ctx):
    """Cholesky: the factor in the `uplo` triangle, the other triangle as given; `info` > 0 where
    the matrix is not positive definite."""
    (a,) = args
    lower = _char(op, "uplo", "L") == "L"
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:]).astype(np.float64 if a.dtype != np.complex64 else np.complex128)
    out = np.array(flat)
    failed = np.zeros(len(flat), bool)
    for i, m in enumerate(flat):  # one LAPACK call per matrix (numpy raises for the whole stack)
        sym = np.tril(m) + np.tril(m, -1).conj().T if lower else np.triu(m) + np.triu(m, 1).conj().T
        try:
            f = np.linalg.cholesky(sym)
        except np.linalg.LinAlgError:
            failed[i] = True
            continue
        mask = np.tril(np.ones(m.shape, bool)) if lower else np.triu(np.ones(m.shape, bool))
        out[i] = np.where(mask, f if lower else f.conj().T, m)
    return out.astype(a.dtype).reshape(a.shape), _info(op, batch, failed)


def _solve_triangular(a, b, lower: bool, left: bool, unit: bool, transpose: str):
    """op(A) X = B (`left`) or X op(A) = B with A's `lower` or upper triangle (`unit`: ones on
    its diagonal) and op "N", "T" or "C" (conjugate transpose), in f64/c128."""
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    t = np.tril(a.astype(wide)) if lower else np.triu(a.astype(wide))
    if unit:
        n = t.shape[-1]
        t = t * (1 - np.eye(n)) + np.eye(n)
    if transpose in ("T", "C"):
        t = np.swapaxes(t, -1, -2)
        t = t.conj() if transpose == "C" else t
    bb = b.astype(wide)
    if left:
        x = np.linalg.solve(t, bb)
    else:
        x = np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(bb, -1, -2)), -1, -2)
    return (x.astype(b.dtype),)


def trsm(op, args, ctx):
    """Triangular solve: op(A) X = B (`side` L) or X op(A) = B (R)."""
    a, b = args
    return _solve_triangular(a, b, _char(op, "uplo", "L") == "L", _char(op, "side", "L") == "L",
                             _char(op, "diag", "N") == "U", _char(op, "trans_x", "N"))

def getrf(op, args, ctx):
    """LU with partial pivoting (LAPACK's `getrf`): L below the diagonal (unit diagonal implied)
    and U on and above it, `ipiv` the 1-based row swapped with each row, `info` the first zero
    pivot (1-based; the factorization goes on past it, as LAPACK's). The pivot is the first
    largest |re| + |im| of its column (`i?amax`)."""
    (a,) = args
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    m, n = a.shape[-2:]
    lu = a.reshape((-1, m, n)).astype(wide)
    rows = np.arange(len(lu))
    k_all = min(m, n)
    ipiv = np.zeros((len(lu), k_all), np.int64)
    info = np.zeros(len(lu), np.int64)
    for k in range(k_all):  # one column at a time, over every matrix of the batch
        col = lu[:, k:, k]
        p = k + np.argmax(np.abs(col.real) + np.abs(col.imag), axis=1)
        ipiv[:, k] = p + 1
        lu[rows, k], lu[rows, p] = lu[rows, p].copy(), lu[rows, k].copy()
        pivot = lu[:, k, k]
        zero = pivot == 0
        info = np.where(zero & (info == 0), k + 1, info)
        factor = np.where(zero[:, None], lu[:, k + 1:, k], lu[:, k + 1:, k] / np.where(zero, 1, pivot)[:, None])
        lu[:, k + 1:, k] = factor
        lu[:, k + 1:, k + 1:] -= factor[:, :, None] * lu[:, k, None, k + 1:]
    return (lu.astype(a.dtype).reshape(a.shape),
            ipiv.astype(dtype_of(op.results[1].type, op)).reshape(a.shape[:-2] + (k_all,)),
            info.astype(dtype_of(op.results[2].type, op)).reshape(a.shape[:-2]))


def geqrf(op, args, ctx):
    """QR in LAPACK's Householder form: R above the diagonal, the reflectors below, and `tau`."""
    (a,) = args
    flat = a.reshape((-1,) + a.shape[-2:])
    hs, taus = [], []
    for m in flat:
        h, tau = np.linalg.qr(m.astype(np.float64 if a.dtype.kind != "c" else np.complex128), mode="raw")
        hs.append(h.T)
        taus.append(tau)
    k = min(a.shape[-2:])
    return (np.array(hs).astype(a.dtype).reshape(a.shape),
            np.array(taus).astype(a.dtype).reshape(a.shape[:-2] + (k,)))


def orgqr(op, args, ctx):
    """Q = H_1 ... H_k from the reflectors (LAPACK's `orgqr`), the first n columns."""
    a, tau = args
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    v_all = a.astype(wide)
    m, n = a.shape[-2:]
    q = np.broadcast_to(np.eye(m, n, dtype=wide), a.shape).copy()
    for i in range(tau.shape[-1] - 1, -1, -1):  # one reflector at a time, over every batch
        v = np.zeros(a.shape[:-2] + (m,), wide)
        v[..., i] = 1
        v[..., i + 1:] = v_all[..., i + 1:, i]
        t = tau[..., i].astype(wide)[..., None, None]
        q = q - t * v[..., :, None] * (v.conj()[..., None, :] @ q)
    return (q.astype(a.dtype),)


def syevd(op, args, ctx):
    """Symmetric eigendecomposition: eigenvectors (columns), eigenvalues ascending, info."""
    (a,) = args
    lower = _char(op, "uplo", "L") == "L"
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    w, v = np.linalg.eigh(a.astype(wide), UPLO="L" if lower else "U")
    out_w = w.astype(dtype_of(op.results[1].type, op))
    return v.astype(a.dtype), out_w, _info(op, a.shape[:-2], np.zeros(a.shape[:-2], bool))


def approx_top_k(op, args, ctx):
    """XLA:CPU's fallback: the exact top k along `reduction_dim`, descending, ties by index."""
    cfg = _config(op)
    k = cfg["top_k"].value
    dim = cfg.get("reduction_dim").value if "reduction_dim" in cfg else args[0].ndim - 1
    x, idx = args[0], args[1]
    xm, im = np.moveaxis(x, dim, -1), np.moveaxis(idx, dim, -1)
    key = elementwise._total_order_key(xm) if is_float(x.dtype) else up(xm)
    order = np.argsort(_descending(key), axis=-1, kind="stable")[..., :k]
    return (np.moveaxis(np.take_along_axis(xm, order, -1), -1, dim),
            np.moveaxis(np.take_along_axis(im, order, -1), -1, dim))


def cholesky(op, args, ctx):
    """`stablehlo.cholesky`: the factor in the `lower` (or upper) triangle; NaN where the matrix is
    not positive definite (XLA's result there)."""
    (a,) = args
    lower = bool(getattr(op.properties.get("lower"), "value", False))
    flat = a.reshape((-1,) + a.shape[-2:]).astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    out = np.full(flat.shape, np.nan, flat.dtype)
    for i, m in enumerate(flat):
        sym = np.tril(m) + np.tril(m, -1).conj().T if lower else np.triu(m) + np.triu(m, 1).conj().T
        try:
            f = np.linalg.cholesky(sym)
        except np.linalg.LinAlgError:
            continue
        out[i] = f if lower else f.conj().T
    return (out.astype(a.dtype).reshape(a.shape),)


def triangular_solve(op, args, ctx):
    """`stablehlo.triangular_solve`: op(a) x = b (`left_side`) or x op(a) = b."""
    a, b = args
    props = op.properties
    flag = lambda name: bool(getattr(props.get(name), "value", False))  # noqa: E731
    transpose = getattr(props.get("transpose_a"), "value", "NO_TRANSPOSE")
    return _solve_triangular(a, b, flag("lower"), flag("left_side"), flag("unit_diagonal"),
                             {"NO_TRANSPOSE": "N", "ADJOINT": "C"}.get(transpose, "T"))

TARGETS = {
    **dict.fromkeys(("lapack_spotrf_ffi", "lapack_dpotrf_ffi", "lapack_cpotrf_ffi", "lapack_zpotrf_ffi"), potrf),
    **dict.fromkeys(("lapack_strsm_ffi", "lapack_dtrsm_ffi", "lapack_ctrsm_ffi", "lapack_ztrsm_ffi"), trsm),
    **dict.fromkeys(("lapack_sgetrf_ffi", "lapack_dgetrf_ffi", "lapack_cgetrf_ffi", "lapack_zgetrf_ffi"), getrf),
    **dict.fromkeys(("lapack_sgeqrf_ffi", "lapack_dgeqrf_ffi", "lapack_cgeqrf_ffi", "lapack_zgeqrf_ffi"), geqrf),
    **dict.fromkeys(("lapack_sorgqr_ffi", "lapack_dorgqr_ffi", "lapack_cungqr_ffi", "lapack_zungqr_ffi"), orgqr),
    **dict.fromkeys(("lapack_ssyevd_ffi", "lapack_dsyevd_ffi", "lapack_cheevd_ffi", "lapack_zheevd_ffi"), syevd),
    "ApproxTopK": approx_top_k,
}
"""custom_call target -> evaluator."""


def custom_call(op, args, ctx):
    name = op.properties.get("call_target_name")
    target = name.value if name is not None else ""
    fn = TARGETS.get(target)
    if fn is None:
        raise UnsupportedOpError(f"stablehlo.custom_call @{target}: no evaluator for custom_call target "
                                 f"'{target}'", op.location)
    return fn(op, args, ctx)
