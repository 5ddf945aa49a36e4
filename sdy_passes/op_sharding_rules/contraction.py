"""Contractions: dot_general (batching, lhs free, rhs free, then contracting factors), dot and
convolution (batch groups, spatial windows, feature groups)."""

from __future__ import annotations

from sdy_passes.op_sharding_rules._attrs import conv_dimension_numbers, fields, int_attr
from sdy_passes.op_sharding_rules._builder import NULL, PERMUTATION, REDUCTION, Builder, shape_of


def dot_general(op, conservative: bool):
    dims = fields(op, "dot_dimension_numbers")
    lhs_batch, rhs_batch = dims.get("lhs_batching_dimensions", ()), dims.get("rhs_batching_dimensions", ())
    lhs_contract = dims.get("lhs_contracting_dimensions", ())
    rhs_contract = dims.get("rhs_contracting_dimensions", ())
    lhs, rhs = shape_of(op.operands[0].type), shape_of(op.operands[1].type)
    builder = Builder.of(op)
    out = 0
    for l, r in zip(lhs_batch, rhs_batch, strict=True):
        builder.add_factor([l, r], [out], lhs[l])
        out += 1
    for i, size in enumerate(lhs):
        if i not in lhs_contract and i not in lhs_batch:
            builder.add_factor([i, NULL], [out], size)
            out += 1
    for i, size in enumerate(rhs):
        if i not in rhs_contract and i not in rhs_batch:
            builder.add_factor([NULL, i], [out], size)
            out += 1
    for l, r in zip(lhs_contract, rhs_contract, strict=True):
        builder.add_factor([l, r], [NULL], lhs[l], REDUCTION)
    return builder.build()


def dot(op, conservative: bool):
    lhs, rhs = shape_of(op.operands[0].type), shape_of(op.operands[1].type)
    lhs_matrix, rhs_matrix = len(lhs) == 2, len(rhs) == 2
    builder = Builder.of(op)
    if lhs_matrix:
        builder.add_factor([0, NULL], [0], lhs[0])
    if rhs_matrix:
        builder.add_factor([NULL, 1], [1 if lhs_matrix else 0], rhs[1])
    builder.add_factor([1 if lhs_matrix else 0, 0], [NULL], rhs[0], REDUCTION)
    return builder.build()


def convolution(op, conservative: bool):
    dims = conv_dimension_numbers(op)
    lhs, rhs = shape_of(op.operands[0].type), shape_of(op.operands[1].type)
    out = shape_of(op.results[0].type)
    batch_groups = int_attr(op, "batch_group_count", 1)
    feature_groups = int_attr(op, "feature_group_count", 1)
    builder = Builder.of(op)
    if batch_groups > 1:
        builder.add_factor([dims["input_batch_dimension"], dims["kernel_output_feature_dimension"]],
                           [dims["output_feature_dimension"]], batch_groups)
    builder.add_factor([dims["input_batch_dimension"], NULL], [dims["output_batch_dimension"]],
                       out[dims["output_batch_dimension"]])
    if not conservative:
        for lhs_dim, rhs_dim, out_dim in zip(dims["input_spatial_dimensions"],
                                             dims["kernel_spatial_dimensions"],
                                             dims["output_spatial_dimensions"], strict=True):
            # The input dim splits into the number of windows (output dim) and the window size
            # (kernel dim); the larger one is major.
            num_windows, window_size = out[out_dim], rhs[rhs_dim]
            remaining = lhs[lhs_dim]
            order = [(num_windows, False), (window_size, True)]
            for size, contracting in (order if num_windows >= window_size else order[::-1]):
                size = min(remaining, size)
                if size > 1:
                    builder.add_factor([lhs_dim, rhs_dim if contracting else NULL],
                                       [NULL if contracting else out_dim], size,
                                       REDUCTION if contracting else PERMUTATION)
                    remaining //= size
    if feature_groups > 1:
        builder.add_factor([dims["input_feature_dimension"], dims["kernel_output_feature_dimension"]],
                           [dims["output_feature_dimension"]], feature_groups)
    builder.add_factor([dims["input_feature_dimension"], dims["kernel_input_feature_dimension"]],
                       [NULL], rhs[dims["kernel_input_feature_dimension"]], REDUCTION)
    output_features = out[dims["output_feature_dimension"]] // (batch_groups * feature_groups)
    if output_features > 1:
        builder.add_factor([NULL, dims["kernel_output_feature_dimension"]],
                           [dims["output_feature_dimension"]], output_features)
    return builder.build()
