"""Shardy's sharding representation for numpy users: parse, print and verify as Shardy does.

>>> import sharding
>>> s = sharding.TensorSharding.parse('#sdy.sharding<@m, [{"x"}, {"y", ?}p1]>')
>>> mesh = sharding.Mesh.parse('<["x"=2, "y"=4]>')
>>> sharding.verify(s, mesh=mesh, shape=(8, 8))
>>> s.local_shape((8, 8), mesh)
(4, 2)
>>> str(s)
'#sdy.sharding<@m, [{"x"}, {"y", ?}p1]>'
"""

from . import syntax  # noqa: F401 - the parsers `Mesh.parse` and `TensorSharding.parse` call (axes.PARSERS), loaded now
from ._imports import load
from .axes import AxisRef, SubAxisInfo
from .errors import InvalidMeshError, InvalidShardingError, ShardingError, ShardingParseError
from .mesh import Mesh, MeshAxis, MeshTable
from .tensor_sharding import DimensionSharding, ManualAxes, TensorSharding, TensorShardingPerValue
from .verify import verify, verify_mesh  # after the submodule import, so `sharding.verify` is the function

__all__ = [
    "AxisRef", "SubAxisInfo", "Mesh", "MeshAxis", "MeshTable", "DimensionSharding",
    "TensorSharding", "TensorShardingPerValue", "ManualAxes", "ShardingError",
    "ShardingParseError", "InvalidMeshError", "InvalidShardingError", "verify", "verify_mesh",
    "DeviceMesh", "ShardedArray", "equivalent", "HloSharding", "to_hlo_sharding", "from_hlo_sharding",
    "to_named_sharding", "from_named_sharding", "visualize", "ShardingPicture", "reshard_plan", "ReshardPlan", "ReshardStep",
]

# Simulation (xarray), conversions and pictures (numpy) load on first use, through the fork-safe
# `_imports.load` (a child forked while another thread loads them would otherwise hang).
_LAZY = {"DeviceMesh": "simulate", "ShardedArray": "simulate", "equivalent": "simulate",
         "HloSharding": "hlo", "to_hlo_sharding": "hlo", "from_hlo_sharding": "hlo",
         "to_named_sharding": "hlo", "from_named_sharding": "hlo", "visualize": "visualization", "ShardingPicture": "visualization",
         "reshard_plan": "reshard", "ReshardPlan": "reshard", "ReshardStep": "reshard"}


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def __getattr__(name):
    if name in _LAZY:
        return getattr(load(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(name)
