"""Reading the StableHLO attributes the rules need, from their MLIR text.

The rules read attributes through their text (`str(attr)`), so they work the same whether the
IR holds an attribute as a typed value or verbatim (`OpaqueAttr`).
"""

from __future__ import annotations

import re

from sdy_passes.attributes import BoolAttr, DenseArrayAttr, IntegerAttr, StringAttr
from sdy_passes.errors import PassFailedError

_INTS = re.compile(r"-?\d+")


def attr(op, name: str):
    found = op.properties.get(name)
    return found if found is not None else op.attributes.get(name)


def require(op, name: str):
    found = attr(op, name)
    if found is None:
        raise PassFailedError(f"'{op.name}' op requires attribute '{name}'", op.location)
    return found


def int_attr(op, name: str, default: int | None = None) -> int:
    found = attr(op, name) if default is not None else require(op, name)
    if found is None:
        return default
    if isinstance(found, IntegerAttr):
        return found.value
    return int(_INTS.search(str(found)).group(0))


def ints(op, name: str, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """`array<i64: 1, 2>` or `dense<[1, 2]> : tensor<2xi64>` as a tuple."""
    found = attr(op, name) if default is not None else require(op, name)
    if found is None:
        return default
    if isinstance(found, DenseArrayAttr):
        return tuple(found.values)
    text = str(found)
    if text.startswith("dense<"):
        text = text[:text.rindex(":")]
    elif text.startswith("array<"):
        text = text.partition(":")[2]
    return tuple(int(x) for x in _INTS.findall(text))


def bool_attr(op, name: str) -> bool:
    found = attr(op, name)
    return found.value if isinstance(found, BoolAttr) else str(found) == "true"


def string_attr(op, name: str) -> str:
    found = attr(op, name)
    return found.value if isinstance(found, StringAttr) else ""


def _typed_fields(found) -> dict | None:
    """The fields of a typed dimension-numbers value (`sdy_passes.dialects`), else None."""
    names = getattr(found, "__dataclass_fields__", None)
    return None if names is None else {k: getattr(found, k) for k in names}


def fields(op, name: str) -> dict[str, tuple[int, ...] | int]:
    """`#stablehlo.dot<lhs_batching_dimensions = [0], ...>` and friends: field → value."""
    found = require(op, name)
    typed = _typed_fields(found)
    if typed is not None:
        return typed
    text = str(found)
    body = text[text.index("<") + 1:text.rindex(">")]
    out: dict[str, tuple[int, ...] | int] = {}
    for key, value in re.findall(r"(\w+)\s*=\s*(\[[^\]]*\]|-?\d+)", body):
        out[key] = tuple(map(int, _INTS.findall(value))) if value.startswith("[") else int(value)
    return out


def conv_dimension_numbers(op) -> dict[str, tuple[int, ...] | int]:
    """`#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>` (or its `raw` form) as
    ConvDimensionNumbers fields."""
    text = str(require(op, "dimension_numbers"))
    body = text[text.index("<") + 1:text.rindex(">")].strip()
    if body.startswith("raw"):
        return fields(op, "dimension_numbers")
    groups = re.findall(r"\[([^\]]*)\]", body)
    if len(groups) != 3:
        raise PassFailedError(f"cannot read convolution dimension numbers {text}", op.location)
    lhs, rhs, out = ([s.strip() for s in g.split(",")] for g in groups)

    def spatial(dims):
        numbered = sorted((int(s), i) for i, s in enumerate(dims) if s.isdigit())
        return tuple(i for _, i in numbered)

    return {
        "input_batch_dimension": lhs.index("b"), "input_feature_dimension": lhs.index("f"),
        "input_spatial_dimensions": spatial(lhs),
        "kernel_input_feature_dimension": rhs.index("i"),
        "kernel_output_feature_dimension": rhs.index("o"),
        "kernel_spatial_dimensions": spatial(rhs),
        "output_batch_dimension": out.index("b"), "output_feature_dimension": out.index("f"),
        "output_spatial_dimensions": spatial(out),
    }


def enum_value(op, name: str) -> str:
    """`#stablehlo<transpose TRANSPOSE>` → `TRANSPOSE`."""
    found = attr(op, name)
    if found is None:
        return ""
    value = getattr(found, "value", None)
    return value if isinstance(value, str) else str(found).rstrip(">").split()[-1]
