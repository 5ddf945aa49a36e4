"""Evaluators of the element-wise ops (spec execute.md §4.2, §4.3): arithmetic, transcendentals,
logic and bits, comparison, selection and conversion, with XLA:CPU's edge semantics (App. B).

Low-precision floats run in float32 (fast) or float64 (reference) and round to their type after
every op; 4- and 2-bit ints run in int8/uint8 and wrap to their width (`_core.up`/`down`).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from sdy_passes.interpreter._core import (
    LOW_FLOATS, contiguous, down, dtype_of, fail, int_bits, is_float, is_int, is_signed, up,
)

# -- helpers -------------------------------------------------------------------------------------


def _positive_nan(r, args):
    """The reference interpreter's NaN for an invalid operation (`log(-1)`, `0/0`) is +qNaN
    (APFloat's); x86 and numpy make -qNaN. NaN operands keep propagating as they are."""
    if r.dtype.kind != "f":
        return r
    new = np.isnan(r)
    for a in args:
        if a.dtype.kind == "f":
            new &= ~np.isnan(a)
    return np.where(new, np.array(np.nan, r.dtype), r) if new.any() else r


def _same(f):
    """An op whose result has its operands' element type, computed by `f` on `up` values."""
    def evaluate(op, args, ctx):
        dt = args[-1].dtype
        xs = [up(a, ctx.reference) for a in args]
        r = f(*xs)
        return (down(_positive_nan(r, xs) if ctx.reference else r, dt),)
    return evaluate


def _transcendental(f, positive_nan=False):
    """`f` in float32 (fast; low floats through float32, rounded after) or, in reference mode, in
    float64 (complex128) rounded once to the type, as the reference interpreter's
    `mapWithUpcastToDouble`; f64 and complex128 natively. A NaN made of a non-NaN operand has
    the sign the C library gives it (numpy's, but +NaN for glibc's `log`: `positive_nan`)."""

    def evaluate(op, args, ctx):
        dt = args[0].dtype
        if ctx.reference or dt in (np.dtype(np.float64), np.dtype(np.complex128)):
            xs = [up(a).astype(np.complex128 if dt.kind == "c" else np.float64) for a in args]
            r = f(*xs)
            return ((_positive_nan(r, xs) if ctx.reference and positive_nan else r).astype(dt),)
        if dt.kind == "c":
            return (f(*args).astype(dt),)
        return (down(f(*(a.astype(np.float32) for a in args)), dt),)
    return evaluate


# -- arithmetic ----------------------------------------------------------------------------------

def _add(a, b):
    return np.logical_or(a, b) if a.dtype == np.bool_ else np.add(a, b)


def _multiply(a, b):
    return np.logical_and(a, b) if a.dtype == np.bool_ else np.multiply(a, b)


def _subtract(a, b):
    return np.logical_xor(a, b) if a.dtype == np.bool_ else np.subtract(a, b)


add = _same(_add)
subtract = _same(_subtract)
multiply = _same(_multiply)


def _int_divide(a, b):
    """Truncating division; `x / 0 = -1` (all ones unsigned), `INT_MIN / -1 = INT_MIN` (XLA)."""
    zero = b == 0
    if a.dtype.kind == "i":
        overflow = (b == -1) & (a == np.iinfo(a.dtype).min)
        safe = np.where(zero | overflow, 1, b)
        q = np.trunc(a / safe) if a.dtype.itemsize < 4 else None
        if q is None:  # exact integer truncation (float division may round for 64-bit ints)
            q = np.floor_divide(a, safe)
            q = q + ((np.remainder(a, safe) != 0) & ((a < 0) != (safe < 0)))
        q = q.astype(a.dtype)
        q = np.where(overflow, a, q)
        return np.where(zero, np.array(-1, a.dtype), q)
    safe = np.where(zero, 1, b)
    return np.where(zero, np.array(np.iinfo(a.dtype).max, a.dtype), a // safe)


def _int_remainder(a, b):
    """Sign of the dividend; `x % 0 = x`, `INT_MIN % -1 = 0` (XLA)."""
    zero = b == 0
    if a.dtype.kind == "i":
        safe = np.where(zero | (b == -1), 1, b)
        return np.where(zero, a, np.fmod(a, safe))
    return np.where(zero, a, np.remainder(a, np.where(zero, 1, b)))


def divide(op, args, ctx):
    a, b = args
    dt = a.dtype
    if is_int(dt):
        return (down(_int_divide(up(a), up(b)), dt),)
    xs = [up(a, ctx.reference), up(b, ctx.reference)]
    r = np.divide(*xs)
    return (down(_positive_nan(r, xs) if ctx.reference else r, dt),)


def remainder(op, args, ctx):
    a, b = args
    dt = a.dtype
    if is_int(dt):
        return (down(_int_remainder(up(a), up(b)), dt),)
    xs = [up(a, ctx.reference), up(b, ctx.reference)]
    r = np.fmod(*xs)
    return (down(_positive_nan(r, xs) if ctx.reference else r, dt),)


def _fix_zeros(r, a, b, want_positive: bool):
    """XLA's max(-0, 0) = 0 and min(-0, 0) = -0 (numpy returns one operand on ties)."""
    if r.dtype.kind != "f":
        return r
    tie = (a == 0) & (b == 0)
    if not tie.any():
        return r
    z = np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0) if want_positive else \
        np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0)
    return np.where(tie, z.astype(r.dtype), r)


def maximum(op, args, ctx):
    a, b = (up(x) for x in args)
    dt = args[0].dtype
    if dt.kind == "c":  # lexicographic on (real, imag)
        take_a = (a.real > b.real) | ((a.real == b.real) & (a.imag >= b.imag))
        return (np.where(take_a, a, b),)
    r = np.logical_or(a, b) if dt == np.bool_ else np.maximum(a, b)
    return (down(_fix_zeros(r, a, b, True), dt),)


def minimum(op, args, ctx):
    a, b = (up(x) for x in args)
    dt = args[0].dtype
    if dt.kind == "c":
        take_a = (a.real < b.real) | ((a.real == b.real) & (a.imag <= b.imag))
        return (np.where(take_a, a, b),)
    r = np.logical_and(a, b) if dt == np.bool_ else np.minimum(a, b)
    return (down(_fix_zeros(r, a, b, False), dt),)


def negate(op, args, ctx):
    (a,) = args
    if is_float(a.dtype):  # a sign-bit flip: NaN payloads kept
        bits = contiguous(a).view(f"u{a.dtype.itemsize}")
        return ((bits ^ np.array(1 << (8 * a.dtype.itemsize - 1), bits.dtype)).view(a.dtype),)
    return (down(np.negative(up(a)), a.dtype),)


def abs(op, args, ctx):  # noqa: A001 - the op's name
    (a,) = args
    dt = a.dtype
    if dt.kind == "c":
        t = np.dtype(np.float32 if dt == np.complex64 else np.float64)
        return ((np.abs(a.astype(np.complex128)) if ctx.reference and t == np.float32 else np.abs(a)).astype(t),)
    if is_float(dt):
        bits = contiguous(a).view(f"u{dt.itemsize}")
        return ((bits & np.array((1 << (8 * dt.itemsize - 1)) - 1, bits.dtype)).view(dt),)
    return (down(np.abs(up(a)), dt),)


def sign(op, args, ctx):
    (a,) = args
    dt = a.dtype
    if dt.kind == "c":
        mag = np.abs(a)
        return (np.where(mag == 0, a, a / np.where(mag == 0, 1, mag)).astype(dt),)
    x = up(a)
    s = np.sign(x)
    if is_float(dt):
        s = np.where(x == 0, x, s)  # sign(-0.0) = -0.0
    return (down(s.astype(x.dtype), dt),)


def _int_power(a, b):
    """Repeated squaring with wrapping; negative exponents give 0 unless the base is ±1 (XLA)."""
    result = np.ones_like(a)
    base = a.copy()
    e = b.astype(np.int64) if b.dtype.kind == "i" else b.astype(np.uint64)
    neg = e < 0
    e = np.where(neg, 0, e)
    while np.any(e > 0):
        odd = (e & 1) == 1
        result = np.where(odd, result * base, result)
        base = base * base
        e = e >> 1
    if neg.any():
        one = np.ones_like(a)
        neg_value = np.where(a == 1, one, np.where(a == -1 if a.dtype.kind == "i" else False,
                                                     np.where(b % 2 == 0, one, -one), 0))
        result = np.where(neg, neg_value, result)
    return result.astype(a.dtype)


def power(op, args, ctx):
    a, b = args
    dt = a.dtype
    if is_int(dt):
        return (down(_int_power(up(a), up(b)), dt),)
    return _transcendental(np.power)(op, args, ctx)


def clamp(op, args, ctx):
    lo, x, hi = args
    mx = maximum(op, [np.broadcast_to(lo, x.shape), x], ctx)[0]
    return minimum(op, [mx, np.broadcast_to(hi, x.shape)], ctx)


exponential = _transcendental(np.exp)
log = _transcendental(np.log, positive_nan=True)
log_plus_one = _transcendental(np.log1p)
exponential_minus_one = _transcendental(np.expm1)
tanh = _transcendental(np.tanh)
sine = _transcendental(np.sin)
cosine = _transcendental(np.cos)
tan = _transcendental(np.tan)
sqrt = _transcendental(np.sqrt)
cbrt = _transcendental(np.cbrt)
atan2 = _transcendental(np.arctan2)


def _rsqrt(x):
    return 1 / np.sqrt(x)


def _logistic(x):
    return 1 / (1 + np.exp(-x))


rsqrt = _transcendental(_rsqrt)
_logistic_fast = _transcendental(_logistic)


def logistic(op, args, ctx):
    """Reference mode: `1 / (1 + exp(-x))` in the element type, `exp` rounded from float64 (the
    reference interpreter's `logistic`)."""
    if not ctx.reference:
        return _logistic_fast(op, args, ctx)
    (x,) = args
    (e,) = exponential(op, [negate(op, [x], ctx)[0]], ctx)
    one = np.ones((), x.dtype)
    (den,) = add(op, [np.broadcast_to(one, x.shape), e], ctx)
    return divide(op, [np.broadcast_to(one, x.shape), den], ctx)


def _exact(f):
    """Ops exact in any precision (rounding to integers)."""
    def evaluate(op, args, ctx):
        (a,) = args
        return (down(f(up(a)), a.dtype),)
    return evaluate


def _round_afz(x):
    t = np.trunc(x)
    return t + np.copysign((np.abs(x - t) >= 0.5).astype(x.dtype), x)


floor = _exact(np.floor)
ceil = _exact(np.ceil)
round_nearest_even = _exact(np.rint)
round_nearest_afz = _exact(_round_afz)


def is_finite(op, args, ctx):
    return (np.isfinite(up(args[0])),)


def real(op, args, ctx):
    (a,) = args
    return (contiguous(a.real) if a.dtype.kind == "c" else a.copy(),)


def imag(op, args, ctx):
    (a,) = args
    return (contiguous(a.imag) if a.dtype.kind == "c" else np.zeros_like(a),)


def complex(op, args, ctx):  # noqa: A001 - the op's name
    a, b = args
    out = np.empty(a.shape, np.complex64 if a.dtype == np.float32 else np.complex128)
    out.real, out.imag = a, b
    return (out,)


def reduce_precision(op, args, ctx):
    """Round the mantissa to `mantissa_bits` (nearest even), the exponent to `exponent_bits`
    (overflow to ±inf, underflow to ±0); NaN stays NaN (XLA's bit recipe)."""
    (a,) = args
    e_bits = op.properties["exponent_bits"].value
    m_bits = op.properties["mantissa_bits"].value
    dt = a.dtype
    x = up(a)
    if x.dtype == np.float64:
        u, width, src_m, src_e = np.uint64, 64, 52, 11
    else:
        x = x.astype(np.float32)
        u, width, src_m, src_e = np.uint32, 32, 23, 8
    bits = x.view(u).copy()
    one = u(1)
    if m_bits < src_m:
        shift = u(src_m - m_bits)
        last = (bits >> shift) & one
        bias = (one << (shift - one)) - one + last
        bits = (bits + bias) & ~((one << shift) - one)
    if e_bits < src_e:
        sign = bits & (one << u(width - 1))
        mag = bits & ~(one << u(width - 1))
        src_bias = (1 << (src_e - 1)) - 1
        dst_bias = (1 << (e_bits - 1)) - 1
        max_exp = u((src_bias + dst_bias) << src_m)
        min_exp = u((src_bias - dst_bias) << src_m)
        over = mag > (max_exp | u((1 << src_m) - 1))
        under = mag <= min_exp
        inf = u(((1 << src_e) - 1) << src_m)
        mag = np.where(over, inf, np.where(under, u(0), mag))
        bits = sign | mag
    out = bits.view(x.dtype)
    out = np.where(np.isnan(x), x, out)
    return (out.astype(dt) if dt in LOW_FLOATS or dt != out.dtype else out,)


# -- logic and bits ------------------------------------------------------------------------------

def _bitwise(fb, fi):
    def evaluate(op, args, ctx):
        dt = args[0].dtype
        return (down((fb if dt == np.bool_ else fi)(*(up(a) for a in args)), dt),)
    return evaluate


and_ = _bitwise(np.logical_and, np.bitwise_and)
or_ = _bitwise(np.logical_or, np.bitwise_or)
xor = _bitwise(np.logical_xor, np.bitwise_xor)
not_ = _bitwise(np.logical_not, np.invert)


def _unsigned(x, dt):
    """The bits of integers `x` of type `dt` as an unsigned array of the computing width."""
    u = up(x)
    ut = np.dtype(f"u{u.dtype.itemsize}")
    return u.astype(ut) & np.array((1 << int_bits(dt)) - 1, ut)


def _shift(kind):
    def evaluate(op, args, ctx):
        a, b = args
        dt = a.dtype
        width = int_bits(dt)
        x = up(a)
        count = _unsigned(b, dt)  # the count is read as unsigned
        big = count >= width
        c = np.where(big, 0, count).astype(x.dtype)
        if kind == "left":
            r = np.where(big, 0, np.left_shift(x, c))
        elif kind == "logical":
            ux = _unsigned(a, dt)
            r = np.where(big, 0, np.right_shift(ux, c.astype(ux.dtype))).astype(x.dtype)
        else:
            neg = x < 0 if is_signed(dt) else np.zeros(x.shape, bool)
            r = np.where(big, np.where(neg, -1, 0).astype(x.dtype), np.right_shift(x, c))
        return (down(r.astype(x.dtype), dt),)
    return evaluate


shift_left = _shift("left")
shift_right_logical = _shift("logical")
shift_right_arithmetic = _shift("arithmetic")


def popcnt(op, args, ctx):
    (a,) = args
    u = _unsigned(a, a.dtype)
    return (down(np.bitwise_count(u).astype(up(a).dtype), a.dtype),)


def count_leading_zeros(op, args, ctx):
    (a,) = args
    width = int_bits(a.dtype)
    u = _unsigned(a, a.dtype).astype(np.uint64)
    n = np.zeros(u.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):  # the bit length by halving: log2(64) vectorised steps
        hi = u >= (np.uint64(1) << np.uint64(s))
        n = n + np.where(hi, s, 0)
        u = np.where(hi, u >> np.uint64(s), u)
    length = n + (u > 0)
    return (down((width - length).astype(up(a).dtype), a.dtype),)


# -- comparison, selection, conversion -----------------------------------------------------------

def _total_order_key(x):
    """Sign-magnitude bits as a two's-complement key: -NaN < -inf < ... < -0 < +0 < ... < +NaN."""
    x = up(x) if x.dtype in LOW_FLOATS else x
    width = 8 * x.dtype.itemsize
    s = contiguous(x).view(f"i{x.dtype.itemsize}")
    mask = np.array((1 << (width - 1)) - 1, s.dtype)
    return np.where(s < 0, s ^ mask, s)


_DIRECTIONS = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
               "GE": np.greater_equal}


def _enum(attr) -> str | None:
    """An enum attribute's value: `EnumAttr.value`, or the last word of an opaque
    `#chlo<comparison_direction GT>`."""
    if attr is None:
        return None
    value = getattr(attr, "value", None)
    return value if isinstance(value, str) else str(attr).rstrip(">").split()[-1]


def compare(op, args, ctx):
    a, b = args
    direction = _enum(op.properties.get("comparison_direction", op.attributes.get("comparison_direction")))
    ct = _enum(op.properties.get("compare_type", op.attributes.get("compare_type")))
    dt = a.dtype
    f = _DIRECTIONS.get(direction)
    if f is None:
        fail(op, f"unknown comparison direction {direction!r}")
    if ct == "TOTALORDER" and is_float(dt):
        return (f(_total_order_key(a), _total_order_key(b)),)
    if dt.kind == "c" and direction not in ("EQ", "NE"):
        fail(op, f"comparison {direction} of complex values")
    if ct == "UNSIGNED" and is_int(dt) and is_signed(dt):
        return (f(_unsigned(a, dt), _unsigned(b, dt)),)
    if ct == "SIGNED" and is_int(dt) and not is_signed(dt):
        w = int_bits(dt)
        sa, sb = (up(x).astype(np.int64) for x in (a, b))
        sa, sb = (np.where(v >= 1 << (w - 1), v - (1 << w), v) for v in (sa, sb))
        return (f(sa, sb),)
    return (f(up(a), up(b)),)


def select(op, args, ctx):
    p, a, b = args
    return (np.where(p, a, b),)


def convert(op, args, ctx):
    (a,) = args
    dt = dtype_of(op.result.type, op)
    return (convert_array(a, dt),)


def convert_array(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    """StableHLO `convert` as XLA:CPU: float → int truncates and saturates (NaN → 0); any → bool
    is `!= 0`; int → int wraps; complex → real drops the imaginary part."""
    src = a.dtype
    if src == dt:
        return a.copy()
    if dt == np.bool_:
        return up(a) != 0
    if src.kind == "c" and dt.kind != "c":
        a = contiguous(a.real)
        src = a.dtype
    if is_int(dt):
        if is_float(src):
            x = up(a).astype(np.float64)
            t = np.trunc(np.where(np.isnan(x), 0, x))
            info = ml_dtypes.iinfo(dt)
            hi = t >= float(info.max)  # (2^63 and 2^64 are not representable: compare, then set)
            lo = t <= float(info.min)
            safe = np.where(hi | lo, 0, t).astype(np.int64 if is_signed(dt) else np.uint64)
            return down(np.where(hi, info.max, np.where(lo, info.min, safe)).astype(up(np.zeros(0, dt)).dtype), dt)
        return down(up(a), dt)  # bool → 0/1; int → int wraps (numpy's astype is modular)
    # to a float or complex type: every low float is exact in float32, so one rounding
    if src in LOW_FLOATS or src == np.bool_:
        return a.astype(np.float32).astype(dt)
    if is_int(src):
        return up(a).astype(np.float64 if dt in LOW_FLOATS else dt).astype(dt)
    return a.astype(dt)


def bitcast_convert(op, args, ctx):
    """The bits as another type (little-endian, as XLA:CPU): a narrower result gains a minor dim,
    a wider one drops it. Shape-agnostic, so it also runs vectorised inside region bodies."""
    (a,) = args
    dt = dtype_of(op.result.type, op)
    src = a.dtype
    a = contiguous(a)
    if dt.itemsize == src.itemsize:
        return (a.view(dt),)
    if dt.itemsize < src.itemsize:
        return (a.reshape(a.shape + (1,)).view(dt),)
    return (a.view(dt).reshape(a.shape[:-1]),)
