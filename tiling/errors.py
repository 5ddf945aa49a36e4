"""Exceptions of the `tiling` package: one root, `LayoutError`, a `ValueError`."""


class LayoutError(ValueError):
    """Any problem with a layout, a shape, or a buffer given to `tiling`."""


class LayoutParseError(LayoutError):
    """Layout or shape text that does not follow XLA's grammar.

    The message ends with the text and a caret under the offending position.
    """

    def __init__(self, message: str, text: str, pos: int):
        self.text = text
        self.pos = pos
        super().__init__(f"{message} at position {pos}\n  {text}\n  {' ' * pos}^")


class UnsupportedLayoutError(LayoutError):
    """A layout XLA accepts that this library deliberately does not handle."""
