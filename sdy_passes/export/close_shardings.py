"""`sdy-close-shardings`: every sharding of the module becomes closed and loses its replicated
axes; axes, unreduced axes and priorities stay (Shardy's `export/close_shardings.cc`,
`TensorShardingAttr::getClosedLike` over the sharding walker)."""

from __future__ import annotations

from dataclasses import replace

from sharding import TensorSharding

from sdy_passes.common._value_shardings import transform_shardings
from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass

__all__ = ["CloseShardingsPass", "closed_like"]


def closed_like(sharding: TensorSharding) -> TensorSharding:
    dims = tuple(d if d.is_closed else replace(d, is_closed=True) for d in sharding.dim_shardings)
    return replace(sharding, dim_shardings=dims, replicated_axes=())


class CloseShardingsPass(Pass):
    name = "sdy-close-shardings"
    summary = "Closes every sharding and drops its replicated axes."

    def run(self, module: Module) -> None:
        transform_shardings(module, closed_like)
