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

from .axes import AxisRef, SubAxisInfo
from .errors import InvalidMeshError, InvalidShardingError, ShardingError, ShardingParseError
from .mesh import Mesh, MeshAxis, MeshTable
from .tensor_sharding import DimensionSharding, ManualAxes, TensorSharding, TensorShardingPerValue

__all__ = [
    "AxisRef", "SubAxisInfo", "Mesh", "MeshAxis", "MeshTable", "DimensionSharding",
    "TensorSharding", "TensorShardingPerValue", "ManualAxes", "ShardingError",
    "ShardingParseError", "InvalidMeshError", "InvalidShardingError", "verify", "verify_mesh",
]


def __getattr__(name):
    # syntax/verify are imported lazily so the value classes load without them.
    if name in ("verify", "verify_mesh"):
        from . import verify as _verify

        return getattr(_verify, name)
    raise AttributeError(name)
