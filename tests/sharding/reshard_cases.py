"""Random `(meshes, source, target, shape)` reshard triples, and jaxlib's plan for them.

`random_triple(rng)` draws what the issue asks for: meshes of 1-4 axes of sizes 1-8 (non-powers
of two too), sometimes `device_ids`, sometimes a target on a second mesh that differs only in
device order; source/target shardings with sub-axes, replicated axes, open/closed dims,
priorities, shared unreduced axes (sometimes different ones), sometimes no source sharding;
uneven shapes. `jaxlib_plans(triples)` runs `sdy-reshard-to-collectives` on each in one child.
"""

from __future__ import annotations

import math
import random

from sharding import AxisRef, DimensionSharding, Mesh, MeshAxis, MeshTable, TensorSharding
from sharding.axes import sort_and_merge
from sharding.reshard import ReshardDecision, plan_reshard
from tests.jaxlib_child import run_child

NAMES = ["x", "y", "z", "w"]


def _pieces(rng: random.Random, axis: MeshAxis) -> list[AxisRef]:
    """The axis whole, or cut into sub-axes (every factorisation is possible)."""
    if axis.size < 4 or rng.random() < 0.5:
        return [AxisRef(axis.name)]
    factors, rest = [], axis.size
    while rest > 1:
        d = rng.choice([f for f in range(2, rest + 1) if rest % f == 0])
        factors.append(d)
        rest //= d
    if len(factors) == 1:
        return [AxisRef(axis.name)]
    out, pre = [], 1
    for f in factors:
        out.append(AxisRef.sub(axis.name, pre, f))
        pre *= f
    return out


def _sharding(rng, mesh: Mesh, name: str, rank: int, unreduced: list[AxisRef], used_by_unreduced: set[str]):
    lists: list[list[AxisRef]] = [[] for _ in range(rank + 1)]  # dims, then replicated
    for axis in mesh.axes:
        if axis.name in used_by_unreduced:
            continue
        for piece in _pieces(rng, axis):
            where = rng.randrange(-1, rank + 1)
            if where >= 0:
                lists[where].append(piece)
    dims = []
    for d in range(rank):
        axes = lists[d][:]
        rng.shuffle(axes)
        merged: list[AxisRef] = []
        for a in axes:  # consecutive sub-axes must be merged (the verifier says so)
            if merged and merged[-1].name == a.name and merged[-1].sub_axis_info and a.sub_axis_info \
                    and merged[-1].sub_axis_info.next_pre_size == a.pre_size:
                rng.shuffle(axes)
                return _sharding(rng, mesh, name, rank, unreduced, used_by_unreduced)
            merged.append(a)
        closed = rng.random() < 0.7
        priority = rng.choice([None, None, None, 0, 1, 3]) if (merged or not closed) else None
        dims.append(DimensionSharding(tuple(merged), closed, priority))
    return TensorSharding(name, tuple(dims), sort_and_merge(lists[rank], mesh), tuple(unreduced))


def random_triple(rng: random.Random):
    n = rng.randint(1, 4)
    names = rng.sample(NAMES, n)
    sizes = [rng.choice([1, 2, 2, 3, 4, 4, 5, 6, 8]) for _ in names]
    while math.prod(sizes) > 256:
        sizes[sizes.index(max(sizes))] //= 2
    axes = tuple(MeshAxis(a, s) for a, s in zip(names, sizes))
    total = math.prod(sizes)
    ids = tuple(rng.sample(range(total), total)) if total > 1 and rng.random() < 0.2 else ()
    mesh = Mesh(axes, ids)
    meshes = [("mesh", mesh)]
    target_mesh = "mesh"
    if total > 1 and rng.random() < 0.15:
        other = tuple(rng.sample(range(total), total))
        if Mesh(axes, other).devices != mesh.devices:
            meshes.append(("mesh2", Mesh(axes, other)))
            target_mesh = "mesh2"
    rank = rng.randint(1, 3)
    shape = tuple(rng.choice([1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 30, 48]) for _ in range(rank))
    # Unreduced axes: usually the same full axes on both sides, sometimes different ones.
    unreduced = [AxisRef(a.name) for a in axes if rng.random() < 0.12]
    used = {a.name for a in unreduced}
    source = _sharding(rng, mesh, "mesh", rank, unreduced, used)
    target_unreduced = unreduced if rng.random() < 0.9 else [AxisRef(a.name) for a in axes if rng.random() < 0.2]
    t_used = used | {a.name for a in target_unreduced}
    target = _sharding(rng, mesh, target_mesh, rank, target_unreduced, t_used)
    if rng.random() < 0.1:
        source = None
    return MeshTable(tuple(meshes)), source, target, shape


def module_text(table: MeshTable, source, target, shape) -> str:
    ty = "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"
    attr = "" if source is None else f" {{sdy.sharding = {source}}}"
    return (f"{table}\nfunc.func @f(%arg0: {ty}{attr}) -> {ty} {{\n"
            f"  %0 = sdy.reshard %arg0 {target.body()} : {ty}\n  return %0 : {ty}\n}}\n")


_CHILD = """
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir, passmanager
ctx = jax_mlir.make_ir_context()
ctx.enable_multithreading(False)
RESULT = []
with ctx, ir.Location.unknown():
    for text, pipeline in PAYLOAD:
        try:
            module = ir.Module.parse(text)
            passmanager.PassManager.parse(pipeline).run(module.operation)
        except ir.MLIRError as e:
            RESULT.append({"error": [d.message for d in e.error_diagnostics] or [str(e)]})
            continue
        RESULT.append({"ok": module.operation.get_asm()})
"""

PIPELINE = "builtin.module(func.func(sdy-reshard-to-collectives{keep-redundant-reshards=%s}))"


def jaxlib_plans(texts: list[str], keep_redundant: bool = False) -> list[dict]:
    pipeline = PIPELINE % ("true" if keep_redundant else "false")
    return run_child(_CHILD, [(t, pipeline) for t in texts])


def ops_of(asm: str) -> list[str]:
    """The ops of func `f` in jaxlib's pretty output, as `str(step)` prints them (no result,
    operand or type); `keep` when the reshard stayed, `erase` when none was emitted."""
    body = asm.split("func.func @f", 1)[1]
    out = []
    for line in body.splitlines()[1:]:
        line = line.strip()
        if line.startswith("return"):
            if not out and "%arg0" in line:
                return ["erase"]
            break
        op = line.split(" = ", 1)[1]
        op = op.rsplit(" : tensor<", 1)[0]
        kind, rest = op.split(" ", 1)
        if kind == "sdy.reshard":
            return ["keep"]
        # Drop the operand (`%arg0` / `%3`): it is the token just before `out_sharding=`.
        head, tail = rest.split(" out_sharding=", 1)
        head = head.rsplit(" ", 1)[0] if " " in head else ""
        out.append(" ".join(p for p in (kind, head, f"out_sharding={tail}") if p))
    return out


def our_ops(table: MeshTable, source, target, shape, keep_redundant: bool = False) -> tuple[ReshardDecision, list[str]]:
    decision = plan_reshard(source, target, table.__getitem__, shape, keep_redundant_reshards=keep_redundant)
    if decision.action in ("keep", "erase") or (decision.action == "plan" and not decision.steps):
        return decision, [decision.action if decision.action != "plan" else "erase"]
    return decision, [str(s) for s in decision.steps]
