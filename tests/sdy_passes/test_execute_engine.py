"""The per-device engine of `sdy_passes.execute` (spec execute.md §1.3, §3, §9.2): values held
once per distinct shard, the dask backend bit-identical to the eager one, `keep_values`,
`ShardedArray`/dask arguments, and collectives inside `while`/`case` of a shard_map body
against JAX on 8 CPU devices (programs lowered live in a child process)."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest

from sdy_passes.errors import ExecutionError
from sdy_passes.execution import execute
from sdy_passes.interpreter import _core
from sharding import DeviceMesh
from tests.conftest import needs_shared
from tests.jaxlib_child import cached, run_child
from tests.sdy_passes import execute_oracle
from tests.sdy_passes.test_execute import MATMUL, PASSING, _case, _check_devices

ORACLE = execute_oracle.oracle_module()

_SHARD_MAP = """
import os
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import PartitionSpec as P
mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Explicit,) * 2)

def loop_psum(a):  # a collective inside a fori_loop (stablehlo.while) of the shard_map body
    return jax.lax.fori_loop(0, 3, lambda i, c: jax.lax.psum(c, "y") * 0.5 + c, a)

def loop_ppermute(a):
    perm = [(j, (j + 1) % 4) for j in range(4)]
    return jax.lax.fori_loop(0, 2, lambda i, c: jax.lax.ppermute(c, "y", perm) + c, a)

def cond_psum(a):  # a replicated predicate: every device takes the same branch of the case
    s = jax.lax.psum(jnp.sum(a), ("x", "y"))
    return jax.lax.cond(s > 0, lambda c: jax.lax.psum(c, "x"), lambda c: c - 1, a)

def divergent_loop_psum(a):  # devices loop 1 or 2 times by x; the psum over y stays in the group
    n = jax.lax.axis_index("x") + 1
    return jax.lax.fori_loop(0, n, lambda i, c: jax.lax.psum(c, "y") + c, a)

def divergent_cond_psum(a):
    return jax.lax.cond(jax.lax.axis_index("x") == 0, lambda c: jax.lax.psum(c, "y"), lambda c: c * 3, a)

RESULT = {}
rng = np.random.default_rng(PAYLOAD["seed"])
for f in (loop_psum, loop_ppermute, cond_psum, divergent_loop_psum, divergent_cond_psum):
    a = rng.integers(-8, 8, (4, 8)).astype(np.float32)
    g = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"), check_vma=False))
    x = jax.device_put(a, jax.NamedSharding(mesh, P("x", "y")))
    out = g(x)
    RESULT[f.__name__] = {"text": g.lower(x).as_text(), "input": a.tolist(),
                          "shards": {str(s.device.id): np.asarray(s.data).tolist() for s in out.addressable_shards}}
"""

SHARD_MAP_PROGRAMS = ["loop_psum", "loop_ppermute", "cond_psum", "divergent_loop_psum", "divergent_cond_psum"]


@pytest.fixture(scope="module")
def shard_map_programs():
    payload = {"seed": 0}
    return cached([_SHARD_MAP, payload], lambda: run_child(
        _SHARD_MAP, payload, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}))


@pytest.mark.parametrize("backend", [None, "dask"])
@pytest.mark.parametrize("name", SHARD_MAP_PROGRAMS)
def test_collectives_inside_control_flow_of_shard_map(shard_map_programs, name, backend):
    p = shard_map_programs[name]
    run = execute(p["text"], np.array(p["input"], np.float32), backend=backend)
    for d, buf in run.outputs[0].per_device():
        assert np.array_equal(buf, np.array(p["shards"][str(d)], np.float32)), (name, d)


@pytest.fixture(scope="module")
def cases():
    return execute_oracle.sharded_cases()


def test_values_are_held_once_per_distinct_shard():
    # a 2x4 mesh; %a sharded over y only: 4 distinct shards, the elementwise ops run stacked once
    text = """
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%a: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}) -> tensor<8x4xf32> {
  %0 = stablehlo.multiply %a, %a : tensor<8x4xf32>
  %1 = stablehlo.add %0, %a : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}"""
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    calls = []
    real = _core.Eager.evaluate

    def counting(fn, op, combos, devices, ctx, stacked):
        calls.append((op.name, len(combos), stacked is not None))
        return real(fn, op, combos, devices, ctx, stacked)
    _core.Eager.evaluate = staticmethod(counting)
    try:
        run = execute(text, a, keep_values=True)
        x, w = a.reshape(16, 2), a.reshape(2, 16)[:, :8].repeat(8, axis=0)
        matmul = execute(MATMUL, x.reshape(8, 4).repeat(4, axis=1), w)
    finally:
        _core.Eager.evaluate = staticmethod(real)
    assert calls[:2] == [("stablehlo.multiply", 4, True), ("stablehlo.add", 4, True)]
    # the dot of 8 distinct lhs shards with 4 rhs shards: once, over the 8 stacked pairs
    assert ("stablehlo.dot_general", 8, True) in calls[2:]
    assert np.array_equal(matmul.global_outputs()[0], x.reshape(8, 4).repeat(4, axis=1) @ w)
    assert np.array_equal(run.global_outputs()[0], a * a + a)
    held = run.values("%0")
    assert sorted(held) == list(range(8))
    assert held[0] is held[4]  # devices apart only along x hold one buffer
    assert np.array_equal(held[1], (a * a)[2:4])
    assert np.array_equal(run.values("%arg0")[2], a[4:6])
    with pytest.raises(ExecutionError, match="no value %9"):
        run.values("%9")
    with pytest.raises(ExecutionError, match="keep_values=True"):
        execute(text, a).values("%0")


def test_sharded_array_dask_and_mesh_dict_arguments():
    rng = np.random.default_rng(1)
    a, b = rng.integers(-5, 5, (8, 16)).astype(np.float32), rng.integers(-5, 5, (16, 8)).astype(np.float32)
    dm = DeviceMesh('<["x"=2, "y"=4]>')
    want = a @ b
    same = dm.shard(a, '#sdy.sharding<@mesh, [{"x"}, {"y"}]>')
    other = dm.shard(b, '#sdy.sharding<@mesh, [{}, {"x"}]>')
    run = execute(MATMUL, same, other, mesh={"mesh": dm})
    assert np.array_equal(run.global_outputs()[0], want)
    assert list(run.input_reshards) == [1]  # b moved from [{}, {"x"}] to [{"y"}, {}]
    assert run.inputs[0] is same
    lazy = execute(MATMUL, da.from_array(a, chunks=(4, 4)), b, backend="dask")
    assert np.array_equal(lazy.global_outputs()[0], want)
    eager_from_dask = execute(MATMUL, da.from_array(a), da.from_array(b))
    assert np.array_equal(eager_from_dask.global_outputs()[0], want)
    with pytest.raises(ExecutionError, match="expected {'mesh': DeviceMesh}"):
        execute(MATMUL, a, b, mesh={"other": dm})
    with pytest.raises(ExecutionError, match="backend must be"):
        execute(MATMUL, a, b, backend="ray")


def test_max_tasks_refuses_before_building():
    a, b = np.zeros((8, 16), np.float32), np.zeros((16, 8), np.float32)
    with pytest.raises(ExecutionError, match=r"about [\d,]+ tasks, more than max_tasks=10"):
        execute(MATMUL, a, b, backend="dask", max_tasks=10)


def test_collective_groups_that_split_across_paths_are_located():
    # devices loop partition_id % 2 times; the psum over all devices inside cannot meet
    text = """
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%a: tensor<8xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) -> tensor<8xi32> {
  %r = sdy.manual_computation(%a) in_shardings=[<@mesh, [{"y"}]>] out_shardings=[<@mesh, [{"y"}]>] manual_axes={"x", "y"} (%b: tensor<2xi32>) {
    %p = stablehlo.partition_id : tensor<ui32>
    %two = stablehlo.constant dense<2> : tensor<ui32>
    %m = stablehlo.remainder %p, %two : tensor<ui32>
    %n = stablehlo.convert %m : (tensor<ui32>) -> tensor<i32>
    %z = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%i = %z, %x = %b) : tensor<i32>, tensor<2xi32>
      cond {
        %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      } do {
        %one = stablehlo.constant dense<1> : tensor<i32>
        %j = stablehlo.add %i, %one : tensor<i32>
        %y = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>}> ({
        ^bb0(%u: tensor<i32>, %v: tensor<i32>):
          %s = stablehlo.add %u, %v : tensor<i32>
          stablehlo.return %s : tensor<i32>
        }) : (tensor<2xi32>) -> tensor<2xi32>
        stablehlo.return %j, %y : tensor<i32>, tensor<2xi32>
      }
    sdy.return %0#1 : tensor<2xi32>
  } : (tensor<8xi32>) -> tensor<8xi32>
  return %r : tensor<8xi32>
}"""
    with pytest.raises(ExecutionError, match=r"divergent control flow: devices \{0, 2, 4, 6\} of replica group") as e:
        execute(text, np.zeros(8, np.int32))
    assert e.value.location is not None


def _bits(a) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def test_lazy_values_and_one_device():
    rng = np.random.default_rng(2)
    a, b = rng.integers(-5, 5, (8, 16)).astype(np.float32), rng.integers(-5, 5, (16, 8)).astype(np.float32)
    lazy = execute(MATMUL, a, b, backend="dask", keep_values=True)
    eager = execute(MATMUL, a, b, keep_values=True)
    assert all(_bits(lazy.values("%0")[d]) == _bits(eager.values("%0")[d]) for d in range(8))
    assert _bits(lazy.outputs[0].local(5)) == _bits((a @ b)[4:8])



STACKED = {  # per program, ops it runs over several distinct shards (once, stacked): every such op
    "concatenate": {"concatenate"}, "halo_pad": {"pad"}, "gather": {"gather", "broadcast_in_dim", "reduce"},
    "sharded_dynamic_update_slice": {"dynamic_update_slice", "slice"}, "cumsum_reduce_window": {"reduce_window"},
    "reverse": {"reverse"}, "scatter_add": {"scatter"}, "sharded_sort": {"sort"},
    "transpose": {"transpose"}, "matmul": {"dot_general"}}
PROGRAMS = [("cases", n) for n in PASSING] + [("variants", n) for n, _ in (
    execute_oracle.UNEVEN_PROGRAMS + execute_oracle.HALO_PROGRAMS + execute_oracle.STACKED_PROGRAMS)]


@pytest.fixture(scope="module")
def variants():
    return execute_oracle.variant_cases()


@needs_shared(execute_oracle.ORACLE)
@pytest.mark.parametrize("folder, name", PROGRAMS)
def test_stacked_evaluators_hold_the_bits_of_one_call_per_shard(request, folder, name):
    # every value of a sharded JAX program (or uneven/halo/stacked variant): the ops run once over
    # their distinct shards stacked hold, on every device, the bits of one call per shard (and JAX's)
    c, text, inputs = _case(request.getfixturevalue(folder), name)
    real = _core.Eager.evaluate
    ran = set()

    def one_by_one(fn, op, combos, devices, ctx, stacked):
        return real(fn, op, combos, devices, ctx, None)

    def noting(fn, op, combos, devices, ctx, stacked):
        if stacked is not None:
            ran.add(op.name.removeprefix("stablehlo."))
        return real(fn, op, combos, devices, ctx, stacked)
    runs = []
    for evaluate in (noting, one_by_one):
        _core.Eager.evaluate = staticmethod(evaluate)
        try:
            runs.append(execute(text, *inputs, keep_values=True))
        finally:
            _core.Eager.evaluate = staticmethod(real)
    stacked, single = runs
    held = [n for n, v in stacked._kept[1].items() if v in stacked._kept[0]]
    assert held
    for value in held:
        a, b = stacked.values(value), single.values(value)
        assert a.keys() == b.keys() and all(_bits(a[d]) == _bits(b[d]) for d in a), (name, value)
    _check_devices(stacked, c)
    assert ran >= STACKED.get(name, set()), STACKED[name] - ran


@needs_shared(execute_oracle.ORACLE)
@pytest.mark.parametrize("folder, name", PROGRAMS)
def test_dask_backend_is_bit_identical_to_eager(request, folder, name):
    # and holds every value in as many distinct buffers (chunks) as the eager engine: values
    # selected by offsets of partition_id and results of all_gather/all_reduce are not per device
    _, text, inputs = _case(request.getfixturevalue(folder), name)
    eager = execute(text, *inputs, keep_values=True)
    lazy = execute(text, *inputs, backend="dask", keep_values=True)
    for e, z in zip(eager.outputs, lazy.outputs):
        assert z.data.chunks is not None  # lazy until asked
        for (d, a), (d2, b) in zip(e.per_device(), z.per_device()):
            assert d == d2 and _bits(a) == _bits(b), (name, d)
    for a, b in zip(eager.checksums(), lazy.checksums()):
        assert a.equals(b)
    d = int(eager.outputs[0].index_map().__iter__().__next__())
    assert _bits(lazy.outputs[0].local(d)) == _bits(eager.outputs[0].local(d))
    (kept, names, _, _), (lazy_kept, lazy_names, _, _) = eager._kept, lazy._kept
    halo = name in dict(execute_oracle.HALO_PROGRAMS)
    for n, v in names.items():
        if v in kept:
            lazy_buffers, buffers = lazy_kept[lazy_names[n]].buffers, kept[v].buffers
            if halo and len(lazy_buffers) != len(buffers):
                # a select between a device's tile and its neighbour's edge rows: the eager engine
                # merges some results that happen to be equal by content, which dask cannot know
                # before computing them; both hold the same contents
                lazy_buffers = {_bits(a) for a in lazy.values(n).values()}
                buffers = {_bits(a) for a in eager.values(n).values()}
            assert len(lazy_buffers) == len(buffers), (name, n)
