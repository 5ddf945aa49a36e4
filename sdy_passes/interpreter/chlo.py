"""Evaluators of the `chlo` ops JAX emits (spec execute.md §4.7): special functions computed in
float64 with vectorised numpy formulas (series, continued fractions, Lanczos, Euler–Maclaurin;
no scipy) and rounded once to the result type. Tolerance tier: XLA expands these into its own
polynomial sequences, so bit-exactness is not a goal.
"""

from __future__ import annotations

import math

import numpy as np

from sdy_passes.interpreter import elementwise
from sdy_passes.interpreter._core import contiguous, dtype_of, is_float, up
from sdy_passes.interpreter.movement import int_attr
from sdy_passes.interpreter.reduction import _descending

# -- float64 special functions -------------------------------------------------------------------

_SQRT_PI = math.sqrt(math.pi)


def _erf_series(x):
    """2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)), for |x| <= 2.5 (60 terms: < 1e-15)."""
    term = x.copy()
    total = x.copy()
    x2 = x * x
    for n in range(1, 60):
        term = term * -x2 / n
        total = total + term / (2 * n + 1)
    return total * (2 / _SQRT_PI)


def _erfc_cf(x):
    """erfc(x) for x > 2.5 by the continued fraction exp(-x^2)/sqrt(pi) * 1/(x + 1/2/(x + 1/(x + ...)))."""
    f = np.zeros_like(x)
    for k in range(80, 0, -1):  # evaluated backwards
        f = (k / 2) / (x + f)
    return np.exp(-x * x) / _SQRT_PI / (x + f)


def erf64(x):
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    small = a <= 2.5
    out = np.where(small, _erf_series(np.where(small, x, 0.0)), 0.0)
    big = np.where(small, 3.0, a)
    tail = 1 - _erfc_cf(big)
    return np.where(small, out, np.copysign(np.where(np.isinf(a), 1.0, tail), x))


def erfc64(x):
    x = np.asarray(x, np.float64)
    small = np.abs(x) <= 2.5
    cf = _erfc_cf(np.where(small, 3.0, np.abs(x)))
    cf = np.where(np.isinf(x), 0.0, cf)
    return np.where(small, 1 - _erf_series(np.where(small, x, 0.0)), np.where(x > 0, cf, 2 - cf))


def erf_inv64(y):
    """Giles' single-precision approximation, then Newton steps on erf."""
    y = np.asarray(y, np.float64)
    w = -np.log((1 - y) * (1 + y))
    lo = w < 5
    wl = w - 2.5
    pl = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):
        pl = c + pl * wl
    wh = np.sqrt(np.where(lo, 5.0, w)) - 3
    ph = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):
        ph = c + ph * wh
    x = np.where(lo, pl, ph) * y
    for _ in range(3):
        err = erf64(x) - y
        x = x - err / (2 / _SQRT_PI * np.exp(-x * x))
    x = np.where(np.abs(y) == 1, np.copysign(np.inf, y), x)
    return np.where(np.abs(y) > 1, np.nan, x)


_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)


def _lgamma_pos(x):
    """log Γ(x) for x >= 0.5 (Lanczos, g = 7)."""
    x = x - 1
    a = np.full_like(x, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], 1):
        a = a + c / (x + i)
    t = x + 7.5
    return 0.5 * math.log(2 * math.pi) + (x + 0.5) * np.log(t) - t + np.log(a)


def lgamma64(x):
    x = np.asarray(x, np.float64)
    refl = x < 0.5
    pos = _lgamma_pos(np.where(refl, 1 - x, x))
    s = np.abs(np.sin(math.pi * np.where(refl, x, 0.5)))
    out = np.where(refl, math.log(math.pi) - np.log(s) - pos, pos)
    out = np.where(refl & (x == np.floor(x)), np.inf, out)  # poles at 0, -1, -2, ...
    return np.where(np.isinf(x), np.inf, out)


def digamma64(x):
    x = np.asarray(x, np.float64)
    refl = x < 0.5
    z = np.where(refl, 1 - x, x)
    acc = np.zeros_like(z)
    for _ in range(8):  # recurrence up to z >= 8
        low = z < 8
        acc = acc - np.where(low, 1 / z, 0.0)
        z = np.where(low, z + 1, z)
    inv = 1 / z
    inv2 = inv * inv
    series = np.log(z) - 0.5 * inv - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 * (1 / 132)))))
    out = acc + series
    out = np.where(refl, out - math.pi / np.tan(math.pi * np.where(refl, x, 0.5)), out)
    return np.where(refl & (x == np.floor(x)), np.nan, out)


_BERNOULLI_TERMS = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                    7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                    -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18)
"""Cephes `zeta.c`'s A[]: the Euler–Maclaurin correction coefficients."""


def zeta64(s, q):
    """Hurwitz zeta ζ(s, q) (Cephes' domain: NaN for s < 1, inf at s = 1)."""
    s, q = np.broadcast_arrays(np.asarray(s, np.float64), np.asarray(q, np.float64))
    finite_q = q[np.isfinite(q)]
    n = 9 if not finite_q.size else int(min(max(9.0, 10.0 - float(finite_q.min())), 10000.0))
    total = np.zeros_like(s)
    a = q.copy()
    for _ in range(n + 1):  # the terms up to a > 9 (Cephes), the last one is w^-s
        total = total + np.where(a != 0, np.abs(a) ** -s * np.where(a < 0, np.cos(math.pi * s), 1.0), np.inf)
        a = a + 1
    w = a - 1
    total = total + w ** (1 - s) / (s - 1) - 0.5 * w ** -s
    fac = np.ones_like(s)
    k = np.zeros_like(s)
    t = w ** -s
    for coeff in _BERNOULLI_TERMS:
        fac = fac * (s + k)
        t = t / w
        total = total + fac * t / coeff
        k = k + 1
        fac = fac * (s + k)
        t = t / w
        k = k + 1
    out = np.where(s == 1, np.inf, total)
    out = np.where(s < 1, np.nan, out)
    pole = (q <= 0) & (q == np.floor(q))
    out = np.where(pole, np.inf, out)
    return np.where((q <= 0) & ~pole & (s != np.floor(s)), np.nan, out)


def polygamma64(n, x):
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    nn = np.where(n >= 1, n, 1.0)
    fact = np.exp(lgamma64(nn + 1))
    out = np.where(n == 0, digamma64(x), (-1) ** (nn + 1) * fact * zeta64(nn + 1, x))
    return np.where((n != np.floor(n)) | (n < 0), np.nan, out)


def bessel_i1e64(x):
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    small = a <= 25
    xs = np.where(small, a, 0.0)
    half = xs / 2
    term = half.copy()
    total = half.copy()
    h2 = half * half
    for k in range(1, 90):
        term = term * h2 / (k * (k + 1))
        total = total + term
    series = total * np.exp(-xs)
    xl = np.where(small, 30.0, a)
    mu = 4.0
    asym = np.ones_like(xl)
    term = np.ones_like(xl)
    for k in range(1, 12):
        term = term * -(mu - (2 * k - 1) ** 2) / (k * 8 * xl)
        asym = asym + term
    asym = asym / np.sqrt(2 * math.pi * xl)
    return np.copysign(np.where(small, series, asym), x)


# -- evaluators ----------------------------------------------------------------------------------

def _f64(f):
    """A special function on floats: float64 formula, rounded once to the operand type."""
    def evaluate(op, args, ctx):
        dt = args[0].dtype
        if dt.kind == "c":
            return (f(*args).astype(dt),)
        return (f(*(up(a).astype(np.float64) for a in args)).astype(dt),)
    return evaluate


erf = _f64(erf64)
erfc = _f64(erfc64)
erf_inv = _f64(erf_inv64)
lgamma = _f64(lgamma64)
digamma = _f64(digamma64)
zeta = _f64(zeta64)
polygamma = _f64(polygamma64)
bessel_i1e = _f64(bessel_i1e64)
acos = _f64(np.arccos)
acosh = _f64(np.arccosh)
asin = _f64(np.arcsin)
asinh = _f64(np.arcsinh)
atan = _f64(np.arctan)
atanh = _f64(np.arctanh)
cosh = _f64(np.cosh)
sinh = _f64(np.sinh)
tan = _f64(np.tan)


def square(op, args, ctx):
    return elementwise.multiply(op, [args[0], args[0]], ctx)


def conj(op, args, ctx):
    return (np.conj(args[0]),)


def is_inf(op, args, ctx):
    return (np.isinf(up(args[0])),)


def is_pos_inf(op, args, ctx):
    x = up(args[0])
    return (np.isposinf(x) if is_float(args[0].dtype) else np.zeros(x.shape, bool),)


def is_neg_inf(op, args, ctx):
    x = up(args[0])
    return (np.isneginf(x) if is_float(args[0].dtype) else np.zeros(x.shape, bool),)


def next_after(op, args, ctx):
    """The next float after `x` toward `y`, on the bits (any float type)."""
    x, y = args
    dt = x.dtype
    u = np.dtype(f"u{dt.itemsize}")
    xb = contiguous(x).view(u)
    xf, yf = up(x).astype(np.float64), up(y).astype(np.float64)
    sign = np.array(1 << (8 * dt.itemsize - 1), u)
    away = (yf > xf) == (xf > 0)  # moving away from zero increases the magnitude bits
    stepped = np.where(away, xb + np.array(1, u), xb - np.array(1, u))
    tiny = np.where(yf < 0, sign | np.array(1, u), np.array(1, u))  # from ±0: the smallest subnormal
    out = np.where(xf == 0, tiny, stepped).view(dt)
    out = np.where(xf == yf, y, out)
    return (np.where(np.isnan(xf) | np.isnan(yf), np.array(np.nan).astype(dt), out).astype(dt),)


def top_k(op, args, ctx):
    """The k largest along the last dim, descending; ties keep the lower index first."""
    (x,) = args
    k = int_attr(op, "k")
    key = elementwise._total_order_key(x) if is_float(x.dtype) else up(x)
    order = np.argsort(_descending(key), axis=-1, kind="stable")[..., :k]
    return (np.take_along_axis(x, order, axis=-1), order.astype(dtype_of(op.results[1].type, op)))


def _broadcasting(evaluate_op):
    """`chlo.broadcast_<op>`: the op on operands aligned by `broadcast_dimensions`."""
    def evaluate(op, args, ctx):
        a, b = args
        dims = op.properties.get("broadcast_dimensions")
        if dims is not None and a.ndim != b.ndim:
            small, big = (a, b) if a.ndim < b.ndim else (b, a)
            view = [1] * big.ndim
            for i, d in enumerate(int(v) for v in dims.values):
                view[d] = small.shape[i]
            small = small.reshape(view)
            a, b = (small, big) if a.ndim < b.ndim else (big, small)
        shape = np.broadcast_shapes(a.shape, b.shape)
        return evaluate_op(op, [np.broadcast_to(a, shape), np.broadcast_to(b, shape)], ctx)
    return evaluate


broadcast_add = _broadcasting(elementwise.add)
broadcast_subtract = _broadcasting(elementwise.subtract)
broadcast_multiply = _broadcasting(elementwise.multiply)
broadcast_divide = _broadcasting(elementwise.divide)
broadcast_maximum = _broadcasting(elementwise.maximum)
broadcast_minimum = _broadcasting(elementwise.minimum)
broadcast_power = _broadcasting(elementwise.power)
broadcast_remainder = _broadcasting(elementwise.remainder)
broadcast_atan2 = _broadcasting(elementwise.atan2)
broadcast_and = _broadcasting(elementwise.and_)
broadcast_or = _broadcasting(elementwise.or_)
broadcast_xor = _broadcasting(elementwise.xor)
broadcast_shift_left = _broadcasting(elementwise.shift_left)
broadcast_shift_right_arithmetic = _broadcasting(elementwise.shift_right_arithmetic)
broadcast_shift_right_logical = _broadcasting(elementwise.shift_right_logical)
broadcast_complex = _broadcasting(elementwise.complex)
broadcast_next_after = _broadcasting(next_after)
broadcast_polygamma = _broadcasting(polygamma)
broadcast_zeta = _broadcasting(zeta)
broadcast_compare = _broadcasting(elementwise.compare)


def constant_like(op, args, ctx):
    """The scalar `value` in the operand's shape and the result's type."""
    value = op.properties["value"]
    scalar = np.asarray(getattr(value, "value", 0))
    return (np.full(args[0].shape, scalar).astype(dtype_of(op.result.type, op)),)
