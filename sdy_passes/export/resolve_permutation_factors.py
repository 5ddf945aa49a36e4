"""`sdy-resolve-permutation-factors`: Shardy's pass that makes sharded permutation factors
(slices, pads, reverses, windows: dims whose elements move between devices) local
(`export/resolve_permutation_factors.cc`).

With `enable-halo-exchange=true`, a pad, a slice, a reverse, a reduce window or a
convolution's spatial dim whose operand and result are sharded alike (even or padded tiles,
any stride, no dilation of the input) stays sharded: `sdy-convert-global-to-local` then moves
to each device only the rows its output needs (`collective_permute`s: a neighbour's edge rows,
a reverse's mirrored tile). Every other sharded permutation factor is resolved by replication:
an operand dim it maps to is resharded to replicated before the op (an `sdy.reshard` that
`sdy-reshard-to-collectives` turns into an all-gather), the op's result dim likewise is
computed replicated and resharded back after it (an all-slice). Need-replication factors left
sharded are replicated the same way.
(Shardy's halo exchange also covers reshapes; here those replicate.)
"""

from __future__ import annotations

from dataclasses import replace

from sharding import DimensionSharding

from sdy_passes.common._value_shardings import get_sharding, set_sharding
from sdy_passes.ir import Operation
from sdy_passes.op_sharding_rules import create_op_sharding_rule
from sdy_passes.pass_manager import FUNC, Pass

__all__ = ["ResolvePermutationFactorsPass"]


def _without(s, dims):
    return replace(s, dim_shardings=tuple(DimensionSharding((), True) if d in dims else ds
                                          for d, ds in enumerate(s.dim_shardings)))


def _permutation_dims(mapping, factors) -> set:
    return {d for d, fs in enumerate(mapping) if set(fs) & factors}


class ResolvePermutationFactorsPass(Pass):
    name = "sdy-resolve-permutation-factors"
    summary = "Resolves sharded permutation factors (halo exchange or replication)."
    anchor = FUNC
    options = {"enable-halo-exchange": False}

    def run(self, func) -> None:
        for op in list(func.walk()):
            if not op.results or op.name.startswith(("sdy.", "func.")):
                continue
            rule = create_op_sharding_rule(op)
            # need-replication factors the export left sharded (a concatenate's dim after jaxlib's
            # insert-explicit-reshards, spec execute.md §2.3 `roll`) are replicated alike
            factors = set(rule.permutation_factors) | set(rule.need_replication_factors) if rule else set()
            if not factors:
                continue
            halo_in, halo_out = self._halo_dims(op) if self.options["enable-halo-exchange"] else (set(), set())
            for i, (value, mapping) in enumerate(zip(op.operands, rule.operand_mappings)):
                s = get_sharding(value)
                dims = _permutation_dims(mapping, factors) - halo_in
                if s is None or not any(s.dim_shardings[d].axes for d in dims):
                    continue
                new = Operation.create("sdy.reshard", [value], [value.type], properties={"sharding": _without(s, dims)},
                                       location=op.location)
                new.insert_before(op)
                op.set_operand(i, new.result)
            for r, mapping in zip(op.results, rule.result_mappings):
                s = get_sharding(r)
                dims = _permutation_dims(mapping, factors) - halo_out
                if s is None or not any(s.dim_shardings[d].axes for d in dims):
                    continue
                set_sharding(r, _without(s, dims))
                back = Operation.create("sdy.reshard", [r], [r.type], properties={"sharding": s}, location=op.location)
                back.insert_after(op)
                r.replace_uses_where(back.result, lambda u: u.operation is not back)

    def _halo_dims(self, op) -> tuple[set, set]:
        """`(data operand dims, result dims)` of a pad, a slice (any stride), a reverse, a reduce
        window (without dilation) or a convolution's spatial dims (whole kernel, no input
        dilation) that stay sharded: the operand's and the result's on the same axes (even or
        padded tiles); `sdy-convert-global-to-local` brings each device the rows it needs from
        their holders (a halo exchange; a reverse's mirrored tile)."""
        if op.name not in ("stablehlo.pad", "stablehlo.slice", "stablehlo.reverse", "stablehlo.reduce_window",
                           "stablehlo.convolution"):
            return set(), set()
        s_in, s_out = get_sharding(op.operands[0]), get_sharding(op.result)
        if s_in is None or s_out is None:
            return set(), set()
        if op.name == "stablehlo.convolution":
            dn = op.properties["dimension_numbers"]
            kernel = get_sharding(op.operands[1])
            lhs_dilation = op.properties.get("lhs_dilation")
            pairs = [(d, od) for k, (d, od) in enumerate(zip(dn.input_spatial_dimensions, dn.output_spatial_dimensions))
                     if (lhs_dilation is None or lhs_dilation.values[k] == 1)
                     and (kernel is None or not kernel.dim_shardings[dn.kernel_spatial_dimensions[k]].axes)]
        else:
            dilated = {d for key in ("base_dilations", "window_dilations") if key in op.properties
                       for d, k in enumerate(op.properties[key].values) if k != 1}
            pairs = [(d, d) for d in range(len(s_in.dim_shardings)) if d not in dilated]
        kept = [(d, od) for d, od in pairs
                if s_in.dim_shardings[d].axes and s_in.dim_shardings[d].axes == s_out.dim_shardings[od].axes]
        return {d for d, _ in kept}, {od for _, od in kept}
