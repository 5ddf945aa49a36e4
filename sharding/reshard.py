"""Resharding planned exactly as Shardy's `sdy-reshard-to-collectives` (jaxlib 0.10.2).

>>> import sharding
>>> mesh = sharding.Mesh.parse('<["x"=2, "y"=4]>')
>>> s = sharding.TensorSharding.parse('<@mesh, [{"x"}, {"y"}]>')
>>> t = sharding.TensorSharding.parse('<@mesh, [{"y"}, {"x"}]>')
>>> plan = sharding.reshard_plan(s, t, mesh, (8192, 8192), dtype="bf16")
>>> for step in plan.steps:
...     print(step)
sdy.collective_permute out_sharding=<@mesh, [{"y":(1)2}, {"x", "y":(2)2}]>
sdy.all_to_all [{"y":(2)2}: 1->0] out_sharding=<@mesh, [{"y"}, {"x"}]>

`plan_reshard` is the pass's decision for one `sdy.reshard` (keep, erase, fail or a list of
collectives); `reshard_plan` is the checked Python API over it. The planner is a port of
Shardy's `CollectiveInserter` (`export/reshard_to_collectives.cc`, spec collectives.md §5),
including the quirks jaxlib's release build has (its all-gather takes a whole dim, §5.3).
It works on axis refs only: nothing here is per device.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Callable

from .axes import AxisRef, can_coexist, can_merge, contains, merge, overlap, overlaps
from .axes import prefix_without_overlap, suffix_without_overlap
from .errors import ShardingError
from .mesh import Mesh, MeshTable, device_order, same_device_set
from .syntax import AllToAllParam, AllToAllParamList, ListOfAxisRefLists
from .tensor_sharding import DimensionSharding, TensorSharding

__all__ = ["ReshardStep", "ReshardPlan", "reshard_plan", "plan_reshard", "COLLECTIVE_KINDS"]

COLLECTIVE_KINDS = ("all_slice", "collective_permute", "all_to_all", "all_gather")
"""The four ops `sdy-reshard-to-collectives` emits."""


@dataclass(frozen=True, slots=True)
class ReshardStep:
    """One collective of a plan: `kind`, its parameter and the sharding it produces."""

    kind: str
    params: ListOfAxisRefLists | AllToAllParamList | None
    """Per-dim axes (all-slice, all-gather), all-to-all params, `None` (collective-permute)."""
    out_sharding: TensorSharding

    def __str__(self) -> str:
        params = "" if self.params is None else f" {self.params.body()}"
        return f"sdy.{self.kind}{params} out_sharding={self.out_sharding.body()}"


# -- Shardy's axis helpers -------------------------------------------------------------------


def _key(ref: AxisRef) -> tuple:
    """`AxisRefAttr::operator<`: by name, then `"x":(1)k < "x" < "x":(m>1)k`, then (pre, size)."""
    info = ref.sub_axis_info
    if info is None:
        return (ref.name, 1, 0, 0)
    return (ref.name, 0 if info.pre_size <= 1 else 2, info.pre_size, info.size)


def _first_overlapping(ref: AxisRef, ordered: list[AxisRef], keys: list[tuple]) -> int:
    after = bisect.bisect_left(keys, _key(ref))
    if after > 0 and overlaps(ref, ordered[after - 1]):
        return after - 1
    if after < len(ordered) and overlaps(ref, ordered[after]):
        return after
    return len(ordered)


def _align_list(axes: list[AxisRef], ordered: list[AxisRef], keys: list[tuple], mesh: Mesh) -> None:
    # `alignSubAxesByDecomposition` for one list: split each axis at the sub-axes it partly shares.
    i = 0
    while i < len(axes):
        axis = axes[i]
        j = _first_overlapping(axis, ordered, keys)
        advanced = False
        while (j < len(ordered) and can_coexist(ordered[j], axis) and not contains(ordered[j], axis)
               and overlaps(ordered[j], axis)):
            other = ordered[j]
            del axes[i]
            prefix = prefix_without_overlap(axis, other)
            if prefix is not None:
                axes.insert(i, prefix)
                i += 1
            axes.insert(i, overlap(axis, other))  # type: ignore[arg-type]
            i += 1
            suffix = suffix_without_overlap(axis, other, mesh)
            if suffix is None:
                advanced = True
                break
            axes.insert(i, suffix)
            axis = suffix
            j += 1
        if not advanced:
            i += 1


def _align(axes_per_dim: list[list[AxisRef]], others: list[AxisRef], mesh: Mesh) -> None:
    if not others:
        return
    ordered = sorted(others, key=_key)
    keys = [_key(a) for a in ordered]
    for axes in axes_per_dim:
        _align_list(axes, ordered, keys, mesh)


def _add_or_merge(refs: list[AxisRef], ref: AxisRef, mesh: Mesh) -> None:
    if refs and can_merge(refs[-1], ref):
        refs[-1] = merge(refs[-1], ref, mesh)
    else:
        refs.append(ref)


def gather_along_dim(axes, gathering, mesh: Mesh) -> list[AxisRef]:
    """A dim's axes after gathering `gathering` (each, from the last, a suffix of the dim's last
    remaining axis: Shardy's `gatherAxesAlongDim`). Raises `ShardingError` naming the axis that
    is not one."""
    out = list(axes)
    for ref in reversed(gathering):
        last = out[-1] if out else None
        if last is None or not (contains(last, ref) and ref.next_pre_size(mesh) == last.next_pre_size(mesh)):
            raise ShardingError(str(ref))
        out.pop()
        prefix = prefix_without_overlap(last, ref)
        if prefix is not None:
            out.append(prefix)
    return out


def slice_along_dim(axes, slicing, mesh: Mesh) -> list[AxisRef]:
    """A dim's axes after slicing by `slicing` (appended, merging consecutive sub-axes)."""
    out = list(axes)
    for ref in slicing:
        _add_or_merge(out, ref, mesh)
    return out


def _divisible(a: int, b: int) -> bool:
    return a % b == 0 or b % a == 0


def _positions(axes_per_dim: list[list[AxisRef]]) -> dict[AxisRef, tuple[int, int]]:
    out: dict[AxisRef, tuple[int, int]] = {}
    for d, axes in enumerate(axes_per_dim):
        for i, a in enumerate(axes):
            out.setdefault(a, (d, i))
    return out


class _Inserter:
    """Shardy's `CollectiveInserter`: `inp`/`out` are the axes not yet in place per dim, `cur` the
    current sharding's axes, `cap` the per-dim capacity (names as in the spec, §5.2)."""

    def __init__(self, source: TensorSharding, target: TensorSharding, mesh: Mesh, shape: tuple[int, ...]):
        self.mesh = mesh
        self.axis_sizes = {a.name: a.size for a in mesh.axes}
        self.shape = shape
        self.cur_mesh = source.mesh_or_ref
        self.out_mesh = target.mesh_or_ref
        self.unreduced = target.unreduced_axes
        self.inp = [list(d.axes) for d in source.dim_shardings]
        self.out = [list(d.axes) for d in target.dim_shardings]
        self.cur = [list(d.axes) for d in source.dim_shardings]
        self.rank = len(self.inp)
        self.cap = [1] * self.rank
        ordered_in = [a for axes in self.inp for a in axes]
        ordered_out = [a for axes in self.out for a in axes]
        _align(self.inp, ordered_out, mesh)
        _align(self.out, ordered_in, mesh)
        for ins, outs in zip(self.inp, self.out):
            while ins and outs and ins[0] == outs[0]:
                del ins[0], outs[0]
        self.in_set = {a for axes in self.inp for a in axes}
        self.out_pos = _positions(self.out)
        self.steps: list[ReshardStep] = []

    def size(self, ref: AxisRef) -> int:
        info = ref.sub_axis_info
        return self.axis_sizes[ref.name] if info is None else info.size

    def sizes(self, refs) -> int:
        n = 1
        for ref in refs:
            n *= self.size(ref)
        return n

    def done(self) -> bool:
        return self.cur_mesh == self.out_mesh and not any(self.inp) and not any(self.out)

    def current(self) -> TensorSharding:
        return TensorSharding(self.cur_mesh, tuple(DimensionSharding(tuple(a)) for a in self.cur),
                              unreduced_axes=self.unreduced)

    def emit(self, kind: str, params) -> None:
        self.steps.append(ReshardStep(kind, params, self.current()))

    def run(self) -> list[ReshardStep]:
        for _ in range(2):
            if self.done():
                break
            self.all_slice()
            self.collective_permute()
            self.all_to_alls(allow_out_of_order=False)
            self.all_to_alls(allow_out_of_order=True)
            self.all_gather()
        return self.steps

    # -- helpers ------------------------------------------------------------------------------

    def fit(self, ref: AxisRef, cap: int) -> tuple[AxisRef | None, AxisRef | None, int]:
        """`getAxisWithinCapacity`: (the part within `cap`, the remainder, the capacity left)."""
        size = self.size(ref)
        if cap <= 1 or not _divisible(size, cap):
            return None, None, cap
        if cap >= size:
            return ref, None, cap // size
        within = AxisRef.sub(ref.name, ref.pre_size, cap)
        return within, AxisRef.sub(ref.name, ref.pre_size * cap, size // cap), 1

    def pop_back(self, current: list[AxisRef], axes: list[AxisRef], start: int) -> None:
        """`popBackFromCurrentAxes`: removes `axes[start:]` (maybe split) from the end of `current`."""
        for ref in reversed(axes[start:]):
            prefix = prefix_without_overlap(current[-1], ref)
            if prefix is not None:
                current[-1] = prefix
            else:
                current.pop()

    def distribute(self, front: bool, available: Callable[[int], list[AxisRef]],
                   consume: Callable[[AxisRef, int], None] | None = None) -> None:
        """`distributeInAxesWithinCapacity`."""
        split_added: list[AxisRef] = []
        for d in range(self.rank):
            ins = self.inp[d]
            at = 0 if front else len(ins)
            avail = available(d)
            j = 0
            while j < len(avail) and self.cap[d] > 1:
                within, remainder, self.cap[d] = self.fit(avail[j], self.cap[d])
                if within is None:
                    j += 1
                    continue
                del avail[j]
                ins.insert(at, within)
                at += 1
                self.in_set.add(within)
                if consume is not None:
                    consume(within, d)
                if remainder is not None:
                    split_added.append(within)
                    avail.insert(0, remainder)
                    j += 1
        _align(self.out, split_added, self.mesh)

    # -- all-slice ----------------------------------------------------------------------------

    def slice_for_all_to_all(self, src: int) -> tuple[int, list[AxisRef]] | None:
        """`getAxesToSliceForAllToAll`: out axes of a later all-to-all's target, sliced at `src`."""
        src_in = self.inp[src]
        if not src_in or self.out[src]:
            return None
        entry = self.out_pos.get(src_in[-1])
        if entry is None:
            return None
        tgt = entry[0]
        if self.inp[tgt]:
            return None
        tgt_out = self.out[tgt]
        # (`++llvm::find`: past a missing axis the std::list iterator wraps to the front.)
        start = tgt_out.index(src_in[-1]) + 1 if src_in[-1] in tgt_out else 0
        if start == len(tgt_out) or tgt_out[start] in self.in_set:
            return None
        i, o, common = len(src_in) - 1, start - 1, 1
        while i >= 0 and o >= 0 and src_in[i] == tgt_out[o]:
            common *= self.size(src_in[i])
            i, o = i - 1, o - 1
        for k in range(i, -1, -1):
            entry = self.out_pos.get(src_in[k])
            if entry is not None and entry[0] == tgt:
                return None
        end, added = start, 1
        while end < len(tgt_out) and tgt_out[end] not in self.in_set:
            added *= self.size(tgt_out[end])
            end += 1
        if self.shape[src] % (self.sizes(self.cur[src]) * added):
            return None
        self.cap[tgt] //= common * added
        return tgt, tgt_out[start:end]

    def all_slice(self) -> None:
        slicing: list[list[AxisRef]] = [[] for _ in range(self.rank)]
        found = False
        for d in range(self.rank):
            n_in, n_out = self.sizes(self.inp[d]), self.sizes(self.out[d])
            self.cap[d] = n_out // math.gcd(n_in, n_out)
        # 1. Slice at a source dim for a later all-to-all.
        for src in range(self.rank):
            taken = self.slice_for_all_to_all(src)
            if taken is None:
                continue
            found = True
            for ref in taken[1]:
                self.inp[src].append(ref)
                self.in_set.add(ref)
                _add_or_merge(slicing[src], ref, self.mesh)
                _add_or_merge(self.cur[src], ref, self.mesh)
        # 2. Slice out axes in their own dim while the capacity allows.
        available: list[AxisRef] = []
        for d in range(self.rank):
            ins, outs = self.inp[d], self.out[d]
            k = 0
            while k < len(outs):
                ref = outs[k]
                if ref in self.in_set:
                    k += 1
                    continue
                within, remainder, self.cap[d] = self.fit(ref, self.cap[d])
                if within is None:
                    available.append(ref)
                    k += 1
                    continue
                found = True
                _add_or_merge(slicing[d], within, self.mesh)
                _add_or_merge(self.cur[d], within, self.mesh)
                if not ins and k == 0:
                    del outs[0]
                else:
                    self.in_set.add(within)
                    ins.append(within)
                    outs[k] = within
                    k += 1
                if remainder is not None:
                    outs.insert(k, remainder)
                    k += 1
                    available.append(remainder)

        # 3. Slice the rest in the first dim with capacity.
        def consume(ref: AxisRef, d: int) -> None:
            nonlocal found
            found = True
            _add_or_merge(slicing[d], ref, self.mesh)
            _add_or_merge(self.cur[d], ref, self.mesh)

        self.distribute(False, lambda d: available, consume)
        self.out_pos = _positions(self.out)
        if found:
            self.emit("all_slice", ListOfAxisRefLists(tuple(map(tuple, slicing))))

    # -- collective-permute -------------------------------------------------------------------

    def should_permute(self) -> bool:
        avail_in = avail_out = None
        for d in range(self.rank):
            ins, outs = self.inp[d], self.out[d]
            if ins and outs and _divisible(self.size(ins[0]), self.size(outs[0])):
                return True  # condition 1
            for ref in outs:
                if ref not in self.in_set:
                    avail_out = ref
            last_dim, last_index, seen = None, 0, set()
            for ref in ins:
                entry = self.out_pos.get(ref)
                cur_dim = None
                if entry is not None:
                    cur_dim, cur_index = entry
                    if (cur_dim == d or cur_dim in seen) and (last_dim != cur_dim or cur_index != last_index + 1):
                        return True  # conditions 3 and 4
                    seen.add(cur_dim)
                    last_index = cur_index
                elif last_dim is not None and not outs:
                    return True  # condition 5
                else:
                    avail_in = ref
                last_dim = cur_dim
        return (avail_out is not None and avail_in is not None
                and _divisible(self.size(avail_out), self.size(avail_in)))  # condition 2

    def permute(self) -> None:
        avail_out: list[AxisRef] = []
        avail_in_per_dim: list[list[AxisRef]] = [[] for _ in range(self.rank)]
        self.in_set.clear()
        for d in range(self.rank):
            ins, outs, cur = self.inp[d], self.out[d], self.cur[d]
            self.cap[d] = self.sizes(ins)
            used = self.cap[d]
            self.pop_back(cur, ins, 0)
            while self.cap[d] > 1 and outs:
                within, remainder, self.cap[d] = self.fit(outs[0], self.cap[d])
                if within is None:
                    break
                del outs[0]
                _add_or_merge(cur, within, self.mesh)
                if remainder is not None:
                    outs.insert(0, remainder)
            avail_out.extend(outs)
            used //= self.cap[d]
            ins[:] = [a for a in ins if a not in self.out_pos]
            avail_in = avail_in_per_dim[d]
            while used > 1 and ins:
                within, remainder, used = self.fit(ins[0], used)
                if within is None:
                    break
                del ins[0]
                avail_in.append(within)
                if remainder is not None:
                    ins.insert(0, remainder)
            avail_in[:0] = ins
            ins.clear()
        self.distribute(False, lambda d: avail_out)
        self.distribute(True, lambda d: avail_in_per_dim[d])
        rest = [a for axes in avail_in_per_dim for a in axes]
        self.distribute(True, lambda d: rest)
        self.out_pos = _positions(self.out)
        for ins, cur in zip(self.inp, self.cur):
            for ref in ins:
                _add_or_merge(cur, ref, self.mesh)

    def collective_permute(self) -> None:
        if self.should_permute():
            self.permute()
        elif self.cur_mesh == self.out_mesh:
            return
        self.cur_mesh = self.out_mesh  # also a device reorder between meshes of the same axes
        self.emit("collective_permute", None)

    # -- all-to-all ---------------------------------------------------------------------------

    def all_to_all_param(self, src: int, allow_out_of_order: bool) -> AllToAllParam | None:
        src_in = self.inp[src]
        k, tgt = len(src_in), None
        while k > 0:
            entry = self.out_pos.get(src_in[k - 1])
            if entry is None or entry[0] == src or (tgt is not None and entry[0] != tgt):
                break
            tgt = entry[0]
            k -= 1
        if tgt is None:
            return None
        moving = src_in[k:]
        tgt_out, tgt_in = self.out[tgt], self.inp[tgt]
        # (`std::equal` reads past a shorter target list; the sentinel never compares equal.)
        if not allow_out_of_order and tgt_out[: len(moving)] != moving:
            return None
        self.pop_back(self.cur[src], src_in, k)
        axes: list[AxisRef] = []
        for ref in moving:
            _add_or_merge(axes, ref, self.mesh)
            _add_or_merge(self.cur[tgt], ref, self.mesh)
            self.in_set.discard(ref)
            if not tgt_in and tgt_out and tgt_out[0] == ref:
                del tgt_out[0]
            else:
                tgt_in.append(ref)
                self.in_set.add(ref)
        del src_in[k:]
        return AllToAllParam(tuple(axes), src, tgt)

    def all_to_alls(self, allow_out_of_order: bool) -> None:
        for src in range(self.rank):
            while (param := self.all_to_all_param(src, allow_out_of_order)) is not None:
                self.emit("all_to_all", AllToAllParamList((param,)))

    # -- all-gather ---------------------------------------------------------------------------

    def gathering_axes(self, d: int) -> list[AxisRef]:
        ins = self.inp[d]
        if not ins:
            return []
        start = len(ins)
        if ins[-1] not in self.out_pos:
            # jaxlib's reverse-iterator loop steps the wrong way: after the last axis it
            # wraps to the list's front, so the whole dim is gathered (spec §5.3).
            self.in_set.discard(ins[-1])
            start = 0
        self.pop_back(self.cur[d], ins, start)
        axes: list[AxisRef] = []
        for ref in ins[start:]:
            _add_or_merge(axes, ref, self.mesh)
        del ins[start:]
        return axes

    def all_gather(self) -> None:
        per_dim = [tuple(self.gathering_axes(d)) for d in range(self.rank)]
        if any(per_dim):
            self.emit("all_gather", ListOfAxisRefLists(tuple(per_dim)))


# -- the pass's decision for one reshard ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReshardDecision:
    """What `sdy-reshard-to-collectives` does with one `sdy.reshard`."""

    action: str
    """`keep` (left as is), `erase` (uses take the operand), `fail` (the pass fails), `plan`."""
    steps: tuple[ReshardStep, ...] = ()
    done: bool = True
    """Whether the planner reached the target (its `isDone()`)."""


def _fully_replicated(s: TensorSharding) -> bool:
    return all(not d.axes for d in s.dim_shardings)


def equivalent_shardings(a: TensorSharding | None, b: TensorSharding) -> bool:
    """`isEquivalent` as jaxlib 0.10.2 has it: unreduced, replicated and open/closed ignored."""
    if a is None or _fully_replicated(a):
        return _fully_replicated(b)
    return (a.mesh_or_ref == b.mesh_or_ref and a.rank == b.rank
            and all(x.axes == y.axes for x, y in zip(a.dim_shardings, b.dim_shardings)))


def _equivalent_on_mesh(a: TensorSharding, b: TensorSharding, lookup: Callable[[object], Mesh]) -> bool:
    if a.mesh_or_ref == b.mesh_or_ref:
        return True
    ma, mb = lookup(a.mesh_or_ref), lookup(b.mesh_or_ref)
    return ma.is_maximal == mb.is_maximal and ma.axes == mb.axes


def plan_reshard(source: TensorSharding | None, target: TensorSharding, lookup: Callable[[object], Mesh],
                 shape: tuple[int, ...], *, keep_redundant_reshards: bool = False) -> ReshardDecision:
    """The pass's handling of `sdy.reshard` from `source` (the operand's sharding, `None` when it
    has none) to `target`, for a value of `shape`; `lookup` maps a sharding's mesh (name or
    inlined `Mesh`) to its `Mesh`."""
    # The conversion target's legality first.
    if keep_redundant_reshards and equivalent_shardings(source, target):
        return ReshardDecision("keep")
    if not _fully_replicated(target) and source is not None and not _equivalent_on_mesh(source, target, lookup):
        return ReshardDecision("keep")
    # The pattern.
    if source is None:
        source = TensorSharding.replicated(target.mesh_or_ref, len(shape), is_closed=False)
    if source.rank != target.rank:
        return ReshardDecision("fail")
    if _fully_replicated(target):
        if _fully_replicated(source):
            return ReshardDecision("erase")
        target = TensorSharding.replicated(source.mesh_or_ref, source.rank)
    inserter = _Inserter(source, target, lookup(source.mesh_or_ref), shape)
    steps = inserter.run()
    return ReshardDecision("plan", tuple(steps), inserter.done())


# -- the Python API ---------------------------------------------------------------------------


def _dtype(dtype) -> "object":
    import numpy as np

    from tiling.dtypes import ELEMENT_TYPES, mlir_element_type  # the project's one dtype table

    if isinstance(dtype, str):
        et = ELEMENT_TYPES.get(dtype.lower()) or mlir_element_type(dtype)
        if et is not None:
            return et.dtype
    try:
        return np.dtype(dtype)
    except TypeError:
        raise ShardingError(f"unknown dtype: {dtype!r} (use a numpy dtype or bf16, f32, s8, ...)") from None


@dataclass(frozen=True)
class ReshardPlan:
    """The collectives that take an array from `source` to `target`, as Shardy plans them.

    `steps` are exactly jaxlib 0.10.2's ops for `sdy.reshard` (in order, with their
    `out_sharding`s); `reaches_target` is False where Shardy's plan stops short (size-1 axes,
    a few non-power-of-two cases, a fully replicated target's unreduced axes; spec §5.5).
    `error` is jaxlib's verifier message when the plan is one its verifier rejects.
    """

    source: TensorSharding
    target: TensorSharding
    mesh: Mesh | MeshTable
    shape: tuple[int, ...]
    dtype: object
    steps: tuple[ReshardStep, ...]
    reaches_target: bool
    error: str | None = None
    transfers: tuple | None = None
    """The messages (`collectives.Transfer`) of an executed plan (`DeviceMesh.reshard`)."""
    uneven: str = "padded"
    """How uneven dims are cut (`padded`: XLA, `ragged`: DTensor); the traffic counts real bytes."""
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def itemsize(self) -> int:
        import numpy as np

        return np.dtype(self.dtype).itemsize

    def final_sharding(self) -> TensorSharding:
        return self.steps[-1].out_sharding if self.steps else self.source

    def mesh_of(self, sharding: TensorSharding) -> Mesh:
        from ._placement import resolve

        return resolve(sharding, self.mesh)

    @property
    def traffic(self):
        """Bytes per device and step, bytes crossing each mesh axis, messages (an
        `xarray.Dataset`), from shapes alone (spec §3.1). Per device in closed form
        (`sharding._traffic`), so an all-gather over 512 of 4096 devices (2M messages) takes a
        few ms; per message only where the closed form does not apply (a result mesh in another
        device order, sub-axes that do not nest)."""
        if "traffic" not in self._cache:
            from .cost import plan_traffic

            self._cache["traffic"] = plan_traffic(self)
        return self._cache["traffic"]

    def cost(self, links=None, *, algorithm: str = "ring"):
        """Alpha-beta time per step (seconds); see `sharding.cost.alpha_beta`."""
        from .cost import alpha_beta

        return alpha_beta(self, links, algorithm=algorithm)

    def dtensor_cost(self, **kwargs):
        """PyTorch DTensor's `redistribute_cost` for the same reshard (µs); see `sharding.cost`."""
        from .cost import dtensor_redistribute_cost

        return dtensor_redistribute_cost(self, **kwargs)

    def report(self, links=None) -> str:
        """A text table: each step, its bytes and messages, its estimated time."""
        from .cost import report

        return report(self, links)

    def plot(self, path: str, links=None):
        """Saves a picture of bytes per device per step and time per step."""
        from .cost import plot

        return plot(self, path, links)

    def __str__(self) -> str:
        return "\n".join(map(str, self.steps))


def _resolve(s: TensorSharding, mesh, what: str) -> Mesh:
    from ._placement import resolve

    if not isinstance(s, TensorSharding):
        raise ShardingError(f"expected a TensorSharding for the {what}, got: {type(s).__name__}")
    return resolve(s, mesh)


def reshard_plan(source: TensorSharding | str, target: TensorSharding | str, mesh, shape, *,
                 dtype="float32", uneven: str = "padded") -> ReshardPlan:
    """The collectives Shardy's `sdy-reshard-to-collectives` emits to reshard an array of
    `shape` from `source` to `target` (pure: no data, nothing per device).

    `mesh` is a `Mesh` (bound to whatever name the shardings use) or a `MeshTable` (two meshes
    of the same axes in different device orders reshard with a collective-permute).
    Refuses, with a `ShardingError`: shardings over different devices or over meshes of
    different axes (Shardy keeps such reshards), different unreduced axes (jaxlib rewrites
    them silently), shapes that do not fit the shardings.
    `uneven="ragged"` (DTensor's ragged shards, full axes only) changes the traffic, not the steps.
    """
    from ._placement import check_shape
    from ._ragged import check_full_axes, check_uneven
    from .verify import verify

    if isinstance(source, str):
        source = TensorSharding.parse(source)
    if isinstance(target, str):
        target = TensorSharding.parse(target)
    if isinstance(mesh, str):
        from .__main__ import parse_mesh_arg

        mesh = parse_mesh_arg(mesh)
    dims = check_shape(shape)
    if check_uneven(uneven) == "ragged":
        check_full_axes(source)
        check_full_axes(target)
    ms, mt = _resolve(source, mesh, "source"), _resolve(target, mesh, "target")
    for s, m, what in ((source, ms, "source"), (target, mt, "target")):
        try:
            verify(s, mesh=m, shape=dims)
        except ShardingError as e:
            raise ShardingError(f"the {what} sharding {s} does not fit {m.body()} and shape {list(dims)}: {e}") from None
    if not same_device_set(ms, mt):
        raise ShardingError(f"the source is over devices {sorted(ms.devices)} ({ms.body()}), the target over "
                            f"{sorted(mt.devices)} ({mt.body()}): a reshard keeps the devices")
    if tuple(source.unreduced_axes) != tuple(target.unreduced_axes):
        raise ShardingError(f"the source has unreduced axes {{{', '.join(map(str, source.unreduced_axes))}}}, the "
                            f"target {{{', '.join(map(str, target.unreduced_axes))}}}: a reshard does not reduce "
                            "(all-reduce first); jaxlib 0.10.2 would drop the annotation silently")
    lookup = {source.mesh_or_ref: ms, target.mesh_or_ref: mt}.__getitem__
    decision = plan_reshard(source, target, lookup, dims)
    if decision.action == "keep":
        raise ShardingError(f"Shardy does not reshard between meshes of different axes: {ms.body()} and {mt.body()}")
    reaches = decision.done and (decision.action == "erase" or tuple(target.unreduced_axes) == tuple(
        decision.steps[-1].out_sharding.unreduced_axes if decision.steps else source.unreduced_axes))
    error = check_steps(source, decision.steps, lookup, dims)
    return ReshardPlan(source, target, mesh, dims, _dtype(dtype), decision.steps, reaches, error, uneven=uneven)


def check_steps(source: TensorSharding, steps, lookup: Callable[[object], Mesh], shape) -> str | None:
    """The verifier message jaxlib gives the first emitted op that breaks a rule, if any (spec
    §5.5): an `out_sharding` the sharding verifier rejects (overlapping sub-axes), a
    collective-permute whose sharded sizes differ or that only renames the mesh."""
    from .verify import verify

    prev = source
    for step in steps:
        mesh = lookup(step.out_sharding.mesh_or_ref)
        try:
            verify(step.out_sharding, mesh=mesh, shape=shape)
        except ShardingError as e:
            return f"'sdy.{step.kind}' op {getattr(e, 'message', str(e))}"
        if step.kind == "collective_permute":
            pm = lookup(prev.mesh_or_ref)
            if step.out_sharding.mesh_or_ref != prev.mesh_or_ref and device_order(pm) == device_order(mesh):
                return "'sdy.collective_permute' op result mesh name is different but same device ids as operand"
            for d, (a, b) in enumerate(zip(prev.dim_shardings, step.out_sharding.dim_shardings)):
                na, nb = a.sharded_size(pm), b.sharded_size(mesh)
                if a.axes != b.axes and na != nb:
                    return (f"'sdy.collective_permute' op sharded size of result doesn't match operand on "
                            f"dimension {d}: {nb} != {na}")
        prev = step.out_sharding
    return None
