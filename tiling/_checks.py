"""The one integer reader of `tiling`, and the checks text and constructors share.

Every public function reads integer arguments through `read_int` (and sequences of them through
`read_ints`), and the parser reads ASCII digits only, so text and arguments are refused for the
same reasons: `bool`, `str` (even of digits, ASCII or not), `float`, and values outside int64.
Messages print integers through `int_text`, which never fails on a huge one (Python's `str` of an
int of more than 4,300 digits raises its own ValueError).
"""

from __future__ import annotations

import operator

import numpy as np

from tiling.errors import LayoutError

COMBINE_DIMENSION = -(2**63)
"""XLA's `Tile::kCombineDimension` (INT64_MIN), printed `*`: merge with the next minor dim."""
UNBOUNDED_SIZE = -(2**63)
"""XLA's `Shape::kUnboundedSize`, the size of a `?` dimension."""
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int_text(value: int) -> str:
    """`str(value)`, or its size for an integer too long to print usefully."""
    if -10**30 < value < 10**30:
        return str(value)
    return f"{'-' if value < 0 else ''}<an integer of {value.bit_length()} bits>"


def read_int(value, what: str, low: int = INT64_MIN, high: int = INT64_MAX) -> int:
    """`value` as a Python int in [low, high], or LayoutError: Python and numpy integers (anything
    with `__index__`) only; never bool, str, float or an array."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise LayoutError(f"{what} must be an integer, found {type(value).__name__} {describe(value)}")
    try:
        number = operator.index(value)
    except TypeError:
        raise LayoutError(f"{what} must be an integer, found {type(value).__name__} "
                          f"{describe(value)}") from None
    if not low <= number <= high:
        bound = (f">= {int_text(low)}" if high == INT64_MAX
                 else f"at most {int_text(high)}" if low == INT64_MIN
                 else f"in [{int_text(low)}, {int_text(high)}]")
        raise LayoutError(f"{what} must be {bound}, found {int_text(number)}")
    return number


def read_ints(values, what: str, low: int = INT64_MIN, high: int = INT64_MAX) -> tuple[int, ...]:
    """A sequence of integers (see `read_int`) as a tuple; a str, a mapping or a scalar is
    refused."""
    return tuple(read_int(v, f"{what} entry", low, high)
                 for v in read_sequence(values, what, "a sequence of ints"))


def read_sequence(value, what: str, kind: str = "a sequence") -> tuple:
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise LayoutError(f"{what} must be {kind}, found {describe(value)}")
    try:
        return tuple(value)
    except Exception as e:  # (an iterable that fails while iterating: its own error, reported)
        raise LayoutError(f"{what} could not be read as a sequence: {type(e).__name__}: "
                          f"{e}") from None


def describe(value) -> str:
    """`repr(value)` for a message: at most 80 characters, never failing."""
    try:
        text = repr(value)
    except Exception:  # (a repr that fails, or an int past 4,300 digits inside it)
        return f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


# Checks shared by the constructors (plain LayoutError) and the parser (with a position).
# Each returns (offending item number, message) or None.


def tile_problem(dims: tuple[int, ...]) -> tuple[int, str] | None:
    if not dims:
        return 0, "a tile needs at least one dimension, found T()"
    for i, d in enumerate(dims):
        if d == COMBINE_DIMENSION:
            continue  # (a last '*' is text XLA accepts, refused by `tile_steps`)
        if d < 0:
            return i, f"tile dimension {int_text(d)} is negative; write '*' (not -1) for a " \
                      "combined dimension"
        elif d == 0:
            return i, "tile dimension 0: tile sizes must be >= 1"
        elif d > INT64_MAX:
            return i, f"tile dimension {int_text(d)} does not fit in int64"
    return None


def minor_to_major_problem(m2m: tuple[int, ...]) -> tuple[int, str] | None:
    seen = set()
    for i, d in enumerate(m2m):
        if not 0 <= d < len(m2m):
            return i, (f"minor_to_major entry {int_text(d)} is out of range: expected a "
                       f"permutation of 0..{len(m2m) - 1}")
        if d in seen:
            return i, (f"minor_to_major entry {d} is repeated: expected a permutation of "
                       f"0..{len(m2m) - 1}")
        seen.add(d)
    return None
