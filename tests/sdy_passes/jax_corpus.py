"""Small JAX programs whose lowered StableHLO the parser and printer must reproduce.

Each entry of `PROGRAMS` is `(name, code)`: Python run in the jaxlib child with `jax`, `jnp`,
`lax`, `np`, `S` (`jax.ShapeDtypeStruct`), `mesh` (a 2x4 `jax.sharding.Mesh` over 8 host
devices), `P`, `NS` (`NamedSharding`) and `shard_map` in scope; it must define `f` (a jitted
function or one to jit) and `args`. `lower_all()` lowers them all in one child and returns, per
name, jaxlib's pretty and generic text with and without debug info, and with the positions
of its debug-info-less text as locations (or the error).
"""

from __future__ import annotations

_UNARY = ("abs negative exp log log1p expm1 sqrt rsqrt:lax tanh sin cos tan floor ceil sign "
          "round isfinite:jnp logistic:lax cbrt:lax erf:lax.erf lgamma:lax digamma:lax "
          "erf_inv:lax bessel_i1e:lax").split()

_REDUCTIONS = ("sum max min prod mean argmax argmin any all var cumsum cumprod logsumexp:nn "
               "softmax:nn").split()


def _unary(spec: str) -> tuple[str, str]:
    name, _, where = spec.partition(":")
    mod = {"": "jnp", "lax": "lax", "jnp": "jnp", "lax.erf": "lax"}[where]
    dtype = "jnp.bool_" if name in ("any", "all") else "jnp.float32"
    return f"unary_{name}", f"f = {mod}.{name}\nargs = (S((4, 8), {dtype}),)"


def _reduction(spec: str) -> tuple[str, str]:
    name, _, where = spec.partition(":")
    mod = "jax.nn" if where == "nn" else "jnp"
    dtype = "jnp.bool_" if name in ("any", "all") else "jnp.float32"
    return f"reduce_{name}", f"f = lambda x: {mod}.{name}(x, axis=1)\nargs = (S((4, 8), {dtype}),)"


_BINARY = "add subtract multiply divide maximum minimum power arctan2 remainder".split()
_INT_BINARY = "bitwise_and bitwise_or bitwise_xor left_shift right_shift".split()

PROGRAMS: list[tuple[str, str]] = [
    *(_unary(s) for s in _UNARY),
    *(_reduction(s) for s in _REDUCTIONS),
    *((f"binary_{n}", f"f = jnp.{n}\nargs = (S((4, 8), jnp.float32), S((4, 8), jnp.float32))")
      for n in _BINARY),
    *((f"int_{n}", f"f = jnp.{n}\nargs = (S((16,), jnp.int32), S((16,), jnp.int32))")
      for n in _INT_BINARY),
    *((f"compare_{n}", f"f = lambda a, b: a {op} b\nargs = (S((8,), {t}), S((8,), {t}))")
      for n, op, t in (("lt_f", "<", "jnp.float32"), ("ge_i", ">=", "jnp.int32"),
                       ("eq_u", "==", "jnp.uint8"), ("ne_b", "!=", "jnp.bool_"))),
    ("where", "f = jnp.where\nargs = (S((16, 32), jnp.bool_), S((16, 32), jnp.float32), S((16, 32), jnp.float32))"),
    ("where_scalar_pred", "f = lambda p, a, b: lax.select(p, a, b)\nargs = (S((), jnp.bool_), S((4,), jnp.float32), S((4,), jnp.float32))"),
    ("clamp", "f = lambda x: jnp.clip(x, 0.0, 1.0)\nargs = (S((8,), jnp.float32),)"),
    ("lax_clamp", "f = lambda x: lax.clamp(0.0, x, 1.0)\nargs = (S((8,), jnp.float32),)"),
    ("matmul", "f = jnp.matmul\nargs = (S((4, 8), jnp.float32), S((8, 16), jnp.float32))"),
    ("matmul_batched", "f = jnp.matmul\nargs = (S((2, 4, 8), jnp.float32), S((2, 8, 16), jnp.float32))"),
    ("dot_precision", "f = lambda a, b: jnp.dot(a, b, precision=lax.Precision.HIGHEST)\nargs = (S((4, 8), jnp.float32), S((8, 3), jnp.float32))"),
    ("dot_bf16_f32", "f = lambda a, b: jnp.dot(a, b, preferred_element_type=jnp.float32)\nargs = (S((4, 8), jnp.bfloat16), S((8, 3), jnp.bfloat16))"),
    ("einsum", "f = lambda a, b: jnp.einsum('bij,bjk->bik', a, b)\nargs = (S((2, 3, 4), jnp.float32), S((2, 4, 5), jnp.float32))"),
    ("dot_algorithm", "f = lambda a, b: lax.dot(a, b, precision=lax.DotAlgorithmPreset.F32_F32_F32)\nargs = (S((4, 8), jnp.float32), S((8, 3), jnp.float32))"),
    ("attention", """
def f(q, k, v):
    s = jnp.einsum('bqd,bkd->bqk', q, k) / 8.0
    return jnp.einsum('bqk,bkd->bqd', jax.nn.softmax(s, axis=-1), v)
args = (S((2, 16, 64), jnp.float32),) * 3"""),
    ("dot_product_attention", "f = lambda q, k, v: jax.nn.dot_product_attention(q, k, v)\nargs = (S((2, 8, 4, 16), jnp.float32),) * 3"),
    ("concatenate", "f = lambda a, b: jnp.concatenate([a, b], axis=1)\nargs = (S((4, 8), jnp.float32), S((4, 2), jnp.float32))"),
    ("reshape", "f = lambda x: x.reshape(8, 4)\nargs = (S((4, 8), jnp.float32),)"),
    ("transpose", "f = lambda x: x.T\nargs = (S((4, 8), jnp.float32),)"),
    ("broadcast", "f = lambda x: jnp.broadcast_to(x, (3, 4, 8))\nargs = (S((4, 8), jnp.float32),)"),
    ("slice", "f = lambda x: x[1:3, ::2]\nargs = (S((4, 8), jnp.float32),)"),
    ("dynamic_slice", "f = lambda x, i: lax.dynamic_slice(x, (i, 0), (2, 8))\nargs = (S((4, 8), jnp.float32), S((), jnp.int32))"),
    ("dynamic_update_slice", "f = lambda x, u, i: lax.dynamic_update_slice(x, u, (i, 0))\nargs = (S((4, 8), jnp.float32), S((2, 8), jnp.float32), S((), jnp.int32))"),
    ("pad", "f = lambda x: jnp.pad(x, ((1, 2), (0, 3)))\nargs = (S((4, 8), jnp.float32),)"),
    ("lax_pad_interior", "f = lambda x: lax.pad(x, 0.0, ((1, 2, 1), (0, 0, 0)))\nargs = (S((4, 8), jnp.float32),)"),
    ("reverse", "f = lambda x: jnp.flip(x, axis=0)\nargs = (S((4, 8), jnp.float32),)"),
    ("iota", "f = lambda: jnp.arange(10)\nargs = ()"),
    ("iota_2d", "f = lambda: lax.broadcasted_iota(jnp.int32, (3, 4), 1)\nargs = ()"),
    ("convert", "f = lambda x: x.astype(jnp.int8)\nargs = (S((8,), jnp.float32),)"),
    ("bitcast_convert", "f = lambda x: lax.bitcast_convert_type(x, jnp.int32)\nargs = (S((8,), jnp.float32),)"),
    ("bitcast_shape", "f = lambda x: lax.bitcast_convert_type(x, jnp.uint8)\nargs = (S((8,), jnp.float32),)"),
    ("constants", "f = lambda x: x * 2.5 + jnp.array([1.0, 2.0, 3.0, 4.0])\nargs = (S((4,), jnp.float32),)"),
    ("int_constants", "f = lambda x: x * 3 + jnp.array([1, -2, 3, 4], jnp.int32)\nargs = (S((4,), jnp.int32),)"),
    ("bool_constant", "f = lambda x: x & jnp.array([True, False, True, True])\nargs = (S((4,), jnp.bool_),)"),
    ("large_constant", "f = lambda x: x + jnp.arange(64.0).reshape(8, 8)\nargs = (S((8, 8), jnp.float32),)"),
    ("nan_inf_constants", "f = lambda x: x + jnp.array([jnp.nan, jnp.inf, -jnp.inf, -0.0])\nargs = (S((4,), jnp.float32),)"),
    ("sort", "f = jnp.sort\nargs = (S((16,), jnp.float32),)"),
    ("argsort", "f = jnp.argsort\nargs = (S((16,), jnp.float32),)"),
    ("sort_multi", "f = lambda a, b: lax.sort((a, b), num_keys=1)\nargs = (S((16,), jnp.float32), S((16,), jnp.int32))"),
    ("top_k", "f = lambda x: lax.top_k(x, 3)\nargs = (S((16,), jnp.float32),)"),
    ("cond", "f = lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x)\nargs = (S((), jnp.bool_), S((4,), jnp.float32))"),
    ("switch", "f = lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x)\nargs = (S((), jnp.int32), S((4,), jnp.float32))"),
    ("while", "f = lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))\nargs = (S((4,), jnp.float32),)"),
    ("fori_loop", "f = lambda x: lax.fori_loop(0, 5, lambda i, c: c + i, x)\nargs = (S((4,), jnp.float32),)"),
    ("scan", "f = lambda xs: lax.scan(lambda c, x: (c + x, c * x), 0.0, xs)\nargs = (S((8,), jnp.float32),)"),
    ("scan_matrix", "f = lambda w, xs: lax.scan(lambda h, x: (jnp.tanh(w @ h + x), h), jnp.zeros(4), xs)\nargs = (S((4, 4), jnp.float32), S((5, 4), jnp.float32))"),
    ("map", "f = lambda xs: lax.map(jnp.sum, xs)\nargs = (S((3, 4), jnp.float32),)"),
    ("vmap", "f = jax.vmap(lambda x, y: jnp.dot(x, y))\nargs = (S((3, 4), jnp.float32), S((3, 4), jnp.float32))"),
    ("grad", "f = jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2))\nargs = (S((4,), jnp.float32),)"),
    ("grad_matmul", "f = jax.grad(lambda w, x: jnp.sum(jnp.maximum(x @ w, 0.0)))\nargs = (S((4, 3), jnp.float32), S((2, 4), jnp.float32))"),
    ("custom_vjp", """
@jax.custom_vjp
def g(x):
    return jnp.sin(x)
g.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda c, t: (c * t,))
f = jax.grad(lambda x: g(x).sum())
args = (S((4,), jnp.float32),)"""),
    ("custom_jvp", "f = jax.grad(lambda x: jax.nn.relu(x).sum())\nargs = (S((4,), jnp.float32),)"),
    ("gather", "f = lambda x, i: x[i]\nargs = (S((8, 4), jnp.float32), S((3,), jnp.int32))"),
    ("gather_2d", "f = lambda x, i, j: x[i, j]\nargs = (S((8, 4), jnp.float32), S((3,), jnp.int32), S((3,), jnp.int32))"),
    ("take_along_axis", "f = lambda x, i: jnp.take_along_axis(x, i, axis=1)\nargs = (S((4, 8), jnp.float32), S((4, 2), jnp.int32))"),
    ("scatter_set", "f = lambda x, i, u: x.at[i].set(u)\nargs = (S((8, 4), jnp.float32), S((3,), jnp.int32), S((3, 4), jnp.float32))"),
    ("scatter_add", "f = lambda x, i, u: x.at[i].add(u)\nargs = (S((8,), jnp.float32), S((3,), jnp.int32), S((3,), jnp.float32))"),
    ("scatter_max", "f = lambda x, i, u: x.at[i].max(u)\nargs = (S((8,), jnp.float32), S((3,), jnp.int32), S((3,), jnp.float32))"),
    ("segment_sum", "f = lambda d, s: jax.ops.segment_sum(d, s, num_segments=4)\nargs = (S((8,), jnp.float32), S((8,), jnp.int32))"),
    ("conv2d", "f = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))\nargs = (S((1, 8, 8, 3), jnp.float32), S((3, 3, 3, 4), jnp.float32))"),
    ("conv2d_nchw_strided", "f = lambda x, w: lax.conv(x, w, (2, 2), 'VALID')\nargs = (S((1, 3, 8, 8), jnp.float32), S((4, 3, 3, 3), jnp.float32))"),
    ("conv1d_dilated", "f = lambda x, w: lax.conv_general_dilated(x, w, (1,), [(2, 2)], rhs_dilation=(2,), feature_group_count=2)\nargs = (S((1, 4, 16), jnp.float32), S((6, 2, 3), jnp.float32))"),
    ("conv_transpose", "f = lambda x, w: lax.conv_transpose(x, w, (2, 2), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC'))\nargs = (S((1, 4, 4, 2), jnp.float32), S((3, 3, 2, 2), jnp.float32))"),
    ("reduce_window_max", "f = lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 2), 'VALID')\nargs = (S((8, 8), jnp.float32),)"),
    ("avg_pool", "f = lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), 'SAME')\nargs = (S((1, 8, 8, 2), jnp.float32),)"),
    ("max_pool_grad", "f = jax.grad(lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (2, 2), 'VALID').sum())\nargs = (S((8, 8), jnp.float32),)"),
    ("cumsum_reduce_window", "f = lambda x: lax.cumsum(x, axis=0)\nargs = (S((8, 4), jnp.float32),)"),
    ("reduce_multi", "f = lambda x: lax.reduce((x, x), (0.0, 0.0), lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])), (0,))\nargs = (S((8, 4), jnp.float32),)"),
    ("reduce_precision", "f = lambda x: lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10)\nargs = (S((8,), jnp.float32),)"),
    ("rng_bits", "f = lambda k: jax.random.normal(k, (4,))\nargs = (S((2,), jnp.uint32),)"),
    ("rng_uniform_key", "f = lambda: jax.random.uniform(jax.random.key(0), (3,))\nargs = ()"),
    ("rng_bit_generator", "f = lambda k: lax.rng_bit_generator(k, (4,), dtype=jnp.uint32)\nargs = (S((4,), jnp.uint32),)"),
    ("bf16", "f = lambda x: (x * x).sum()\nargs = (S((8,), jnp.bfloat16),)"),
    ("f16", "f = lambda x: jnp.exp(x)\nargs = (S((8,), jnp.float16),)"),
    ("f64_disabled", "f = lambda x: x + 1\nargs = (S((8,), jnp.float32),)"),
    ("f8e4m3fn", "f = lambda x: (x.astype(jnp.float32) * 2).astype(jnp.float8_e4m3fn)\nargs = (S((8,), jnp.float8_e4m3fn),)"),
    ("f8e5m2", "f = lambda x: x.astype(jnp.float32)\nargs = (S((8,), jnp.float8_e5m2),)"),
    ("f8_constant", "f = lambda x: x + jnp.array([1.5, 2.0], jnp.float8_e4m3fn)\nargs = (S((2,), jnp.float8_e4m3fn),)"),
    ("int4", "f = lambda x: x.astype(jnp.int8)\nargs = (S((8,), jnp.int4),)"),
    ("uint4", "f = lambda x: x.astype(jnp.int32) + 1\nargs = (S((8,), jnp.uint4),)"),
    ("complex", "f = lambda x: x * (1 + 2j)\nargs = (S((4,), jnp.complex64),)"),
    ("complex_parts", "f = lambda x: jnp.real(x) + jnp.imag(x) + jnp.abs(x)\nargs = (S((4,), jnp.complex64),)"),
    ("make_complex", "f = lambda a, b: lax.complex(a, b)\nargs = (S((4,), jnp.float32), S((4,), jnp.float32))"),
    ("fft", "f = jnp.fft.fft\nargs = (S((8,), jnp.complex64),)"),
    ("uint_ops", "f = lambda x: (x >> 2) * 3\nargs = (S((8,), jnp.uint32),)"),
    ("int16_ops", "f = lambda x: x // 3\nargs = (S((8,), jnp.int16),)"),
    ("popcount_clz", "f = lambda x: lax.population_count(x) + lax.clz(x)\nargs = (S((8,), jnp.int32),)"),
    ("is_finite_nan", "f = lambda x: jnp.nan_to_num(x)\nargs = (S((8,), jnp.float32),)"),
    ("cholesky", "f = jnp.linalg.cholesky\nargs = (S((4, 4), jnp.float32),)"),
    ("triangular_solve", "f = lambda a, b: jax.scipy.linalg.solve_triangular(a, b, lower=True)\nargs = (S((4, 4), jnp.float32), S((4, 2), jnp.float32))"),
    ("qr", "f = jnp.linalg.qr\nargs = (S((4, 4), jnp.float32),)"),
    ("eigh", "f = jnp.linalg.eigh\nargs = (S((4, 4), jnp.float32),)"),
    ("multiple_outputs", "f = lambda x: (x + 1, x * 2, x.sum())\nargs = (S((4,), jnp.float32),)"),
    ("pytree_args", "f = lambda d: d['a'] + d['b']\nargs = ({'a': S((4,), jnp.float32), 'b': S((4,), jnp.float32)},)"),
    ("nested_jit", "g = jax.jit(lambda x: jnp.sin(x) * 2)\nf = lambda x: g(x) + g(x + 1)\nargs = (S((4,), jnp.float32),)"),
    ("named_call", "f = lambda x: jax.named_call(lambda y: y * 3, name='triple')(x)\nargs = (S((4,), jnp.float32),)"),
    ("remat", "f = jax.grad(lambda x: jax.checkpoint(lambda y: jnp.sin(jnp.sin(y)))(x).sum())\nargs = (S((4,), jnp.float32),)"),
    ("optimization_barrier", "f = lambda x, y: lax.optimization_barrier((x, y))\nargs = (S((4,), jnp.float32), S((2,), jnp.int32))"),
    ("donated", "f = jax.jit(lambda x, y: x + y, donate_argnums=0)\nargs = (S((4,), jnp.float32), S((4,), jnp.float32))"),
    ("static_argnum", "f = jax.jit(lambda x, n: x * n, static_argnums=1)\nargs = (S((4,), jnp.float32), 3)"),
    ("debug_callback", "f = lambda x: (jax.debug.callback(lambda v: None, x), x + 1)[1]\nargs = (S((4,), jnp.float32),)"),
    ("pure_callback", "f = lambda x: jax.pure_callback(lambda v: v, jax.ShapeDtypeStruct((4,), jnp.float32), x)\nargs = (S((4,), jnp.float32),)"),
    ("sharded_args", "f = jax.jit(lambda x: x * 2, in_shardings=NS(mesh, P('x', 'y')), out_shardings=NS(mesh, P('x')))\nargs = (S((8, 8), jnp.float32),)"),
    ("sharding_constraint", "f = jax.jit(lambda x: lax.with_sharding_constraint(x * 2, NS(mesh, P('y', None))) + 1)\nargs = (S((8, 8), jnp.float32),)"),
    ("sharded_matmul", "f = jax.jit(lambda a, b: a @ b, in_shardings=(NS(mesh, P('x', None)), NS(mesh, P(None, 'y'))))\nargs = (S((8, 16), jnp.float32), S((16, 8), jnp.float32))"),
    ("sharded_donated", "f = jax.jit(lambda x: x + 1, in_shardings=NS(mesh, P('x')), donate_argnums=0)\nargs = (S((8, 4), jnp.float32),)"),
    ("shard_map_psum", "f = jax.jit(shard_map(lambda x: lax.psum(x, 'x'), mesh=mesh, in_specs=P('x'), out_specs=P()))\nargs = (S((8, 4), jnp.float32),)"),
    ("shard_map_all_gather", "f = jax.jit(shard_map(lambda x: lax.all_gather(x, 'y', tiled=True), mesh=mesh, in_specs=P(None, 'y'), out_specs=P(), check_vma=False))\nargs = (S((8, 8), jnp.float32),)"),
    ("shard_map_ppermute", "f = jax.jit(shard_map(lambda x: lax.ppermute(x, 'x', [(0, 1), (1, 0)]), mesh=mesh, in_specs=P('x'), out_specs=P('x')))\nargs = (S((8, 4), jnp.float32),)"),
    ("shard_map_all_to_all", "f = jax.jit(shard_map(lambda x: lax.all_to_all(x, 'y', 0, 1, tiled=True), mesh=mesh, in_specs=P(None, 'y'), out_specs=P('y')))\nargs = (S((8, 8), jnp.float32),)"),
    ("shard_map_psum_scatter", "f = jax.jit(shard_map(lambda x: lax.psum_scatter(x, 'y', tiled=True), mesh=mesh, in_specs=P(), out_specs=P('y')))\nargs = (S((8, 8), jnp.float32),)"),
    ("shard_map_axis_index", "f = jax.jit(shard_map(lambda x: x + lax.axis_index('x'), mesh=mesh, in_specs=P('x'), out_specs=P('x')))\nargs = (S((8,), jnp.int32),)"),
    ("pmax_pmin", "f = jax.jit(shard_map(lambda x: lax.pmax(x, 'x') - lax.pmin(x, 'y'), mesh=mesh, in_specs=P('x', 'y'), out_specs=P(), check_vma=False))\nargs = (S((8, 8), jnp.float32),)"),
    ("logsumexp_where", "f = lambda x: jax.nn.logsumexp(x, where=x > 0)\nargs = (S((8,), jnp.float32),)"),
    ("one_hot", "f = lambda i: jax.nn.one_hot(i, 5)\nargs = (S((4,), jnp.int32),)"),
    ("layer_norm", """
def f(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b
args = (S((4, 16), jnp.float32), S((16,), jnp.float32), S((16,), jnp.float32))"""),
    ("mlp_grad", """
def loss(p, x):
    h = jax.nn.gelu(x @ p['w1'])
    return jnp.mean((h @ p['w2']) ** 2)
f = jax.grad(loss)
args = ({'w1': S((8, 16), jnp.float32), 'w2': S((16, 4), jnp.float32)}, S((2, 8), jnp.float32))"""),
    ("expand_dims_squeeze", "f = lambda x: jnp.squeeze(jnp.expand_dims(x, 0), 0)\nargs = (S((4,), jnp.float32),)"),
    ("repeat_tile", "f = lambda x: jnp.tile(jnp.repeat(x, 2), 3)\nargs = (S((4,), jnp.float32),)"),
    ("roll", "f = lambda x: jnp.roll(x, 3)\nargs = (S((8,), jnp.float32),)"),
    ("dynamic_shape_free", "f = lambda x: jnp.cumprod(x[::-1])\nargs = (S((8,), jnp.float32),)"),
    ("zero_size", "f = lambda x: x.sum()\nargs = (S((0, 4), jnp.float32),)"),
    ("scalar", "f = lambda x: x * x\nargs = (S((), jnp.float32),)"),
    ("erf_chlo", "f = lambda x: jax.scipy.special.erf(x) + jax.scipy.special.erfc(x)\nargs = (S((4,), jnp.float32),)"),
    ("top_k_chlo", "f = lambda x: jax.lax.approx_max_k(x, 2)\nargs = (S((16,), jnp.float32),)"),
    ("asin_acos", "f = lambda x: jnp.arcsin(x) + jnp.arccos(x) + jnp.arctan(x) + jnp.sinh(x) + jnp.cosh(x) + jnp.arcsinh(x)\nargs = (S((4,), jnp.float32),)"),
    ("nextafter", "f = jnp.nextafter\nargs = (S((4,), jnp.float32), S((4,), jnp.float32))"),
    ("polygamma_zeta", "f = lambda x: jax.scipy.special.zeta(x, 2.0) + jax.scipy.special.polygamma(1, x)\nargs = (S((4,), jnp.float32),)"),
    ("integer_pow", "f = lambda x: x ** 3\nargs = (S((4,), jnp.float32),)"),
    ("ensure_compile_time_eval", "f = lambda x: x + jnp.float32(3) * 2\nargs = (S((4,), jnp.float32),)"),
]

CHILD_PRELUDE = """
import os, traceback
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
from jax.sharding import Mesh, NamedSharding as NS, PartitionSpec as P
try:
    from jax import shard_map
except ImportError:
    from jax.experimental.shard_map import shard_map
S = jax.ShapeDtypeStruct
mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)

def program(code):
    # the names a program's text defines (f, args, ...), run with the names above
    env = dict(jax=jax, jnp=jnp, lax=lax, np=np, S=S, mesh=mesh, P=P, NS=NS, shard_map=shard_map)
    exec(code, env)
    return env

def jitted(fn):
    return fn if hasattr(fn, "lower") else jax.jit(fn)
"""
"""What a jax child of the corpus starts with: 8 CPU devices, the programs' names, the 2x4 mesh,
`program(code)` and `jitted(fn)`."""

_CHILD = CHILD_PRELUDE + """
RESULT = {}
for name, code in PAYLOAD:
    try:
        env = program(code)
        op = jitted(env["f"]).lower(*env["args"]).compiler_ir("stablehlo").operation
        out = {}
        for key, debug in (("pretty", False), ("pretty_debug", True)):
            text = out[key] = op.get_asm(enable_debug_info=debug)
            # The generic print of the text as jaxlib reads it back (the in-memory module has
            # details its pretty print leaves out, e.g. empty arg_attrs).
            with mlir.make_ir_context() as ctx:
                ctx.enable_multithreading(False)
                reparsed = ir.Module.parse(text).operation
                out[key.replace("pretty", "generic")] = reparsed.get_asm(
                    print_generic_op_form=True, enable_debug_info=debug)
                assert reparsed.get_asm(enable_debug_info=debug) == text
                if not debug:  # text without locations: ops and arguments get their positions
                    for form, generic in (("pretty", False), ("generic", True)):
                        out[form + "_positions"] = reparsed.get_asm(
                            enable_debug_info=True, print_generic_op_form=generic)
        RESULT[name] = out
    except Exception:
        RESULT[name] = {"error": traceback.format_exc(limit=2)}
"""


def lower_all(programs=PROGRAMS) -> dict:
    """jaxlib's texts for each program (one child for all of them, once per key for all test
    processes: several test modules and xdist workers need them)."""
    from tests.jaxlib_child import cached, run_child

    programs = [list(p) for p in programs]
    return cached([_CHILD, programs], lambda: run_child(_CHILD, programs, timeout=600))
