"""Shared by the benchmark files: the switch for the long sizes, asv's skip, and measurements made
once per run (`setup_cache`).

`asv run --python=same --quick` runs the short sizes, every row once (issue 36's target: <= 10
minutes on 2 cores). `BENCH_LONG=1` adds the issues' sizes (100k-op modules, 10k calls, 64 MiB
arrays, 4096x4096 tiling, the realistic transformer block, the computed 64k x 64k dask reshard),
which take an hour or more.

asv runs every row (a benchmark at one parameter) in its own process (a fork: `asv.conf.json`'s
`launch_method`) that re-runs the class's `setup`; rows that track numbers of one computation (ours, jaxlib's, their ratio) read them from
the class's `setup_cache`, which runs once and hands its value to every row.
"""

import os

try:
    from asv_runner.benchmarks.mark import SkipNotImplemented
except ImportError:  # imported outside asv
    SkipNotImplemented = NotImplementedError
"""Raised in a benchmark's body (not only its `setup`), asv records a skip instead of a failure with a traceback."""

LONG = os.environ.get("BENCH_LONG", "") not in ("", "0")


def sizes(short, long):
    """The parameter values: `short`, and `long` after them with `BENCH_LONG=1`."""
    return list(short) + (list(long) if LONG else [])


def attempt(fn, *args):
    """`fn(*args)`, or the `NotImplementedError` (a skip) it raised: for `setup_cache`, whose own
    failure would fail every row of its class, not only the rows that need what is missing."""
    try:
        return fn(*args)
    except NotImplementedError as skip:
        return skip


def measured(value):
    """A value `attempt` returned, or its skip raised in the row that reads it."""
    if isinstance(value, NotImplementedError):
        raise SkipNotImplemented(str(value))
    return value


TRANSFORMER_BLOCK = r"""
def f(x, wq, wk, wv, wo, w1, w2):
    def norm(h):
        m = h.mean(-1, keepdims=True)
        return (h - m) * lax.rsqrt(((h - m) ** 2).mean(-1, keepdims=True) + 1e-5)
    split = lambda h: h.reshape(batch, seq, heads, hd).transpose(0, 2, 1, 3)
    h = norm(x)
    q, k, v = split(h @ wq), split(h @ wk), split(h @ wv)
    a = jax.nn.softmax(jnp.einsum('bhqd,bhkd->bhqk', q, k) / np.sqrt(hd), axis=-1)
    o = jnp.einsum('bhqk,bhkd->bhqd', a, v).transpose(0, 2, 1, 3).reshape(batch, seq, d)
    x = x + o @ wo
    return x + jax.nn.gelu(norm(x) @ w1) @ w2
shapes = [(batch, seq, d)] + [(d, d)] * 4 + [(d, 4 * d), (4 * d, d)]
"""
"""The JAX transformer block (layer norm, attention, a 4x GELU MLP) the child scripts lower and run:
`f` and its argument `shapes`, from `batch, seq, d, heads, hd` and `jax, jnp, lax, np`."""
