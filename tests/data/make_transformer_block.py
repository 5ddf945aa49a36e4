"""Writes the JAX-lowered transformer blocks the README, the tests and the dry-run benchmark use
(spec execute.md §1.3: lowered against an `AbstractMesh` on a one-device CPU host, no devices
needed), so that none of them needs jax:

* `sdy_passes/examples/transformer_block_64x64.mlir`: bf16, batch over "x" (64), heads and MLP hidden over "y" (64);
  x is bf16[1024, 2048, 8192] (32 GiB global), the MLP hidden 128 GiB.
* `sdy_passes/examples/transformer_block_2x4.mlir`: the same block, f32 and small, on <["x"=2, "y"=4]>.
* `tests/data/transformer_10_blocks_64x64.mlir`: ten of the 64x64 blocks in a row (the dry-run benchmark's
  10n, to check that the report is linear in the number of ops).

Run: python tests/data/make_transformer_block.py (jax 0.10.2).
"""

from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import AbstractMesh, AxisType
from jax.sharding import NamedSharding as NS
from jax.sharding import PartitionSpec as P

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[1] / "sdy_passes" / "examples"


def block(x, wq, wk, wv, wo, w1, w2, heads):
    def norm(h):
        m = h.mean(-1, keepdims=True)
        return (h - m) * lax.rsqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5)

    b, s, d = x.shape
    split = lambda h: h.reshape(b, s, heads, d // heads).transpose(0, 2, 1, 3)  # noqa: E731
    h = norm(x)
    q, k, v = split(h @ wq), split(h @ wk), split(h @ wv)
    a = jax.nn.softmax(jnp.einsum("bhqd,bhkd->bhqk", q, k) / (d // heads) ** 0.5, axis=-1)
    o = jnp.einsum("bhqk,bhkd->bhqd", a, v).transpose(0, 2, 1, 3).reshape(b, s, d)
    x = x + o @ wo
    return x + jax.nn.gelu(norm(x) @ w1) @ w2


def lowered(shape, heads, dtype, mesh_shape, layers=1) -> str:
    am = AbstractMesh(mesh_shape, ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    b, s, d = shape
    S = lambda shp, spec: jax.ShapeDtypeStruct(shp, dtype, sharding=NS(am, spec))  # noqa: E731
    args = (S((b, s, d), P("x", None, None)), *(S((d, d), P(None, "y")) for _ in range(3)),
            S((d, d), P("y", None)), S((d, 4 * d), P(None, "y")), S((4 * d, d), P("y", None)))
    def f(x, *w):
        for _ in range(layers):
            x = block(x, *w, heads=heads)
        return x

    f = jax.jit(f)
    return f.trace(*args).lower(lowering_platforms=("cpu",)).as_text()


if __name__ == "__main__":
    (EXAMPLES / "transformer_block_64x64.mlir").write_text(lowered((1024, 2048, 8192), 64, jnp.bfloat16, (64, 64)))
    (HERE / "transformer_10_blocks_64x64.mlir").write_text(
        lowered((1024, 2048, 8192), 64, jnp.bfloat16, (64, 64), layers=10))
    (EXAMPLES / "transformer_block_2x4.mlir").write_text(lowered((4, 16, 32), 4, jnp.float32, (2, 4)))
