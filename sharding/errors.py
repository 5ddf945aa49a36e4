"""Exceptions of the `sharding` package: one root, `ShardingError`, a `ValueError`."""


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
