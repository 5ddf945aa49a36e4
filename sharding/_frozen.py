"""A kept hash for frozen slots dataclasses that are hashed often (shardings, meshes, rules and
types are dict and cache keys in every pass; a nested value hashes every part each time).

A class declares `_hash: int | None = field(default=None, init=False, repr=False, compare=False)`
and sets `__hash__ = kept_hash` and `__getstate__ = state_without_hash`."""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter

__all__ = ["kept_hash", "state_without_hash"]

_COMPARED: dict[type, attrgetter] = {}
"""Per class: a getter of its compared fields."""


def kept_hash(self) -> int:
    """The hash of the compared fields, made once."""
    h = self._hash
    if h is None:
        compared = _COMPARED.get(type(self))
        if compared is None:
            compared = _COMPARED[type(self)] = attrgetter(*(f.name for f in fields(self) if f.compare))
        h = hash(compared(self))
        object.__setattr__(self, "_hash", h)
    return h


def state_without_hash(self) -> list:
    """The pickled state (`dataclass(slots=True)`'s field list) without the kept hash: a
    string's hash differs from one process to another."""
    return [None if f.name == "_hash" else getattr(self, f.name) for f in fields(self)]
