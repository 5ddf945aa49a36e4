"""The array backend of the simulation, chosen in one place (xarray's ChunkManager is the model).

A backend holds every device's buffer of a `ShardedArray` (its device array, `(pieces...,
local...)`) and runs the runtime's operations on it: `device_array` (shard), `global_array`
(unshard), `run` (the moves of a plan, `_moves.Moves`), `reduce` (all-reduce), `relabel`
(other leading dims), `as_input`, `owns`, and says whether a plan's moves may run as one
(`fuses_moves`). `choose` picks one for new shards (`backend=` or the input's type); `of` finds
the one that holds existing shards. Nothing else asks numpy-or-dask.
"""

from __future__ import annotations

from ._dask import DaskBackend
from ._numpy import NumpyBackend
from .errors import ShardingError, shown

__all__ = ["BACKENDS", "choose", "of"]

BACKENDS = {"numpy": NumpyBackend(), "dask": DaskBackend()}


def of(data):
    """The backend holding the device array `data`."""
    dask = BACKENDS["dask"]
    return dask if dask.owns(data) else BACKENDS["numpy"]


def choose(backend: str | None, array):
    """The backend `shard` uses: `backend` by name, else the input's (a dask array, or a
    dask-backed DataArray, stays lazy)."""
    if backend is None:
        return of(array.data if type(array).__name__ == "DataArray" else array)
    if not isinstance(backend, str) or backend not in BACKENDS:  # (a dict refuses unhashable keys)
        raise ShardingError(f"unknown backend={shown(backend)}: expected one of {', '.join(map(repr, BACKENDS))}")
    if backend == "dask":
        BACKENDS["dask"].require()
    return BACKENDS[backend]
