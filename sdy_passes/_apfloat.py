"""LLVM's `APFloat` for every MLIR float type: its bit layout, exact rounding to it (nearest,
ties to even) and MLIR's `printFloatValue` text, on exact values (a bit pattern, or a sign and
a `Fraction`), so that f8/f6/f4, tf32, f80 and f128 print as jaxlib prints them.

Overflow follows each type's non-finite behaviour: IEEE types round to infinity, `FN` types
(all-ones NaN) and `FNUZ` types (NaN at negative zero's place) to NaN, `f6`/`f4` types (no
infinity, no NaN) saturate. `FNUZ` types have no negative zero; `f8E8M0FNU` has no sign, no
zero and no subnormals. f80 keeps its integer bit: an unnormal is a NaN whose bits print with
the all-ones exponent, as APFloat's bitcast does.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

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


def decode(bits: int, fmt: FloatFormat) -> tuple[str, bool, Fraction]:
    """`(kind, negative, magnitude)` of a bit pattern; kind is "finite", "inf" or "nan"."""
    negative = fmt.signed and bool(bits >> (fmt.width - 1))
    field = (bits >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    mantissa = bits & ((1 << fmt.mantissa_bits) - 1)
    top = (1 << fmt.exponent_bits) - 1
    if fmt.nonfinite == NAN_AT_NEGATIVE_ZERO and bits == 1 << (fmt.width - 1):
        return "nan", True, Fraction(0)
    if fmt.nonfinite == NAN_ONLY and field == top and mantissa == (1 << fmt.mantissa_bits) - 1:
        return "nan", negative, Fraction(0)
    if fmt.explicit_integer_bit:
        integer_bit = mantissa >> (fmt.mantissa_bits - 1)
        if field == top:
            return ("inf" if mantissa == 1 << (fmt.mantissa_bits - 1) else "nan"), negative, Fraction(0)
        if field and not integer_bit:  # an unnormal
            return "nan", negative, Fraction(0)
        exponent = max(field, 1) - fmt.bias - fmt.fraction_bits
        return "finite", negative, Fraction(mantissa) * Fraction(2) ** exponent
    if fmt.nonfinite == IEEE and field == top:
        return ("inf" if mantissa == 0 else "nan"), negative, Fraction(0)
    if fmt.mantissa_bits == 0:  # f8E8M0FNU: a power of two
        return "finite", False, Fraction(2) ** (field - fmt.bias)
    significand = mantissa + (1 << fmt.mantissa_bits if field else 0)
    return "finite", negative, Fraction(significand) * Fraction(2) ** (max(field, 1) - fmt.bias - fmt.mantissa_bits)


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


def encode(negative: bool, value: Fraction, fmt: FloatFormat) -> int:
    """The bits of `±value` rounded to the type, to nearest with ties to even."""
    if fmt.mantissa_bits == 0:
        # f8E8M0FNU: powers of two only; what underflows is the smallest (there is no zero);
        # APFloat keeps a sign that its bitcast ORs into the top bit (-4.0 is 4.0, -1.0 NaN).
        if value == 0:
            return 0
        exponent = value.numerator.bit_length() - value.denominator.bit_length()
        if Fraction(2) ** exponent > value:
            exponent -= 1
        # Halfway (1.5 * 2**e) rounds up: the one significand bit is always odd.
        field = exponent + fmt.bias + (value >= Fraction(3, 2) * Fraction(2) ** exponent)
        if field >= (1 << fmt.exponent_bits) - 1:
            return nan_bits(False, fmt)
        return 0 if field < 0 else field | (int(negative) << (fmt.width - 1))
    if fmt.nonfinite == NAN_AT_NEGATIVE_ZERO and value == 0:
        negative = False
    if value == 0:
        return _assemble(negative, 0, 0, fmt)
    exponent = value.numerator.bit_length() - value.denominator.bit_length()
    if Fraction(2) ** exponent > value:
        exponent -= 1
    exponent = max(exponent, fmt.min_exponent)
    scaled = value / Fraction(2) ** (exponent - fmt.fraction_bits)
    n, rest = divmod(scaled.numerator, scaled.denominator)
    if 2 * rest > scaled.denominator or (2 * rest == scaled.denominator and n % 2):
        n += 1
    if n >> (fmt.fraction_bits + 1):  # rounded up to the next power of two
        n >>= 1
        exponent += 1
    if n == 0:
        return _assemble(negative if fmt.nonfinite != NAN_AT_NEGATIVE_ZERO else False, 0, 0, fmt)
    normal = bool(n >> fmt.fraction_bits)
    field = exponent + fmt.bias if normal else 0
    mantissa = n if fmt.explicit_integer_bit else n & ((1 << fmt.fraction_bits) - 1)
    top_mantissa = (1 << fmt.mantissa_bits) - 1 - (fmt.nonfinite == NAN_ONLY)
    if field > fmt.max_field or (field == fmt.max_field and mantissa > top_mantissa):
        return infinity_bits(negative, fmt)
    return _assemble(negative, field, mantissa, fmt)


def to_string(negative: bool, value: Fraction, fmt: FloatFormat, precision: int, max_padding: int,
              truncate_zero: bool) -> str:
    """LLVM's `APFloat::toString(Str, FormatPrecision, FormatMaxPadding, TruncateZero)`."""
    sign = "-" if negative else ""
    if value == 0:
        if max_padding:
            return sign + "0"
        return sign + ("0.0E+0" if truncate_zero else "0.0" + "0" * max(precision - 1, 0) + "e+00")
    if not precision:
        precision = 2 + fmt.precision * 59 // 196
    # Exact decimal significand: value = digits * 10**exp.
    num, den = value.numerator, value.denominator
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
    kind, negative, value = decode(bits, fmt)
    if kind == "finite":
        text = to_string(negative, value, fmt, 6, 0, False)
        if encode(negative, Fraction(text.lstrip("-")), fmt) == bits:
            return text
        text = to_string(negative, value, fmt, 0, 3, True)
        if "." in text:
            return text
    elif kind == "nan" and fmt.explicit_integer_bit:  # APFloat's bitcast of an f80 NaN
        bits = (bits & ~(((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits)) | (
            ((1 << fmt.exponent_bits) - 1) << fmt.mantissa_bits)
    return f"0x{bits:X}"
