"""`sdy-remove-sub-axes-in-input-output-shardings`: in the main func's argument and result
shardings every open dim is cut before its first sub-axis (Shardy's
`export/remove_sub_axes_in_input_output_shardings.cc`). The main func is the module's only
func, else `@main`; jaxlib aborts on a module with neither, this pass fails at the first func."""

from __future__ import annotations

from dataclasses import replace

from sharding import TensorSharding

from sdy_passes.common._value_shardings import (
    func_arg_sharding, func_result_sharding, set_func_attr_sharding,
)
from sdy_passes.imports.propagate_sharding_from_func_to_call import main_func
from sdy_passes.ir import Module
from sdy_passes.pass_manager import Pass

__all__ = ["RemoveSubAxesInInputOutputShardingsPass"]


def _without_sub_axes(sharding: TensorSharding) -> TensorSharding:
    dims = []
    for dim in sharding.dim_shardings:
        if not dim.is_closed:
            cut = next((i for i, a in enumerate(dim.axes) if a.is_sub_axis), len(dim.axes))
            dim = replace(dim, axes=dim.axes[:cut])
        dims.append(dim)
    return replace(sharding, dim_shardings=tuple(dims))


class RemoveSubAxesInInputOutputShardingsPass(Pass):
    name = "sdy-remove-sub-axes-in-input-output-shardings"
    summary = "Cuts open dims of the main func's in/out shardings before their first sub-axis."

    def run(self, module: Module) -> None:
        func = main_func(module)
        ftype = func.properties["function_type"].type
        for key, get, count in (("arg_attrs", func_arg_sharding, len(ftype.inputs)),
                                ("res_attrs", func_result_sharding, len(ftype.results))):
            for i in range(count):
                sharding = get(func, i)
                if sharding is not None:
                    set_func_attr_sharding(func, key, i, count, _without_sub_axes(sharding))
