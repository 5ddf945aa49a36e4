"""Exceptions of the `sdy_passes` package: one root, `SdyError`, a `ValueError`."""


class SdyError(ValueError):
    """Any problem reading, verifying or transforming a module."""


class IRParseError(SdyError):
    """MLIR text that cannot be read; the message has line:col, the line and a caret."""


class VerificationError(SdyError):
    """A module that fails verification; the message carries the op's location."""


class PassFailedError(SdyError):
    """A pass reported an error (Shardy's message, at the op's location)."""
