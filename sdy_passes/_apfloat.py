"""LLVM's `APFloat` for every MLIR float type: its bit layout, exact rounding to it (nearest,
ties to even) and MLIR's `printFloatValue` text, on exact values (a bit pattern, or a sign and
an exact ratio of integers), so that f8/f6/f4, tf32, f80 and f128 print as jaxlib prints them.

Overflow follows each type's non-finite behaviour: IEEE types round to infinity, `FN` types
(all-ones NaN) and `FNUZ` types (NaN at negative zero's place) to NaN, `f6`/`f4` types (no
infinity, no NaN) saturate. `FNUZ` types have no negative zero; `f8E8M0FNU` has no sign, no
zero and no subnormals. f80 keeps its integer bit: an unnormal is a NaN whose bits print with
the all-ones exponent, as APFloat's bitcast does.
"""

from __future__ import annotations

from dataclasses import dataclass

IEEE, NAN_ONLY, NAN_AT_NEGATIVE_ZERO, FINITE_ONLY = "ieee", "nan_only", "nan_at_negative_zero", "finite_only"


@dataclass(frozen=True)
class FloatFormat:
    width: int
    exponent_bits: int
    mantissa_bits: int  # stored bits (f80: with its explicit integer bit)
    bias: int
    nonfinite: str = IEEE
    signed: bool = True
    explicit_integer_bit: bool = False

    @property
    def precision(self) -> int:
        """APFloat's `semantics.precision`: significand bits, the leading one included."""
        return self.mantissa_bits + (0 if self.explicit_integer_bit else 1)

    @property
    def fraction_bits(self) -> int:
        return self.precision - 1

    @property
    def min_exponent(self) -> int:
        return 1 - self.bias

    @property
    def max_field(self) -> int:
        """The largest exponent field of a finite value."""
        top = (1 << self.exponent_bits) - 1
        return top - 1 if self.nonfinite == IEEE else top


FORMATS = {
    "f16": FloatFormat(16, 5, 10, 15),
    "bf16": FloatFormat(16, 8, 7, 127),
    "tf32": FloatFormat(19, 8, 10, 127),
    "f32": FloatFormat(32, 8, 23, 127),
    "f64": FloatFormat(64, 11, 52, 1023),
    "f80": FloatFormat(80, 15, 64, 16383, explicit_integer_bit=True),
    "f128": FloatFormat(128, 15, 112, 16383),
    "f8E5M2": FloatFormat(8, 5, 2, 15),
    "f8E4M3": FloatFormat(8, 4, 3, 7),
    "f8E3M4": FloatFormat(8, 3, 4, 3),
    "f8E4M3FN": FloatFormat(8, 4, 3, 7, NAN_ONLY),
    "f8E5M2FNUZ": FloatFormat(8, 5, 2, 16, NAN_AT_NEGATIVE_ZERO),
    "f8E4M3FNUZ": FloatFormat(8, 4, 3, 8, NAN_AT_NEGATIVE_ZERO),
    "f8E4M3B11FNUZ": FloatFormat(8, 4, 3, 11, NAN_AT_NEGATIVE_ZERO),
    "f8E8M0FNU": FloatFormat(8, 8, 0, 127, NAN_ONLY, signed=False),
    "f6E2M3FN": FloatFormat(6, 2, 3, 1, FINITE_ONLY),
    "f6E3M2FN": FloatFormat(6, 3, 2, 3, FINITE_ONLY),
    "f4E2M1FN": FloatFormat(4, 2, 1, 1, FINITE_ONLY),
}


def decode(bits: int, fmt: FloatFormat) -> tuple[str, bool, int, int]:
    """`(kind, negative, num, den)` of a bit pattern: kind is "finite", "inf" or "nan"; the
    magnitude is num / den (den a power of two)."""
    negative = fmt.signed and bool(bits >> (fmt.width - 1))
    field = (bits >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    mantissa = bits & ((1 << fmt.mantissa_bits) - 1)
    top = (1 << fmt.exponent_bits) - 1
    if fmt.nonfinite == NAN_AT_NEGATIVE_ZERO and bits == 1 << (fmt.width - 1):
        return "nan", True, 0, 1
    if fmt.nonfinite == NAN_ONLY and field == top and mantissa == (1 << fmt.mantissa_bits) - 1:
        return "nan", negative, 0, 1
    if fmt.explicit_integer_bit:
        if field == top:
            return ("inf" if mantissa == 1 << (fmt.mantissa_bits - 1) else "nan"), negative, 0, 1
        if field and not mantissa >> (fmt.mantissa_bits - 1):  # an unnormal
            return "nan", negative, 0, 1
        return ("finite", negative, *_scaled(mantissa, max(field, 1) - fmt.bias - fmt.fraction_bits))
    if fmt.nonfinite == IEEE and field == top:
        return ("inf" if mantissa == 0 else "nan"), negative, 0, 1
    if fmt.mantissa_bits == 0:  # f8E8M0FNU: a power of two
        return ("finite", False, *_scaled(1, field - fmt.bias))
    significand = mantissa + (1 << fmt.mantissa_bits if field else 0)
    return ("finite", negative, *_scaled(significand, max(field, 1) - fmt.bias - fmt.mantissa_bits))


def _scaled(significand: int, exponent: int) -> tuple[int, int]:
    return (significand << exponent, 1) if exponent >= 0 else (significand, 1 << -exponent)


def _floor_log2(num: int, den: int) -> int:
    e = num.bit_length() - den.bit_length()
    return e - 1 if (num < den << e if e >= 0 else num << -e < den) else e


def nan_bits(negative: bool, fmt: FloatFormat) -> int:
    """APFloat's default (quiet) NaN of the type."""
    sign = int(negative and fmt.signed) << (fmt.width - 1)
    if fmt.nonfinite == NAN_AT_NEGATIVE_ZERO:
        return 1 << (fmt.width - 1)
    if fmt.nonfinite == NAN_ONLY:
        return sign | ((1 << (fmt.width - 1 if fmt.signed else fmt.width)) - 1)
    quiet = 3 << (fmt.mantissa_bits - 2) if fmt.explicit_integer_bit else 1 << (fmt.mantissa_bits - 1)
    return sign | (((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits) | quiet


def infinity_bits(negative: bool, fmt: FloatFormat) -> int:
    """Infinity, or what an overflow becomes where the type has none (NaN, or the largest)."""
    if fmt.nonfinite == FINITE_ONLY:
        return _assemble(negative, fmt.max_field, (1 << fmt.mantissa_bits) - 1, fmt)
    if fmt.nonfinite != IEEE:
        return nan_bits(negative, fmt)
    integer_bit = 1 << (fmt.mantissa_bits - 1) if fmt.explicit_integer_bit else 0
    return (int(negative) << (fmt.width - 1)) | (((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits) | integer_bit


def _assemble(negative: bool, field: int, mantissa: int, fmt: FloatFormat) -> int:
    return (int(negative and fmt.signed) << (fmt.width - 1)) | (field << fmt.mantissa_bits) | mantissa


def encode(negative: bool, num: int, den: int, fmt: FloatFormat) -> int:
    """The bits of `±num/den` rounded to the type, to nearest with ties to even."""
    if fmt.mantissa_bits == 0:
        # f8E8M0FNU: powers of two only; what underflows is the smallest (there is no zero);
        # APFloat keeps a sign that its bitcast ORs into the top bit (-4.0 is 4.0, -1.0 NaN).
        if num == 0:
            return 0
        exponent = _floor_log2(num, den)
        if exponent < -fmt.bias:  # below the smallest: from above half of it, it (signed); else zero
            above_half = exponent == -fmt.bias - 1 and num << -exponent > den
            return (int(negative) << (fmt.width - 1)) if above_half else 0
        # Halfway (1.5 * 2**e) rounds up: the one significand bit is always odd.
        halfway = (2 * num >= 3 * den << exponent) if exponent >= 0 else (2 * num << -exponent >= 3 * den)
        field = exponent + fmt.bias + halfway
        if field >= (1 << fmt.exponent_bits) - 1:
            return nan_bits(False, fmt)
        return field | (int(negative) << (fmt.width - 1))
    if num == 0:
        return _assemble(negative and fmt.nonfinite != NAN_AT_NEGATIVE_ZERO, 0, 0, fmt)
    exponent = max(_floor_log2(num, den), fmt.min_exponent)
    shift = fmt.fraction_bits - exponent
    n, rest = divmod(num << shift, den) if shift >= 0 else divmod(num, den << -shift)
    divisor = den if shift >= 0 else den << -shift
    if 2 * rest > divisor or (2 * rest == divisor and n % 2):
        n += 1
    if n >> (fmt.fraction_bits + 1):  # rounded up to the next power of two
        n >>= 1
        exponent += 1
    if n == 0:
        return _assemble(negative and fmt.nonfinite != NAN_AT_NEGATIVE_ZERO, 0, 0, fmt)
    normal = bool(n >> fmt.fraction_bits)
    field = exponent + fmt.bias if normal else 0
    mantissa = n if fmt.explicit_integer_bit else n & ((1 << fmt.fraction_bits) - 1)
    top_mantissa = (1 << fmt.mantissa_bits) - 1 - (fmt.nonfinite == NAN_ONLY)
    if field > fmt.max_field or (field == fmt.max_field and mantissa > top_mantissa):
        return infinity_bits(negative, fmt)
    return _assemble(negative, field, mantissa, fmt)


def to_string(negative: bool, num: int, den: int, fmt: FloatFormat, precision: int, max_padding: int,
              truncate_zero: bool) -> str:
    """LLVM's `APFloat::toString(Str, FormatPrecision, FormatMaxPadding, TruncateZero)` of
    `±num/den` (den a power of two)."""
    sign = "-" if negative else ""
    if num == 0:
        if max_padding:
            return sign + "0"
        return sign + ("0.0E+0" if truncate_zero else "0.0" + "0" * max(precision - 1, 0) + "e+00")
    if not precision:
        precision = 2 + fmt.precision * 59 // 196
    # In lowest terms (LLVM drops the significand's trailing zero bits first).
    common = min((num & -num).bit_length(), den.bit_length()) - 1
    num, den = num >> common, den >> common
    # Exact decimal significand: value = digits * 10**exp.
    t = den.bit_length() - 1  # den is a power of two
    digits, exp = (num * 5 ** t, -t) if t else (num, 0)
    # Drop the decimal digits beyond what the precision can need (truncating, like LLVM).
    bits_required = (precision * 196 + 58) // 59
    if digits.bit_length() > bits_required:
        removable = (digits.bit_length() - bits_required) * 59 // 196
        if removable:
            digits //= 10 ** removable
            exp += removable
    text = str(digits)
    stripped = text.rstrip("0")
    exp += len(text) - len(stripped)
    text = stripped
    if len(text) > precision:  # round half up to `precision` digits
        dropped = len(text) - precision
        kept = int(text[:precision]) + (text[precision] >= "5")
        exp += dropped
        text = str(kept)
        if len(text) > precision:  # carried into a new digit: 99..9 → 100..0
            exp += len(text) - precision
            text = text[:precision]
        stripped = text.rstrip("0")
        exp += len(text) - len(stripped)
        text = stripped
    n = len(text)
    if not max_padding:
        scientific = True
    elif exp >= 0:
        scientific = exp > max_padding or n + exp > precision
    else:
        msd = exp + n - 1
        scientific = msd < 0 and -msd > max_padding
    if scientific:
        e = exp + n - 1
        mantissa = text[0] + "." + ("0" if n == 1 and truncate_zero else text[1:])
        if not truncate_zero and precision > n - 1:
            mantissa += "0" * (precision - n + 1)
        exp_text = str(abs(e)).rjust(1 if truncate_zero else 2, "0")
        return f"{sign}{mantissa}{'E' if truncate_zero else 'e'}{'+' if e >= 0 else '-'}{exp_text}"
    if exp >= 0:
        return sign + text + "0" * exp
    whole = exp + n
    if whole > 0:
        return sign + text[:whole] + "." + text[whole:]
    return sign + "0." + "0" * (-whole) + text


def print_bits(bits: int, fmt: FloatFormat) -> str:
    """MLIR's `printFloatValue`: `toString(6, 0, false)` when it reads back to the same bits,
    else `toString()` when that has a '.', else the bits as a C literal (`0x7FC00000`, no
    leading zeros)."""
    kind, negative, num, den = decode(bits, fmt)
    if kind == "finite":
        text = to_string(negative, num, den, fmt, 6, 0, False)
        if encode(negative, *_decimal_ratio(text), fmt) == bits:
            return text
        text = to_string(negative, num, den, fmt, 0, 3, True)
        if "." in text:
            return text
    return f"0x{stored_bits(bits, fmt):X}"


def stored_bits(bits: int, fmt: FloatFormat) -> int:
    """The bits APFloat's bitcast gives back: an f80 NaN (an unnormal too) gets the all-ones
    exponent."""
    if fmt.explicit_integer_bit and decode(bits, fmt)[0] == "nan":
        bits |= ((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits
    return bits


def _decimal_ratio(text: str) -> tuple[int, int]:
    """`(num, den)` of a decimal such as toString's `-d.dddddde+XX` or `849.599975` (sign
    ignored)."""
    mantissa, _, exponent = text.lstrip("-").lower().partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits, exp10 = int(whole + fraction), int(exponent or 0) - len(fraction)
    return (digits * 10 ** exp10, 1) if exp10 >= 0 else (digits, 10 ** -exp10)
