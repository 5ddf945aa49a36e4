"""Attribute, type and location values: frozen dataclasses, compared by value.

`str(x)` prints each one exactly as MLIR does (the same text in generic and pretty form).
The `sdy` attributes are the `sharding` package's values (`TensorSharding`,
`TensorShardingPerValue`, `Mesh`, `ManualAxes`) plus `OpShardingRule` defined here;
attributes and types of other dialects are kept verbatim (`OpaqueAttr`, `OpaqueType`).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field
from typing import Union

from sharding._frozen import kept_hash, state_without_hash

from sdy_passes import _apfloat
from sdy_passes._lazy import load
from sdy_passes.errors import SdyError, expect, shown

__all__ = [
    "Type", "IntegerType", "FloatType", "IndexType", "NoneType", "ComplexType",
    "RankedTensorType", "UnrankedTensorType", "TupleType", "FunctionType", "OpaqueType",
    "TOKEN", "I1", "I32", "I64", "F32", "F64", "INDEX",
    "Attribute", "IntegerAttr", "BoolAttr", "FloatAttr", "StringAttr", "UnitAttr", "ArrayAttr",
    "DictionaryAttr", "TypeAttr", "SymbolRefAttr", "DenseArrayAttr", "DenseElementsAttr",
    "OpaqueAttr", "OpShardingRule",
    "Location", "UnknownLoc", "FileLineColLoc", "NameLoc", "CallSiteLoc", "FusedLoc", "fused_loc", "loc_children",
    "escape_string", "print_symbol_name", "print_attr_name", "format_float",
]


# --------------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------------

class Type:
    """Base of all types (frozen dataclasses)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class IntegerType(Type):
    """`i32` (signless), `si32` (`signedness="s"`), `ui8` (`signedness="u"`)."""

    width: int
    signedness: str = ""

    def __post_init__(self):
        if type(self.width) is not int or not 0 <= self.width <= 16777215 or self.signedness not in ("", "s", "u"):
            raise SdyError(f"IntegerType: expected a width in [0, 16777215] and signedness '', 's' or 'u', "
                           f"found {shown(self.width)}, {shown(self.signedness)}")

    def __str__(self) -> str:
        return f"{self.signedness}i{self.width}"


@dataclass(frozen=True, slots=True)
class FloatType(Type):
    """A float type by its MLIR keyword: `f32`, `bf16`, `f8E4M3FN`, `tf32`, ..."""

    name: str

    def __post_init__(self):
        if not isinstance(self.name, str) or self.name not in _apfloat.FORMATS:
            raise SdyError(f"FloatType: expected an MLIR float type name (f32, bf16, ...), found {shown(self.name)}")

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class IndexType(Type):
    def __str__(self) -> str:
        return "index"


@dataclass(frozen=True, slots=True)
class NoneType(Type):
    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True, slots=True)
class ComplexType(Type):
    element_type: Type

    def __str__(self) -> str:
        return f"complex<{self.element_type}>"


@dataclass(frozen=True, slots=True)
class RankedTensorType(Type):
    """`tensor<8x?xf32>`: `shape` holds `None` for a dynamic dim; `encoding` is optional."""

    shape: tuple[int | None, ...]
    element_type: Type
    encoding: Attribute | None = None
    _text: str | None = field(default=None, init=False, repr=False, compare=False)
    """`str(self)`, kept once made (printing a module writes each op's types)."""
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    __hash__ = kept_hash  # (a dict and cache key in every pass)
    __getstate__ = state_without_hash

    def __post_init__(self):
        expect(self.shape, (tuple,), "a tuple of dimensions", "RankedTensorType")
        expect(self.element_type, (Type,), "an element Type", "RankedTensorType")
        for d in self.shape:
            if d is not None and (type(d) is not int or not 0 <= d < 1 << 63):
                raise SdyError(f"RankedTensorType: expected dimensions in [0, 2**63) or None, found {shown(d)}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def has_static_shape(self) -> bool:
        return None not in self.shape

    def __str__(self) -> str:
        text = self._text
        if text is None:
            dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
            enc = f", {self.encoding}" if self.encoding is not None else ""
            text = f"tensor<{dims}{self.element_type}{enc}>"
            object.__setattr__(self, "_text", text)
        return text


@dataclass(frozen=True, slots=True)
class UnrankedTensorType(Type):
    element_type: Type

    def __str__(self) -> str:
        return f"tensor<*x{self.element_type}>"


@dataclass(frozen=True, slots=True)
class TupleType(Type):
    types: tuple[Type, ...]

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.types))}>"


@dataclass(frozen=True, slots=True)
class FunctionType(Type):
    """`(inputs) -> results`; a single non-function result prints without parentheses."""

    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        return f"({', '.join(map(str, self.inputs))}) -> {print_result_types(self.results)}"


@dataclass(frozen=True, slots=True)
class OpaqueType(Type):
    """Any other type, kept verbatim: `!stablehlo.token`, `vector<4xf32>`, `!foo.bar<...>`."""

    text: str

    def __str__(self) -> str:
        return self.text


def print_function_type(inputs, results) -> str:
    """`(A, B) -> R` for an op's operand and result types."""
    return f"({', '.join(map(str, inputs))}) -> {print_result_types(tuple(results))}"


def print_result_types(types: tuple[Type, ...]) -> str:
    if len(types) == 1 and not isinstance(types[0], FunctionType):
        return str(types[0])
    return f"({', '.join(map(str, types))})"


TOKEN = OpaqueType("!stablehlo.token")
I1, I32, I64 = IntegerType(1), IntegerType(32), IntegerType(64)
F32, F64 = FloatType("f32"), FloatType("f64")
INDEX = IndexType()


# --------------------------------------------------------------------------------------------
# Printing helpers
# --------------------------------------------------------------------------------------------

_BARE_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*\Z")


def escape_string(value: str) -> str:
    """MLIR's string literal: printable ASCII kept, `\\` doubled, other bytes as `\\XX`."""
    out = []
    for b in expect(value, (str,), "a str", "escape_string").encode("utf-8", "surrogateescape"):
        c = chr(b)
        if c == "\\":
            out.append("\\\\")
        elif 0x20 <= b < 0x7F and c != '"':
            out.append(c)
        else:
            out.append(f"\\{b:02X}")
    return '"' + "".join(out) + '"'


def print_symbol_name(name: str) -> str:
    """`@name`, quoted when not a bare identifier."""
    return "@" + (name if _BARE_ID.match(expect(name, (str,), "a str", "print_symbol_name")) else escape_string(name))


def print_attr_name(name: str) -> str:
    """A dictionary key: bare identifier or quoted string."""
    return name if _BARE_ID.match(expect(name, (str,), "a str", "print_attr_name")) else escape_string(name)


def format_float(value: float, type: Type) -> str:
    """Print a float of `type` exactly as MLIR's `printFloatValue` does.

    First `APFloat::toString(6, 0, false)` (`1.000000e+00`, `1.000980e-01`), kept when it reads
    back to the same value of `type`; else `APFloat::toString()` (shortest natural digits,
    `0.1234567`, `9.99999974E-6`) when that has a '.'; else the bits in hexadecimal (NaN,
    infinities, `0x412E848200000000` for 1000001.0).
    """
    if not isinstance(value, float) and expect(value, (int,), "a float", "format_float").bit_length() > 1024:
        raise SdyError(f"format_float: {shown(value)} is beyond every float type")
    if value < 0 and not _float_format(type).signed:  # (APFloat's value keeps the sign)
        return "-" + format_float(-value, type)
    if math.isinf(value) and type.name in _FINITE_ONLY:
        # A scalar attribute read as a double infinity: APFloat's conversion makes a zero that
        # keeps the infinity's exponent, which no decimal reads back to, so MLIR prints its bits.
        return f"0x{float_bits(value, type):X}"
    return format_float_bits(float_bits(value, type), type)


def format_float_bits(bits: int, type: Type) -> str:
    """`printFloatValue` of the value of `type` whose bit pattern is `bits` (see `_apfloat`)."""
    return _apfloat.print_bits(bits, _float_format(type))


def float_bits(value: float, type: Type) -> int:
    """The bits of `value` (a Python float) converted to `type` as APFloat converts a double:
    to nearest, ties to even, each type's overflow; a NaN keeps its sign and, for IEEE types,
    the top bits of its payload (all of them for a NaN that `float_value` made)."""
    fmt = _float_format(type)
    if math.isnan(value):
        raw = struct.unpack("<Q", struct.pack("<d", value))[0]
        negative = bool(raw >> 63)
        if fmt.nonfinite != _apfloat.IEEE or fmt.explicit_integer_bit or fmt.mantissa_bits > 52:
            return _apfloat.nan_bits(negative, fmt)
        payload = (raw & ((1 << 52) - 1)) >> (52 - fmt.mantissa_bits)
        return _apfloat.infinity_bits(negative, fmt) | (payload or _apfloat.nan_bits(False, fmt))
    negative = math.copysign(1.0, value) < 0
    if math.isinf(value):  # a type without infinity (`_FINITE_ONLY`) makes ±0 of it
        return _apfloat.encode(negative, 0, 1, fmt) if fmt.nonfinite == _apfloat.FINITE_ONLY else \
            _apfloat.infinity_bits(negative, fmt)
    return _apfloat.encode(negative, *abs(value).as_integer_ratio(), fmt)


def round_float(value: float, type: Type) -> float:
    """`value` rounded to the nearest value of float type `type` (as a Python float; NaN where
    the type makes one)."""
    if math.isnan(value) or _float_format(type).signed:
        return float_value(float_bits(value, type), type)
    # f8E8M0FNU: APFloat keeps the sign of what rounds to a power of two, not of what underflows.
    magnitude = float_value(float_bits(abs(value), type), type)
    return -magnitude if value < 0 and abs(value) > 2.0 ** -128 and not math.isnan(magnitude) else magnitude


def float_value(bits: int, type: Type) -> float:
    """The value of `type` with bit pattern `bits` as a Python float (the nearest one beyond
    f64's range)."""
    fmt = _float_format(type)
    kind, negative, num, den = _apfloat.decode(bits, fmt)
    if kind == "nan":  # a double NaN with the payload's bits on top (IEEE types up to f64)
        payload = bits & ((1 << fmt.mantissa_bits) - 1) if fmt.nonfinite == _apfloat.IEEE else 0
        raw = (int(negative) << 63) | (0x7FF << 52) | ((payload << (52 - fmt.mantissa_bits)) if payload and (
            fmt.mantissa_bits <= 52) else 1 << 51)
        return struct.unpack("<d", struct.pack("<Q", raw))[0]
    try:
        number = math.inf if kind == "inf" else num / den
    except OverflowError:  # f80, f128
        number = math.inf
    return -number if negative else number


def _float_format(type: Type) -> _apfloat.FloatFormat:
    return _apfloat.FORMATS[type.name if isinstance(type, FloatType) else "f64"]


_FINITE_ONLY = frozenset({"f4E2M1FN", "f6E2M3FN", "f6E3M2FN"})
"""Float types without infinity or NaN: LLVM's `APFloat::convert` makes ±inf ±0 there."""
_NO_ZERO = frozenset({"f8E8M0FNU"})
"""Float types without zero or sign, rounded element by element as APFloat does (`float_bits`)."""


def round_floats(values, type: FloatType):
    """f64 array `values` rounded to float type `type` as MLIR's parser rounds a decimal
    (`APFloat::convert`, nearest even; out of range to ±inf or NaN where the type has them), as
    a numpy array of its dtype; None for a type numpy lacks."""
    np = load("numpy")
    dtype = load("sdy_passes.element_types").numpy_dtype(type)
    if dtype is None:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        out = values.astype(dtype)
    if type.name in _FINITE_ONLY:
        inf = np.isinf(values)
        if inf.any():
            out[inf] = np.copysign(0.0, values[inf]).astype(dtype)
    elif type.name in _NO_ZERO:  # (numpy's cast rounds ties and underflow otherwise): APFloat's bits
        out = np.array([float_bits(float(v), type) for v in values.reshape(-1)], np.uint8).view(dtype)
    return out



# --------------------------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------------------------

class Attribute:
    """Base of the attributes defined here. `sharding` values are attributes too."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class IntegerAttr(Attribute):
    """`3 : i64` (a bare `3` parses as i64)."""

    value: int
    type: Type = I64

    def __post_init__(self):
        bits = self.type.width if isinstance(self.type, IntegerType) else 64
        if type(self.value) is not int or not -(1 << bits) < self.value < 1 << bits:
            raise SdyError(f"IntegerAttr: expected an int that fits {self.type}, found {shown(self.value)}")

    def __str__(self) -> str:
        return f"{self.value} : {self.type}"


@dataclass(frozen=True, slots=True)
class BoolAttr(Attribute):
    """`true` / `false` (MLIR's i1 integer attribute)."""

    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True, slots=True)
class FloatAttr(Attribute):
    """`1.000000e+00 : f32` (a bare float literal parses as f64). `value` is the type's value,
    or ±inf in a type without infinities where the text overflowed a double (MLIR's ±0 with an
    infinity's exponent, printed `0x0`/`0x8`)."""

    value: float
    type: Type = F64

    def __str__(self) -> str:
        return f"{format_float(self.value, self.type)} : {self.type}"


@dataclass(frozen=True, slots=True)
class StringAttr(Attribute):
    value: str

    def __str__(self) -> str:
        return escape_string(self.value)


@dataclass(frozen=True, slots=True)
class UnitAttr(Attribute):
    """A present-or-absent flag; in a dictionary it prints as just its name."""

    def __str__(self) -> str:
        return "unit"


@dataclass(frozen=True, slots=True)
class ArrayAttr(Attribute):
    elements: tuple[Attribute, ...] = ()

    def __str__(self) -> str:
        return f"[{', '.join(map(_print_elided, self.elements))}]"

    def __len__(self) -> int:
        return len(self.elements)

    def __getitem__(self, i):
        return self.elements[i]

    def __iter__(self):
        return iter(self.elements)


def _print_elided(attr: Attribute) -> str:
    # Inside an array MLIR leaves out the default types: `[1, 2.500000e+00]` (i64, f64).
    if isinstance(attr, IntegerAttr) and attr.type == I64:
        return str(attr.value)
    if isinstance(attr, FloatAttr) and attr.type == F64:
        text = format_float(attr.value, F64)
        return text if not text.startswith("0x") else str(attr)  # hex keeps its type
    return str(attr)


def _entry_name(entry) -> str:
    """The sort key of a `DictionaryAttr` entry, checked on the way (no second pass)."""
    if type(entry) is not tuple or len(entry) != 2 or type(entry[0]) is not str:
        raise SdyError(f"DictionaryAttr: expected (name, Attribute) pairs, found {shown(entry)}")
    return entry[0]


@dataclass(frozen=True, slots=True)
class DictionaryAttr(Attribute):
    """`{a = 1 : i64, flag}`; entries are kept sorted by name (MLIR does the same)."""

    entries: tuple[tuple[str, Attribute], ...] = ()

    def __post_init__(self):
        entries = expect(self.entries, (tuple, list), "a sequence of (name, Attribute) pairs", "DictionaryAttr")
        object.__setattr__(self, "entries", tuple(sorted(entries, key=_entry_name)))

    @classmethod
    def from_dict(cls, d: dict) -> DictionaryAttr:
        return cls(tuple(d.items()))

    def as_dict(self) -> dict[str, Attribute]:
        return dict(self.entries)

    def get(self, name: str, default=None):
        for k, v in self.entries:
            if k == name:
                return v
        return default

    def __contains__(self, name: str) -> bool:
        return any(k == name for k, _ in self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __str__(self) -> str:
        return print_attr_dict(dict(self.entries), empty="{}")


def print_attr_dict(attrs: dict, empty: str = "") -> str:
    """`{k = v, unit_flag}` with keys sorted, or `empty` when there are none."""
    if not attrs:
        return empty
    parts = []
    for k in sorted(attrs):
        v = attrs[k]
        parts.append(print_attr_name(k) if isinstance(v, UnitAttr) else f"{print_attr_name(k)} = {v}")
    return "{" + ", ".join(parts) + "}"


@dataclass(frozen=True, slots=True)
class TypeAttr(Attribute):
    type: Type

    def __str__(self) -> str:
        return str(self.type)


@dataclass(frozen=True, slots=True)
class SymbolRefAttr(Attribute):
    """`@root` or `@root::@nested`."""

    root: str
    nested: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "::".join(print_symbol_name(n) for n in (self.root, *self.nested))


@dataclass(frozen=True, slots=True)
class DenseArrayAttr(Attribute):
    """`array<i64: 1, 2>` (`array<i64>` when empty)."""

    element_type: Type
    values: tuple = ()

    def __str__(self) -> str:
        if not self.values:
            return f"array<{self.element_type}>"
        if self.element_type == I1:
            items = ("true" if v else "false" for v in self.values)
        elif isinstance(self.element_type, FloatType):
            items = (format_float(v, self.element_type) for v in self.values)
        else:
            items = map(str, self.values)
        return f"array<{self.element_type}: {', '.join(items)}>"


HEX_ELEMENTS_LIMIT = 100
"""MLIR prints a dense literal of more elements than this, not a splat, as a hex blob."""


@dataclass(frozen=True, slots=True)
class DenseElementsAttr(Attribute):
    """`dense<...> : tensor<...>`: `body` is the canonical text between `dense<` and `>`.

    The parser canonicalises numbers as MLIR prints them (`0.0` → `0.000000e+00`, an all-equal
    list → a splat) and keeps hex blobs verbatim; the passes only copy the value.
    """

    body: str
    type: Type

    def __str__(self) -> str:
        return f"dense<{self.body}> : {self.type}"

    @classmethod
    def of_ints(cls, values: list[int], typ: RankedTensorType) -> DenseElementsAttr:
        """Integers (row-major, as many as `typ` holds) in MLIR's print: one splat when all are
        equal, a hex blob of each element's little-endian bytes above HEX_ELEMENTS_LIMIT
        elements, else a list nested as the shape."""
        if values and all(v == values[0] for v in values):
            return cls(str(values[0]), typ)
        if len(values) > HEX_ELEMENTS_LIMIT:
            size = -(-typ.element_type.width // 8)
            mask = (1 << 8 * size) - 1
            blob = b"".join((v & mask).to_bytes(size, "little") for v in values)
            return cls('"0x' + blob.hex().upper() + '"', typ)
        items = list(map(str, values))
        for d in reversed(typ.shape[1:]):
            items = ["[" + ", ".join(items[i:i + d]) + "]" for i in range(0, len(items), d)]
        return cls("[" + ", ".join(items) + "]", typ)

    def to_numpy(self):
        """The value as a read-only numpy array (ml_dtypes for bf16, f8, int4; decoded once)."""
        # numpy only when values are read
        return load("sdy_passes.element_types").dense_to_numpy(self.body, self.type)


@dataclass(frozen=True, slots=True)
class OpaqueAttr(Attribute):
    """Any other attribute, kept verbatim: `#stablehlo<comparison_direction LT>`, ..."""

    text: str

    def __str__(self) -> str:
        return self.text


def factor_name(i: int) -> str:
    """Shardy's name of factor `i`: `i`..`z`, then `z_1`, `z_2`, ..."""
    return chr(ord("i") + i) if i < 18 else f"z_{i - 17}"


_factor_name = factor_name


@dataclass(frozen=True, slots=True)
class OpShardingRule(Attribute):
    """`#sdy.op_sharding_rule<([i, j], [j, k])->([i, k]) {i=8, j=4, k=2} reduction={j}>`.

    Each mapping is one tuple per tensor, one tuple of factor indices per dim.
    """

    operand_mappings: tuple[tuple[tuple[int, ...], ...], ...]
    result_mappings: tuple[tuple[tuple[int, ...], ...], ...]
    factor_sizes: tuple[int, ...]
    reduction_factors: tuple[int, ...] = ()
    need_replication_factors: tuple[int, ...] = ()
    permutation_factors: tuple[int, ...] = ()
    blocked_propagation_factors: tuple[int, ...] = ()
    is_custom_rule: bool = False
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)
    __hash__ = kept_hash  # (a dict and cache key in every pass)
    __getstate__ = state_without_hash

    @classmethod
    def identity(cls, shape: tuple[int, ...], num_operands: int = 1) -> OpShardingRule:
        """The rule of an element-wise op on `shape`: `([i, j])->([i, j]) {i=8, j=8}`."""
        dims = tuple((i,) for i in range(len(shape)))
        return cls(tuple(dims for _ in range(num_operands)), (dims,), tuple(shape))

    def body(self) -> str:
        def tensors(mappings):
            return ", ".join(
                "[" + ", ".join("".join(_factor_name(f) for f in dim) or "" for dim in t) + "]"
                for t in mappings)
        text = f"({tensors(self.operand_mappings)})->({tensors(self.result_mappings)})"
        if self.factor_sizes:  # a rule without factors (rank 0) prints no sizes: `([])->([])`
            text += " {" + ", ".join(f"{_factor_name(i)}={s}" for i, s in enumerate(self.factor_sizes)) + "}"
        for key, factors in (("reduction", self.reduction_factors),
                             ("need_replication", self.need_replication_factors),
                             ("permutation", self.permutation_factors),
                             ("blocked_propagation", self.blocked_propagation_factors)):
            if factors:
                text += f" {key}={{{', '.join(map(_factor_name, factors))}}}"
        if self.is_custom_rule:
            text += ", custom"
        return text

    def __str__(self) -> str:
        return f"#sdy.op_sharding_rule<{self.body()}>"


# --------------------------------------------------------------------------------------------
# Locations
# --------------------------------------------------------------------------------------------

class _Loc(Attribute):
    """A location: `body()` is the text inside `loc(...)`; `ref` (a location -> alias name or
    None) gives the aliases of nested locations."""

    __slots__ = ()

    def __str__(self) -> str:
        return f"loc({self.body()})"


@dataclass(frozen=True, slots=True)
class UnknownLoc(_Loc):
    def body(self, ref=None) -> str:
        return "unknown"


@dataclass(frozen=True, slots=True)
class FileLineColLoc(_Loc):
    """`loc("file":line:col)`, or MLIR's ranges `"file":line:col to :end_col` (`end_line`
    None) and `to end_line:end_col`, or `"file":line` (`line_only`, col 0). As in MLIR, the
    numbers written make the location: `"f":1:2 to 1:2` is not `"f":1:2` though both print so.
    The parser gives every op one for its position."""

    filename: str
    line: int
    col: int
    end_line: int | None = None
    end_col: int | None = None
    line_only: bool = False

    def body(self, ref=None) -> str:
        text = f"{escape_string(self.filename)}:{self.line}:{self.col}"
        end_line = self.line if self.end_line is None else self.end_line
        end_col = self.col if self.end_col is None else self.end_col
        if (end_line, end_col) == (self.line, self.col):
            return text
        return text + (f" to :{end_col}" if end_line == self.line else f" to {end_line}:{end_col}")


@dataclass(frozen=True, slots=True)
class NameLoc(_Loc):
    """`loc("name")` or `loc("name"(child))`."""

    name: str
    child: Location = UnknownLoc()

    def body(self, ref=None) -> str:
        if isinstance(self.child, UnknownLoc):
            return escape_string(self.name)
        return f"{escape_string(self.name)}({_nested_loc(self.child, ref)})"


@dataclass(frozen=True, slots=True)
class CallSiteLoc(_Loc):
    """`loc(callsite(callee at caller))`."""

    callee: Location
    caller: Location

    def body(self, ref=None) -> str:
        return f"callsite({_nested_loc(self.callee, ref)} at {_nested_loc(self.caller, ref)})"


@dataclass(frozen=True, slots=True)
class FusedLoc(_Loc):
    """`loc(fused[a, b])` or `loc(fused<metadata>[a, b])`."""

    locations: tuple[Location, ...]
    metadata: Attribute | None = None

    def body(self, ref=None) -> str:
        meta = "" if self.metadata is None else f"<{self.metadata}>"
        return f"fused{meta}[{', '.join(_nested_loc(loc, ref) for loc in self.locations)}]"


Location = Union[UnknownLoc, FileLineColLoc, NameLoc, CallSiteLoc, FusedLoc]


def fused_loc(locations, metadata: Attribute | None = None) -> Location:
    """MLIR's `FusedLoc::get`: nested fused locations with the same metadata are flattened,
    unknown and repeated ones dropped; none left gives `unknown` (`fused<m>[unknown]` with
    metadata), one without metadata is itself."""
    flat: dict[Location, None] = {}
    for loc in expect(locations, (tuple, list), "a sequence of Locations", "fused_loc"):
        expect(loc, (Location,), "a sequence of Locations", "fused_loc")
        if isinstance(loc, FusedLoc) and loc.metadata == metadata:
            flat.update(dict.fromkeys(loc.locations))
        elif not isinstance(loc, UnknownLoc):
            flat[loc] = None
    if not flat:
        return UnknownLoc() if metadata is None else FusedLoc((UnknownLoc(),), metadata)
    if len(flat) == 1 and metadata is None:
        return next(iter(flat))
    return FusedLoc(tuple(flat), metadata)


def _nested_loc(loc: Location, ref) -> str:
    """A location inside another: its alias when `ref` (MLIR's printer with debug info) gives
    one, else its body."""
    return (ref and ref(loc)) or loc.body(ref)


def loc_children(loc: Location) -> tuple[Location, ...]:
    """The locations MLIR's alias walk visits inside `loc`, in its order."""
    if isinstance(loc, NameLoc):
        return () if isinstance(loc.child, UnknownLoc) else (loc.child,)
    if isinstance(loc, CallSiteLoc):
        return (loc.callee, loc.caller)
    if isinstance(loc, FusedLoc):
        return loc.locations
    return ()
