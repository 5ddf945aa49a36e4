"""`cost_report(module, mesh=None)`: the communication of a module after export, op by op.

Every `sdy.reshard` and sdy collective, in module order, with its steps, the bytes it sends
(most per device, and over each mesh axis) and its alpha-beta time (`sharding.cost`, ring
algorithms, links per mesh axis as `sharding.cost.default_links` or `links`), summed per func
and per axis:

* `sdy.reshard`: the collectives `sdy-reshard-to-collectives` would emit
  (`sharding.reshard_plan`, from the operand's sharding, closed replicated when it has none);
* `sdy.all_gather`, `all_slice`, `all_to_all`, `collective_permute`: the op as a one-step plan;
* `sdy.all_reduce` (a ring reduce-scatter then all-gather per reduction axis:
  `2(g-1)/g` of the local bytes sent, `2(g-1)` latencies) and `sdy.reduce_scatter` (`(g-1)/g` of
  the bytes before each axis, the block shrinking by `g`), in closed form;
* `sdy.sharded_to_unreduced`, `sdy.replicated_to_unreduced`: local, no bytes.

A reshard the planner refuses (between meshes of other axes, changing unreduced axes) is listed
with the reason and no figures. The result is a `CostReport`: `str()` is the text table,
`.dataset` an `xarray.Dataset`, `.plot(path)` a picture (matplotlib, the `[plot]` extra).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from sharding import Mesh, MeshTable, ShardingError, TensorSharding
from sharding._imports import pyplot
from sharding.reshard import ReshardPlan, ReshardStep, reshard_plan

from sdy_passes._lazy import load
from sdy_passes.attributes import ComplexType, FloatType, IntegerType, RankedTensorType
from sdy_passes.common._value_shardings import COLLECTIVE_OPS, get_sharding
from sdy_passes.errors import SdyError
from sdy_passes.ir import Module, Operation
from sdy_passes.parser import parse_module

__all__ = ["cost_report", "CostReport"]

_PLANNED = {"sdy.all_gather": "gathering_axes", "sdy.all_slice": "slicing_axes",
            "sdy.all_to_all": "params", "sdy.collective_permute": None}
"""Collectives the reshard planner has: the op is a one-step plan (parameter property)."""


@dataclass(frozen=True)
class _Row:
    func: str
    kind: str
    location: str
    steps: str
    max_bytes: float
    axis_bytes: tuple[float, ...]
    seconds: float
    note: str = ""


@dataclass(frozen=True)
class CostReport:
    """The module's communication: `dataset` has dims `op` and `axis`, coordinates `func`,
    `kind`, `location` (op; `ds.seconds.groupby("func").sum()` sums per func), and `steps`,
    `note` (op), `bytes_per_device` (op: most bytes a device sends), `bytes_crossing` (op, axis:
    bytes sent over each mesh axis), `seconds` (op)."""

    dataset: object

    def plot(self, path: str):
        """Seconds per op and bytes per mesh axis per op, saved to `path`."""
        plt = pyplot(SdyError, "cost_report's plot", "str(report)")

        np = load("numpy")
        ds = self.dataset
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
        x = np.arange(ds.sizes["op"])
        labels = [f"{k.removeprefix('sdy.')}@{loc}" for k, loc in zip(ds.kind.values, ds.location.values)]
        ax1.bar(x, ds.seconds.values * 1e6)
        ax1.set_xticks(x, labels, rotation=30, fontsize=7)
        ax1.set_ylabel("us")
        ax1.set_title("alpha-beta time per op")
        bottom = np.zeros(len(x))
        for a, axis in enumerate(ds.axis.values):
            ax2.bar(x, ds.bytes_crossing.values[:, a], bottom=bottom, label=str(axis))
            bottom += ds.bytes_crossing.values[:, a]
        ax2.set_xticks(x, labels, rotation=30, fontsize=7)
        ax2.set_ylabel("bytes")
        ax2.set_title("bytes over each mesh axis")
        if len(ds.axis):
            ax2.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path)
        plt.close(fig)
        return path

    def __str__(self) -> str:
        ds = self.dataset
        axes = [str(a) for a in ds.axis.values]
        head = ["func", "op", "at", "steps", "max sent/dev"] + [f"over {a}" for a in axes] + ["time"]
        rows = []
        for i in range(ds.sizes["op"]):
            note = str(ds.note.values[i])
            figures = ([_bytes(ds.bytes_per_device.values[i])]
                       + [_bytes(v) for v in ds.bytes_crossing.values[i]]
                       + [f"{ds.seconds.values[i] * 1e6:.2f} us"]) if not note else \
                      ["-"] * (len(axes) + 2)
            rows.append([str(ds.func.values[i]), str(ds.kind.values[i]), str(ds.location.values[i]),
                         str(ds.steps.values[i]) or "-", *figures])
        for func in dict.fromkeys(ds.func.values.tolist()):
            sel = ds.func.values == func
            rows.append([func, "total", "", "(sum of the per-op maxima)", _bytes(ds.bytes_per_device.values[sel].sum())]
                        + [_bytes(v) for v in ds.bytes_crossing.values[sel].sum(axis=0)]
                        + [f"{ds.seconds.values[sel].sum() * 1e6:.2f} us"])
        rows.append(["all", "total", "", "(sum of the per-op maxima)", _bytes(ds.bytes_per_device.values.sum())]
                    + [_bytes(v) for v in ds.bytes_crossing.values.sum(axis=0)]
                    + [f"{ds.seconds.values.sum() * 1e6:.2f} us"])
        widths = [max(len(r[c]) for r in rows + [head]) for c in range(len(head))]
        lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip()]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
        lines += [f"note: {ds.kind.values[i]} at {ds.location.values[i]}: {ds.note.values[i]}"
                  for i in range(ds.sizes["op"]) if ds.note.values[i]]
        return "\n".join(lines)


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} B" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def _dtype(type_) -> str:
    element = type_.element_type
    if isinstance(element, FloatType):
        return element.name.lower()
    if isinstance(element, IntegerType):
        return f"{'u' if element.signedness == 'u' else 'i'}{element.width}"
    if isinstance(element, ComplexType):
        return {"f32": "complex64", "f64": "complex128"}.get(str(element.element_type), str(element))
    return str(element)


def _location(op: Operation) -> str:
    loc = op.location
    line, col = getattr(loc, "line", 0), getattr(loc, "col", 0)
    return f"{line}:{col}" if line else "?"


def cost_report(module: Module | str, mesh: Mesh | MeshTable | None = None, *, links=None) -> CostReport:
    """The communication of `module` (a `Module` or its text, normally after
    `sdy-propagation-pipeline` or `sdy-export-pipeline`), see the module docstring. `mesh` binds
    the shardings' mesh names (default: the module's `sdy.mesh` symbols); `links`
    (`{axis: (alpha seconds, beta bytes/s)}`) overrides `sharding.cost.default_links`."""
    # numpy, xarray and `sharding.cost` (numpy) only here: `import sdy_passes` stays light
    np, xr, cost = load("numpy"), load("xarray"), load("sharding.cost")

    if isinstance(module, str):
        module = parse_module(module)
    if not isinstance(module, Module):
        raise SdyError(f"cost_report: expected a Module or MLIR text, got {type(module).__name__}")
    if mesh is None:
        mesh = MeshTable(tuple((op.properties["sym_name"].value, op.properties["mesh"])
                               for op in module.meshes()))
    rows, axes = [], []
    try:
        for func in module.funcs():
            for op in func.walk():
                if op.name == "sdy.reshard" or op.name in COLLECTIVE_OPS:
                    rows.append(_row(op, func.properties["sym_name"].value, mesh, links, axes, cost))
    except ShardingError as e:  # links naming an axis no mesh has
        raise SdyError(f"cost_report: {e}") from None
    names = list(dict.fromkeys(axes))
    crossing = np.zeros((len(rows), len(names)))
    for i, (row, row_axes) in enumerate(rows):
        for name, value in zip(row_axes, row.axis_bytes):
            crossing[i, names.index(name)] += value
    rows = [row for row, _ in rows]
    dataset = xr.Dataset(
        {"steps": ("op", [r.steps for r in rows]), "note": ("op", [r.note for r in rows]),
         "bytes_per_device": ("op", np.array([r.max_bytes for r in rows], float)),
         "bytes_crossing": (("op", "axis"), crossing),
         "seconds": ("op", np.array([r.seconds for r in rows], float))},
        coords={"op": np.arange(len(rows)), "axis": names, "func": ("op", [r.func for r in rows]),
                "kind": ("op", [r.kind for r in rows]),
                "location": ("op", [r.location for r in rows])})
    return CostReport(dataset)


def _row(op: Operation, func: str, mesh, links, axes: list, cost) -> tuple[_Row, list[str]]:
    value = op.operands[0]
    source, target = get_sharding(value), op.properties.get("sharding", op.properties.get("out_sharding"))
    type_ = value.type
    where = _location(op)
    if not isinstance(type_, RankedTensorType) or not type_.has_static_shape or target is None:
        return _Row(func, op.name, where, "", 0.0, (), 0.0, "not a statically shaped tensor"), []
    if source is None:
        source = TensorSharding.replicated(target.mesh_or_ref, type_.rank)
    try:
        if op.name == "sdy.reshard":
            plan = reshard_plan(source, target, mesh, type_.shape, dtype=_dtype(type_))
        else:  # the operand as it is (shape, dtype and meshes checked), then the op as one step
            plan = reshard_plan(source, source, mesh, type_.shape, dtype=_dtype(type_))
            if op.name not in _PLANNED:
                return _reduction(op, func, where, plan, links, axes, cost)
            key = _PLANNED[op.name]
            step = ReshardStep(op.name.removeprefix("sdy."), op.properties[key] if key else None, target)
            plan = replace(plan, target=target, steps=(step,), _cache={})
    except ShardingError as e:
        return _Row(func, op.name, where, "", 0.0, (), 0.0, f"not planned: {e}"), []
    traffic = plan.traffic
    names = [str(a) for a in traffic.axis.values]
    axes.extend(names)
    sent = traffic.bytes_sent.values.sum(axis=0)
    return (_Row(func, op.name, where, "; ".join(str(s) for s in plan.steps),
                 float(sent.max()) if len(sent) else 0.0,
                 tuple(float(v) for v in traffic.bytes_crossing.values.sum(axis=0)),
                 cost.alpha_beta(plan, links).total), names)


def _reduction(op, func, where, plan: ReshardPlan, links, axes, cost) -> tuple[_Row, list[str]]:
    """All-reduce and reduce-scatter in closed form (ring, per axis, minor-most first as
    `sharding.cost` takes an all-gather's axes); unreduced conversions are local."""
    mesh = plan.mesh_of(plan.source)
    block = math.prod(plan.source.local_shape(plan.shape, mesh)) * plan.itemsize
    table = cost.default_links(mesh)
    table.update({k: tuple(v) for k, v in (links or {}).items()})
    names = [a.name for a in mesh.axes]
    axes.extend(names)
    per_axis, sent, seconds = [0.0] * len(names), 0.0, 0.0
    if op.name == "sdy.all_reduce":
        refs, factor = op.properties["reduction_axes"].axes, 2
    elif op.name == "sdy.reduce_scatter":
        refs, factor = [r for dim in op.properties["reduce_scatter_axes"].lists for r in dim], 1
    else:
        return _Row(func, op.name, where, "local", 0.0, tuple(per_axis), 0.0), names
    for ref in reversed(refs):
        g = ref.size(mesh)
        alpha, beta = table[ref.name]
        part = factor * (g - 1) / g * block
        sent += part
        per_axis[names.index(ref.name)] += part * len(mesh.devices)
        seconds += factor * (g - 1) * alpha + part / beta
        if op.name == "sdy.reduce_scatter":
            block /= g
    steps = f"{op.name.removeprefix('sdy.')} over {', '.join(map(str, refs))}"
    return _Row(func, op.name, where, steps, sent, tuple(per_axis), seconds), names
