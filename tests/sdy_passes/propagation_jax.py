"""JAX programs with shardings, through jaxlib's propagation pipeline up to propagation.

Each program (`jax_corpus.PROGRAMS` and `EXTRA_PROGRAMS`, same conventions) is lowered live by
jax 0.10.2 in a child (8 simulated CPU devices) with a `NamedSharding` on every array argument
(its `ShapeDtypeStruct`'s sharding: a random divisible `PartitionSpec` over the corpus's 2x4
mesh, drawn from the program's name and a variant number) and `jax.lax.with_sharding_constraint`
on some intermediate values: a jaxpr interpreter re-binds the program's top-level equations and
constrains about a third of their array results (random divisible specs, some dims
`P.UNCONSTRAINED`). Programs that fix their own `in_shardings`, are jitted already or take
non-array arguments keep what they have.

`run_all(programs, variant)` returns, per program, the lowered text and jaxlib's pretty output
of `PIPELINE` run twice (None when it crashed: its user-priority pass segfaults intermittently,
spec/propagation.md §4.6), all in one child (resumed past a crash).
"""

from __future__ import annotations

from tests.sdy_passes.jax_corpus import CHILD_PRELUDE

PIPELINE = ("builtin.module(sdy-import-pipeline, sdy-flatten-call-graph, symbol-dce, "
            "sdy-import-func-calls{add-data-flow-edges-on-named-computations=true}, symbol-dce, "
            "sdy-apply-sharding-constraints, sdy-sharding-group-import, sdy-pre-order-funcs, "
            "sdy-user-priority-propagate{keep-sharding-rules=true})")
"""jaxlib's `sdy-propagation-pipeline` up to and including its propagation step (spec §1)."""

EXTRA_PROGRAMS: list[tuple[str, str]] = [
    ("transformer_block", """
def f(x, wq, wk, wv, wo, w1, w2):
    def norm(h):
        m = h.mean(-1, keepdims=True)
        return (h - m) * lax.rsqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5)
    heads = lambda h: h.reshape(8, 16, 4, 8).transpose(0, 2, 1, 3)
    h = norm(x)
    q, k, v = heads(h @ wq), heads(h @ wk), heads(h @ wv)
    a = jax.nn.softmax(jnp.einsum('bhqd,bhkd->bhqk', q, k) / 8.0, axis=-1)
    o = jnp.einsum('bhqk,bhkd->bhqd', a, v).transpose(0, 2, 1, 3).reshape(8, 16, 32)
    x = x + o @ wo
    return x + jax.nn.gelu(norm(x) @ w1) @ w2
args = (S((8, 16, 32), jnp.float32),) + (S((32, 32), jnp.float32),) * 4 + (
    S((32, 64), jnp.float32), S((64, 32), jnp.float32))"""),
    ("scan_layers", """
def f(x, ws):
    def layer(h, w):
        h = jnp.tanh(h @ w)
        return lax.with_sharding_constraint(h, NS(mesh, P('x', None))), h.sum(0)
    return lax.scan(layer, x, ws)
args = (S((8, 32), jnp.float32), S((4, 32, 32), jnp.float32))"""),
    ("while_sharded_carry", """
def f(x, w):
    def body(c):
        i, h = c
        return i + 1, lax.with_sharding_constraint(jnp.sin(h @ w), NS(mesh, P(None, 'y')))
    return lax.while_loop(lambda c: c[0] < 3, body, (0, x))[1]
args = (S((16, 8), jnp.float32), S((8, 8), jnp.float32))"""),
    ("shard_map_in_auto", """
g = shard_map(lambda x: jnp.cos(x) * lax.axis_index('x'), mesh=mesh, in_specs=P('x', None), out_specs=P('x', None))
f = lambda x, y: g(x * 2.0 + y).sum(1) + y[:, 0]
args = (S((8, 8), jnp.float32), S((8, 8), jnp.float32))"""),
    ("train_step", """
def loss(p, x, y):
    h = jax.nn.relu(x @ p['w1'] + p['b1'])
    return jnp.mean((h @ p['w2'] - y) ** 2)
def f(p, x, y):
    g = jax.grad(loss)(p, x, y)
    return jax.tree.map(lambda a, b: a - 0.1 * b, p, g)
args = ({'w1': S((16, 32), jnp.float32), 'b1': S((32,), jnp.float32), 'w2': S((32, 8), jnp.float32)},
        S((8, 16), jnp.float32), S((8, 8), jnp.float32))"""),
]
"""Larger programs beside the syntax corpus's (layers, loops, shard_map among auto ops)."""

_CHILD = CHILD_PRELUDE + """
import random
from jax._src import core
from jax._src.lib.mlir import passmanager
AXES = {"x": 2, "y": 4}


def spec(rng, shape, unconstrained=False):
    free, dims = dict(AXES), []
    for d in shape:
        options = [None] + [a for a in free if d % free[a] == 0]
        if len(free) == 2 and d % 8 == 0:
            options += [("x", "y"), ("y", "x")]
        if unconstrained:
            options.append(P.UNCONSTRAINED)
        pick = rng.choice(options)
        for a in (pick if isinstance(pick, tuple) else (pick,)):
            free.pop(a, None)
        dims.append(pick)
    return P(*dims)


def shardable(x):
    return hasattr(x, "shape") and hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jnp.number) or \\
        getattr(x, "dtype", None) == jnp.bool_


def constrained(fn, rng):
    def g(*args):
        closed, out_shape = jax.make_jaxpr(fn, return_shape=True)(*args)
        env = {}
        read = lambda v: v.val if isinstance(v, core.Literal) else env[v]
        env.update(zip(closed.jaxpr.constvars, closed.consts))
        env.update(zip(closed.jaxpr.invars, jax.tree.leaves(args)))
        for eqn in closed.jaxpr.eqns:
            outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.primitive.get_bind_params(eqn.params))
            outs = outs if eqn.primitive.multiple_results else [outs]
            for v, o in zip(eqn.outvars, outs):
                if shardable(o) and o.ndim and rng.random() < 0.35:
                    o = lax.with_sharding_constraint(o, NS(mesh, spec(rng, o.shape, True)))
                env[v] = o
        return jax.tree.unflatten(jax.tree.structure(out_shape), [read(v) for v in closed.jaxpr.outvars])
    return g


def lower(name, code, variant):
    rng = random.Random(f"{name}/{variant}")
    env = program(code)
    fn, args = env["f"], env["args"]
    leaves = jax.tree.leaves(args)
    if "in_shardings" not in code and all(isinstance(a, S) for a in leaves):
        args = jax.tree.map(lambda a: S(a.shape, a.dtype, sharding=NS(mesh, spec(rng, a.shape))), args)
        if not hasattr(fn, "lower"):
            fn = constrained(fn, rng)
    fn = jitted(fn)
    return fn.lower(*args).compiler_ir("stablehlo").operation.get_asm(enable_debug_info=False)


def propagate(text):
    ctx = mlir.make_ir_context()
    ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        passmanager.PassManager.parse(PIPELINE).run(module.operation)
        return module.operation.get_asm()


def run_item(item):
    name, code, variant = item
    try:
        text = lower(name, code, variant)
    except Exception:
        return {"name": name, "error": traceback.format_exc(limit=3)}
    try:
        return {"name": name, "text": text, "runs": [propagate(text), propagate(text)]}
    except Exception as e:
        return {"name": name, "text": text, "jaxlib_error": str(e)}
"""


def run_all(programs, variant=0, pipeline=PIPELINE):
    """Per program `(name, code)` (shardings drawn from its name and `variant`): a dict with `text` (the lowered module) and `runs` (jaxlib's
    two outputs of `pipeline`), or `jaxlib_error`, or `error` (lowering failed); None when jaxlib crashed."""
    from tests.jaxlib_child import run_child_items

    code = f"PIPELINE = {pipeline!r}\n" + _CHILD
    return run_child_items(code, [[name, text, variant] for name, text in programs])
