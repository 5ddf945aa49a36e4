"""`sdy-update-non-divisible-input-output-shardings`: func argument and result shardings, call
result shardings and manual computation in/out shardings that do not divide their dim evenly
are cut back until they do (Shardy's
`export/update_non_divisible_input_output_shardings.cc`, spec/export.md §2.5).

A dim whose size the product of its axis sizes divides stays as it is. Otherwise its axes are
taken in order while they divide the rest of the dim (`gcd`): a whole axis, or the part of one
that divides (a sub-axis), after which nothing more is taken; the rebuilt dim keeps
open/closed but not its priority.
"""

from __future__ import annotations

from dataclasses import replace
from math import gcd

from sharding import AxisRef, DimensionSharding, Mesh, TensorSharding, TensorShardingPerValue

from sdy_passes.common._value_shardings import (
    SHARDING, _add_manual_axes, erase_manual_axes, mesh_of, func_arg_sharding, func_result_sharding,
    is_static_shaped, op_shardings, set_func_attr_sharding,
)
from sdy_passes.dialects._base import has_trait
from sdy_passes.ir import Module, Operation
from sdy_passes.pass_manager import Pass

__all__ = ["UpdateNonDivisibleInputOutputShardingsPass", "evenly_sharded"]


def _even_dim(dim: DimensionSharding, size: int, mesh: Mesh) -> DimensionSharding:
    if size % dim.sharded_size(mesh) == 0:
        return dim
    rest, axes = size, []
    for axis in dim.axes:
        axis_size = axis.size(mesh)
        g = gcd(axis_size, rest)
        if g == 1:
            break
        if g == axis_size:
            axes.append(axis)
            rest //= g
        else:
            axes.append(AxisRef.sub(axis.name, axis.pre_size, g))
            break
    return DimensionSharding(tuple(axes), dim.is_closed)


def evenly_sharded(sharding: TensorSharding, type_, mesh: Mesh) -> TensorSharding:
    """`getEvenlySharded`: `sharding` with every dim of `type_` (static shape) divisible."""
    dims = tuple(_even_dim(d, n, mesh) for d, n in zip(sharding.dim_shardings, type_.shape))
    return replace(sharding, dim_shardings=dims)


class UpdateNonDivisibleInputOutputShardingsPass(Pass):
    name = "sdy-update-non-divisible-input-output-shardings"
    summary = "Makes func, call and manual computation in/out shardings divide their dims evenly."

    def run(self, module: Module) -> None:
        def even(sharding, type_):
            if sharding is None or not is_static_shaped(type_):
                return sharding
            return evenly_sharded(sharding, type_, mesh_of(sharding, module.op))

        for func in module.funcs():
            ftype = func.properties["function_type"].type
            for key, get, types in (("arg_attrs", func_arg_sharding, ftype.inputs),
                                    ("res_attrs", func_result_sharding, ftype.results)):
                for i, t in enumerate(types):
                    old = get(func, i)
                    new = even(old, t)
                    if new is not None:
                        set_func_attr_sharding(func, key, i, len(types), new)
        for op in module.walk():
            if op.name == "func.call" and op_shardings(op):
                op.attributes[SHARDING] = TensorShardingPerValue(tuple(
                    even(s, r.type) for s, r in zip(op_shardings(op), op.results)))
        for op in module.walk():
            if has_trait(op, "KeepsEdgeOwnerShardingsDivisible"):
                self._data_flow_op(op, even)

    @staticmethod
    def _data_flow_op(op: Operation, even) -> None:
        # only sdy.manual_computation asks: its body arguments see the in-shardings without the
        # manual axes, on their local types
        ins = op.properties["in_shardings"].shardings
        if ins:
            manual = op.properties["manual_axes"].names
            args = op.regions[0].block.arguments
            op.properties["in_shardings"] = TensorShardingPerValue(tuple(
                _add_manual_axes(s, even(erase_manual_axes(s, manual), a.type), manual)
                for s, a in zip(ins, args)))
        outs = op.properties["out_shardings"].shardings
        if outs:
            op.properties["out_shardings"] = TensorShardingPerValue(tuple(
                even(s, r.type) for s, r in zip(outs, op.results)))
