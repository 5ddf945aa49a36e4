"""A generator of JAX programs beyond the corpus: what the hidden checks lower fresh every day.

`generate(seed, count)` draws `count` programs `(name, code)` in `jax_corpus`'s form (Python run
in a jax child with `jax`, `jnp`, `lax`, `np`, `S`, `mesh`, `P`, `NS`, `shard_map` in scope,
defining `f` and `args`), each from one of `TEMPLATES` with random shapes, dtypes and options,
and, for a third of them, random shardings over the 2x4 mesh: `jit` in/out shardings,
`with_sharding_constraint`, `shard_map` or `jax.sharding.reshard` (on an Explicit mesh). A
program that sets `symbolic = True` has shape-polymorphic arguments (`jax.export.symbolic_shape`)
and is not run (read, printed, verified and propagated only); `export = True` lowers it through
`jax.export` (`lower_live`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import random
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

from tests.jaxlib_child import cached, run_child
from tests.sdy_passes.execute_oracle import ORACLE
from tests.sdy_passes.interpreter_oracle import _CODE
from tests.sdy_passes.pass_oracle import Verdict, run_jaxlib_passes

INTS = ("int8", "int16", "int32", "uint8", "uint16", "uint32", "int4", "uint4")  # x64 is off
FLOATS = ("float32", "bfloat16", "float16")
F8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2fnuz",
      "float8_e4m3", "float8_e3m4", "float4_e2m1fn", "float8_e8m0fnu")


def _shape(r: random.Random, ndim: int, lo: int = 1, hi: int = 8) -> tuple[int, ...]:
    return tuple(r.choice([lo, 2, 4, hi, r.randint(lo, hi)]) for _ in range(ndim))


def _s(shape, dtype: str) -> str:
    return f"S({tuple(shape)!r}, jnp.{dtype})"


def masked_attention(r):
    b, h, t, d = r.choice([1, 2]), r.choice([1, 2, 4]), r.choice([4, 8]), r.choice([4, 8, 16])
    mask = r.choice(["jnp.tril(jnp.ones((t, t), bool))", "m", "(q.sum(-1)[..., None] > 0)"])
    fill = r.choice(["-jnp.inf", "-1e9", "jnp.finfo(s.dtype).min"])
    dtype = r.choice(["float32", "bfloat16"])
    return f"""
def f(q, k, v, m):
    t = q.shape[-2]
    s = jnp.einsum('bhqd,bhkd->bhqk', q, k) / {d ** 0.5}
    s = jnp.where({mask}, s, {fill})
    return jnp.einsum('bhqk,bhkd->bhqd', jax.nn.softmax(s, axis=-1), v)
args = ({_s((b, h, t, d), dtype)},) * 3 + ({_s((t, t), 'bool_')},)"""


def softmax_layernorm(r):
    shape = _shape(r, r.randint(1, 3), 2)
    axis = r.randrange(len(shape))
    eps = r.choice(["1e-5", "1e-6", "0.1"])
    op = r.choice(["jax.nn.softmax(x, axis={a})", "jax.nn.log_softmax(x, axis={a})",
                   "(x - x.mean({a}, keepdims=True)) * lax.rsqrt(x.var({a}, keepdims=True) + {e})",
                   "jax.nn.standardize(x, axis={a}, epsilon={e})", "jax.nn.logsumexp(x, axis={a})"])
    return f"f = lambda x: {op.format(a=axis, e=eps)}\nargs = ({_s(shape, r.choice(FLOATS))},)"


def einsum(r):
    spec, shapes = r.choice([
        ("ij,jk->ik", ((4, 8), (8, 3))), ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5))),
        ("ij,ij->i", ((4, 6), (4, 6))), ("i,j->ij", ((5,), (3,))), ("ijk->kji", ((2, 3, 4),)),
        ("bhqd,bhkd->bhqk", ((1, 2, 4, 8), (1, 2, 6, 8))), ("ii->i", ((4, 4),)), ("ij->", ((3, 5),)),
        ("abc,cd,de->abe", ((2, 3, 4), (4, 5), (5, 2))), ("...ij,...jk->...ik", ((2, 2, 3, 4), (2, 2, 4, 2)))])
    dtype = r.choice(["float32", "bfloat16", "int32", "float16", "complex64"])
    pref = r.choice(["", ", preferred_element_type=jnp.float32"]) if dtype in ("bfloat16", "float16") else ""
    return (f"f = lambda *xs: jnp.einsum('{spec}', *xs{pref})\n"
            f"args = ({', '.join(_s(s, dtype) for s in shapes)},)")


def conv(r):
    nd = r.choice([1, 2])
    groups = r.choice([1, 2])
    batch_groups = r.choice([1, 2]) if groups == 1 else 1
    cin, cout = 2 * groups, 2 * groups * batch_groups
    n = 2 * batch_groups
    spatial = tuple(r.choice([5, 6, 8]) for _ in range(nd))
    kernel = tuple(r.choice([1, 2, 3]) for _ in range(nd))
    strides = tuple(r.choice([1, 2]) for _ in range(nd))
    pad = r.choice(["'SAME'", "'VALID'", repr([(r.randint(0, 2), r.randint(0, 2)) for _ in range(nd)])])
    lhs_d = tuple(r.choice([1, 1, 2]) for _ in range(nd))
    rhs_d = tuple(r.choice([1, 2]) for _ in range(nd))
    if any(d > 1 for d in lhs_d) and pad in ("'SAME'", "'VALID'"):
        pad = repr([(1, 1)] * nd)
    dtype = r.choice(["float32", "float32", "bfloat16", "float16"])
    return (f"f = lambda x, w: lax.conv_general_dilated(x, w, {strides}, {pad}, lhs_dilation={lhs_d}, "
            f"rhs_dilation={rhs_d}, feature_group_count={groups}, batch_group_count={batch_groups})\n"
            f"args = ({_s((n, cin) + spatial, dtype)}, {_s((cout, cin // groups) + kernel, dtype)})")


def pooling(r):
    shape = (r.choice([1, 2]), r.choice([4, 6, 7]), r.choice([4, 5, 8]), r.choice([1, 3]))
    win = (1, r.randint(1, 3), r.randint(1, 3), 1)
    st = (1, r.randint(1, 2), r.randint(1, 2), 1)
    pad = r.choice(["'SAME'", "'VALID'"])
    kind = r.choice(["max", "avg", "min", "max_grad", "dilated"])
    dtype = r.choice(["float32", "int32", "bfloat16"]) if kind != "max_grad" else "float32"
    init_max = "-jnp.inf" if dtype != "int32" else "jnp.iinfo(jnp.int32).min"
    init_min = "jnp.inf" if dtype != "int32" else "jnp.iinfo(jnp.int32).max"
    body = {
        "max": f"lax.reduce_window(x, {init_max}, lax.max, {win}, {st}, {pad})",
        "min": f"lax.reduce_window(x, {init_min}, lax.min, {win}, {st}, {pad})",
        "avg": f"lax.reduce_window(x, jnp.array(0, x.dtype), lax.add, {win}, {st}, {pad}) / {win[1] * win[2]}",
        "max_grad": f"jax.grad(lambda y: lax.reduce_window(y, -jnp.inf, lax.max, {win}, {st}, {pad}).sum())(x)",
        "dilated": f"lax.reduce_window(x, jnp.array(0, x.dtype), lax.add, {win}, {st}, {pad}, "
                   f"base_dilation=(1, 2, 1, 1), window_dilation=(1, 1, 2, 1))",
    }[kind]
    return f"f = lambda x: {body}\nargs = ({_s(shape, dtype)},)"


def cumulative(r):
    op = r.choice(["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
    shape = _shape(r, r.randint(1, 2), 2)
    axis = r.randrange(len(shape))
    dtype = "float32" if op == "cumlogsumexp" else r.choice(["float32", "int32", "uint8", "bfloat16", "int16"])
    rev = r.choice([False, True])
    return f"f = lambda x: lax.{op}(x, axis={axis}, reverse={rev})\nargs = ({_s(shape, dtype)},)"


def sorting(r):
    shape = _shape(r, r.randint(1, 2), 2, 9)
    dtype = r.choice(["float32", "int32", "uint16", "bfloat16", "int8", "float16"])
    op = r.choice(["jnp.sort(x, axis=-1, descending={d})", "jnp.argsort(x, axis=0, stable={s})",
                   "lax.top_k(x, {k})", "lax.sort_key_val(x, -x, dimension=0)", "jnp.median(x, axis=-1)",
                   "jnp.unique_counts(x, size=3, fill_value=0)[1]", "jnp.searchsorted(jnp.sort(x.ravel()), x)"])
    k = r.randint(1, shape[-1])
    return (f"f = lambda x: {op.format(d=r.choice([False, True]), s=r.choice([False, True]), k=k)}\n"
            f"args = ({_s(shape, dtype)},)")


def fft(r):
    kind = r.choice(["fft", "ifft", "rfft", "irfft", "fft2", "rfftn"])
    n = r.choice([4, 8, 6])
    dtype = "float32" if kind in ("rfft", "rfftn") else "complex64"
    shape = (r.choice([1, 3]), n)
    return f"f = lambda x: jnp.fft.{kind}(x)\nargs = ({_s(shape, dtype)},)"


def rng(r):
    impl = r.choice(["threefry2x32", "rbg", "unsafe_rbg"])
    dist = r.choice(["normal(k, (4, 3))", "uniform(k, (5,), minval=-2.0, maxval=3.0)",
                     "randint(k, (6,), 0, 10)", "bernoulli(k, 0.3, (4,))", "permutation(k, 8)",
                     "categorical(k, jnp.zeros((2, 5)))", "bits(k, (3,), jnp.uint8)",
                     "gumbel(k, (3,))", "truncated_normal(k, -1.0, 1.0, (4,))"])
    split = r.choice(["", "k = jax.random.split(k)[1]\n    "])
    return (f"def f(seed):\n    k = jax.random.key(seed, impl='{impl}')\n    {split}return jax.random.{dist}\n"
            f"args = (S((), jnp.uint32),)")


def bitcast(r):
    src, dst = r.choice([("float32", "int32"), ("float32", "uint8"), ("int32", "float32"), ("uint16", "bfloat16"),
                         ("float16", "int16"), ("int8", "uint8"), ("uint32", "float16"), ("float64", "uint32")])
    if src == "float64":
        src = "float32"
    return (f"f = lambda x: lax.bitcast_convert_type(x, jnp.{dst})\n"
            f"args = ({_s(_shape(r, 1, 2), src)},)")


def complex_ops(r):
    op = r.choice(["x * y + jnp.conj(x)", "jnp.exp(x) / (y + 1)", "jnp.abs(x) + jnp.angle(y)",
                   "jnp.sqrt(x) * jnp.log(y + 2)", "lax.complex(jnp.real(x), jnp.imag(y))",
                   "x @ y.T", "jnp.sum(x * y, axis=0)", "jnp.tanh(x) - jnp.sin(y)"])
    shape = (r.choice([2, 3]), 3)
    return f"f = lambda x, y: {op}\nargs = ({_s(shape, 'complex64')},) * 2"


def integer_ops(r):
    dtype = r.choice(INTS)
    op = r.choice(["lax.div(x, y)", "lax.rem(x, y)", "x // y", "x % y", "lax.shift_left(x, y)",
                   "lax.shift_right_logical(x, y)", "lax.shift_right_arithmetic(x, y)", "x & ~y",
                   "jnp.maximum(x, y) - jnp.minimum(x, y)", "x * y + x", "lax.population_count(x)",
                   "lax.clz(x)", "-x", "jnp.abs(x)", "jnp.sign(x)", "lax.integer_pow(x, 3)",
                   "x ** 2", "jnp.where(y == 0, x, lax.div(x, jnp.where(y == 0, 1, y)))"])
    return f"f = lambda x, y: {op}\nargs = ({_s(_shape(r, r.randint(0, 2)), dtype)},) * 2"


def converts(r):
    src = r.choice(FLOATS + F8 + ("int32", "int4", "uint4", "int8", "bool_", "uint32"))
    dst = r.choice(FLOATS + F8 + ("int32", "int8", "uint8", "int4", "uint4", "bool_", "float32"))
    mid = r.choice(["", " * 2", " + 1"]) if src not in ("bool_",) and not src.startswith("float4") else ""
    if mid and (src.startswith("float8") or src.startswith("float4")):
        mid = ""
    return f"f = lambda x: (x{mid}).astype(jnp.{dst})\nargs = ({_s(_shape(r, r.randint(0, 2)), src)},)"


def clamp_select(r):
    dtype = r.choice(["float32", "int32", "uint8", "bool_", "bfloat16", "int4"])
    shape = _shape(r, r.randint(0, 2))
    pred = r.choice(["p", "x > y", "p & (x != y)", "jnp.isnan(x.astype(jnp.float32))", "p.any()", "True"])
    op = r.choice([f"lax.select({pred} if jnp.ndim({pred}) == 0 else jnp.broadcast_to({pred}, x.shape), x, y)",
                   f"jnp.where({pred}, x, y)",
                   f"jnp.select([{pred}, ~({pred})], [x, y], y)"])
    if dtype != "bool_":
        op = r.choice([op, "lax.clamp(y, x, y)", "jnp.clip(x, y, y)",
                       "lax.clamp(jnp.array(1, x.dtype), x, jnp.array(3, x.dtype))"])
    return f"f = lambda p, x, y: {op}\nargs = ({_s(shape, 'bool_')}, {_s(shape, dtype)}, {_s(shape, dtype)})"


def indexing(r):
    n, m = r.choice([4, 8]), r.choice([3, 5])
    op = r.choice([
        "x[i]", "x[i, 1:]", "x[:, i % x.shape[1]]", "x[i[:, None], i[None, :] % x.shape[1]]", "x[::-1, ::2]",
        "x.at[i].set(u[:i.shape[0]])", "x.at[i].add(u[:i.shape[0]])", "x.at[i].mul(u[:i.shape[0]])",
        "x.at[i].min(u[:i.shape[0]])", "x.at[i].max(u[:i.shape[0]])", "x.at[i, 0].set(3)",
        "x.at[i].get(mode='fill', fill_value=-1)", "x.at[i].add(u[:i.shape[0]], mode='drop')",
        "x.at[1:3].set(0)", "x.at[i].apply(jnp.negative)", "jnp.take(x, i, axis=1, mode='clip')",
        "x[np.array([True, False] * (x.shape[0] // 2))]", "x[None, 0, :]"])
    dtype = r.choice(["float32", "int32", "bfloat16", "uint8"])
    k = r.randint(1, 4)
    return (f"f = lambda x, i, u: {op}\n"
            f"args = ({_s((n, m), dtype)}, {_s((k,), r.choice(['int32', 'uint8', 'int16']))}, {_s((4, m), dtype)})")


def dynamic_slicing(r):
    shape = (r.choice([4, 6]), r.choice([5, 8]))
    size = (r.randint(1, shape[0]), r.randint(1, shape[1]))
    op = r.choice([f"lax.dynamic_slice(x, (i, j), {size})",
                   f"lax.dynamic_update_slice(x, lax.dynamic_slice(x, (j, i), {size}) * 2, (i, j))",
                   f"lax.dynamic_slice_in_dim(x, i, {size[0]}, axis=0)",
                   "lax.dynamic_update_index_in_dim(x, x[0] + 1, j, axis=0)",
                   "lax.dynamic_index_in_dim(x, i, axis=1, keepdims=False)"])
    dtype = r.choice(["float32", "int8", "uint32"])
    index = r.choice(["int32", "uint32", "int8", "int16"])
    return f"f = lambda x, i, j: {op}\nargs = ({_s(shape, dtype)}, {_s((), index)}, {_s((), index)})"


def control_flow(r):
    body = r.choice([
        "lax.while_loop(lambda c: c[0] < {n}, lambda c: (c[0] + 1, c[1] * 1.5 + c[0]), (0, x))[1]",
        "lax.fori_loop(0, {n}, lambda i, c: jnp.sin(c) + i, x)",
        "lax.fori_loop(0, {n}, lambda i, c: c.at[i % c.shape[0]].add(1.0), x, unroll=2)",
        "lax.scan(lambda c, r: (c * r, c + r), x[0], x)[1]",
        "lax.scan(lambda c, r: (c + r.sum(), None), 0.0, x, reverse=True)[0]",
        "lax.cond(x.sum() > 0, lambda: x * 2, lambda: x - 1)",
        "lax.cond(x[0, 0] > 0, jnp.sin, jnp.cos, x)",
        "lax.switch(jnp.clip(x.sum().astype(jnp.int32), 0, 2), [jnp.sin, jnp.cos, lambda y: y * 3], x)",
        "lax.map(lambda r: jnp.dot(r, r), x)",
        "lax.associative_scan(jnp.add, x, axis=0)",
        "jax.lax.while_loop(lambda c: jnp.any(c < 10.0), lambda c: c * 2 + 1, jnp.abs(x))",
    ])
    shape = (r.choice([3, 4]), r.choice([2, 5]))
    return f"f = lambda x: {body.format(n=r.randint(1, 5))}\nargs = ({_s(shape, 'float32')},)"


def custom_rules(r):
    kind = r.choice(["jvp", "vjp", "jvp_grad", "vjp_nondiff"])
    if kind.startswith("jvp"):
        code = """
@jax.custom_jvp
def g(x):
    return jnp.log1p(jnp.exp(x))
g.defjvp(lambda p, t: (g(p[0]), t[0] * jax.nn.sigmoid(p[0])))
"""
    elif kind == "vjp":
        code = """
@jax.custom_vjp
def g(x):
    return jnp.clip(x, -1.0, 1.0)
g.defvjp(lambda x: (g(x), x), lambda x, t: (t * (jnp.abs(x) <= 1),))
"""
    else:
        code = """
from functools import partial
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def g(x, s=2.0):
    return x * s
g.defvjp(lambda x, s: (g(x, s), None), lambda s, _, t: (t * s,))
"""
    outer = r.choice(["lambda x: jax.grad(lambda y: g(y).sum())(x)", "lambda x: g(x)",
                      "lambda x: jax.jvp(g, (x,), (jnp.ones_like(x),))[1]",
                      "lambda x: jax.vmap(jax.grad(lambda y: g(y).sum()))(x)"])
    if kind != "jvp" and "jvp" in outer:  # forward mode through a custom_vjp: JAX refuses
        outer = "lambda x: g(x)"
    return code + f"f = {outer}\nargs = ({_s((3, 4), 'float32')},)"


def transforms(r):
    op = r.choice([
        "jax.grad(lambda w: jnp.sum(jnp.tanh(x @ w) ** 2))(w)",
        "jax.vmap(lambda a, b: a @ b)(x[None].repeat(2, 0), w[None].repeat(2, 0))",
        "jax.grad(jax.checkpoint(lambda w: jnp.sum(jnp.sin(jnp.sin(x @ w)))))(w)",
        "jax.grad(jax.checkpoint(lambda w: jnp.sum(jax.nn.gelu(x @ w)), policy=jax.checkpoint_policies.dots_saveable))(w)",
        "jax.jacfwd(lambda w: jnp.tanh(x @ w).sum(0))(w)",
        "jax.hessian(lambda w: jnp.sum((x @ w) ** 3))(w)",
        "jax.vmap(jax.vmap(lambda a: a * a.sum()))(x)",
        "jax.value_and_grad(lambda w: jnp.mean(jax.nn.relu(x @ w)))(w)",
        "jax.linearize(lambda w: jnp.sin(x @ w), w)[1](w)",
    ])
    return f"f = lambda x, w: {op}\nargs = ({_s((2, 4), 'float32')}, {_s((4, 3), 'float32')})"


def symbolic(r):
    op = r.choice(["x * 2 + 1", "jnp.sum(x, axis=0)", "jnp.broadcast_to(x.sum(1, keepdims=True), x.shape)",
                   "x.reshape(-1)", "jnp.arange(x.shape[0])[:, None] + x", "jnp.concatenate([x, x], axis=0)",
                   "x[1:]", "jnp.pad(x, ((1, 1), (0, 0)))", "jnp.cumsum(x, axis=0)",
                   "lax.reduce_window(x, 0.0, lax.add, (2, 1), (1, 1), 'SAME')", "x @ x.T",
                   "jnp.zeros((x.shape[0] * 2,)) + 1", "jnp.where(x > 0, x, jnp.zeros_like(x))",
                   "jax.nn.softmax(x, axis=0)", "jnp.sort(x, axis=0)", "x.reshape(x.shape[0], 2, 2)",
                   "jnp.take(x, jnp.array([0, 1]), axis=0)", "x[::2, ::-1]", "jnp.tile(x, (2, 1))",
                   "lax.dynamic_slice_in_dim(x, 1, 1, 0)", "jnp.argmax(x, axis=0)", "x.T @ x",
                   "lax.conv_general_dilated(x[None, None], jnp.ones((1, 1, 2, 2)), (1, 1), 'SAME')",
                   "lax.iota(jnp.int32, x.shape[0]) * 2", "jnp.cumsum(x[::-1], axis=0)",
                   "lax.pad(x, 0.0, ((1, 2, 1), (0, 0, 0)))", "jnp.max(x, axis=0) - jnp.min(x, axis=0)"])
    dims = r.choice(["b, 4", "b, 4", "2*b, 4"])
    export = r.choice([False, True])
    return (f"f = lambda x: {op}\nargs = (S(jax.export.symbolic_shape('{dims}'), jnp.float32),)\n"
            f"symbolic = True\nexport = {export}")


def debug_info(r):
    op = r.choice(["(lambda y: jax.named_scope('outer')(lambda: jnp.sin(y) * 2)())(x)",
                   "jax.named_call(lambda y: y * 3, name='triple')(x)",
                   "jnp.sin(x) + jnp.cos(x)",
                   "jax.jit(lambda y: y + 1, inline=False)(x) * 2",
                   "jax.jit(lambda y: jnp.exp(y))(x) + jax.jit(lambda y: jnp.exp(y))(x + 1)"])
    return f"f = lambda x: {op}\nargs = ({_s((4,), 'float32')},)"


def misc(r):
    op = r.choice(["jnp.linalg.norm(x, axis=-1)", "jnp.outer(x[0], x[1])", "jnp.tril(x) + jnp.triu(x, 1).T",
                   "jnp.kron(x, x)[:3]", "jnp.diff(x, axis=0)", "jnp.meshgrid(x[0], x[1])[0]",
                   "jnp.interp(x, jnp.arange(4.0), jnp.arange(4.0) ** 2)", "jnp.round(x * 10) / 10",
                   "lax.reduce_precision(x, 4, 3)", "jnp.nextafter(x, jnp.zeros_like(x))",
                   "jnp.histogram(x, bins=4)[0]", "jax.nn.one_hot(jnp.argmax(x, -1), 4)",
                   "lax.erf_inv(jnp.tanh(x))", "jnp.polyval(jnp.array([1.0, 2.0, 3.0]), x)",
                   "jnp.ldexp(x, jnp.int32(3))",
                   "jnp.frexp(x)[0]", "lax.expand_dims(x, (0,)) * lax.iota(jnp.float32, 4)"])
    return f"f = lambda x: {op}\nargs = ({_s((4, 4), 'float32')},)"


def linalg(r):
    n = r.choice([2, 3, 4])
    batch = r.choice([(), (2,)])
    op = r.choice(["jnp.linalg.det(x)", "jnp.linalg.inv(x)", "jnp.linalg.solve(x, x[..., :1] + 1)",
                   "jnp.linalg.slogdet(x)[1]", "jax.scipy.linalg.lu_factor(x)[0]" if not batch else "lax.linalg.lu(x)[0]",
                   "lax.linalg.lu(x)[1]", "lax.linalg.lu(x)[2]", "lax.linalg.lu(x[..., :-1, :])[0]",
                   "lax.linalg.lu(x[..., :, :-1])[0]", "jnp.linalg.cholesky(x @ jnp.swapaxes(x, -1, -2) + 4 * jnp.eye(x.shape[-1]))",
                   "jnp.linalg.eigh(x + jnp.swapaxes(x, -1, -2))[0]", "jnp.linalg.qr(x)[1]"])
    dtype = r.choice(["float32", "float32", "complex64"])
    return f"f = lambda x: {op}\nargs = ({_s(batch + (n, n), dtype)},)"


TEMPLATES = [masked_attention, softmax_layernorm, einsum, conv, pooling, cumulative, sorting, fft, rng,
             bitcast, complex_ops, integer_ops, converts, clamp_select, indexing, dynamic_slicing,
             control_flow, custom_rules, transforms, symbolic, debug_info, misc, linalg]

_AXES = ("x", "y", None, ("x", "y"), ("y", "x"))


def _spec(r: random.Random, ndim: int) -> str:
    used, dims = set(), []
    for _ in range(ndim):
        a = r.choice(_AXES)
        names = (a,) if isinstance(a, str) else (a or ())
        if used & set(names):
            a = None
        used |= set(names if a else ())
        dims.append(repr(a))
    return f"P({', '.join(dims)})"


def _sharded(r: random.Random) -> tuple[str, str]:
    """A sharded program: (name, code) on the 2x4 mesh."""
    kind = r.choice(["jit", "constraint", "shard_map", "reshard"])
    shape = (8, r.choice([8, 16]))
    op = r.choice(["jnp.tanh(x) @ x.T", "x * 2 + 1", "jnp.sum(x, axis=1, keepdims=True) + x",
                   "jnp.cumsum(x, axis=0)", "jnp.sort(x, axis=1)", "x.T.reshape(x.shape) if x.shape[0] == x.shape[1] else x[::-1]",
                   "jax.nn.softmax(x, axis=-1)", "jnp.where(x > 0, x, -x)", "jnp.concatenate([x, x], axis=1)",
                   "lax.reduce_window(x, -jnp.inf, lax.max, (2, 1), (2, 1), 'VALID')",
                   "jnp.take(x, jnp.array([3, 1, 0, 7]), axis=0)", "x.at[jnp.array([0, 2, 5])].add(1.0)",
                   "lax.fori_loop(0, 3, lambda i, c: c * 1.5 + i, x)", "jnp.einsum('ij,kj->ik', x, x)",
                   "lax.conv_general_dilated(x[None, None], jnp.ones((2, 1, 3, 3), x.dtype), (1, 1), 'SAME')[0, 1]",
                   "jnp.pad(x, ((1, 3), (0, 0)))", "x[1:7]", "jnp.roll(x, 2, axis=0)", "jnp.flip(x, 1)",
                   "jax.nn.one_hot(jnp.argmax(x, 1), x.shape[1], dtype=x.dtype)",
                   "lax.dynamic_slice(x, (2, 0), (4, x.shape[1]))", "jnp.max(x, axis=0, keepdims=True) * x",
                   "lax.rev(x, (0,))", "jnp.tril(x)", "lax.sort((x, -x), dimension=0, num_keys=1)[1]",
                   "lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])), (0, x))[1]",
                   "lax.reduce_window(x, 0.0, lax.add, (3, 3), (1, 1), 'SAME')", "x.reshape(x.shape[1], 8)",
                   "lax.cond(x.sum() > 0, lambda y: y * 2, lambda y: -y, x)"])
    dtype = r.choice(["float32", "float32", "bfloat16"])
    a, b = _spec(r, 2), _spec(r, 2)
    if kind == "jit":
        code = (f"f = jax.jit(lambda x: {op}, in_shardings=NS(mesh, {a}), out_shardings=NS(mesh, {b}))\n"
                f"specs = ({a},)")
    elif kind == "constraint":
        code = f"f = jax.jit(lambda x: lax.with_sharding_constraint({op}, NS(mesh, {b})) + 1)\nspecs = ({a},)"
    elif kind == "shard_map":
        coll = r.choice(["lax.psum(y, 'x')", "y * 2", "lax.pmax(y, 'y')", "lax.all_gather(y, 'x', tiled=True)",
                         "lax.ppermute(y, 'y', [(i, (i + 1) % 4) for i in range(4)])"])
        out = "P()" if "psum" in coll or "pmax" in coll or "all_gather" in coll else "P('x', 'y')"
        code = (f"f = jax.jit(shard_map(lambda y: {coll}, mesh=mesh, in_specs=P('x', 'y'), out_specs={out}, "
                f"check_vma=False))\nspecs = (P('x', 'y'),)")
        shape = (8, 8)
    else:
        code = ("emesh = jax.make_mesh((2, 4), ('x', 'y'), axis_types=(jax.sharding.AxisType.Explicit,) * 2)\n"
                f"f = jax.jit(lambda x: jax.sharding.reshard(jax.sharding.reshard(x * 2, NS(emesh, {b})), "
                f"NS(emesh, {_spec(r, 2)})) + 1, in_shardings=NS(emesh, {a}))\nspecs = ({a},)")
    return f"sharded_{kind}", code + f"\nargs = ({_s(shape, dtype)},)"


_KEEP = "\nf = f if hasattr(f, 'lower') else jax.jit(f, keep_unused=True)"
"""Every argument stays in the lowered signature (the checks feed each one)."""


def sample() -> list[tuple[str, str]]:
    """The default suite's programs: the first draw of each template and of each sharded kind
    (seed 0), deterministic."""
    r = random.Random(0)
    out = [(f"{t.__name__}_sample", t(r).strip() + _KEEP) for t in TEMPLATES]
    kinds = {}
    while len(kinds) < 4:
        name, code = _sharded(r)
        kinds.setdefault(name, code)
    return out + [(f"{name}_sample", code) for name, code in kinds.items()]


def generate(seed: int, count: int) -> list[tuple[str, str]]:
    """`count` programs drawn from `seed` (names unique: template, index, seed)."""
    r = random.Random(seed)
    out = []
    for i in range(count):
        if r.random() < 0.3:
            name, code = _sharded(r)
        else:
            t = r.choice(TEMPLATES)
            name, code = t.__name__, t(r).strip() + _KEEP
        out.append((f"{name}_{seed}_{i}", code))
    return out


_LOWER_CHILD = _CODE + """
RESULT = {}
for name, code in PAYLOAD:
    try:
        env = program(code)
        fn = jitted(env["f"])
        if env.get("export"):
            text = jax.export.export(fn)(*env["args"]).mlir_module()
            with mlir.make_ir_context() as ctx:
                op = ir.Module.parse(text).operation
        else:
            op = fn.lower(*env["args"]).compiler_ir("stablehlo").operation
        out = {}
        for key, debug in (("pretty", False), ("pretty_debug", True)):
            text = out[key] = op.get_asm(enable_debug_info=debug)
            with mlir.make_ir_context() as ctx:
                ctx.enable_multithreading(False)
                out[key.replace("pretty", "generic")] = ir.Module.parse(text).operation.get_asm(
                    print_generic_op_form=True, enable_debug_info=debug)
        if not env.get("symbolic"):
            out["run"] = run_item(["jax", name, code, 0])
        RESULT[name] = out
    except Exception as e:
        RESULT[name] = {"error": f"{type(e).__name__}: {e}"[:1000]}
"""


def lower_live(programs) -> dict:
    """Per program name, jaxlib's pretty and generic text with and without debug info and, unless
    symbolic, `run`: `interpreter_oracle`'s JAX run on inputs from seed 0 (the text, the inputs,
    JAX's outputs, or `{"error"}`); or `{"error"}`. One child, kept on disk like the corpus."""
    programs = [list(p) for p in programs]
    return cached([_LOWER_CHILD, programs], lambda: run_child(_LOWER_CHILD, programs, timeout=1800))


def propagation_verdicts(texts) -> list[Verdict]:
    """jaxlib's `sdy-propagation-pipeline` on each text (kept on disk)."""
    raw = cached(["live-propagation", list(texts)], lambda: [
        [v.ok, v.text, list(v.errors), v.crashed]
        for v in run_jaxlib_passes([(t, ["sdy-propagation-pipeline"]) for t in texts], timeout=1800)])
    return [Verdict(ok=ok, text=text, errors=tuple(errors), crashed=crashed) for ok, text, errors, crashed in raw]


def execute_cases(programs) -> Path:
    """The shared oracle's recorded cases (`jax_execute.py --file`) of the sharded programs:
    JAX's per-device shards on the 2x4 mesh, kept in the temp folder like `variant_cases`."""
    sharded = [[name, code] for name, code in programs if "\nspecs = " in code]
    text = json.dumps(sharded)
    key = hashlib.sha256(ORACLE.read_bytes() + text.encode() + json.dumps(
        [version("jax"), version("jaxlib"), sys.executable]).encode()).hexdigest()[:20]
    out = Path(tempfile.gettempdir()) / f"layout-toolkit-live-{key}"
    with open(out.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "done").exists():
            out.mkdir(parents=True, exist_ok=True)
            (out / "programs.py").write_text(f"PROGRAMS = {text}\n")
            subprocess.run([sys.executable, str(ORACLE), str(out), "--file", str(out / "programs.py")],
                           check=False, capture_output=True, timeout=3600)
            (out / "done").write_text("")
    return out
