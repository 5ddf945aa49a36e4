"""The report of `execute` (spec execute.md §8): what a partitioned program costs every device.

Everything comes from the local module's types, the collectives' groups and the mesh, so a dry
run (`execute(..., dry=True)`) gives the same report as a real one. Per-device figures are numpy
vectors over the mesh's devices (mesh order): no Python loop runs per device, so a 64x64 mesh
costs what the number of ops and collectives costs.

* `memory` (dims `device`): `argument_bytes`, `output_bytes` (local shapes x itemsize, as XLA's
  `memory_analysis`), `peak_bytes` (the unfused peak of live top-level buffers in program order:
  arguments live from the start unless donated, results to the end) and `padding_bytes` (the
  padding of the buffers live at the peak, per device: a local value's global shape and
  sharding are those of the global op it comes from, the one at the same source location).
* `traffic` (dims `collective, device, axis`): `kind`, `op` (its position in the local module),
  `group_size`, `bytes_sent`, `bytes_received`, `bytes_crossing`, `messages`, as
  `ReshardPlan.traffic` (collectives.md §3.1 with B the operand bytes per device: all-gather
  `(g-1)B`, all-reduce `2(g-1)/g B`, reduce-scatter and all-to-all `(g-1)/g B`, permute `B` per
  pair, broadcast `B` from the group's first member); input reshards are rows of their own.
* `cost`: alpha-beta seconds per collective (`sharding.cost.StepCosts`; links and algorithm as
  `ReshardPlan.cost`, rings per crossed axis, minor-most first).
* `compute` (dims `device`): `flops`, `transcendentals`, `bytes_accessed`, counted per op as XLA's
  `HloCostAnalysis` counts them (see `_op_compute`; a `while` with a static trip count counts
  every iteration where XLA counts one), and with a `device` profile the roofline `seconds`;
  `time`: `compute`, `communication`, `total`, `overlapped`. Collectives in a loop are one
  traffic row each (one iteration).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from html import escape

import numpy as np
import xarray as xr

from sharding import DeviceMesh
from sharding._imports import pyplot
from sharding.cost import ALGORITHMS, StepCosts, default_links
from sharding.visualization import _heatmap_svg, format_bytes, save_picture

from sdy_passes.attributes import ArrayAttr, DenseArrayAttr, FileLineColLoc, RankedTensorType
from sdy_passes.common._value_shardings import get_sharding
from sdy_passes.dialects._base import has_trait
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import ExecutionError, shown
from sdy_passes.ir import Module, Operation

__all__ = ["Report", "Time", "ALGORITHMS"]

COLLECTIVES = {"stablehlo.all_reduce": "all_reduce", "stablehlo.all_gather": "all_gather",
               "stablehlo.reduce_scatter": "reduce_scatter", "stablehlo.all_to_all": "all_to_all",
               "stablehlo.collective_permute": "collective_permute",
               "stablehlo.collective_broadcast": "collective_broadcast"}

TRANSCENDENTAL = frozenset(f"stablehlo.{n}" for n in (
    "exponential", "exponential_minus_one", "log", "log_plus_one", "logistic", "power", "sqrt", "cbrt",
    "rsqrt", "tanh", "sine", "cosine", "tan", "atan2")) | {"chlo.erf"}
"""XLA's transcendental opcodes (`HloCostAnalysis::HandleElementwiseOp`): counted in
`transcendentals`, not in `flops`."""

APPLIED_REGIONS = frozenset(f"stablehlo.{n}" for n in (
    "reduce", "reduce_window", "all_reduce", "reduce_scatter", "scatter", "select_and_scatter", "sort", "map"))
"""Ops whose region is a computation applied per element (counted through the op, not walked)."""

DONATION = ("jax.buffer_donor", "tf.aliasing_output")
"""Argument attributes that let the argument's buffer be freed after its last use."""


@dataclass(frozen=True)
class Time:
    """Seconds: `communication` (alpha-beta, every collective in turn), `compute` (roofline; None
    without a device profile), `total` (no overlap) and `overlapped` (perfect overlap)."""

    communication: float
    compute: float | None

    @property
    def total(self) -> float | None:
        return None if self.compute is None else self.compute + self.communication

    @property
    def overlapped(self) -> float | None:
        return None if self.compute is None else max(self.compute, self.communication)


@dataclass(frozen=True)
class Report:
    """What a partitioned run costs (module docstring): `memory`, `traffic`, `compute` (xarray
    Datasets), `cost` (alpha-beta per collective, `.total`), `time`; `str()` is the text table,
    `to_json()` the same as JSON, `svg()`/`save(path)` the picture."""

    func: str
    mesh: str
    num_ops: int
    memory: xr.Dataset
    traffic: xr.Dataset
    cost: StepCosts
    compute: xr.Dataset
    time: Time

    @property
    def num_devices(self) -> int:
        return self.memory.sizes["device"]

    def _rows(self):
        """Per collective: (op, kind, crossed axes, max sent per device, total sent, bytes
        crossing each axis, seconds)."""
        tr = self.traffic
        crossing = tr["bytes_crossing"].values
        sent = tr["bytes_sent"].values
        axes = [str(a) for a in tr.axis.values]
        for i in range(tr.sizes["collective"]):
            crossed = [a for a, v in zip(axes, crossing[i]) if v > 0]
            yield (str(tr["op"].values[i]), str(tr["kind"].values[i]), crossed, float(sent[i].max(initial=0)),
                   float(sent[i].sum()), crossing[i], self.cost.steps[i])

    def __str__(self) -> str:
        mem, tr = self.memory, self.traffic
        n_in = int((tr["kind"] == "input_reshard").sum()) if tr.sizes["collective"] else 0
        lines = [f"sdy-run: @{self.func} on {self.mesh} ({self.num_devices} device"
                 f"{'s' if self.num_devices != 1 else ''}), {self.num_ops} ops, "
                 f"{tr.sizes['collective'] - n_in} collectives, {n_in} input reshards",
                 f"memory per device     args {format_bytes(mem['argument_bytes'].max())}   outputs "
                 f"{format_bytes(mem['output_bytes'].max())}   peak {format_bytes(mem['peak_bytes'].max())} "
                 f"(unfused)   padding {format_bytes(mem['padding_bytes'].max())}"]
        axes = [str(a) for a in tr.axis.values]
        head = ["#", "op", "collective", "axes", "sent/dev", "total", *(f"cross {a}" for a in axes), "ring"]
        body = [[str(i), op, kind, ",".join(crossed) or "-", format_bytes(dev), format_bytes(total),
                 *(format_bytes(v) for v in cross), _seconds(t)]
                for i, (op, kind, crossed, dev, total, cross, t) in enumerate(self._rows())]
        per_axis = tr["bytes_crossing"].values.sum(0) if tr.sizes["collective"] else np.zeros(len(axes))
        body.append(["all", "", "", "", "", format_bytes(tr["bytes_sent"].values.sum()),
                     *(format_bytes(v) for v in per_axis), _seconds(self.cost.total)])
        widths = [max(len(r[k]) for r in [head] + body) for k in range(len(head))]
        lines += ["  ".join(v.ljust(w) if k < 4 else v.rjust(w) for k, (v, w) in enumerate(zip(r, widths))).rstrip()
                  for r in [head] + body]
        c = self.compute
        profile = (f"time {_seconds(self.time.compute)} (roofline); total {_seconds(self.time.total)}, "
                   f"overlapped {_seconds(self.time.overlapped)}" if self.time.compute is not None
                   else "(no device profile: no compute time)")
        lines.append(f"compute per device    flops {float(c['flops'].max()):.3g}   transcendentals "
                     f"{float(c['transcendentals'].max()):.3g}   bytes {format_bytes(c['bytes_accessed'].max())}"
                     f"   {profile}")
        return "\n".join(lines)

    def to_json(self) -> str:
        """The report as JSON: per-device memory and compute, per-collective traffic and cost."""
        tr = self.traffic
        axes = [str(a) for a in tr.axis.values]
        collectives = [{"op": op, "kind": kind, "group_size": int(tr["group_size"].values[i]),
                        "axes": crossed, "messages": int(tr["messages"].values[i]),
                        "bytes_sent_per_device_max": dev, "bytes_sent_total": total,
                        "bytes_crossing": dict(zip(axes, map(float, cross))), "seconds": t}
                       for i, (op, kind, crossed, dev, total, cross, t) in enumerate(self._rows())]
        out = {"func": self.func, "mesh": self.mesh, "num_devices": self.num_devices, "num_ops": self.num_ops,
               "devices": [int(d) for d in self.memory.device.values],
               "memory": {k: self.memory[k].values.tolist() for k in self.memory.data_vars},
               "collectives": collectives,
               "cost": {"algorithm": self.cost.algorithm, "total": self.cost.total},
               "compute": {k: self.compute[k].values.tolist() for k in self.compute.data_vars},
               "time": {"communication": self.time.communication, "compute": self.time.compute,
                        "total": self.time.total, "overlapped": self.time.overlapped}}
        return json.dumps(out)

    # -- the picture --------------------------------------------------------------------------

    def _memory_grid(self) -> np.ndarray:
        """Peak bytes per device over the mesh's two largest axes (the most over the others)."""
        sizes = tuple(int(s) for s in self.memory.attrs["mesh_shape"]) or (1,)
        grid = self.memory["peak_bytes"].values.reshape(sizes)
        keep = sorted(sorted(range(len(sizes)), key=lambda i: -sizes[i])[:2])
        rest = tuple(i for i in range(len(sizes)) if i not in keep)
        grid = grid.max(axis=rest) if rest else grid
        return grid.reshape((1,) * (2 - grid.ndim) + grid.shape)

    def svg(self) -> str:
        """Bytes crossing each mesh axis per collective (rows: collectives, columns: axes) and
        the peak memory of every device laid out on the mesh, as an SVG document."""
        out, y = [], 10
        tr = self.traffic
        crossing = tr["bytes_crossing"].values.astype(float)
        out.append(f'<text x="10" y="{y + 12}" font-size="12">bytes crossing each mesh axis '
                   f'({", ".join(map(str, tr.axis.values))}) per collective</text>')
        y += 22
        if crossing.size:
            h, _ = _heatmap_svg(out, crossing, 10, y, 40 * crossing.shape[1])
            for i, (op, kind, *_rest) in enumerate(self._rows()):
                out.append(f'<text x="{20 + 48 * crossing.shape[1]}" y="{y + 24 * i + 16}" font-size="11">'
                           f'{i} {escape(kind)} {escape(op)}</text>')
            y += max(h, 24 * crossing.shape[0]) + 16
        else:
            out.append(f'<text x="10" y="{y + 12}" font-size="11">no collectives</text>')
            y += 24
        grid = self._memory_grid()
        out.append(f'<text x="10" y="{y + 12}" font-size="12">peak memory per device (unfused), max '
                   f'{escape(format_bytes(grid.max()))}</text>')
        y += 22
        h, w = _heatmap_svg(out, grid, 10, y, 560)
        y += h + 10
        width = max(620, w + 20, 60 + 48 * crossing.shape[1] + 300)
        return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
                          'font-family="monospace">'] + out + ["</svg>"])

    def _repr_svg_(self) -> str:
        return self.svg()

    def _repr_html_(self) -> str:
        return f"<div><pre>{escape(str(self))}</pre>{self.svg()}</div>"

    def save(self, path) -> None:
        """Writes the picture: `.svg` (no dependencies) or `.png` (needs matplotlib, the `plot`
        extra)."""
        save_picture(path, self.svg, self._save_png, ExecutionError)

    def _save_png(self, name: str) -> None:
        plt = pyplot(ExecutionError, "PNG output", ".svg")
        tr = self.traffic
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        crossing = tr["bytes_crossing"].values.astype(float)
        bottom = np.zeros(crossing.shape[0])
        for a, name_a in enumerate(tr.axis.values):
            left.bar(np.arange(crossing.shape[0]), crossing[:, a], bottom=bottom, label=f"cross {name_a}")
            bottom += crossing[:, a]
        left.set_xticks(np.arange(crossing.shape[0]), [f"{i} {k}" for i, k in enumerate(tr["kind"].values)],
                        rotation=45, ha="right", fontsize=7)
        left.set_ylabel("bytes")
        left.set_title("bytes crossing each mesh axis per collective")
        if len(tr.axis):
            left.legend()
        image = right.imshow(self._memory_grid(), cmap="Blues")
        right.set_title("peak memory per device (bytes)")
        fig.colorbar(image, ax=right)
        fig.tight_layout()
        fig.savefig(name)
        plt.close(fig)


def _seconds(t: float | None) -> str:
    if t is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns" if t else "0 s"


# -- building the report ------------------------------------------------------------------------

def _bytes(t) -> int:
    if not isinstance(t, RankedTensorType) or None in t.shape:
        return 0
    dt = numpy_dtype(t.element_type)
    return math.prod(t.shape) * (dt.itemsize if dt is not None else 1)


def _elements(t) -> int:
    return math.prod(t.shape) if isinstance(t, RankedTensorType) and None not in t.shape else 0


def _ints(op: Operation, name: str) -> tuple[int, ...]:
    found = op.properties.get(name)
    if found is None:
        return ()
    if isinstance(found, DenseArrayAttr):
        return tuple(int(v) for v in found.values)
    return tuple(int(v) for v in np.asarray(found.to_numpy()).reshape(-1))


def report(local: Module, func: Operation, dm: DeviceMesh, links=None, algorithm: str = "ring", *,
           device=None, global_func: Operation | None = None, input_reshards=()) -> Report:
    """The report of `@func` of the partitioned module `local` on `dm`. `global_func`: the same
    function before `sdy-convert-global-to-local` (global types and shardings, for the padding);
    `input_reshards`: `(label, ReshardPlan)` of arguments resharded on entry."""
    if algorithm not in ALGORITHMS:
        raise ExecutionError(f"algorithm must be 'ring' or 'bidirectional_ring', found {shown(algorithm)}")
    mesh = dm.mesh
    ids = np.asarray(mesh.devices, np.int64)
    n, names = len(ids), list(mesh.axis_names)
    table = _links(mesh, links)
    profile = _device_profile(device)
    memory = _memory(func, n, _padding(dm, func, global_func) if global_func is not None else {})
    memory.coords["device"] = ids
    memory.attrs["mesh_shape"] = list(mesh.shape)
    index = np.full(int(ids.max()) + 1 if n else 1, -1, np.int64)
    index[ids] = np.arange(n)
    coords = (np.array(np.unravel_index(np.arange(n), mesh.shape), np.int64) if names
              else np.zeros((0, n), np.int64))  # (axis, device): mesh coordinates
    rows, seconds = [], []
    for label, plan in input_reshards:
        t = plan.traffic
        rows.append(("input_reshard", label, 0, t["bytes_sent"].values.sum(0), t["bytes_received"].values.sum(0),
                     t["bytes_crossing"].values.sum(0), int(t["messages"].values.sum())))
        seconds.append(plan.cost(table, algorithm=algorithm).total)
    flops = transcendentals = accessed = compute_seconds = 0.0
    for op, times in _counted_ops(local, func):
        f, tr, b = (times * x for x in _op_compute(op))
        flops, transcendentals, accessed = flops + f, transcendentals + tr, accessed + b
        if profile is not None:
            compute_seconds += max((f + tr) / profile[0], b / profile[1])
        kind = COLLECTIVES.get(op.name)
        if kind is None:
            continue
        b_op = sum(_bytes(v.type) for v in op.operands)
        row, t = _collective(op, kind, b_op, index, coords, mesh, table, algorithm)
        rows.append((kind, _position(op, len(rows)), *row))
        seconds.append(t)
    traffic = xr.Dataset(
        {"kind": ("collective", np.array([r[0] for r in rows], dtype=object)),
         "op": ("collective", np.array([r[1] for r in rows], dtype=object)),
         "group_size": ("collective", np.array([r[2] for r in rows], np.int64)),
         "bytes_sent": (("collective", "device"), np.array([r[3] for r in rows], float).reshape(len(rows), n)),
         "bytes_received": (("collective", "device"), np.array([r[4] for r in rows], float).reshape(len(rows), n)),
         "bytes_crossing": (("collective", "axis"),
                            np.array([r[5] for r in rows], float).reshape(len(rows), len(names))),
         "messages": ("collective", np.array([r[6] for r in rows], np.int64))},
        coords={"collective": np.arange(len(rows)), "device": ids, "axis": names})
    cost = StepCosts(tuple(float(s) for s in seconds), algorithm)
    compute = xr.Dataset({"flops": ("device", np.full(n, flops)),
                          "transcendentals": ("device", np.full(n, transcendentals)),
                          "bytes_accessed": ("device", np.full(n, accessed))}, coords={"device": ids})
    if profile is not None:
        compute["seconds"] = ("device", np.full(n, compute_seconds))
    time = Time(cost.total, compute_seconds if profile is not None else None)
    num_ops = sum(1 for op in func.walk() if op is not func)
    return Report(func.properties["sym_name"].value, mesh.body(), num_ops, memory, traffic, cost, compute, time)


def padding_bytes(dm: DeviceMesh, sharding, t) -> np.ndarray:
    """Bytes of padding in every device's buffer (mesh order) of a value of global type `t`
    under `sharding` (vectorized over tiles: XLA's `ceil(D/n)` buffers)."""
    if not isinstance(t, RankedTensorType) or None in t.shape or not t.shape:
        return np.zeros(dm.mesh.total_size, np.int64)
    p = dm.placement(sharding, tuple(t.shape))
    tiles = p.tile_indices().reshape(-1, len(t.shape))
    data = np.ones(len(tiles), np.int64)
    for d in range(len(t.shape)):
        lo, hi = p.dim_bounds(d)
        data *= (hi - lo)[tiles[:, d]]
    itemsize = _bytes(t) // math.prod(t.shape) if math.prod(t.shape) else 0
    return (math.prod(p.local_shape) - data) * itemsize  # tiles are in mesh order, as the devices


def _padding(dm: DeviceMesh, func: Operation, global_func: Operation) -> dict:
    """`{local value: padding bytes per device}` for the top-level values of `func` that stand for
    a global value of `global_func` with a sharding: the arguments, and the results of the last
    local op at a global op's source location (the local form of that op, which the partitioner
    locates there) when its result types are the sharding's buffers."""
    block, gblock = func.regions[0].blocks[0], global_func.regions[0].blocks[0]
    pairs = list(zip(block.arguments, gblock.arguments))
    by_location = {op.location: op for op in gblock.ops if isinstance(op.location, FileLineColLoc)}
    last = {op.location: op for op in block.ops if op.location in by_location}
    for loc, op in last.items():
        if len(by_location[loc].results) == len(op.results):
            pairs += zip(op.results, by_location[loc].results)
    found = {}
    for v, gv in pairs:
        s = get_sharding(gv)
        if s is None or not isinstance(gv.type, RankedTensorType) or not isinstance(v.type, RankedTensorType):
            continue
        pad = padding_bytes(dm, s, gv.type)
        if pad.any() and tuple(dm.placement(s, tuple(gv.type.shape)).local_shape) == tuple(v.type.shape):
            found[v] = pad
    return found


def _links(mesh, links) -> dict:
    table = default_links(mesh)
    if links is None:
        return table
    if not isinstance(links, dict):
        raise ExecutionError(f"links: expected {{axis: (alpha seconds, beta bytes/s)}}, found {type(links).__name__}")
    for k, v in links.items():
        if k not in table:
            raise ExecutionError(f"links: unknown mesh axis {shown(k)} (axes: {list(table)})")
        try:
            alpha, beta = (float(x) for x in v)
        except (TypeError, ValueError, OverflowError):
            raise ExecutionError(f"links: expected (alpha seconds, beta bytes/s) for axis {shown(k)}, found {shown(v)}") from None
        if not (0 <= alpha < math.inf and 0 < beta < math.inf):
            raise ExecutionError(f"links: expected a finite alpha >= 0 and beta > 0 for axis {shown(k)}, found {shown(v)}")
        table[k] = (alpha, beta)
    return table


def _device_profile(device):
    """`(flops/s, bytes/s)` from `{"flops": F, "hbm_bytes": B}`, or None."""
    if device is None:
        return None
    if not isinstance(device, dict) or set(device) != {"flops", "hbm_bytes"}:
        raise ExecutionError(f"device: expected {{'flops': F/s, 'hbm_bytes': B/s}}, found {shown(device)}")
    try:
        f, b = float(device["flops"]), float(device["hbm_bytes"])
    except (TypeError, ValueError, OverflowError):
        raise ExecutionError(f"device: expected numbers, found {shown(device)}") from None
    if not (0 < f < math.inf and 0 < b < math.inf):
        raise ExecutionError(f"device: expected positive finite rates, found {shown(device)}")
    return f, b


def _position(op: Operation, k: int) -> str:
    loc = op.location
    line, col = getattr(loc, "line", None), getattr(loc, "col", None)
    return f"{line}:{col}" if line else f"#{k}"


# -- memory -------------------------------------------------------------------------------------

def _donated(func: Operation, i: int) -> bool:
    attrs = func.properties.get("arg_attrs")
    return isinstance(attrs, ArrayAttr) and i < len(attrs) and any(attrs[i].get(k) is not None for k in DONATION)


def _memory(func: Operation, n: int, padding: dict) -> xr.Dataset:
    """Liveness over the top-level ops in program order: a value lives from its op (arguments:
    the start) to its last top-level use (a use inside a region counts at the enclosing op);
    results and kept arguments to the end. Linear in the number of ops and uses."""
    block = func.regions[0].blocks[0]
    ops = block.ops
    end = len(ops)
    where = {}
    for i, op in enumerate(ops):
        for inner in op.walk():
            for v in inner.operands:
                where[v] = i
    results = set(ops[-1].operands) if ops else set()
    alloc = np.zeros(end + 1)
    free = np.zeros(end + 1)  # bytes freed after op i
    span = {}  # value: (first op, last op) it is live at
    for i, a in enumerate(block.arguments):
        b = _bytes(a.type)
        alloc[0] += b
        last = where.get(a, 0) if _donated(func, i) and a not in results else end
        free[last] += b
        span[a] = (0, last)
    for i, op in enumerate(ops):
        for r in op.results:
            b = _bytes(r.type)
            alloc[i] += b
            last = end if r in results else where.get(r, i)
            free[last] += b
            span[r] = (i, last)
    live = np.cumsum(alloc) - np.concatenate([[0.0], np.cumsum(free)[:-1]])
    at = int(np.argmax(live[:max(end, 1)]))
    pad = np.zeros(n, np.int64)
    for v, p in padding.items():
        if span[v][0] <= at <= span[v][1]:
            pad += p
    args = sum(_bytes(a.type) for a in block.arguments)
    out = sum(_bytes(v.type) for v in ops[-1].operands) if ops else 0
    return xr.Dataset({"argument_bytes": ("device", np.full(n, args, np.int64)),
                       "output_bytes": ("device", np.full(n, out, np.int64)),
                       "peak_bytes": ("device", np.full(n, int(live[at]), np.int64)),
                       "padding_bytes": ("device", pad)})


# -- compute ------------------------------------------------------------------------------------

def _counted_ops(module: Module, func: Operation):
    """`(op, times)` for every op the function runs: callees' ops once per call (XLA inlines
    calls), a `while`'s regions `times` its static trip count (XLA's `cost_analysis` counts one
    iteration whatever the count; once where the count is not static), not descending into
    per-element computations (reduce bodies). A recursive call is an `ExecutionError`."""
    stack = [(func, (func,), 1)]
    while stack:
        op, path, times = stack.pop()
        if op is not func:
            yield op, times
            if op.name in APPLIED_REGIONS:
                continue
            if op.name == "stablehlo.while":
                times *= _trip_count(op) or 1
        if op.name == "func.call":
            callee = module.lookup_symbol(op.properties["callee"].root)
            if callee is None or not callee.regions:
                raise ExecutionError(f"func.call: no function {op.properties['callee']} with a body", op.location)
            if callee in path:
                raise ExecutionError(f"func.call: {op.properties['callee']} calls itself", op.location)
            stack.extend((inner, path + (callee,), times) for inner in reversed(callee.regions[0].blocks[0].ops))
            continue
        for region in reversed(op.regions):
            for blk in reversed(region.blocks):
                stack.extend((inner, path, times) for inner in reversed(blk.ops))


def _trip_count(op: Operation) -> int | None:
    """The static trip count of a `while` as JAX lowers `fori_loop`/`scan`: a carried counter
    that starts at a constant, is compared `LT` with a constant in `cond` and grows by a
    positive constant in the body; None for any other loop."""
    cond, body = (r.blocks[0] for r in op.regions)
    compare = cond.ops[-1].operands[0].owner if cond.ops and cond.ops[-1].operands else None
    if not isinstance(compare, Operation) or compare.name != "stablehlo.compare" \
            or getattr(compare.properties.get("comparison_direction"), "value", None) != "LT":
        return None
    counter, limit = compare.operands
    if counter not in cond.arguments:
        return None
    k = cond.arguments.index(counter)
    step = body.ops[-1].operands[k].owner if body.ops and len(body.ops[-1].operands) > k else None
    if not isinstance(step, Operation) or step.name != "stablehlo.add" or body.arguments[k] not in step.operands:
        return None
    start, stop = _constant(op.operands[k]), _constant(limit)
    by = _constant([v for v in step.operands if v is not body.arguments[k]][0] if len(set(step.operands)) == 2 else None)
    if start is None or stop is None or by is None or by <= 0:
        return None
    return max(0, -(-(stop - start) // by))


def _constant(v) -> int | None:
    """The value of a scalar integer `stablehlo.constant`, else None."""
    owner = getattr(v, "owner", None)
    if not isinstance(owner, Operation) or owner.name != "stablehlo.constant":
        return None
    a = owner.properties.get("value")
    values = a.to_numpy() if a is not None else None
    if values is None or values.size != 1 or values.dtype.kind not in "iu":
        return None
    return int(values.reshape(()))


def _applied(op: Operation) -> tuple[float, float]:
    """(flops, transcendentals) of one application of the op's region (its scalar ops)."""
    f = t = 0.0
    for region in op.regions:
        for blk in region.blocks:
            for inner in blk.ops:
                for sub in inner.walk():
                    ff, tt, _ = _op_compute(sub)
                    f, t = f + ff, t + tt
    return f, t


def _op_compute(op: Operation) -> tuple[float, float, float]:
    """(flops, transcendentals, bytes accessed) of one op on one device, as XLA's
    `HloCostAnalysis`: elementwise ops one per result element (transcendentals apart), dot and
    convolution two per multiply-add (a convolution's on input elements only), reductions their
    computation per reduced element, a sort `n ceil(log2 n)` over all its elements, an
    all-reduce one per element; bytes = operands + results (unfused)."""
    if has_trait(op, "Terminator") or op.name == "func.call" or op.regions and op.name not in APPLIED_REGIONS:
        return 0.0, 0.0, 0.0
    accessed = float(sum(_bytes(v.type) for v in op.operands) + sum(_bytes(r.type) for r in op.results))
    out = sum(_elements(r.type) for r in op.results)
    name = op.name
    if has_trait(op, "Elementwise") or has_trait(op, "BroadcastingElementwise"):
        return (0.0, float(out), accessed) if name in TRANSCENDENTAL else (float(out), 0.0, accessed)
    if name == "stablehlo.dot_general":
        d = op.properties["dot_dimension_numbers"]
        k = math.prod(op.operands[0].type.shape[i] for i in d.lhs_contracting_dimensions)
        return 2.0 * out * k, 0.0, accessed
    if name == "stablehlo.convolution":
        return _convolution_flops(op), 0.0, accessed
    if name == "stablehlo.sort":  # XLA: a comparison sort, n log2(n) over every element
        n = _elements(op.operands[0].type)
        return float(n * max(n - 1, 0).bit_length()), 0.0, accessed
    if name == "stablehlo.all_reduce":
        return float(out), 0.0, accessed
    if name == "stablehlo.reduce":
        f, t = _applied(op)
        k = len(op.results)
        count = sum(_elements(v.type) for v in op.operands[:k]) / k - out / k
        return f * count, t * count, accessed
    if name == "stablehlo.reduce_window":
        f, t = _applied(op)
        window = math.prod(_ints(op, "window_dimensions")) or 1
        count = out / len(op.results) * (window - 1)
        return f * count, t * count, accessed
    return 0.0, 0.0, accessed


def _convolution_flops(op: Operation) -> float:
    """2 per multiply-add that reads the input, as XLA's `GetConvolutionFlops`: per spatial dim
    the (output, kernel) position pairs landing on an input element, not on padding or a hole
    of the lhs dilation."""
    dn = op.properties["dimension_numbers"]
    lhs, rhs, res = (v.type.shape for v in (*op.operands, op.result))
    ns = len(dn.input_spatial_dimensions)
    strides = _ints(op, "window_strides") or (1,) * ns
    pad = _ints(op, "padding") or (0,) * (2 * ns)
    lhs_dil = _ints(op, "lhs_dilation") or (1,) * ns
    rhs_dil = _ints(op, "rhs_dilation") or (1,) * ns
    valid = 1
    for i in range(ns):
        out_i = np.arange(res[dn.output_spatial_dimensions[i]])[:, None]
        ker_i = np.arange(rhs[dn.kernel_spatial_dimensions[i]])[None, :]
        at = out_i * strides[i] - pad[2 * i] + ker_i * rhs_dil[i]
        valid *= int(np.count_nonzero((at % lhs_dil[i] == 0) & (at >= 0)
                                      & (at // lhs_dil[i] < lhs[dn.input_spatial_dimensions[i]])))
    groups, batch_groups = (int(getattr(op.properties.get(a), "value", 1)) for a in ("feature_group_count",
                                                                                      "batch_group_count"))
    fma = (lhs[dn.input_feature_dimension] // groups) * res[dn.output_feature_dimension] \
        * (lhs[dn.input_batch_dimension] // batch_groups) * valid
    return 2.0 * fma


# -- traffic and alpha-beta time ------------------------------------------------------------------

def _collective(op, kind, b, index, coords, mesh, table, algorithm):
    """((group size, sent per device, received per device, bytes crossing per axis, messages),
    seconds) of one stablehlo collective, vectorized over its groups."""
    n = coords.shape[1]
    naxes = coords.shape[0]
    sent, received, crossing = np.zeros(n), np.zeros(n), np.zeros(naxes)
    if kind == "collective_permute":
        pairs = op.properties["source_target_pairs"].to_numpy().reshape(-1, 2).astype(np.int64)
        pos = _positions(op, pairs, index)
        s, t = pos[:, 0], pos[:, 1]
        remote = s != t
        s, t = s[remote], t[remote]
        sent += np.bincount(s, minlength=n) * b
        received += np.bincount(t, minlength=n) * b
        crossing += (coords[:, s] != coords[:, t]).sum(1) * b
        return (2, sent, received, crossing, len(s)), _permute_time(s, t, b, coords, mesh, table, algorithm)
    groups = op.properties.get("replica_groups")
    g_ids = groups.to_numpy().astype(np.int64) if groups is not None else np.zeros((0, 0), np.int64)
    pos = _positions(op, g_ids, index) if g_ids.size else np.arange(n)[None]
    if np.bincount(pos.reshape(-1), minlength=n).max(initial=0) > 1 or pos.size != n:
        raise ExecutionError(f"{op.name}: every device must be in exactly one replica group "
                             f"({pos.size} entries for {n} devices)", op.location)
    ng, g = pos.shape
    if kind == "collective_broadcast":
        root, rest = pos[:, 0], pos[:, 1:]
        sent[root] = (g - 1) * b
        received[rest.reshape(-1)] = b
        crossing += (coords[:, rest] != coords[:, root][:, :, None]).sum((1, 2)) * b
        s = np.repeat(root, g - 1)
        return ((g, sent, received, crossing, ng * (g - 1)),
                _permute_time(s, rest.reshape(-1), b, coords, mesh, table, algorithm))
    share = {"all_gather": b, "all_to_all": b / g, "reduce_scatter": b / g, "all_reduce": 2 * b / g}[kind]
    sent[pos.reshape(-1)] = (g - 1) * share
    received[pos.reshape(-1)] = (g - 1) * share
    grid = coords[:, pos]  # (axis, group, member)
    ring = []
    for a in range(naxes):
        counts = np.zeros((ng, mesh.shape[a]), np.int64)
        np.add.at(counts, (np.repeat(np.arange(ng), g), grid[a].reshape(-1)), 1)
        crossing[a] = share * (ng * g * g - (counts ** 2).sum())  # ordered pairs differing on a
        ring.append(int((counts[0] > 0).sum()))
    messages = ng * g * (g - 1) * (2 if kind == "all_reduce" else 1)
    return (g, sent, received, crossing, messages), _ring_time(kind, b, ring, mesh, table, algorithm)


def _positions(op, ids: np.ndarray, index: np.ndarray) -> np.ndarray:
    bad = (ids < 0) | (ids >= len(index))
    if bad.any() or (index[ids] < 0).any():
        raise ExecutionError(f"{op.name}: device id {int(ids[bad | (index[np.clip(ids, 0, len(index) - 1)] < 0)][0])} "
                             "is not on the mesh", op.location)
    return index[ids]


def _ring_time(kind, b, ring, mesh, table, algorithm) -> float:
    """Alpha-beta seconds (collectives.md §4.1): one ring per crossed axis, minor-most first;
    an all-gather's block grows ring by ring, a reduce-scatter's shrinks; all-reduce =
    reduce-scatter + all-gather (twice the reduce-scatter rings)."""
    bidi = algorithm == "bidirectional_ring"
    t, block = 0.0, float(b)
    for a in reversed(range(len(ring))):
        g = ring[a]
        if g <= 1:
            continue
        alpha, beta = table[mesh.axis_names[a]]
        steps = math.ceil((g - 1) / 2) if bidi else g - 1
        bw = 2 * beta if bidi else beta
        if kind == "all_gather":
            t += steps * alpha + (g - 1) * block / bw
            block *= g
        elif kind == "all_to_all":
            if bidi:
                load_ = block * (g * g - 1) / (8 * g) if g % 2 else block * g / 8
                t += (g // 2) * alpha + load_ / beta
            else:
                t += (g - 1) * alpha + (g - 1) * block / (2 * beta)
        else:
            rounds = 2 if kind == "all_reduce" else 1
            t += rounds * (steps * alpha + (g - 1) / g * block / bw)
            block /= g
    return t


def _permute_time(s, t, b, coords, mesh, table, algorithm) -> float:
    """The slowest message: hops x alpha summed over the axes it crosses + bytes / the slowest
    crossed link (collectives.md §4.1)."""
    if not len(s):
        return 0.0
    bidi = algorithm == "bidirectional_ring"
    hops, beta = np.zeros(len(s)), np.full(len(s), math.inf)
    for a, name in enumerate(mesh.axis_names):
        cs, ct = coords[a, s], coords[a, t]
        h = (ct - cs) % mesh.shape[a]
        if bidi:
            h = np.minimum(h, (cs - ct) % mesh.shape[a])
        alpha, bw = table[name]
        differ = cs != ct
        hops += np.where(differ, h * alpha, 0.0)
        beta = np.where(differ, np.minimum(beta, bw), beta)
    return float(np.max(hops + b / beta))
