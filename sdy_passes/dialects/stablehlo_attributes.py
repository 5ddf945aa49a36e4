"""Typed StableHLO attributes: frozen values that print exactly as StableHLO does.

Each class has `parse_body(p)` reading the text after its `#stablehlo.x` / `#stablehlo<kind`
prefix with the MLIR parser `p`, and `__str__` giving the generic text back. `ATTRIBUTES` maps
the prefix to the class (the parser's table for dialect attributes).
"""

from __future__ import annotations

from dataclasses import dataclass

from sdy_passes.attributes import Attribute

__all__ = ["EnumAttr", "DotDimensionNumbers", "GatherDimensionNumbers",
           "ScatterDimensionNumbers", "ConvDimensionNumbers", "ATTRIBUTES", "parse_int_list"]

ENUMS: dict[str, tuple[str, ...]] = {
    "comparison_direction": ("EQ", "NE", "GE", "GT", "LE", "LT"),
    "comparison_type": ("NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"),
    "precision": ("DEFAULT", "HIGH", "HIGHEST"),
    "fft_type": ("FFT", "IFFT", "RFFT", "IRFFT"),
    "rng_algorithm": ("DEFAULT", "THREE_FRY", "PHILOX"),
    "rng_distribution": ("UNIFORM", "NORMAL"),
    "transpose": ("TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"),
}


def parse_int_list(p) -> tuple[int, ...]:
    """`[1, 2]` (possibly empty)."""
    p.expect("[")
    vals: list[int] = []
    if not p.parse_optional("]"):
        while True:
            vals.append(p.parse_int())
            if not p.parse_optional(","):
                break
        p.expect("]", "',' or ']'")
    return tuple(vals)


def _ints(vals) -> str:
    return "[" + ", ".join(map(str, vals)) + "]"


@dataclass(frozen=True, slots=True)
class EnumAttr(Attribute):
    """`#stablehlo<comparison_direction LT>`: `kind` is one of `ENUMS`, `value` its case."""

    kind: str
    value: str

    @classmethod
    def parse_value(cls, p, kind: str) -> EnumAttr:
        """The bare case (`LT`) as pretty forms write it."""
        pos = p.skip()
        word = p.parse_bare_id(f"{kind.replace('_', ' ')}")
        if word not in ENUMS[kind]:
            raise p.error(f"expected one of [{', '.join(ENUMS[kind])}] for {kind.replace('_', ' ')}, "
                          f"got: {word}", pos)
        return cls(kind, word)

    def __str__(self) -> str:
        return f"#stablehlo<{self.kind} {self.value}>"


def _parse_enum(kind):
    def parse(p):
        value = EnumAttr.parse_value(p, kind)
        p.expect(">")
        return value
    return parse


def _parse_struct(p, name: str, fields: dict[str, bool]) -> dict:
    """`<a = [..], b = 3>`; `fields` maps each known key to whether it is a list."""
    out: dict = {}
    if p.parse_optional(">"):
        return out
    while True:
        pos = p.skip()
        key = p.parse_bare_id(f"{name} field")
        if key not in fields:
            raise p.error(f"unknown {name} field '{key}'", pos)
        if key in out:
            raise p.error(f"duplicated `{key}` field", pos)
        p.expect("=")
        out[key] = parse_int_list(p) if fields[key] else p.parse_int()
        if not p.parse_optional(","):
            break
    p.expect(">", "',' or '>'")
    return out


def _print_struct(name: str, fields) -> str:
    parts = []
    for key, value in fields:
        if isinstance(value, tuple):
            if value:
                parts.append(f"{key} = {_ints(value)}")
        elif value or key != "index_vector_dim":  # StableHLO omits the default 0
            parts.append(f"{key} = {value}")
    return f"#stablehlo.{name}<{', '.join(parts)}>"


@dataclass(frozen=True, slots=True)
class DotDimensionNumbers(Attribute):
    lhs_batching_dimensions: tuple[int, ...] = ()
    rhs_batching_dimensions: tuple[int, ...] = ()
    lhs_contracting_dimensions: tuple[int, ...] = ()
    rhs_contracting_dimensions: tuple[int, ...] = ()

    @classmethod
    def parse_body(cls, p) -> DotDimensionNumbers:
        return cls(**_parse_struct(p, "dot", dict.fromkeys(cls.__slots__, True)))

    def __str__(self) -> str:
        return _print_struct("dot", ((k, getattr(self, k)) for k in self.__slots__))


@dataclass(frozen=True, slots=True)
class GatherDimensionNumbers(Attribute):
    offset_dims: tuple[int, ...] = ()
    collapsed_slice_dims: tuple[int, ...] = ()
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()
    start_index_map: tuple[int, ...] = ()
    index_vector_dim: int = 0

    @classmethod
    def parse_body(cls, p) -> GatherDimensionNumbers:
        fields = dict.fromkeys(cls.__slots__, True) | {"index_vector_dim": False}
        return cls(**_parse_struct(p, "gather", fields))

    def __str__(self) -> str:
        return _print_struct("gather", ((k, getattr(self, k)) for k in self.__slots__))


@dataclass(frozen=True, slots=True)
class ScatterDimensionNumbers(Attribute):
    update_window_dims: tuple[int, ...] = ()
    inserted_window_dims: tuple[int, ...] = ()
    input_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()
    scatter_dims_to_operand_dims: tuple[int, ...] = ()
    index_vector_dim: int = 0

    @classmethod
    def parse_body(cls, p) -> ScatterDimensionNumbers:
        fields = dict.fromkeys(cls.__slots__, True) | {"index_vector_dim": False}
        return cls(**_parse_struct(p, "scatter", fields))

    def __str__(self) -> str:
        return _print_struct("scatter", ((k, getattr(self, k)) for k in self.__slots__))


@dataclass(frozen=True, slots=True)
class ConvDimensionNumbers(Attribute):
    """`[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`: batch/feature dims and spatial dims in order."""

    input_batch_dimension: int
    input_feature_dimension: int
    input_spatial_dimensions: tuple[int, ...]
    kernel_input_feature_dimension: int
    kernel_output_feature_dimension: int
    kernel_spatial_dimensions: tuple[int, ...]
    output_batch_dimension: int
    output_feature_dimension: int
    output_spatial_dimensions: tuple[int, ...]

    @classmethod
    def parse_dims(cls, p) -> ConvDimensionNumbers:
        """The pretty form (`dim_numbers = ` already read)."""
        lhs = _parse_conv_layout(p, "bf")
        p.expect_keyword("x")
        rhs = _parse_conv_layout(p, "io")
        p.expect("->")
        out = _parse_conv_layout(p, "bf")
        return cls(*lhs, *rhs, *out)

    @classmethod
    def parse_body(cls, p) -> ConvDimensionNumbers:
        value = cls.parse_dims(p)
        p.expect(">")
        return value

    def body(self) -> str:
        def layout(a, b, spatial, letters):
            dims = [""] * (len(spatial) + 2)
            dims[a], dims[b] = letters
            for i, d in enumerate(spatial):
                dims[d] = str(i)
            return "[" + ", ".join(dims) + "]"
        return (layout(self.input_batch_dimension, self.input_feature_dimension,
                       self.input_spatial_dimensions, "bf") + "x"
                + layout(self.kernel_input_feature_dimension, self.kernel_output_feature_dimension,
                         self.kernel_spatial_dimensions, "io") + "->"
                + layout(self.output_batch_dimension, self.output_feature_dimension,
                         self.output_spatial_dimensions, "bf"))

    def __str__(self) -> str:
        return f"#stablehlo.conv<{self.body()}>"


def _parse_conv_layout(p, letters: str):
    """`[b, 0, 1, f]` -> (position of letters[0], position of letters[1], spatial positions)."""
    start = p.skip()
    p.expect("[")
    items: list[str] = []
    while True:
        p.skip()
        word = p.parse_optional_bare_id()
        if word is None:
            word = str(p.parse_int("dimension"))
        items.append(word)
        if not p.parse_optional(","):
            break
    p.expect("]", "',' or ']'")
    spatial = {}
    for pos, item in enumerate(items):
        if item.isdigit():
            spatial[int(item)] = pos
    ok = (sorted(items.count(c) for c in letters) == [1, 1]
          and sorted(spatial) == list(range(len(items) - 2))
          and all(i in letters or i.isdigit() for i in items))
    if not ok:
        raise p.error(f"expected a dimension layout with one '{letters[0]}', one '{letters[1]}' and "
                      f"spatial dimensions 0..{len(items) - 3}, found [{', '.join(items)}]", start)
    return (items.index(letters[0]), items.index(letters[1]),
            tuple(spatial[i] for i in range(len(spatial))))


ATTRIBUTES = {
    "#stablehlo.dot<": DotDimensionNumbers.parse_body,
    "#stablehlo.gather<": GatherDimensionNumbers.parse_body,
    "#stablehlo.scatter<": ScatterDimensionNumbers.parse_body,
    "#stablehlo.conv<": ConvDimensionNumbers.parse_body,
    **{f"#stablehlo<{kind} ": _parse_enum(kind) for kind in ENUMS},
}
"""Attribute-text prefix -> parser of the rest (`p` is after the prefix)."""
