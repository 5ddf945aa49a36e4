"""Exceptions of the `sharding` package (one root, `ShardingError`, a `ValueError`) and the readers
of Python values that raise them (`as_int`, `as_shape`)."""

import operator


class ShardingError(ValueError):
    """Any problem with a mesh or a sharding."""


class ShardingParseError(ShardingError):
    """Text that does not follow Shardy's grammar; shows position and a caret."""

    def __init__(self, message: str, text: str, pos: int):
        self.text = text
        self.pos = pos
        self.message = message
        super().__init__(f"{message} at position {pos}\n  {text}\n  {' ' * pos}^")


class InvalidMeshError(ShardingError):
    """A mesh that Shardy's verifier rejects (message text is Shardy's)."""


class InvalidShardingError(ShardingError):
    """A sharding that Shardy's verifier rejects (message text is Shardy's)."""


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int_text(n: int) -> str:
    """`n` for a message: as it is up to 40 digits, past that its size (Python's `str` refuses
    ints of more than 4300 digits, and nobody reads them)."""
    if -(10**40) < n < 10**40:
        return str(n)
    return f"{'-' if n < 0 else ''}a number of about {int(abs(n).bit_length() * 0.30103) + 1} digits"


def as_int(value, what: str, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    """`value` as a Python int in `[lo, hi]` (numpy integers too; int64 unless told), or a
    `ShardingError` naming `what`. The one reader of integers given as Python values; text goes
    through `_mlir_lexer.to_int`."""
    if isinstance(value, bool):
        raise ShardingError(f"expected an int {what}, got: {shown(value)}")
    try:
        n = operator.index(value)
    except TypeError:
        raise ShardingError(f"expected an int {what}, got: {shown(value)}") from None
    if not lo <= n <= hi:
        if (lo, hi) == (INT64_MIN, INT64_MAX):
            expected = f"{what} that fits in int64"
        elif (lo, hi) == (0, INT64_MAX):
            expected = f"a non-negative int {what} (int64)"
        elif hi == INT64_MAX:
            expected = f"{what} of at least {lo} (int64)"
        else:
            expected = f"{what} from {lo} to {hi}"
        raise ShardingError(f"expected {expected}, got: {int_text(n)}")
    return n


def as_shape(shape, what: str = "shape") -> tuple[int, ...]:
    """A tensor shape: a sequence of non-negative int64 dims (numpy integers too)."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise ShardingError(f"expected a {what} (a sequence of ints), got: {shown(shape)}")
    return tuple(as_int(d, f"{what} dim {i}", 0) for i, d in enumerate(as_tuple(shape, f"{what} dims")))


def shown(value) -> str:
    """`repr(value)` for a message: ints through `int_text`, anything long cut to 80 characters."""
    if isinstance(value, int) and not isinstance(value, bool):
        return int_text(value)
    try:
        text = repr(value)
    except ValueError:  # (a container of huge ints)
        return f"a {type(value).__name__}"
    return text if len(text) <= 80 else text[:60] + "..." + text[-17:]


def is_one_of(value, options: tuple[str, ...]) -> bool:
    """Whether `value` is one of the str `options` (an array never is: `in` would compare it
    elementwise and fail on its truth value)."""
    return isinstance(value, str) and value in options


def as_flag(value, what: str, allow_none: bool = False) -> bool | None:
    """A bool argument (a numpy bool too; `None` where allowed), or a `ShardingError`."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool):
        return value
    if getattr(value, "shape", None) == () and getattr(getattr(value, "dtype", None), "kind", None) == "b":
        return bool(value)
    raise ShardingError(f"expected a bool {what}, got: {shown(value)}")


def as_tuple(value, what: str) -> tuple:
    """A sequence argument as a tuple (a str, bytes or non-iterable is refused, naming `what`)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ShardingError(f"expected a sequence of {what}, got: {shown(value)}")
    try:
        return tuple(value)
    except Exception as e:  # (a 0-d array, an iterator that fails: its own error, reported)
        raise ShardingError(f"expected a sequence of {what}, got: {shown(value)} ({type(e).__name__}: "
                            f"{shown(str(e))[1:-1]})") from None
