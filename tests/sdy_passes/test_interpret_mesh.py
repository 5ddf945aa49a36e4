"""`interpret(..., mesh=...)` and `ShardedArray` arguments (spec execute.md §1.1): a shard_map
body runs per device on the module's mesh or on the one given, whose device order is the
devices' order (the partition ids `stablehlo.partition_id` reads); checked against JAX on 8 CPU
devices."""

from __future__ import annotations

import re

import numpy as np
import pytest

import sdy_passes
from sdy_passes.errors import ExecutionError
from sharding import DeviceMesh, TensorSharding
from tests.jaxlib_child import cached, run_child

_PROGRAM = """
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import PartitionSpec as P
mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)

def body(a):  # depends on where each device sits: axis_index, a ring permute, a psum
    i = jax.lax.axis_index("y") * 10 + jax.lax.axis_index("x")
    b = jax.lax.ppermute(a, "y", [(j, (j + 1) % 4) for j in range(4)])
    return b * 2 + i.astype(a.dtype) + jax.lax.psum(a, "x")

g = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y")))
a = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
RESULT = {"text": g.lower(a).as_text(), "input": a.tolist(), "output": np.asarray(g(a)).tolist()}
"""


@pytest.fixture(scope="module")
def program():
    return cached([_PROGRAM], lambda: run_child(
        _PROGRAM, {}, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}))


@pytest.mark.jaxlib
def test_shard_map_on_the_modules_mesh_and_on_a_given_one(program):
    text, x, want = program["text"], np.array(program["input"], np.float32), np.array(program["output"])
    for mesh in (None, '<["x"=2, "y"=4]>', DeviceMesh('<["x"=2, "y"=4]>')):
        (got,) = sdy_passes.interpret(text, x, mesh=mesh)
        assert np.array_equal(got, want)
    # another device order: the same as writing it into the module, and not JAX's iota order
    order = "device_ids=[7, 6, 5, 4, 3, 2, 1, 0]"
    (given,) = sdy_passes.interpret(text, x, mesh=f'<["x"=2, "y"=4], {order}>')
    written = text.replace('sdy.mesh @mesh = <["x"=2, "y"=4]>', f'sdy.mesh @mesh = <["x"=2, "y"=4], {order}>')
    assert written != text
    (in_module,) = sdy_passes.interpret(written, x)
    assert np.array_equal(given, in_module) and not np.array_equal(given, want)


def test_sharded_array_arguments_are_unsharded():
    text = ("func.func @main(%a: tensor<6x4xi32>) -> tensor<6x4xi32> {\n"
            "  %0 = stablehlo.multiply %a, %a : tensor<6x4xi32>\n  return %0 : tensor<6x4xi32>\n}\n")
    x = np.arange(24, dtype=np.int32).reshape(6, 4)
    dm = DeviceMesh('<["x"=4, "y"=2]>')
    sx = dm.shard(x, TensorSharding.parse('<@mesh, [{"x"}, {"y"}]>'))  # uneven over x: padded
    (got,) = sdy_passes.interpret(text, sx)
    assert np.array_equal(got, x * x)


@pytest.mark.parametrize("mesh, message", [
    ('<["y"=8]>', "has other axes than the manual computation's mesh"),
    (3, "expected a sharding.DeviceMesh, Mesh or mesh text, found int"),
    ('<["x"=2', "mesh: expected"),
])
def test_bad_meshes_are_refused(mesh, message):
    text = """module {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}]>] out_shardings=[<@mesh, [{"x"}]>] manual_axes={"x"} (%arg1: tensor<1xf32>) {
      sdy.return %arg1 : tensor<1xf32>
    } : (tensor<8xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
"""
    with pytest.raises(ExecutionError, match=re.escape(message)):
        sdy_passes.interpret(text, np.zeros(8, np.float32), mesh=mesh)
