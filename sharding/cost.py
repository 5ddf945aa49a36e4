"""Traffic and cost of a reshard plan: from shapes alone, or from an executed plan's record.

Traffic (spec collectives.md §3.1) is an `xarray.Dataset` with dims `step`, `device` (the
source mesh's device ids in mesh order) and `axis`: `bytes_sent(step, device)`,
`bytes_received(step, device)`, `bytes_crossing(step, axis)`, `messages(step)`.

Cost models (spec §4):

* `alpha_beta`: per mesh axis latency `alpha` (s) and bandwidth `beta` (bytes/s per direction
  per link), ring or bidirectional-ring algorithms (Thakur, Rabenseifner, Gropp, "Optimization
  of collective communication operations in MPICH", IJHPCA 2005; Patarasuk & Yuan, JPDC 2009).
  Default links are PyTorch DTensor's (`torch/distributed/tensor/_collective_utils.py`,
  `MeshTopoInfo.build_from_mesh`): 87.7 GB/s and 0.6 us within a host, 87.7*0.22 GB/s and
  2.7 us for mesh axes whose running product (from the minor-most axis) exceeds the devices
  per host (8).
* `dtensor_redistribute_cost`: DTensor's `redistribute_cost` formulas (us), per mesh axis.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ._imports import load, pyplot
from ._moves import messages, moves
from ._traffic import move_figures
from .errors import ShardingError, is_one_of, shown

__all__ = ["plan_traffic", "record_traffic", "default_links", "alpha_beta", "StepCosts",
           "dtensor_redistribute_cost", "report", "report_table", "step_messages", "plot", "ALGORITHMS"]

INTRA_HOST = (0.6e-6, 87.7e9)
INTER_HOST = (2.7e-6, 87.7e9 * 0.22)
ALGORITHMS = ("ring", "bidirectional_ring")


def _dataset(n_steps: int, devices, axes: list[str], rows, figures=()):
    """`rows`: per-message arrays of a step; `figures`: a step's per-device figures
    (`_traffic.move_figures`)."""
    xr = load("xarray")  # a plan's traffic may be asked for without the simulation loaded
    devices = np.asarray(devices, np.int64)
    index = np.zeros(int(devices.max()) + 1 if len(devices) else 1, np.int64)
    index[devices] = np.arange(len(devices))
    sent = np.zeros((n_steps, len(devices)), np.int64)
    received = np.zeros_like(sent)
    crossing = np.zeros((n_steps, len(axes)), np.int64)
    count = np.zeros(n_steps, np.int64)
    for step, (devs, s, r, cross, msgs) in figures:
        sent[step, index[devs]] += s
        received[step, index[devs]] += r
        crossing[step] += cross
        count[step] += msgs
    for step, send, recv, nbytes, cross in rows:
        nbytes = np.asarray(nbytes, np.int64)
        if not len(nbytes):
            continue
        sent[step] += np.bincount(index[np.asarray(send, np.int64)], nbytes, len(devices)).astype(np.int64)
        received[step] += np.bincount(index[np.asarray(recv, np.int64)], nbytes, len(devices)).astype(np.int64)
        crossing[step] += nbytes @ np.asarray(cross, np.int64)
        count[step] += len(nbytes)
    return xr.Dataset(
        {"bytes_sent": (("step", "device"), sent), "bytes_received": (("step", "device"), received),
         "bytes_crossing": (("step", "axis"), crossing), "messages": (("step",), count)},
        coords={"step": np.arange(n_steps), "device": devices, "axis": list(axes)})


def plan_traffic(plan, *, per_message: bool = False):
    """The traffic of `plan` from shapes alone (no data, nothing per element): per device in
    closed form (`_traffic.move_figures`) where it applies, else per message (`per_message`:
    always per message, the reference the tests compare with)."""
    mesh = plan.mesh_of(plan.source)
    rows, figures = [], []
    prev = plan.source
    for i, step in enumerate(plan.steps):
        args = (prev, step.out_sharding, plan.mesh_of(prev), plan.mesh_of(step.out_sharding), plan.shape,
                plan.uneven)
        fast = None if per_message else move_figures(*args, plan.itemsize)
        if fast is not None:
            figures.append((i, fast))
        else:
            send, recv, nbytes, cross = messages(moves(*args), plan.itemsize)
            rows.append((i, send, recv, nbytes, cross))
        prev = step.out_sharding
    return _dataset(len(plan.steps), mesh.devices, [a.name for a in mesh.axes], rows, figures)


def record_traffic(plan):
    """The same Dataset from the transfer record of an executed plan (`DeviceMesh.reshard`)."""
    if plan.transfers is None:
        raise ShardingError("the plan was not executed: use DeviceMesh.reshard to get a transfer record")
    mesh = plan.mesh_of(plan.source)
    axes = [a.name for a in mesh.axes]
    rows = []
    for i in range(len(plan.steps)):
        ts = [t for t in plan.transfers if t.step == i]
        rows.append((i, [t.sender for t in ts], [t.receiver for t in ts], np.array([t.bytes for t in ts], np.int64),
                     np.array([[a in t.axes for a in axes] for t in ts], bool).reshape(len(ts), len(axes))))
    return _dataset(len(plan.steps), mesh.devices, axes, rows)


# -- alpha-beta -------------------------------------------------------------------------------


def default_links(mesh, devices_per_host: int = 8) -> dict[str, tuple[float, float]]:
    """`{axis: (alpha seconds, beta bytes/s)}` as DTensor's `MeshTopoInfo` sets them."""
    out, running = {}, 1
    for axis in reversed(mesh.axes):
        running *= axis.size
        out[axis.name] = INTER_HOST if running > devices_per_host else INTRA_HOST
    return out


@dataclass(frozen=True)
class StepCosts:
    """Estimated seconds per step (`steps`) and their sum (`total`)."""

    steps: tuple[float, ...]
    algorithm: str

    @property
    def total(self) -> float:
        return sum(self.steps)


def _ring(kind: str, g: int, b: float, alpha: float, beta: float, bidirectional: bool) -> float:
    if g <= 1:
        return 0.0
    if kind == "all_gather":
        if bidirectional:
            return math.ceil((g - 1) / 2) * alpha + (g - 1) * b / (2 * beta)
        return (g - 1) * alpha + (g - 1) * b / beta
    if kind == "all_to_all":
        if bidirectional:
            load = b * (g * g - 1) / (8 * g) if g % 2 else b * g / 8
            return (g // 2) * alpha + load / beta
        return (g - 1) * alpha + (g - 1) * b / (2 * beta)
    raise ShardingError(f"no ring formula for {kind}")


def alpha_beta(plan, links=None, *, algorithm: str = "ring") -> StepCosts:
    """Alpha-beta seconds per step (spec §4.1). `links` overrides `default_links` per axis:
    `{"x": (alpha, beta)}`. `algorithm` is `ring` or `bidirectional_ring`."""
    if not is_one_of(algorithm, ALGORITHMS):
        raise ShardingError(f"algorithm must be 'ring' or 'bidirectional_ring', got: {shown(algorithm)}")
    bidi = algorithm == "bidirectional_ring"
    mesh = plan.mesh_of(plan.source)
    table = default_links(mesh)
    if links is not None and not isinstance(links, Mapping):
        raise ShardingError(f"expected links as {{axis: (alpha seconds, beta bytes/s)}}, got: {shown(links)}")
    for name, link in (links or {}).items():
        if name not in table:
            raise ShardingError(f"unknown mesh axis in links: {shown(name)} (axes: {list(table)})")
        try:
            alpha, beta = (float(v) for v in link)
        except (TypeError, ValueError, OverflowError):
            raise ShardingError(f"expected (alpha seconds, beta bytes/s) for axis {shown(name)} in links, "
                                f"got: {shown(link)}") from None
        if not (0 <= alpha < math.inf and 0 < beta < math.inf):
            raise ShardingError(f"expected a finite alpha >= 0 and beta > 0 for axis {shown(name)}, got: {shown(link)}")
        table[name] = (alpha, beta)
    out = []
    prev = plan.source
    for step in plan.steps:
        pm = plan.mesh_of(prev)
        b = math.prod(prev.local_shape(plan.shape, pm)) * plan.itemsize
        if step.kind in ("all_gather", "all_to_all"):
            refs = [r for axes in step.params.lists for r in axes] if step.kind == "all_gather" \
                else list(step.params.params[0].axes)
            t, block = 0.0, b
            for ref in reversed(refs):  # minor-most ring first; an all-gather's block grows
                g = ref.size(pm)
                alpha, beta = table[ref.name]
                t += _ring(step.kind, g, block, alpha, beta, bidi)
                if step.kind == "all_gather":
                    block *= g
            out.append(t)
        else:  # collective-permute (and an uneven all-slice's realignment): slowest message
            m = moves(prev, step.out_sharding, pm, plan.mesh_of(step.out_sharding), plan.shape, plan.uneven)
            out.append(_permute_time(m, pm, table, plan.itemsize, bidi))
        prev = step.out_sharding
    return StepCosts(tuple(out), algorithm)


def _permute_time(m, mesh, table, itemsize: int, bidi: bool) -> float:
    remote = ~m.local
    if not remote.any():
        return 0.0
    shape = mesh.shape
    send = np.array(np.unravel_index(m.sender[remote], shape))
    recv = np.array(np.unravel_index(m.receiver_in[remote], shape))
    nbytes = m.elements[remote] * itemsize
    key = m.sender[remote] * (len(m.in_devices) + 1) + m.receiver_in[remote]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    total = np.bincount(inverse, weights=nbytes)
    send, recv = send[:, first], recv[:, first]  # per (sender, receiver) pair
    hops, beta = np.zeros(len(first)), np.full(len(first), math.inf)
    for a, axis in enumerate(mesh.axes):  # axis by axis, as the formula adds them
        differ = send[a] != recv[a]
        h = (recv[a] - send[a]) % axis.size
        if bidi:
            h = np.minimum(h, (send[a] - recv[a]) % axis.size)
        alpha, b = table[axis.name]
        hops = hops + np.where(differ, h * alpha, 0.0)
        beta = np.where(differ, np.minimum(beta, b), beta)
    return float(np.max(hops + total / beta))


# -- PyTorch DTensor's redistribute_cost ------------------------------------------------------


def _placements(s, mesh):
    """Per mesh axis: ("S", dim) / ("P",) / ("R",), or None when DTensor cannot express it."""
    out = {a.name: ("R",) for a in mesh.axes}
    for d, dim in enumerate(s.dim_shardings):
        for ref in dim.axes:
            if ref.is_sub_axis:
                return None
            out[ref.name] = ("S", d)
    for ref in s.unreduced_axes:
        if ref.is_sub_axis:
            return None
        out[ref.name] = ("P",)
    return out


def dtensor_redistribute_cost(plan, devices_per_host: int = 8) -> float:
    """DTensor's `redistribute_cost` (us) for the plan's source and target (spec §4.2), its
    transitions taken per mesh axis in mesh order; `inf` where DTensor has no placement (sub-axes)."""
    mesh = plan.mesh_of(plan.source)
    src, tgt = _placements(plan.source, mesh), _placements(plan.target, mesh)
    if src is None or tgt is None or plan.mesh_of(plan.target).axes != mesh.axes:
        return math.inf
    if all(p == ("R",) for p in src.values()) or src == tgt:
        return 0.0
    shards = math.prod(a.size for a in mesh.axes if src[a.name][0] == "S")
    b = plan.itemsize * math.prod(plan.shape) / shards / 1024**3
    links = default_links(mesh, devices_per_host)
    cost = 0.0
    for axis in mesh.axes:
        n = axis.size
        lat, bw = links[axis.name][0] * 1e6, links[axis.name][1] / 1e9
        a, t = src[axis.name], tgt[axis.name]
        if a == t:
            continue
        gather = 6.6 + (n - 1) * lat + b * (n - 1) / n / bw * 1e6
        if a[0] == "S" and t[0] == "R":
            cost += 6.6 + (n - 1) * lat + b * n * (n - 1) / n / bw * 1e6
            b *= n
        elif a[0] == "S" and t[0] == "S":
            cost += gather + 1.0
        elif a[0] == "P" and t[0] == "R":
            cost += 6.6 + 2 * (n - 1) * lat + b * 2 * (n - 1) / n / bw * 1e6
        elif a[0] == "P" and t[0] == "S":
            cost += gather
            b /= n
        elif a[0] == "R" and t[0] == "S":
            b /= n
        else:
            return math.inf
    return cost


# -- report and picture -----------------------------------------------------------------------


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def report_table(plan, links=None, algorithms=ALGORITHMS) -> tuple[list[str], list[list[str]], list[str]]:
    """`(head, rows, notes)` of `report`: a row per step and a total row, then notes."""
    tr = plan.traffic
    costs = [alpha_beta(plan, links, algorithm=a) for a in algorithms]
    axes = [str(a) for a in tr.axis.values]
    head = (["step", "op", "max sent/dev", "total sent", "msgs"] + [f"cross {a}" for a in axes]
            + [{"ring": "ring", "bidirectional_ring": "bidi"}[a] for a in algorithms])
    rows = []
    for i, step in enumerate(plan.steps):
        sent = tr.bytes_sent.values[i]
        rows.append([str(i), step.kind, _fmt_bytes(sent.max() if len(sent) else 0), _fmt_bytes(sent.sum()),
                     str(int(tr.messages.values[i]))] + [_fmt_bytes(v) for v in tr.bytes_crossing.values[i]]
                    + [f"{c.steps[i] * 1e6:.1f} us" for c in costs])
    total = tr.bytes_sent.values.sum(axis=0)
    rows.append(["all", "", _fmt_bytes(total.max() if len(total) else 0), _fmt_bytes(total.sum()),
                 str(int(tr.messages.values.sum()))] + [_fmt_bytes(v) for v in tr.bytes_crossing.values.sum(axis=0)]
                + [f"{c.total * 1e6:.1f} us" for c in costs])
    dt = dtensor_redistribute_cost(plan)
    notes = [f"PyTorch DTensor redistribute_cost: {dt:.1f} us" if math.isfinite(dt)
             else "PyTorch DTensor redistribute_cost: inf (no DTensor placement for these shardings)"]
    if not plan.reaches_target:
        notes.append(f"note: Shardy's plan stops at {plan.final_sharding()}, not the target")
    if plan.error:
        notes.append(f"note: jaxlib's verifier rejects this plan: {plan.error}")
    return head, rows, notes


def report(plan, links=None, algorithms=ALGORITHMS) -> str:
    """The plan as a text table: each step, bytes sent (max per device, total), messages, bytes
    crossing each axis, alpha-beta time (ring, bidirectional ring, or the `algorithms` given)."""
    head, rows, notes = report_table(plan, links, algorithms)
    widths = [max(len(r[c]) for r in rows + [head]) for c in range(len(head))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(lines + notes)


def step_messages(plan, i: int):
    """`(sender, receiver, bytes)` of every message of step `i` (from shapes alone)."""
    prev = plan.steps[i - 1].out_sharding if i else plan.source
    step = plan.steps[i]
    m = moves(prev, step.out_sharding, plan.mesh_of(prev), plan.mesh_of(step.out_sharding), plan.shape, plan.uneven)
    send, recv, nbytes, _ = messages(m, plan.itemsize)
    return send, recv, nbytes


def plot(plan, path: str, links=None):
    """Bytes per device per step (bars per device) and time per step; saved to `path`."""
    plt = pyplot(ShardingError, "plan.plot", "the text report (plan.report()) and the SVG traffic picture "
                 "(sharding.visualize(plan))")

    tr = plan.traffic
    ring, bidi = alpha_beta(plan, links), alpha_beta(plan, links, algorithm="bidirectional_ring")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    n = len(plan.steps)
    for i in range(n):
        ax1.plot(tr.device.values, tr.bytes_received.values[i], marker="o", label=f"{i}: {plan.steps[i].kind}")
    ax1.set_xlabel("device")
    ax1.set_ylabel("bytes received")
    ax1.set_title("bytes per device per step")
    if n:
        ax1.legend(fontsize=7)
    x = np.arange(n)
    ax2.bar(x - 0.2, np.array(ring.steps) * 1e6, 0.4, label="ring")
    ax2.bar(x + 0.2, np.array(bidi.steps) * 1e6, 0.4, label="bidirectional ring")
    ax2.set_xticks(x, [s.kind for s in plan.steps], rotation=20, fontsize=7)
    ax2.set_ylabel("us")
    ax2.set_title("alpha-beta time per step")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
