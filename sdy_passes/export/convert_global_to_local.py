"""`sdy-convert-global-to-local`: the global program (after full explicit reshards and
`sdy-reshard-to-collectives`) becomes the program one device runs (spec execute.md §5, §6).

Every sharded value gets its local type (`TensorSharding.local_shape`); ops whose local form is
the same op on local shapes keep their kind; `iota` and non-splat constants on sharded dims read
the device's offset from a table indexed by `stablehlo.partition_id` (offsets from
`sharding.DeviceMesh`'s placement, §5.3); sdy collectives become StableHLO collectives with
`replica_groups` of device ids (`all_slice` a `dynamic_slice` at a per-device offset); an
`sdy.all_reduce` takes the reducer of the op that made its partial value (a `stablehlo.reduce`'s
body, else `add`; §5.5). Manual computations are inlined (their bodies are already local on the
manual axes).

Pads and slices (any stride) on sharded dims take the device's window, with the neighbouring
rows a halo exchange brings and positions outside the operand masked to the padding value;
gathers and scatters on sharded indexed dims make their indices local; padded (uneven) tiles
are masked where elements combine (§5.4); an all-to-all between padded tiles gathers each
source dim whole and slices the new tiles. Options as Shardy's: `per-dim-all-gather`,
`combine-multi-dimension-reduce-scatter`, `enable-rgv3` (replica groups as mesh axes). Not
built (refused with `UnsupportedOpError` at the op): ops whose local form needs offsets on a
sharded dim beyond these (`reverse`, `concatenate`, `reduce_window`, `dynamic_slice`, ... on a
sharded dim: the partition pipeline replicates them first) and convolutions with sharded
spatial dims.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from sharding import DeviceMesh, DimensionSharding, TensorSharding
from sharding.collectives import moves

from sdy_passes.attributes import IntegerType, RankedTensorType, UnitAttr
from sdy_passes.common._value_shardings import get_sharding
from sdy_passes.common.mesh_groups import device_coords, mesh_axes_text, replica_groups, sub_coordinate
from sdy_passes.dialects._base import has_trait
from sdy_passes.errors import UnsupportedOpError
from sdy_passes.ir import Operation, OpResult
from sdy_passes.op_sharding_rules import create_op_sharding_rule
from sdy_passes.parser import parse_module
from sdy_passes.pass_manager import Pass

__all__ = ["ConvertGlobalToLocalPass", "replica_groups", "dim_offsets", "MANUAL_BODY"]

MANUAL_BODY = "sdy_passes.manual_body"
"""Marks control flow inlined from a manual computation: its devices may diverge (§3.3)."""

# Ops whose local form is the op itself on local shapes whatever their sharding (after step 3
# made them conflict-free): shape-only attributes come from the (converted) result types.
_COLLECTIVES_NAMES = ("sdy.all_gather", "sdy.all_slice", "sdy.all_to_all", "sdy.collective_permute",
                      "sdy.all_reduce", "sdy.reduce_scatter", "sdy.sharding_constraint", "sdy.data_flow_edge",
                      "sdy.propagation_barrier")
_I64 = IntegerType(64)
_I1 = IntegerType(1)
_LOCAL = frozenset({
    "stablehlo.broadcast_in_dim", "stablehlo.transpose", "stablehlo.reshape", "stablehlo.dot_general",
    "stablehlo.dot", "stablehlo.select", "stablehlo.clamp", "stablehlo.convert", "stablehlo.bitcast_convert",
    "stablehlo.compare", "stablehlo.optimization_barrier", "stablehlo.while", "stablehlo.case",
    "stablehlo.return", "func.return", "func.call", "stablehlo.reduce", "stablehlo.sort", "stablehlo.map",
    "stablehlo.reduce_precision", "stablehlo.is_finite", "stablehlo.get_tuple_element", "stablehlo.tuple",
    "stablehlo.partition_id", "stablehlo.replica_id", "stablehlo.all_reduce", "stablehlo.all_gather",
    "stablehlo.all_to_all", "stablehlo.reduce_scatter", "stablehlo.collective_permute",
    "stablehlo.collective_broadcast", "sdy.return",
})
_UNEVEN_OK = frozenset({
    "stablehlo.broadcast_in_dim", "stablehlo.transpose", "stablehlo.select", "stablehlo.clamp", "stablehlo.convert",
    "stablehlo.compare", "stablehlo.while", "stablehlo.case", "func.call", "func.return", "stablehlo.return",
    "stablehlo.optimization_barrier", "stablehlo.reduce", "stablehlo.dot_general", "stablehlo.constant",
    "sdy.constant", "stablehlo.iota", "stablehlo.scatter", "sdy.return", "stablehlo.convolution",
    "stablehlo.pad", "stablehlo.slice", "stablehlo.reverse", "stablehlo.reduce_window", "stablehlo.sort",
    *_COLLECTIVES_NAMES,
})
"""Ops whose local form is right on padded shards (padding masked where elements combine)."""
# Position-dependent ops: local only when no operand or result dim is sharded.
_SDY_IDENTITY = frozenset({"sdy.sharding_constraint", "sdy.data_flow_edge", "sdy.propagation_barrier"})
_COLLECTIVES = frozenset({"sdy.all_gather", "sdy.all_slice", "sdy.all_to_all", "sdy.collective_permute",
                          "sdy.all_reduce", "sdy.reduce_scatter"})


def _mesh_of(sharding: TensorSharding, meshes: dict):
    m = sharding.mesh_or_ref
    return meshes[m] if isinstance(m, str) else m


def dim_offsets(mesh, sharding: TensorSharding, shape) -> np.ndarray:
    """`[device id, dim]` -> the global offset of the device's tile (placement's index map)."""
    imap = DeviceMesh(mesh).index_map(sharding, shape)
    out = np.zeros((max(imap) + 1, len(shape)), np.int64)
    for d, slices in imap.items():
        out[d] = [s.start for s in slices]
    return out


def _conv_window(op, spatial: int) -> tuple:
    """A convolution's window strides, kernel dilation and (spatial, 2) padding, defaults filled."""
    strides = op.properties.get("window_strides")
    rhs_dilation = op.properties.get("rhs_dilation")
    pad = op.properties.get("padding")
    return (strides.values if strides is not None else (1,) * spatial,
            rhs_dilation.values if rhs_dilation is not None else (1,) * spatial,
            np.array(pad.to_numpy(), np.int64).reshape(spatial, 2) if pad is not None
            else np.zeros((spatial, 2), np.int64))


def _padded(local, sharding, mesh) -> tuple:
    """The global shape whose even tiles are the `local` (padded) tiles of `sharding`."""
    return tuple(n * k for n, k in zip(local, sharding.num_shards_per_dim(mesh)))


def _window_attrs(op):
    """A reduce window's window sizes, strides and `(low, high)` padding per dim (numpy)."""
    rank = len(op.operands[0].type.shape)
    window = np.array(op.properties["window_dimensions"].values, np.int64)
    strides = op.properties.get("window_strides")
    strides = np.array(strides.values, np.int64) if strides is not None else np.ones(rank, np.int64)
    padding = op.properties.get("padding")
    padding = (np.asarray(padding.to_numpy(), np.int64).reshape(rank, 2) if padding is not None
               else np.zeros((rank, 2), np.int64))
    return window, strides, padding


def _uneven(t, sharding, mesh) -> bool:
    return any(n > 1 and size % n for size, n in zip(t.shape, sharding.num_shards_per_dim(mesh)))


_NAN = {"f64": "0x7FF8000000000000", "f32": "0x7FC00000", "f16": "0x7E00", "bf16": "0x7FC0"}


def _poison(el) -> str:
    """What padding made here holds (spec §5.4: anything; a leak into data then shows): NaN, the
    int max, true."""
    name = str(el)
    if name == "i1":
        return "true"
    if isinstance(el, IntegerType):
        return str((1 << el.width) - 1 if el.signedness == "u" else (1 << (el.width - 1)) - 1)
    return _NAN.get(name, "0.0")


def _dense(values: np.ndarray, dtype: str) -> str:
    return f"dense<{np.asarray(values).tolist()}> : tensor<{'x'.join(map(str, values.shape))}x{dtype}>"


def _binary_body(op) -> str:
    """The one binary op (`add`, `max`, ...) a reduce's or scatter's body applies."""
    body = op.regions[0].blocks[0]
    inner = body.ops[0] if len(body.ops) == 2 else None
    if inner is None or len(inner.operands) != 2 or not inner.name.startswith("stablehlo.") \
            or list(inner.operands) != list(body.arguments):
        raise UnsupportedOpError(f"{op.name}: its body is not one binary op of its arguments, so its partial "
                                 "results have no known combination", op.location)
    return inner.name.split(".", 1)[1]


_INF = {"f64": ("0xFFF0000000000000", "0x7FF0000000000000"), "f32": ("0xFF800000", "0x7F800000"),
        "f16": ("0xFC00", "0x7C00"), "bf16": ("0xFF80", "0x7F80")}
"""-inf and +inf as MLIR writes them (bits)."""


def _identity(kind: str, el, op) -> str:
    """The identity of the combination `kind` on `el` (what a non-leading partial starts from)."""
    name = str(el)
    if name == "i1":
        table = {"add": "false", "or": "false", "xor": "false", "and": "true", "multiply": "true",
                 "maximum": "false", "minimum": "true"}
    elif name.startswith("complex"):
        table = {"add": "(0.0, 0.0)", "multiply": "(1.0, 0.0)"}
    elif not isinstance(el, IntegerType):
        table = {"add": "0.0", "multiply": "1.0"}
        if name in _INF:
            table.update(maximum=_INF[name][0], minimum=_INF[name][1])
    else:
        width, unsigned = el.width, el.signedness == "u"
        table = {"add": "0", "or": "0", "xor": "0", "and": str((1 << width) - 1 if unsigned else -1), "multiply": "1",
                 "maximum": "0" if unsigned else str(-(1 << (width - 1))),
                 "minimum": str((1 << width) - 1 if unsigned else (1 << (width - 1)) - 1)}
    if kind not in table:
        raise UnsupportedOpError(f"{op.name}: no identity for a `{kind}` combination of {name} partials", op.location)
    return table[kind]


class _Builder:
    """Makes ops from MLIR text in front of an anchor op (the text's `%a<i>` are the operands)."""

    def __init__(self, anchor: Operation, location=None):
        self.anchor = anchor
        self.location = location if location is not None else anchor.location

    def emit(self, text: str, operands=(), results: int = 1) -> list:
        args = ", ".join(f"%a{i}: {v.type}" for i, v in enumerate(operands))
        # a scratch func without results (the pass's output is verified)
        module = parse_module(f"func.func @f({args}) {{\n{text}\n}}", verify=False)
        block = module.ops[0].regions[0].blocks[0]
        ret = block.ops[-1]
        outs = list(ret.operands)
        ret.drop_operand_uses()
        for arg, v in zip(block.arguments, operands):
            arg.replace_all_uses_with(v)
        for op in block.ops[:-1]:
            op.detach()
            for inner in op.walk():
                inner.location = self.location  # the op they implement
            op.insert_before(self.anchor)
        return outs

    def partition_id(self):
        return self.emit("%p = stablehlo.partition_id : tensor<ui32>\nreturn %p : tensor<ui32>")[0]

    def offset(self, table: np.ndarray, pid):
        """The scalar `table[partition_id]` (i64)."""
        n = len(table)
        return self.emit(f"%t = stablehlo.constant {_dense(table, 'i64')}\n"
                         f"%s = stablehlo.dynamic_slice %t, %a0, sizes = [1] : (tensor<{n}xi64>, tensor<ui32>) "
                         "-> tensor<1xi64>\n"
                         "%r = stablehlo.reshape %s : (tensor<1xi64>) -> tensor<i64>\nreturn %r : tensor<i64>",
                         [pid])[0]

    def keep_inside(self, v, d: int, offset, fill, size: int, below: bool):
        """`v` where its global index along `d` (local index + the scalar `offset`) is below
        `size` (and, with `below`, not below 0), `fill` elsewhere."""
        t = v.type
        it, mt = RankedTensorType(t.shape, _I64), RankedTensorType(t.shape, _I1)
        test = (f"%n = stablehlo.constant dense<{size}> : {it}\n"
                f"%m = stablehlo.compare LT, %g, %n, SIGNED : ({it}, {it}) -> {mt}\n")
        if below:
            test = (f"%z = stablehlo.constant dense<0> : {it}\n"
                    f"%n = stablehlo.constant dense<{size}> : {it}\n"
                    f"%ge = stablehlo.compare GE, %g, %z, SIGNED : ({it}, {it}) -> {mt}\n"
                    f"%lt = stablehlo.compare LT, %g, %n, SIGNED : ({it}, {it}) -> {mt}\n"
                    f"%m = stablehlo.and %ge, %lt : {mt}\n")
        return self.emit(f"%i = stablehlo.iota dim = {d} : {it}\n"
                         f"%b = stablehlo.broadcast_in_dim %a0, dims = [] : (tensor<i64>) -> {it}\n"
                         f"%g = stablehlo.add %i, %b : {it}\n" + test +
                         f"%f = stablehlo.broadcast_in_dim %a2, dims = [] : ({fill.type}) -> {t}\n"
                         f"%r = stablehlo.select %m, %a1, %f : {mt}, {t}\nreturn %r : {t}", [offset, v, fill])[0]


class ConvertGlobalToLocalPass(Pass):
    name = "sdy-convert-global-to-local"
    summary = "Converts a program with global shapes and explicit collectives into the per-device program."
    options = {"per-dim-all-gather": False, "combine-multi-dimension-reduce-scatter": False, "enable-rgv3": False}

    def run(self, module) -> None:
        meshes = {op.properties["sym_name"].value: op.properties["mesh"]
                  for op in module.ops if op.name == "sdy.mesh"}
        self.meshes = meshes
        self.globals = {}  # value -> its global type (uneven dims need it)
        self.shardings = {}  # value made here -> the sharding of the value it stands for
        self.channel = itertools.count(1)
        for func in [op for op in module.ops if op.name == "func.func" and op.regions and op.regions[0].blocks]:
            self._inline_manual(func)
            self._func(func)

    def _sharding(self, v):
        """The value's sharding; values made here stand for the op they replaced and take its."""
        s = self.shardings.get(v)
        return s if s is not None else get_sharding(v)

    def _is_sharded(self, v) -> bool:
        s = self._sharding(v) if isinstance(v.type, RankedTensorType) else None
        return s is not None and any(ds.axes for ds in s.dim_shardings)

    def _replaced(self, old, new, sharding) -> None:
        """`new` stands for `old` (a result with the global type `self.globals` or its own)."""
        self.shardings[new] = sharding
        self.globals[new] = self.globals.get(old, old.type)

    # -- types ---------------------------------------------------------------------------------

    def _local(self, value, op):
        t = value.type
        s = self._sharding(value)
        if s is None or not isinstance(t, RankedTensorType) or not t.shape:
            return t
        mesh = _mesh_of(s, self.meshes)
        self.globals[value] = t
        return RankedTensorType(tuple(s.local_shape(t.shape, mesh)), t.element_type, t.encoding)

    def _func(self, func: Operation) -> None:
        block = func.regions[0].blocks[0]
        for a in block.arguments:
            a.type = self._local(a, func)
        ops = list(func.walk())[1:]
        for op in ops:
            self._op(op)
        ft = func.properties["function_type"].type
        ret = block.ops[-1]
        new_ft = type(ft)(tuple(a.type for a in block.arguments), tuple(v.type for v in ret.operands))
        func.properties["function_type"] = type(func.properties["function_type"])(new_ft)

    def _op(self, op: Operation) -> None:
        if op.parent is None:  # erased by an earlier rewrite
            return
        name = op.name
        if name in _COLLECTIVES:
            return self._collective(op)
        if name in _SDY_IDENTITY:
            op.result.replace_all_uses_with(op.operands[0])
            op.erase(drop_uses=True)
            return
        if name == "sdy.reshard":
            raise UnsupportedOpError("sdy.reshard: left by the pipeline (run sdy-reshard-to-collectives first)",
                                     op.location)
        old = [r.type for r in op.results]
        for r in op.results:
            r.type = self._local(r, op)
        for region in op.regions:  # while/case bodies: block arguments follow the op's results
            for b in region.blocks:
                if op.name == "stablehlo.while":
                    for a, r in zip(b.arguments, op.results):
                        a.type = r.type
        sharded = any(self._is_sharded(v) for v in (*op.operands, *op.results))
        if any(self._uneven_dims(v) for v in (*op.operands, *op.results)) and name not in _UNEVEN_OK \
                and not has_trait(op, "Elementwise") and not has_trait(op, "Terminator"):
            raise UnsupportedOpError(f"{name}: an operand or result is sharded unevenly; this op's padding "
                                     "handling is not built yet", op.location)
        if name == "stablehlo.reduce":
            self._mask_reduce(op)
        elif name == "stablehlo.dot_general":
            self._mask_dot(op)
        elif name == "stablehlo.convolution":
            dn = op.properties["dimension_numbers"]
            self._mask_contracting(op, ((0, (dn.input_feature_dimension,)), (1, (dn.kernel_input_feature_dimension,))))
        if not sharded or name in _LOCAL or has_trait(op, "Elementwise") or has_trait(op, "Terminator"):
            if name in ("stablehlo.constant", "sdy.constant") and (sharded or name == "sdy.constant"):
                return self._constant(op, old[0])  # (an sdy.constant becomes plain StableHLO)
            return None
        if name == "stablehlo.iota":
            return self._iota(op, old[0])
        if name == "sdy.constant" or name == "stablehlo.constant":
            return self._constant(op, old[0])
        if name in ("stablehlo.pad", "stablehlo.slice"):
            return self._pad(op, old[0])
        if name == "stablehlo.reverse":
            return self._reverse(op, old[0])
        if name == "stablehlo.reduce_window" and self._window_dims(op):
            return self._reduce_window(op, old)
        if name == "stablehlo.convolution" and self._conv_tap_dims(op):
            self._conv_taps(op)
        if name == "stablehlo.convolution" and self._conv_window_dims(op):
            return self._conv_halo(op, old)
        return self._pass_through(op, old)

    # -- padding (§5.4) -----------------------------------------------------------------------------

    def _uneven_dims(self, v) -> list[int]:
        """Dims of `v` whose shards are padded (global size not a multiple of the shard count)."""
        t = self.globals.get(v)
        s = self._sharding(v) if t is not None else None
        if s is None:
            return []
        shards = s.num_shards_per_dim(_mesh_of(s, self.meshes))
        return [d for d, (size, n) in enumerate(zip(t.shape, shards)) if n > 1 and size % n]

    def _masked(self, op, v, dims, fill):
        """`v` with its padding along `dims` replaced by the scalar value `fill`."""
        orig, s = v, self._sharding(v)
        mesh = _mesh_of(s, self.meshes)
        gt = self.globals[v]
        offsets = dim_offsets(mesh, s, gt.shape)
        b = _Builder(op)
        pid = b.partition_id()
        for d in dims:
            v = b.keep_inside(v, d, b.offset(offsets[:, d], pid), fill, gt.shape[d], below=False)
            self._replaced(orig, v, s)
        return v

    def _mask_reduce(self, op) -> None:
        n = len(op.results)
        dims = set(op.properties["dimensions"].values)
        for i in range(n):
            x = op.operands[i]
            uneven = [d for d in self._uneven_dims(x) if d in dims]
            if uneven:
                op.set_operand(i, self._masked(op, x, uneven, op.operands[n + i]))

    def _mask_dot(self, op) -> None:
        dn = op.properties["dot_dimension_numbers"]
        self._mask_contracting(op, ((0, dn.lhs_contracting_dimensions), (1, dn.rhs_contracting_dimensions)))

    def _mask_contracting(self, op, operands) -> None:
        """Padding along a contracted dim becomes zeros (it would be summed in)."""
        for i, contracting in operands:
            x = op.operands[i]
            uneven = [d for d in self._uneven_dims(x) if d in contracting]
            if uneven:
                el = x.type.element_type
                zero = "false" if str(el) == "i1" else "0" if str(el)[0] in "iu" else "0.0"
                (z,) = _Builder(op).emit(f"%z = stablehlo.constant dense<{zero}> : tensor<{el}>\n"
                                         f"return %z : tensor<{el}>")
                op.set_operand(i, self._masked(op, x, uneven, z))

    def _global_rule(self, op):
        """The op's sharding rule on its global shapes (local size-1 dims would lose factors)."""
        values = [*op.operands, *op.results]
        local = [v.type for v in values]
        for v in values:
            v.type = self.globals.get(v, v.type)
        try:
            return create_op_sharding_rule(op)
        finally:
            for v, t in zip(values, local):
                v.type = t

    def _pass_through(self, op, old, skip=frozenset()) -> None:
        """An op whose sharded dims all map to pass-through factors of its sharding rule runs
        locally; attributes sized along those dims (slice limits, slice sizes) take the local
        size, which the full explicit reshards make the whole dim. `skip`: `(value index, dim)`
        pairs that a halo exchange makes local."""
        rule = self._global_rule(op)
        if rule is None:
            raise UnsupportedOpError(f"{op.name}: no sharding rule, so no local form for its sharded operands",
                                     op.location)
        special = set(rule.permutation_factors) | set(rule.need_replication_factors)
        if op.name not in ("stablehlo.convolution", "stablehlo.gather", "stablehlo.scatter"):
            # a convolution's sharded contraction, a gather's sharded collapsed dim and a scatter's
            # sharded implicit batch dim leave partials (§5.2)
            special |= set(rule.reduction_factors)
        values = [*op.operands, *op.results]
        for i, (v, mapping) in enumerate(zip(values, [*rule.operand_mappings, *rule.result_mappings])):
            s = self._sharding(v) if isinstance(v.type, RankedTensorType) else None
            if s is None:
                continue
            for d, factors in enumerate(mapping):
                if s.dim_shardings[d].axes and set(factors) & special and (i, d) not in skip:
                    raise UnsupportedOpError(f"{op.name}: dim {d} of an operand or result is sharded on a factor "
                                             "that needs communication (permutation, replication or reduction); "
                                             "no local form yet", op.location)
        if op.name == "stablehlo.scatter":
            return self._scatter(op)
        if op.name == "stablehlo.convolution":
            return self._convolution(op)
        sized = {"stablehlo.dynamic_slice": ("slice_sizes", op.operands[0]),
                 "stablehlo.gather": ("slice_sizes", op.operands[0]),
                 "stablehlo.slice": ("limit_indices", op.operands[0])}.get(op.name)
        if sized is None:
            return
        key, operand = sized
        attr = op.properties[key]
        local = operand.type.shape
        full = old[0].shape if op.name == "stablehlo.slice" else None
        s = self._sharding(operand)
        mesh = _mesh_of(s, self.meshes) if s is not None else None
        shards = s.num_shards_per_dim(mesh) if s is not None else [1] * len(local)
        vals = list(attr.values)
        collapsed = op.properties["dimension_numbers"].collapsed_slice_dims if op.name == "stablehlo.gather" else ()
        for d, n in enumerate(shards):
            if n == 1 or (d in collapsed and vals[d] == 1):
                continue
            glob = local[d] * n
            if vals[d] != glob or (op.name == "stablehlo.slice" and
                                   (op.properties["start_indices"].values[d] != 0 or full[d] != glob)):
                raise UnsupportedOpError(f"{op.name}: dim {d} is sharded but not taken whole; no local form yet",
                                         op.location)
            vals[d] = local[d]
        op.properties[key] = replace(attr, values=tuple(vals))
        if op.name == "stablehlo.gather" and any(shards[d] > 1 for d in collapsed):
            self._gather(op, s, mesh, shards)

    def _gather(self, op, s, mesh, shards) -> None:
        """A gather from an operand sharded on collapsed dims (Shardy's trivial slice dims, §5.2):
        indices clamped as the global gather clamps them, made local (minus the device's offset);
        rows another device holds become zeros, which the following all-reduce sums away."""
        dn = op.properties["dimension_numbers"]
        operand, indices = op.operands
        gt = self.globals[operand]
        offsets = dim_offsets(mesh, s, gt.shape)
        local = operand.type.shape
        sizes = op.properties["slice_sizes"].values
        mapped = list(dn.start_index_map)
        k = len(mapped)
        off_table = np.stack([offsets[:, d] if shards[d] > 1 else 0 * offsets[:, d] for d in mapped], axis=1)
        owns_row0 = np.all(offsets[:, [d for d in dn.collapsed_slice_dims if shards[d] > 1 and d not in mapped]] == 0,
                           axis=1).astype(np.int64)
        it = indices.type
        el = it.element_type
        ivd = dn.index_vector_dim
        explicit = ivd < len(it.shape)
        vec = RankedTensorType((k,), el) if explicit else RankedTensorType((), el)
        vec64 = RankedTensorType(vec.shape, _I64)
        dims = f"[{ivd}]" if explicit else "[]"
        maxv = np.array([gt.shape[d] - (sizes[d] if shards[d] == 1 else 1) for d in mapped], np.int64)
        limv = np.array([local[d] for d in mapped], np.int64)
        sh = lambda a: a.reshape(vec.shape)  # noqa: E731
        b = _Builder(op)
        pid = b.partition_id()
        rows = len(off_table)
        bt = RankedTensorType(tuple(n for i, n in enumerate(it.shape) if i != ivd), _I1)
        mt = RankedTensorType(it.shape, _I1)
        lines = [
            f"%t = stablehlo.constant {_dense(off_table, 'i64')}",
            "%z = stablehlo.constant dense<0> : tensor<ui32>",
            f"%s = stablehlo.dynamic_slice %t, %a0, %z, sizes = [1, {k}] : (tensor<{rows}x{k}xi64>, tensor<ui32>, "
            f"tensor<ui32>) -> tensor<1x{k}xi64>",
            f"%o64 = stablehlo.reshape %s : (tensor<1x{k}xi64>) -> {vec64}",
            f"%o = stablehlo.convert %o64 : ({vec64}) -> {vec}",
            f"%ob = stablehlo.broadcast_in_dim %o, dims = {dims} : ({vec}) -> {it}",
            f"%mx64 = stablehlo.constant {_dense(sh(maxv), 'i64') if explicit else f'dense<{maxv[0]}> : tensor<i64>'}",
            f"%mx = stablehlo.convert %mx64 : ({vec64}) -> {vec}",
            f"%mxb = stablehlo.broadcast_in_dim %mx, dims = {dims} : ({vec}) -> {it}",
            f"%zero = stablehlo.constant dense<0> : tensor<{el}>",
            f"%zb = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<{el}>) -> {it}",
            f"%c = stablehlo.clamp %zb, %a1, %mxb : {it}",
            f"%l = stablehlo.subtract %c, %ob : {it}",
            f"%lm64 = stablehlo.constant {_dense(sh(limv), 'i64') if explicit else f'dense<{limv[0]}> : tensor<i64>'}",
            f"%lm = stablehlo.convert %lm64 : ({vec64}) -> {vec}",
            f"%lmb = stablehlo.broadcast_in_dim %lm, dims = {dims} : ({vec}) -> {it}",
            f"%ge = stablehlo.compare GE, %l, %zb, SIGNED : ({it}, {it}) -> {mt}",
            f"%lt = stablehlo.compare LT, %l, %lmb, SIGNED : ({it}, {it}) -> {mt}",
            f"%in = stablehlo.and %ge, %lt : {mt}",
        ]
        if explicit:
            lines += ["%true = stablehlo.constant dense<true> : tensor<i1>",
                      f"%rows = stablehlo.reduce(%in init: %true) applies stablehlo.and across dimensions = [{ivd}] "
                      f": ({mt}, tensor<i1>) -> {bt}"]
        else:
            lines.append(f"%rows = stablehlo.reshape %in : ({mt}) -> {bt}")
        lines += [f"%w = stablehlo.constant {_dense(owns_row0, 'i64')}",
                  f"%w1 = stablehlo.dynamic_slice %w, %a0, sizes = [1] : (tensor<{rows}xi64>, tensor<ui32>) -> tensor<1xi64>",
                  "%w0 = stablehlo.reshape %w1 : (tensor<1xi64>) -> tensor<i64>",
                  "%one = stablehlo.constant dense<1> : tensor<i64>",
                  "%own = stablehlo.compare EQ, %w0, %one, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>",
                  f"%ownb = stablehlo.broadcast_in_dim %own, dims = [] : (tensor<i1>) -> {bt}",
                  f"%keep = stablehlo.and %rows, %ownb : {bt}",
                  f"return %l, %keep : {it}, {bt}"]
        local_idx, keep = b.emit("\n".join(lines), [pid, indices])
        op.set_operand(1, local_idx)
        rt = op.result.type
        batch = [i for i in range(len(rt.shape)) if i not in dn.offset_dims]
        rel = rt.element_type
        zero = "false" if str(rel) == "i1" else "0" if str(rel)[0] in "iu" else "0.0"
        after = _Builder(op.next_op, op.location)
        mrt = RankedTensorType(rt.shape, _I1)
        (out,) = after.emit(f"%kb = stablehlo.broadcast_in_dim %a0, dims = [{', '.join(map(str, batch))}] : ({bt}) -> {mrt}\n"
                            f"%z = stablehlo.constant dense<{zero}> : tensor<{rel}>\n"
                            f"%zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<{rel}>) -> {rt}\n"
                            f"%r = stablehlo.select %kb, %a1, %zb : {mrt}, {rt}\nreturn %r : {rt}", [keep, op.result])
        self._replaced(op.result, out, self._sharding(op.result))
        op.result.replace_uses_where(out, lambda u: u.operation is not out.owner)

    def _pad(self, op, global_type) -> None:
        """A pad or a slice on sharded dims (Shardy's `StablehloPadOpPattern`, with the halo
        exchange of `sdy-resolve-permutation-factors`). A slice is a pad with negative edges
        whose output takes every `stride`-th element: each device computes the stride-1 window
        from its first to its last output element, then slices it with the stride. Where a
        device's window needs input that other devices hold, their edge rows come by
        `collective_permute` and are concatenated around the device's own tile (XLA's halo
        exchange); positions outside the global operand, which the window reads as edge padding,
        are masked to the padding value (a neighbour's padded tile or a missing neighbour holds
        anything there, §5.4). Then a local pad when every device's data starts at the same
        local offset, else a pad wide enough for every device's offset and a `dynamic_slice` of
        the device's window."""
        x = op.operands[0]
        sin, sout = self._sharding(x), self._sharding(op.result)
        gin = self.globals.get(x, x.type).shape
        rank = len(gin)
        mesh = _mesh_of(sin or sout, self.meshes)
        # tile starts, also of tiles past the data (all padding): offsets on the padded shape
        in_off = dim_offsets(mesh, sin, _padded(x.type.shape, sin, mesh)) if sin is not None else None
        out_off = (dim_offsets(mesh, sout, _padded(op.result.type.shape, sout, mesh))
                   if sout is not None else None)
        devices = len(in_off) if in_off is not None else len(out_off)
        in_off = in_off if in_off is not None else np.zeros((devices, rank), np.int64)
        out_off = out_off if out_off is not None else np.zeros((devices, rank), np.int64)
        b = _Builder(op)
        el = x.type.element_type
        local_out = np.array(op.result.type.shape, np.int64)
        valid = np.clip(np.array(global_type.shape) - out_off, 0, local_out)  # data elements of each output tile
        if op.name == "stablehlo.slice":
            low = [-v for v in op.properties["start_indices"].values]
            interior = [0] * rank
            stride = np.array(op.properties["strides"].values, np.int64)
            (value,) = b.emit(f"%z = stablehlo.constant dense<{_poison(el)}> : tensor<{el}>\nreturn %z : tensor<{el}>")
        else:
            low = op.properties["edge_padding_low"].values
            interior = op.properties["interior_padding"].values
            stride = np.ones(rank, np.int64)
            value = op.operands[1]
        # the stride-1 window of each device: output o of a slice is element o * stride of it
        out_off = out_off * stride
        window = np.where(local_out > 0, (local_out - 1) * stride + 1, 0)
        valid = np.where(valid > 0, (valid - 1) * stride + 1, 0)
        step = np.array(interior) + 1
        lo_in = -((np.array(low) - out_off) // step)  # the input elements each window covers
        hi_in = (out_off + valid - 1 - np.array(low)) // step
        cur = x
        for d in range(rank):
            cur, in_off = self._halo(op, b, cur, sin, mesh, d, np.maximum(lo_in[:, d], 0),
                                     np.minimum(hi_in[:, d], gin[d] - 1), valid[:, d] > 0, in_off)
        cur = self._mask_outside(op, b, cur, gin, in_off, lo_in, hi_in, valid > 0, value)
        t = RankedTensorType(tuple(int(w) for w in window), el)
        out = self._align(b, cur, value, in_off * step + np.array(low) - out_off, t, interior)
        if (stride > 1).any():
            rt = op.result.type
            (out,) = b.emit("%r = stablehlo.slice %a0 [" + ", ".join(f"0:{w}:{s}" for w, s in zip(window, stride))
                            + f"] : ({t}) -> {rt}\nreturn %r : {rt}", [out])
        self._replaced(op.result, out, sout)
        op.result.replace_all_uses_with(out)
        op.erase(drop_uses=True)

    def _align(self, b, cur, value, offsets, t, interior):
        """The tile of type `t` whose local position `offsets[device]` (per dim) holds `cur`'s
        first element (`interior` padding between elements; `value` elsewhere): a local pad
        when every device has the same offsets, else a pad wide enough for every device's
        offset and a `dynamic_slice` of the device's window."""
        el, rank = cur.type.element_type, len(t.shape)
        window = np.array(t.shape, np.int64)
        expanded = [(n - 1) * (interior[d] + 1) + 1 if n else 0 for d, n in enumerate(cur.type.shape)]
        if (offsets == offsets[0]).all():
            lo = offsets[0]
            hi = [int(window[d] - expanded[d] - lo[d]) for d in range(rank)]
            if not any(lo) and not any(hi) and not any(interior):
                return cur
            (out,) = b.emit(f"%r = stablehlo.pad %a0, %a1, low = {list(map(int, lo))}, high = {hi}, interior = "
                            f"{list(interior)} : ({cur.type}, {value.type}) -> {t}\nreturn %r : {t}", [cur, value])
            return out
        klo = np.maximum(0, offsets.max(axis=0))
        khi = np.maximum(0, window - offsets.min(axis=0) - np.array(expanded))
        wide = RankedTensorType(tuple(int(a + e + c) for a, e, c in zip(klo, expanded, khi)), el)
        (padded,) = b.emit(f"%r = stablehlo.pad %a0, %a1, low = {klo.tolist()}, high = {khi.tolist()}, "
                           f"interior = {list(interior)} : ({cur.type}, {value.type}) -> {wide}\n"
                           f"return %r : {wide}", [cur, value])
        pid = b.partition_id()
        starts = [b.emit("%c = stablehlo.convert %a0 : (tensor<i64>) -> tensor<ui32>\nreturn %c : tensor<ui32>",
                         [b.offset(klo[d] - offsets[:, d], pid)])[0] for d in range(rank)]
        names = ", ".join(f"%a{i + 1}" for i in range(len(starts)))
        (out,) = b.emit(f"%r = stablehlo.dynamic_slice %a0, {names}, sizes = {window.tolist()} : ({wide}"
                        + ", tensor<ui32>" * len(starts) + f") -> {t}\nreturn %r : {t}", [padded, *starts])
        return out

    def _halo(self, op, b, cur, sin, mesh, d, first, last, used, in_off):
        """`cur` replaced along dim `d` by the input window [`first`, `last`] (global indices,
        per device; `used` where a window holds data) when some window leaves the device's own
        tile: the window's k-th tile comes from its holder in the device's group by one
        `collective_permute` per k (a device keeps what it holds: a self pair; a holder that
        several devices need sends in several rounds, each device taking its round's buffer),
        the first and last tiles cut to the rows some device needs (XLA's halo sizes: a
        neighbour's edge rows). Returns the buffer and the new per-device global offsets."""
        size = cur.type.shape[d]
        own = in_off[:, d]
        used = used & (first <= last)
        if not used.any() or ((own[used] <= first[used]) & (last[used] < own[used] + size)).all():
            return cur, in_off
        groups = replica_groups(mesh, list(sin.dim_shardings[d].axes))
        member = {int(dev): (g, i) for g, row in enumerate(groups.tolist()) for i, dev in enumerate(row)}
        tile = own // size
        # the window's first tile: a fixed hop from the device's own one (neighbours' edge rows)
        # or, when that spans more tiles (a reverse's mirror, a far slice), the tile of `first`
        hop = int(np.max(np.where(used, tile - first // size, -size)))
        t0 = first // size
        if np.max(np.where(used, last // size - (tile - hop), 0)) <= np.max(np.where(used, last // size - t0, 0)):
            t0 = tile - hop
        span = int(np.max(np.where(used, last // size - t0, 0))) + 1
        cut_lo = int(np.min(np.where(used, first - t0 * size, size)))
        cut_hi = int(np.max(np.where(used, last - (t0 + span - 1) * size, -1))) + 1
        pieces = []
        for k in range(span):
            lo, hi = (cut_lo if k == 0 else 0), (cut_hi if k == span - 1 else size)
            sent = cur
            if (lo, hi) != (0, size):
                shape = list(cur.type.shape)
                shape[d] = hi - lo
                et = RankedTensorType(tuple(shape), cur.type.element_type)
                (sent,) = b.emit("%r = stablehlo.slice %a0 [" + ", ".join(
                    f"{lo}:{hi}" if i == d else f"0:{n}" for i, n in enumerate(cur.type.shape))
                    + f"] : ({cur.type}) -> {et}\nreturn %r : {et}", [cur])
            pairs = []
            for dev, (g, i) in member.items():
                tile = int(t0[dev]) + k
                if used[dev] and 0 <= tile < groups.shape[1]:
                    pairs.append((int(groups[g, tile]), dev))
            pieces.append(self._permute_rounds(b, sent, pairs, len(in_off)))
        shape = list(cur.type.shape)
        shape[d] = sum(p.type.shape[d] for p in pieces)
        wide = RankedTensorType(tuple(shape), cur.type.element_type)
        if len(pieces) > 1:
            names = ", ".join(f"%a{i}" for i in range(len(pieces)))
            (cur,) = b.emit(f"%r = stablehlo.concatenate {names}, dim = {d} : ("
                            + ", ".join(str(p.type) for p in pieces) + f") -> {wide}\nreturn %r : {wide}", pieces)
        else:
            cur = pieces[0]
        in_off = in_off.copy()
        in_off[:, d] = t0 * size + cut_lo
        return cur, in_off

    def _permute_rounds(self, b, x, pairs, devices):
        """`x` moved along `(source, target)` pairs (every target once; a self pair keeps its
        buffer): one `collective_permute` of the other pairs when every source sends once, else
        one per round of distinct sources; each device then selects its round's buffer, or its
        own (a table indexed by `partition_id`). Self pairs are never emitted: jaxlib 0.10.2's
        reference interpreter crashes on them, and they move nothing."""
        remote = [(s, t) for s, t in pairs if s != t]
        if not remote:
            return x
        rounds = []
        for s, t in remote:
            r = next((r for r in rounds if s not in {p[0] for p in r}), None)
            if r is None:
                rounds.append(r := [])
            r.append((s, t))
        t_ = x.type
        options = [b.emit(f'%r = "stablehlo.collective_permute"(%a0) <{{channel_handle = {self._channel()}, '
                          f"source_target_pairs = {_dense(np.array(sorted(r, key=lambda p: p[1]), np.int64), 'i64')}"
                          f"}}> : ({t_}) -> {t_}\nreturn %r : {t_}", [x])[0] for r in rounds]
        which = np.zeros(devices, np.int64)
        for k, r in enumerate(rounds):
            for _, t in r:
                which[t] = k
        if len(remote) < len(pairs):
            which[[t for s, t in pairs if s == t]] = len(options)
            options.append(x)
        if len(options) == 1:
            return options[0]
        off = b.offset(which, b.partition_id())
        mt = RankedTensorType(t_.shape, _I1)
        out = options[0]
        for k in range(1, len(options)):
            (out,) = b.emit(f"%k = stablehlo.constant dense<{k}> : tensor<i64>\n"
                            "%e = stablehlo.compare EQ, %a0, %k, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
                            f"%m = stablehlo.broadcast_in_dim %e, dims = [] : (tensor<i1>) -> {mt}\n"
                            f"%r = stablehlo.select %m, %a1, %a2 : {mt}, {t_}\nreturn %r : {t_}",
                            [off, options[k], out])
        return out

    def _window_dims(self, op) -> list[int]:
        """The sharded dims of a reduce window's operands where its windows cross tiles."""
        s = self._sharding(op.operands[0])
        if s is None:
            return []
        window, strides, padding = _window_attrs(op)
        return [d for d, ds in enumerate(s.dim_shardings)
                if ds.axes and (window[d] != 1 or strides[d] != 1 or padding[d].any())]

    def _reduce_window(self, op, old) -> None:
        """A reduce window whose windows cross the tiles of sharded dims (operands and results
        sharded alike, dilations 1: step 4): XLA's halo exchange. Each device fetches the input
        its output tile's windows cover (`_halo`), positions outside the operand (the op's
        padding, a padded tile) become the init value, and the windows run locally on that
        buffer, aligned to start at the device's first window, without padding."""
        n = len(op.results)
        window, strides, padding = _window_attrs(op)
        dims = self._window_dims(op)
        x = op.operands[0]
        s, sout = self._sharding(x), self._sharding(op.result)
        mesh = _mesh_of(s, self.meshes)
        gin, gout = self.globals.get(x, x.type).shape, old[0].shape
        in_off = dim_offsets(mesh, s, _padded(x.type.shape, s, mesh))
        out_off = dim_offsets(mesh, sout, _padded(op.result.type.shape, sout, mesh))
        local_out = np.array(op.result.type.shape, np.int64)
        valid = np.clip(np.array(gout) - out_off, 0, local_out)
        start = out_off * strides - padding[:, 0]  # the first input position of each device's windows
        lo_in, hi_in = start, start + np.maximum(valid - 1, 0) * strides + window - 1
        width = tuple(int(w) for w in (local_out - 1) * strides + window)
        b = _Builder(op)
        for i in range(n):
            cur, off = op.operands[i], in_off
            for d in dims:
                cur, off = self._halo(op, b, cur, s, mesh, d, np.maximum(lo_in[:, d], 0),
                                      np.minimum(hi_in[:, d], gin[d] - 1), valid[:, d] > 0, off)
            init = op.operands[n + i]
            cur = self._mask_outside(op, b, cur, gin, off, lo_in, hi_in, valid > 0, init)
            t = RankedTensorType(width, cur.type.element_type)
            op.set_operand(i, self._align(b, cur, init, off - start, t, [0] * len(gin)))
        op.properties.pop("padding", None)

    def _conv_window_dims(self, op) -> list[int]:
        """The spatial dims (their index k) whose input and output dims are sharded alike (step 4
        left them so, with a whole kernel and no input dilation); an input dim sharded on its
        window-size factor alone is a contraction (partial sums), not a halo."""
        s, sout = self._sharding(op.operands[0]), self._sharding(op.result)
        if s is None or sout is None:
            return []
        dn = op.properties["dimension_numbers"]
        return [k for k, (d, od) in enumerate(zip(dn.input_spatial_dimensions, dn.output_spatial_dimensions))
                if s.dim_shardings[d].axes and s.dim_shardings[d].axes == sout.dim_shardings[od].axes]

    def _conv_tap_dims(self, op) -> list[int]:
        """The spatial dims (index k) whose kernel dim is sharded (the input's unsharded or on
        the same axes): the window-size factor is sharded, each device holds some kernel taps
        and sums their part (a contraction)."""
        s, w = self._sharding(op.operands[0]), self._sharding(op.operands[1])
        if w is None:
            return []
        dn = op.properties["dimension_numbers"]
        x_axes = [s.dim_shardings[d].axes if s is not None else () for d in dn.input_spatial_dimensions]
        return [k for k, kd in enumerate(dn.kernel_spatial_dimensions)
                if w.dim_shardings[kd].axes and x_axes[k] in ((), w.dim_shardings[kd].axes)]

    def _conv_taps(self, op) -> None:
        """A convolution whose kernel taps are split over devices along a spatial dim: a tap
        reads the padded input at `o * stride + tap * dilation`, not at the device's own input
        tile, so the input dim is all-gathered (when sharded) and each device takes, from the zero-padded
        whole, the window its taps start at (its first tap's offset); the local convolution
        without padding on that dim then gives the device's part of the sum, which the
        following `sdy.all_reduce` adds up (kernel padding zeroed, §5.4)."""
        dn = op.properties["dimension_numbers"]
        x, w = op.operands[0], op.operands[1]
        s, sw = self._sharding(x), self._sharding(w)
        mesh = _mesh_of(sw, self.meshes)
        spatial = len(dn.input_spatial_dimensions)
        strides, rhs_dilation, pad = _conv_window(op, spatial)
        ks = self._conv_tap_dims(op)
        b = _Builder(op)
        el = x.type.element_type
        zero = "false" if str(el) == "i1" else "0" if str(el)[0] in "iu" else "0.0"
        (z,) = b.emit(f"%z = stablehlo.constant dense<{zero}> : tensor<{el}>\nreturn %z : tensor<{el}>")
        uneven = [kd for kd in self._uneven_dims(w) if kd in {dn.kernel_spatial_dimensions[k] for k in ks}]
        if uneven:
            op.set_operand(1, self._masked(op, w, uneven, z))
        gx = self.globals.get(x, x.type).shape
        taps = dim_offsets(mesh, sw, _padded(w.type.shape, sw, mesh))
        cur, rank = x, len(gx)
        start = np.zeros((len(taps), rank), np.int64)
        width = list(x.type.shape)
        out_local = op.result.type.shape
        for k in ks:
            d, kd, od = dn.input_spatial_dimensions[k], dn.kernel_spatial_dimensions[k], dn.output_spatial_dimensions[k]
            axes = list(s.dim_shardings[d].axes) if s is not None else []
            if axes:
                cur = self._gather_whole(b, cur, mesh, d, axes, gx[d])
            start[:, d] = taps[:, kd] * rhs_dilation[k] - pad[k, 0]
            width[d] = (out_local[od] - 1) * strides[k] + (w.type.shape[kd] - 1) * rhs_dilation[k] + 1
            pad[k] = 0
        t = RankedTensorType(tuple(int(n) for n in width), el)
        new = self._align(b, cur, z, -start, t, [0] * rank)
        self._replaced(x, new, s)  # the rule and the group counts read it as the input
        op.set_operand(0, new)
        body = str(int(pad.flat[0])) if (pad == pad.flat[0]).all() else str(pad.tolist())
        if op.properties.get("padding") is not None:
            op.properties["padding"] = type(op.properties["padding"])(body, op.properties["padding"].type)

    def _conv_halo(self, op, old) -> None:
        """A convolution whose windows cross the tiles of sharded spatial dims: XLA's halo
        exchange, as `_reduce_window` (zeros past the input: its padding), then the local
        convolution without padding on those dims."""
        dn = op.properties["dimension_numbers"]
        ks = self._conv_window_dims(op)
        n = len(op.operands)
        self._pass_through(op, old, skip={(i, d) for k in ks for i, d in ((0, dn.input_spatial_dimensions[k]),
                                                                         (n, dn.output_spatial_dimensions[k]))})
        x = op.operands[0]
        s, sout = self._sharding(x), self._sharding(op.result)
        mesh = _mesh_of(s, self.meshes)
        rank = len(x.type.shape)
        spatial = len(dn.input_spatial_dimensions)
        strides, rhs_dilation, pad = _conv_window(op, spatial)
        gin, gout = self.globals.get(x, x.type).shape, old[0].shape
        off = dim_offsets(mesh, s, _padded(x.type.shape, s, mesh))
        out_off = dim_offsets(mesh, sout, _padded(op.result.type.shape, sout, mesh))
        local_out = op.result.type.shape
        devices = len(off)
        start = off.copy()
        lo_in, hi_in = np.zeros((devices, rank), np.int64), np.zeros((devices, rank), np.int64)
        used = np.zeros((devices, rank), bool)
        width = list(x.type.shape)
        b = _Builder(op)
        cur = x
        for k in ks:
            d, od = dn.input_spatial_dimensions[k], dn.output_spatial_dimensions[k]
            window = (op.operands[1].type.shape[dn.kernel_spatial_dimensions[k]] - 1) * rhs_dilation[k] + 1
            valid = np.clip(gout[od] - out_off[:, od], 0, local_out[od])
            start[:, d] = out_off[:, od] * strides[k] - pad[k, 0]
            lo_in[:, d] = start[:, d]
            hi_in[:, d] = start[:, d] + np.maximum(valid - 1, 0) * strides[k] + window - 1
            used[:, d] = valid > 0
            width[d] = (local_out[od] - 1) * strides[k] + window
            cur, off = self._halo(op, b, cur, s, mesh, d, np.maximum(lo_in[:, d], 0),
                                  np.minimum(hi_in[:, d], gin[d] - 1), used[:, d], off)
        el = x.type.element_type
        zero = "false" if str(el) == "i1" else "0" if str(el)[0] in "iu" else "0.0"
        (z,) = b.emit(f"%z = stablehlo.constant dense<{zero}> : tensor<{el}>\nreturn %z : tensor<{el}>")
        cur = self._mask_outside(op, b, cur, gin, off, lo_in, hi_in, used, z)
        t = RankedTensorType(tuple(int(w) for w in width), el)
        op.set_operand(0, self._align(b, cur, z, off - start, t, [0] * rank))
        pad[ks] = 0
        if op.properties.get("padding") is not None:
            body = str(int(pad.flat[0])) if (pad == pad.flat[0]).all() else str(pad.tolist())
            op.properties["padding"] = type(op.properties["padding"])(body, op.properties["padding"].type)

    def _reverse(self, op, global_type) -> None:
        """A reverse of sharded dims (operand and result sharded alike, step 4): each device
        fetches the mirrored input window of its output tile (`_halo`: for even tiles the tile
        of the mirrored device, one `collective_permute`), reverses it locally and takes its
        tile out of it (padded tiles: the window straddles two tiles)."""
        x = op.operands[0]
        s = self._sharding(x)
        dims = list(op.properties["dimensions"].values)
        if s is None or not any(s.dim_shardings[d].axes for d in dims):
            return
        mesh = _mesh_of(s, self.meshes)
        gin = global_type.shape
        in_off = dim_offsets(mesh, s, _padded(x.type.shape, s, mesh))
        out_off = dim_offsets(mesh, self._sharding(op.result), _padded(op.result.type.shape, self._sharding(op.result),
                                                                        mesh))
        local_out = np.array(op.result.type.shape, np.int64)
        valid = np.clip(np.array(gin) - out_off, 0, local_out)
        b = _Builder(op)
        cur = x
        for d in dims:
            if s.dim_shardings[d].axes:
                first, last = gin[d] - out_off[:, d] - valid[:, d], gin[d] - 1 - out_off[:, d]
                cur, in_off = self._halo(op, b, cur, s, mesh, d, first, last, valid[:, d] > 0, in_off)
        width = np.array(cur.type.shape, np.int64)
        offsets = in_off - out_off
        offsets[:, dims] = (np.array(gin) - in_off - width - out_off)[:, dims]
        (rev,) = b.emit(f"%r = stablehlo.reverse %a0, dims = {dims} : {cur.type}\nreturn %r : {cur.type}", [cur])
        el = cur.type.element_type
        (z,) = b.emit(f"%z = stablehlo.constant dense<{_poison(el)}> : tensor<{el}>\nreturn %z : tensor<{el}>")
        out = self._align(b, rev, z, offsets, op.result.type, [0] * len(gin))
        self._replaced(op.result, out, self._sharding(op.result))
        op.result.replace_all_uses_with(out)
        op.erase(drop_uses=True)

    def _mask_outside(self, op, b, cur, gin, in_off, lo_in, hi_in, used, value):
        """`cur` with the positions outside the global operand set to the padding `value`, on the
        dims where some device's window reads such a position (a neighbour's padding, a missing
        neighbour's zeros, or its own tile's padding)."""
        size = np.array(cur.type.shape, np.int64)
        lo = np.maximum(lo_in, in_off)
        hi = np.minimum(hi_in, in_off + size - 1)
        reads = used & (lo <= hi)
        dims = [d for d in range(len(gin)) if (reads[:, d] & ((lo[:, d] < 0) | (hi[:, d] >= gin[d]))).any()]
        if not dims:
            return cur
        pid = b.partition_id()
        for d in dims:
            cur = b.keep_inside(cur, d, b.offset(in_off[:, d], pid), value, gin[d], below=True)
        return cur

    def _reduced_sharded(self, op) -> bool:
        dims = op.properties["dimensions"].values
        s = self._sharding(op.operands[0])
        return s is not None and any(s.dim_shardings[d].axes for d in dims)

    # -- position-dependent ops ------------------------------------------------------------------

    def _iota(self, op, global_type) -> None:
        dim = op.properties["iota_dimension"].value
        s = self._sharding(op.result)
        mesh = _mesh_of(s, self.meshes)
        if not s.dim_shardings[dim].axes:
            return
        b = _Builder(op.next_op, op.location)
        table = dim_offsets(mesh, s, global_type.shape)[:, dim]
        off = b.offset(table, b.partition_id())
        t = op.result.type
        el = t.element_type
        (out,) = b.emit(f"%c = stablehlo.convert %a0 : (tensor<i64>) -> tensor<{el}>\n"
                        f"%b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<{el}>) -> {t}\n"
                        f"%r = stablehlo.add %a1, %b : {t}\nreturn %r : {t}", [off, op.result])
        self._replaced(op.result, out, s)
        op.result.replace_uses_where(out, lambda u: u.operation is not out.owner)

    def _constant(self, op, global_type) -> None:
        value = op.properties["value"]
        t = op.result.type
        if not value.body.startswith(("[", '"')) or not self._is_sharded(op.result):  # a splat, or whole
            op.properties["value"] = type(value)(value.body, t)
            if op.name == "sdy.constant":
                op.name = "stablehlo.constant"
            return
        full = np.asarray(value.to_numpy())
        s = self._sharding(op.result)
        mesh = _mesh_of(s, self.meshes)
        offsets = dim_offsets(mesh, s, global_type.shape)
        full = np.pad(full, [(0, max(0, int(offsets[:, d].max()) + t.shape[d] - full.shape[d]))
                             for d in range(full.ndim)])  # padded tiles: zeros past the data
        tiles = np.stack([full[tuple(slice(o, o + n) for o, n in zip(offsets[d], t.shape))]
                          for d in range(len(offsets))])
        b = _Builder(op)
        pid = b.partition_id()
        raw = np.ascontiguousarray(tiles).view(np.uint8).tobytes().hex().upper()
        el = t.element_type
        tt = f"tensor<{'x'.join(map(str, tiles.shape))}x{el}>"
        one = f"tensor<1x{'x'.join(map(str, t.shape))}x{el}>"
        zeros = ", ".join(["%z"] * len(t.shape))
        (out,) = b.emit(f'%t = stablehlo.constant dense<"0x{raw}"> : {tt}\n'
                        "%z = stablehlo.constant dense<0> : tensor<ui32>\n"
                        f"%s = stablehlo.dynamic_slice %t, %a0, {zeros}, sizes = [1, "
                        f"{', '.join(map(str, t.shape))}] : ({tt}, tensor<ui32>"
                        + ", tensor<ui32>" * len(t.shape) + f") -> {one}\n"
                        f"%r = stablehlo.reshape %s : ({one}) -> {t}\nreturn %r : {t}", [pid])
        self._replaced(op.result, out, s)
        op.result.replace_all_uses_with(out)
        op.erase(drop_uses=True)

    def _convolution(self, op) -> None:
        """Feature and batch groups split over the shards of the input's feature/batch dim."""
        s = self._sharding(op.operands[0])
        if s is None:
            return
        dn = op.properties["dimension_numbers"]
        shards = s.num_shards_per_dim(_mesh_of(s, self.meshes))
        for key, dim in (("feature_group_count", dn.input_feature_dimension),
                         ("batch_group_count", dn.input_batch_dimension)):
            attr = op.properties.get(key)
            if attr is not None and attr.value > 1 and shards[dim] > 1:
                if attr.value % shards[dim]:
                    raise UnsupportedOpError(f"{op.name}: {key} {attr.value} is not divisible by the "
                                             f"{shards[dim]} shards of input dim {dim}", op.location)
                op.properties[key] = replace(attr, value=attr.value // shards[dim])

    def _scatter(self, op) -> None:
        """Operands sharded on a scattered dim of window size 1 (Shardy's trivial slice dims):
        local indices are the global ones minus the device's offset; updates outside the shard
        are out of bounds, which scatter skips."""
        dn = op.properties["scatter_dimension_numbers"]
        n = len(op.results)
        operand, indices = op.operands[0], op.operands[n]
        self._scatter_leader(op, n)
        s = self._sharding(operand)
        if s is None:
            return
        mesh = _mesh_of(s, self.meshes)
        sharded = [d for d, ds in enumerate(s.dim_shardings) if ds.axes]
        mapped = list(dn.scatter_dims_to_operand_dims)
        if not any(d in mapped for d in sharded):
            return
        for d in sharded:
            if d in mapped and d not in dn.inserted_window_dims:
                raise UnsupportedOpError(f"{op.name}: operand dim {d} is sharded and scattered with a window "
                                         "larger than 1; no local form yet", op.location)
        local = operand.type.shape
        glob = tuple(l * k for l, k in zip(local, s.num_shards_per_dim(mesh)))
        offsets = dim_offsets(mesh, s, glob)
        table = np.stack([offsets[:, d] for d in mapped], axis=1)  # [device, index component]
        b = _Builder(op)
        pid = b.partition_id()
        k = len(mapped)
        it = indices.type
        el = it.element_type
        ivd = dn.index_vector_dim
        dims = "[]" if ivd >= len(it.shape) else f"[{ivd}]"
        vec = f"tensor<{k}x{el}>" if dims != "[]" else f"tensor<{el}>"
        rows = len(table)
        (new,) = b.emit(f"%t = stablehlo.constant {_dense(table, 'i64')}\n"
                        "%z = stablehlo.constant dense<0> : tensor<ui32>\n"
                        f"%s = stablehlo.dynamic_slice %t, %a0, %z, sizes = [1, {k}] : (tensor<{rows}x{k}xi64>, "
                        f"tensor<ui32>, tensor<ui32>) -> tensor<1x{k}xi64>\n"
                        f"%r = stablehlo.reshape %s : (tensor<1x{k}xi64>) -> {vec.replace(str(el), 'i64')}\n"
                        f"%c = stablehlo.convert %r : ({vec.replace(str(el), 'i64')}) -> {vec}\n"
                        f"%b = stablehlo.broadcast_in_dim %c, dims = {dims} : ({vec}) -> {it}\n"
                        f"%d = stablehlo.subtract %a1, %b : {it}\nreturn %d : {it}", [pid, indices])
        op.set_operand(n, new)

    def _scatter_leader(self, op, n) -> None:
        """Updates sharded on an implicit batch dim (axes the operand is not sharded on) scatter
        into every device's copy of the operand, and the following all-reduce sums the copies:
        only the first device along those axes keeps the operand, the others start from the
        update computation's identity (Shardy's leader mask)."""
        dn = op.properties["scatter_dimension_numbers"]
        us = self._sharding(op.operands[2 * n])
        if us is None:
            return
        os_ = self._sharding(op.operands[0])
        used = {ref for ds in os_.dim_shardings for ref in ds.axes} if os_ is not None else set()
        axes = [ref for d, ds in enumerate(us.dim_shardings) if d not in dn.update_window_dims
                for ref in ds.axes if ref not in used]
        if not axes:
            return
        mesh = _mesh_of(us, self.meshes)
        leader = np.zeros(len(mesh.devices), np.int64)
        for d, coords in device_coords(mesh).items():
            leader[d] = all(sub_coordinate(ref, coords, mesh)[0] == 0 for ref in axes)
        kind = _binary_body(op)
        b = _Builder(op)
        pid = b.partition_id()
        (lead,) = b.emit(f"%w = stablehlo.constant {_dense(leader, 'i64')}\n"
                         f"%s = stablehlo.dynamic_slice %w, %a0, sizes = [1] : (tensor<{len(leader)}xi64>, "
                         "tensor<ui32>) -> tensor<1xi64>\n"
                         "%r = stablehlo.reshape %s : (tensor<1xi64>) -> tensor<i64>\n"
                         "%one = stablehlo.constant dense<1> : tensor<i64>\n"
                         "%l = stablehlo.compare EQ, %r, %one, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
                         "return %l : tensor<i1>", [pid])
        for i in range(n):
            x = op.operands[i]
            t, el = x.type, x.type.element_type
            mt = RankedTensorType(t.shape, _I1)
            (new,) = b.emit(f"%i = stablehlo.constant dense<{_identity(kind, el, op)}> : tensor<{el}>\n"
                            f"%ib = stablehlo.broadcast_in_dim %i, dims = [] : (tensor<{el}>) -> {t}\n"
                            f"%lb = stablehlo.broadcast_in_dim %a1, dims = [] : (tensor<i1>) -> {mt}\n"
                            f"%r = stablehlo.select %lb, %a0, %ib : {mt}, {t}\nreturn %r : {t}", [x, lead])
            self._replaced(x, new, self._sharding(x))
            op.set_operand(i, new)

    # -- collectives -----------------------------------------------------------------------------

    def _groups(self, axes, groups) -> str:
        """`replica_groups` of a collective over `axes` (`groups` as device ids): with
        `enable-rgv3`, the mesh axes themselves where no sub-axis is involved (Shardy's rule)."""
        if self.options["enable-rgv3"] and all(ref.sub_axis_info is None for ref in axes):
            return mesh_axes_text(self.mesh_ref, axes)
        return _dense(groups, "i64")

    def _gather_whole(self, b: _Builder, cur, mesh, d: int, axes, size: int):
        """`cur` all-gathered along `d` over `axes`, the padding past the global `size` sliced off."""
        g = replica_groups(mesh, axes)
        shape = list(cur.type.shape)
        shape[d] *= g.shape[1]
        t = RankedTensorType(tuple(shape), cur.type.element_type)
        shape[d] = size
        whole = RankedTensorType(tuple(shape), cur.type.element_type)
        return b.emit(f'%g = "stablehlo.all_gather"(%a0) <{{all_gather_dim = {d} : i64, channel_handle = '
                      f'{self._channel()}, replica_groups = {self._groups(axes, g)}, use_global_device_ids}}> '
                      f": ({cur.type}) -> {t}\n"
                      "%r = stablehlo.slice %g [" + ", ".join(f"0:{n}" for n in shape)
                      + f"] : ({t}) -> {whole}\nreturn %r : {whole}", [cur])[0]

    def _channel(self) -> str:
        return f"#stablehlo.channel_handle<handle = {next(self.channel)}, type = 1>"

    def _collective(self, op) -> None:
        out_sharding = op.properties["out_sharding"]
        mesh = _mesh_of(out_sharding, self.meshes)
        self.mesh_ref = out_sharding.mesh_or_ref
        x = op.operands[0]
        in_sharding = self._sharding(x)
        if in_sharding is None:
            in_sharding = TensorSharding.replicated(out_sharding.mesh_or_ref, len(x.type.shape))
        gshape = tuple(op.result.type.shape)
        padded = any(_uneven(op.result.type, s, mesh) for s in (in_sharding, out_sharding))
        local_out = RankedTensorType(tuple(out_sharding.local_shape(gshape, mesh)), op.result.type.element_type)
        b = _Builder(op)
        cur = x
        el = local_out.element_type
        if op.name == "sdy.all_gather":
            gathering = [(d, list(axes)) for d, axes in enumerate(op.properties["gathering_axes"].lists) if axes]
            # A partial gather of an uneven dim whose gathered tiles are not the new tiles (6 over
            # 4 tiles of 2 -> 2 tiles of 3): the whole dim is gathered and the new tile sliced.
            whole = [d for d, axes in gathering if out_sharding.dim_shardings[d].axes
                     and cur.type.shape[d] * replica_groups(mesh, axes).shape[1] != local_out.shape[d]]
            gathering = [(d, list(in_sharding.dim_shardings[d].axes) if d in whole else axes) for d, axes in gathering]
            if len(gathering) > 1 and not self.options["per-dim-all-gather"]:
                cur = self._all_gather_combined(b, cur, gathering, mesh)
            else:  # one all-gather per dim, the last dim first (Shardy's order)
                for d, axes in reversed(gathering):
                    g = replica_groups(mesh, axes)
                    shape = list(cur.type.shape)
                    shape[d] *= g.shape[1]
                    t = RankedTensorType(tuple(shape), el)
                    (cur,) = b.emit(f'%r = "stablehlo.all_gather"(%a0) <{{all_gather_dim = {d} : i64, channel_handle = '
                                    f'{self._channel()}, replica_groups = {self._groups(axes, g)}, use_global_device_ids}}> '
                                    f": ({cur.type}) -> {t}\nreturn %r : {t}", [cur])
            target = [gshape[d] if d in whole else n for d, n in enumerate(local_out.shape)]
            if list(cur.type.shape) != target:  # padded tiles: the data is the first D elements
                t = RankedTensorType(tuple(target), el)
                (cur,) = b.emit("%r = stablehlo.slice %a0 [" + ", ".join(f"0:{k}" for k in target)
                                + f"] : ({cur.type}) -> {t}\nreturn %r : {t}", [cur])
            if whole:
                gathered = replace(out_sharding, dim_shardings=tuple(
                    DimensionSharding((), True) if d in whole else ds for d, ds in enumerate(out_sharding.dim_shardings)))
                cur = self._slice(b, cur, gathered, out_sharding, mesh, gshape, local_out)
        elif op.name == "sdy.all_to_all" and padded:  # padded tiles: each source dim gathered whole, new tiles sliced
            cur = self._slice(b, cur, in_sharding, out_sharding, mesh, gshape, local_out)
        elif op.name == "sdy.all_to_all" and len(op.properties["params"].params) > 1:
            cur = self._all_to_all_combined(b, cur, list(op.properties["params"].params), mesh)
        elif op.name == "sdy.all_to_all":
            for p in op.properties["params"].params:
                g = replica_groups(mesh, p.axes)
                n = g.shape[1]
                shape = list(cur.type.shape)
                shape[p.src_dim] *= n
                shape[p.tgt_dim] //= n
                t = RankedTensorType(tuple(shape), el)
                (cur,) = b.emit(f'%r = "stablehlo.all_to_all"(%a0) <{{channel_handle = {self._channel()}, '
                                f"concat_dimension = {p.src_dim} : i64, replica_groups = {self._groups(p.axes, g)}, "
                                f"split_count = {n} : i64, split_dimension = {p.tgt_dim} : i64}}> "
                                f": ({cur.type}) -> {t}\nreturn %r : {t}", [cur])
        elif op.name == "sdy.collective_permute":
            cur = self._permute(b, cur, in_sharding, out_sharding, _mesh_of(in_sharding, self.meshes), mesh, gshape)
        elif op.name in ("sdy.all_reduce", "sdy.reduce_scatter"):
            if op.name == "sdy.all_reduce":
                axes = list(op.properties["reduction_axes"].axes)
            else:
                axes = [r for ax in op.properties["reduce_scatter_axes"].lists for r in ax]
            if axes and op.name == "sdy.all_reduce" and isinstance(x, OpResult) \
                    and x.owner.name == "stablehlo.reduce" and len(x.owner.results) > 1:
                return self._variadic_all_reduce(op, x.owner, axes, mesh, b)
            scattering = [(d, list(a)) for d, a in enumerate(op.properties["reduce_scatter_axes"].lists) if a] \
                if op.name == "sdy.reduce_scatter" else []
            sizes = {d: replica_groups(mesh, a).shape[1] for d, a in scattering}
            even = all(cur.type.shape[d] == local_out.shape[d] * sizes.get(d, 1) for d in range(len(gshape)))
            if even and (len(scattering) == 1 or (scattering and self.options["combine-multi-dimension-reduce-scatter"])):
                cur = self._reduce_scatter(b, cur, x, scattering, sizes, mesh, local_out)
            elif axes:
                g = replica_groups(mesh, axes)
                body = self._reducer(x, el)
                t = cur.type
                (cur,) = b.emit(f'%r = "stablehlo.all_reduce"(%a0) <{{channel_handle = {self._channel()}, '
                                f"replica_groups = {self._groups(axes, g)}, use_global_device_ids}}> ({{\n{body}\n}}) "
                                f": ({t}) -> {t}\nreturn %r : {t}", [cur])
                if op.name == "sdy.reduce_scatter":  # several dims, or padded tiles: all-reduce, then slice
                    cur = self._slice(b, cur, in_sharding, out_sharding, mesh, gshape, local_out)
        elif op.name == "sdy.all_slice":
            cur = self._slice(b, cur, in_sharding, out_sharding, mesh, gshape, local_out)
        self.shardings[cur] = out_sharding
        self.globals[cur] = op.result.type
        op.result.replace_all_uses_with(cur)
        op.erase(drop_uses=True)

    def _reduce_scatter(self, b, cur, x, scattering, sizes, mesh, local_out):
        """One `stablehlo.reduce_scatter`: on the dim itself for one scattered dim; for several
        (`combine-multi-dimension-reduce-scatter`), on a leading dim that the dims' factors are
        moved to first (Shardy's combined form)."""
        el, shape = cur.type.element_type, list(cur.type.shape)
        ty = lambda dims: RankedTensorType(tuple(dims), el)  # noqa: E731
        every = [r for _, axes in scattering for r in axes]
        g = replica_groups(mesh, every)
        body = self._reducer(x, el)
        head = (f'"stablehlo.reduce_scatter"(%a) <{{channel_handle = {self._channel()}, replica_groups = '
                f"{self._groups(every, g)}, scatter_dimension = %DIM% : i64, use_global_device_ids}}> ({{\n{body}\n}})")
        if len(scattering) == 1:
            d = scattering[0][0]
            (out,) = b.emit(f"%r = {head.replace('(%a)', '(%a0)').replace('%DIM%', str(d))} : ({cur.type}) -> "
                            f"{local_out}\nreturn %r : {local_out}", [cur])
            return out
        dims = [d for d, _ in scattering]
        split, front, rest = [], [], []
        for i, n in enumerate(shape):
            if i in dims:
                front.append(len(split))
                split.append(sizes[i])
            rest.append(len(split))
            split.append(n // sizes.get(i, 1))
        perm = front + rest
        total = g.shape[1]
        lead = ty([total, *local_out.shape])
        one = ty([1, *local_out.shape])
        (out,) = b.emit(f"%sp = stablehlo.reshape %a0 : ({cur.type}) -> {ty(split)}\n"
                        f"%t = stablehlo.transpose %sp, dims = {perm} : ({ty(split)}) -> {ty([split[p] for p in perm])}\n"
                        f"%a = stablehlo.reshape %t : ({ty([split[p] for p in perm])}) -> {lead}\n"
                        f"%q = {head.replace('%DIM%', '0')} : ({lead}) -> {one}\n"
                        f"%r = stablehlo.reshape %q : ({one}) -> {local_out}\nreturn %r : {local_out}", [cur])
        return out

    def _all_to_all_combined(self, b, cur, params, mesh):
        """Several all-to-all parameters as one all-to-all (Shardy's form): every target dim is
        split into (factor, rest), the factors moved to one leading dim that the all-to-all
        exchanges, then each factor moved in front of its source dim and merged into it."""
        params = sorted(params, key=lambda p: p.tgt_dim)
        el, local = cur.type.element_type, list(cur.type.shape)
        ty = lambda shape: RankedTensorType(tuple(shape), el)  # noqa: E731
        sizes = [replica_groups(mesh, p.axes).shape[1] for p in params]
        every = [r for p in params for r in p.axes]
        g = replica_groups(mesh, every)
        tgt = {p.tgt_dim: k for k, p in enumerate(params)}
        split, front, rest = [], [], []
        for i, n in enumerate(local):
            if i in tgt:
                front.append(len(split))
                split.append(sizes[tgt[i]])
                n //= sizes[tgt[i]]
            rest.append(len(split))
            split.append(n)
        perm0 = front + rest
        moved = [split[i] for i in perm0]
        lead = ty([g.shape[1], *moved[len(params):]])
        perm1 = [len(params) + i for i in range(len(local))]
        for k, p in enumerate(params):
            perm1.insert(perm1.index(p.src_dim + len(params)), k)
        back = [moved[i] for i in perm1]
        final, i = [], 0
        while i < len(perm1):
            merge = perm1[i] < len(params)
            final.append(back[i] * back[i + 1] if merge else back[i])
            i += 2 if merge else 1
        (out,) = b.emit(f"%s0 = stablehlo.reshape %a0 : ({cur.type}) -> {ty(split)}\n"
                        f"%t0 = stablehlo.transpose %s0, dims = {perm0} : ({ty(split)}) -> {ty(moved)}\n"
                        f"%s1 = stablehlo.reshape %t0 : ({ty(moved)}) -> {lead}\n"
                        f'%x = "stablehlo.all_to_all"(%s1) <{{channel_handle = {self._channel()}, concat_dimension = 0 '
                        f": i64, replica_groups = {self._groups(every, g)}, split_count = {g.shape[1]} : i64, "
                        f"split_dimension = 0 : i64}}> : ({lead}) -> {lead}\n"
                        f"%s2 = stablehlo.reshape %x : ({lead}) -> {ty(moved)}\n"
                        f"%t1 = stablehlo.transpose %s2, dims = {perm1} : ({ty(moved)}) -> {ty(back)}\n"
                        f"%r = stablehlo.reshape %t1 : ({ty(back)}) -> {ty(final)}\nreturn %r : {ty(final)}", [cur])
        return out

    def _all_gather_combined(self, b, cur, gathering, mesh):
        """One all-gather over every gathering axis into a new leading dim, whose factors are
        then moved next to their dims (Shardy's default for several gathering dims)."""
        el, local = cur.type.element_type, list(cur.type.shape)
        factors = [replica_groups(mesh, axes).shape[1] for _, axes in gathering]
        every = [r for _, axes in gathering for r in axes]
        g = replica_groups(mesh, every)
        dims = [d for d, _ in gathering]
        perm, final = [], list(local)
        for i in range(len(local)):
            if i in dims:
                perm.append(dims.index(i))
                final[i] *= factors[dims.index(i)]
            perm.append(len(dims) + i)
        split = [*factors, *local]
        moved = [split[p] for p in perm]
        ty = lambda shape: RankedTensorType(tuple(shape), el)  # noqa: E731
        (out,) = b.emit(f"%a = stablehlo.reshape %a0 : ({cur.type}) -> {ty([1, *local])}\n"
                        f'%g = "stablehlo.all_gather"(%a) <{{all_gather_dim = 0 : i64, channel_handle = '
                        f'{self._channel()}, replica_groups = {self._groups(every, g)}, use_global_device_ids}}> '
                        f": ({ty([1, *local])}) -> {ty([g.shape[1], *local])}\n"
                        f"%s = stablehlo.reshape %g : ({ty([g.shape[1], *local])}) -> {ty(split)}\n"
                        f"%t = stablehlo.transpose %s, dims = {perm} : ({ty(split)}) -> {ty(moved)}\n"
                        f"%r = stablehlo.reshape %t : ({ty(moved)}) -> {ty(final)}\nreturn %r : {ty(final)}", [cur])
        return out

    def _variadic_all_reduce(self, op, reduce, axes, mesh, b) -> None:
        """The partials of a variadic reduce (argmax's values and indices) are combined together,
        with the reduce's own body (§5.5): every partial is all-gathered and the reduce runs again
        over the gathered dim (StableHLO's all-reduce combines each operand on its own), replacing
        the `sdy.all_reduce` of each."""
        users = []
        for r in reduce.results:
            ars = [u.operation for u in r.uses if u.operation.name == "sdy.all_reduce"
                   and list(u.operation.properties["reduction_axes"].axes) == axes]
            if len(ars) != 1 or r.num_uses != 1:
                raise UnsupportedOpError(f"{op.name}: each result of the variadic reduce at {reduce.location} "
                                         "needs exactly one all-reduce over the same axes", op.location)
            users.append(ars[0])
        anchor = min(users, key=lambda u: u.parent.index_of(u))
        b = _Builder(anchor, op.location)
        g = replica_groups(mesh, axes)
        gathered = []
        for r in reduce.results:
            t = r.type
            one = RankedTensorType((1, *t.shape), t.element_type)
            every = RankedTensorType((g.shape[1], *t.shape), t.element_type)
            gathered += b.emit(f"%a = stablehlo.reshape %a0 : ({t}) -> {one}\n"
                               f'%r = "stablehlo.all_gather"(%a) <{{all_gather_dim = 0 : i64, channel_handle = '
                               f"{self._channel()}, replica_groups = {self._groups(axes, g)}, "
                               f"use_global_device_ids}}> : ({one}) -> {every}\nreturn %r : {every}", [r])
        n = len(reduce.results)
        dims = reduce.properties["dimensions"]
        new = Operation.create("stablehlo.reduce", [*gathered, *reduce.operands[n:]], [r.type for r in reduce.results],
                               properties={"dimensions": replace(dims, values=(0,))}, location=op.location)
        new.add_region(reduce.regions[0].clone({}, {}))
        new.insert_before(anchor)
        for u, r in zip(users, new.results):
            self.shardings[r] = u.properties["out_sharding"]
            self.globals[r] = u.result.type
            u.result.replace_all_uses_with(r)
            u.erase(drop_uses=True)

    def _reducer(self, x, el) -> str:
        """The reduction body of an all-reduce of `x` (§5.5): the producing reduce's, else add."""
        kind = "add"
        if isinstance(x, OpResult) and x.owner.name in ("stablehlo.reduce", "stablehlo.scatter"):
            kind = _binary_body(x.owner)
        if el.__str__() == "i1" and kind == "add":
            kind = "or"
        t = f"tensor<{el}>"
        return (f"^bb0(%x: {t}, %y: {t}):\n%s = stablehlo.{kind} %x, %y : {t}\n"
                f"stablehlo.return %s : {t}")

    def _slice(self, b, cur, src, dst, mesh, gshape, local_out):
        """`dynamic_slice` of the device's part of `dst` out of its `src` buffer. A sharded uneven
        dim whose new tiles reach past the device's old one (6 over 2 tiles of 3 -> 4 tiles of
        2) is all-gathered whole first."""
        el = cur.type.element_type
        off = dim_offsets(mesh, dst, gshape) - dim_offsets(mesh, src, gshape)
        for d in range(len(gshape)):
            if src.dim_shardings[d].axes and off[:, d].max() + local_out.shape[d] > cur.type.shape[d]:
                cur = self._gather_whole(b, cur, mesh, d, list(src.dim_shardings[d].axes), gshape[d])
                src = replace(src, dim_shardings=tuple(DimensionSharding((), True) if i == d else ds
                                                       for i, ds in enumerate(src.dim_shardings)))
                off = dim_offsets(mesh, dst, gshape) - dim_offsets(mesh, src, gshape)
        high = [max(0, int(off[:, d].max() + local_out.shape[d]) - cur.type.shape[d]) for d in range(len(gshape))]
        if any(high):  # padded destination tiles: pad the (whole) source first
            t = RankedTensorType(tuple(k + h for k, h in zip(cur.type.shape, high)), el)
            (cur,) = b.emit(f"%z = stablehlo.constant dense<{_poison(el)}> : tensor<{el}>\n"
                            f"%r = stablehlo.pad %a0, %z, low = [{', '.join('0' for _ in high)}], high = "
                            f"[{', '.join(map(str, high))}], interior = [{', '.join('0' for _ in high)}] "
                            f": ({cur.type}, tensor<{el}>) -> {t}\nreturn %r : {t}", [cur])
        pid = b.partition_id()
        starts = []
        for d in range(len(gshape)):
            (o,) = b.emit("%c = stablehlo.convert %a0 : (tensor<i64>) -> tensor<ui32>\nreturn %c : tensor<ui32>",
                          [b.offset(off[:, d], pid)])
            starts.append(o)
        names = ", ".join(f"%a{i + 1}" for i in range(len(starts)))
        (out,) = b.emit(f"%r = stablehlo.dynamic_slice %a0, {names}, sizes = [{', '.join(map(str, local_out.shape))}] "
                        f": ({cur.type}" + ", tensor<ui32>" * len(starts) + f") -> {local_out}\n"
                        f"return %r : {local_out}", [cur, *starts])
        return out

    def _permute(self, b, cur, src, dst, src_mesh, mesh, gshape):
        """Each device receives its new tile from the sender of collectives.md §3.1 (the holder
        differing from it on the fewest mesh axes, ties to the smallest mesh position) and keeps
        it when it holds it already; tiles that are all padding are not sent."""
        m = moves(src, dst, src_mesh, mesh, gshape)
        source = np.where(m.local, m.out_devices[m.receiver], m.in_devices[m.sender])
        pairs = list(zip(source.tolist(), m.out_devices[m.receiver].tolist()))
        return self._permute_rounds(b, cur, pairs, int(max(m.in_devices.max(), m.out_devices.max())) + 1)

    # -- manual computations -----------------------------------------------------------------------

    def _inline_manual(self, func) -> None:
        for op in [o for o in func.walk() if o.name == "sdy.manual_computation"]:
            body = op.regions[0].blocks[0]
            for a, v in zip(body.arguments, op.operands):
                a.replace_all_uses_with(v)
            ret = body.ops[-1]
            for r, v in zip(op.results, ret.operands):
                r.replace_all_uses_with(v)
            ret.erase(drop_uses=True)
            for inner in list(body.ops):
                for nested in inner.walk():
                    if nested.regions:  # its devices may take their own paths (spec §3.3)
                        nested.attributes[MANUAL_BODY] = UnitAttr()
                inner.detach()
                inner.insert_before(op)
            op.erase(drop_uses=True)


