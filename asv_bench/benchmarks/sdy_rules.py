"""`sdy-populate-op-sharding-rules` on generated modules of 1k, 10k and 100k ops.

The module repeats a transformer-like layer (`layer_module`): dot_general, broadcast_in_dim,
add, reshape, transpose, reduce, divide, select, compare, slice, concatenate, convert, in one
func; with `distinct=True` each layer widens the hidden dim by one, so no two layers share a rule
(the worst case for the pass's per-run rule cache). Each measurement runs the pass on a freshly parsed
module (parsing is not timed).

Target (issue 25): at most 20 us per op at 100k ops, and linear: the time per op at 100k within
1.5x of that at 1k (`track_seconds_per_op`).
"""

import pathlib
import sys
import time

try:
    from ._common import sizes
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import sizes

ROOT = pathlib.Path(__file__).resolve().parents[2]
try:
    import sdy_passes
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(ROOT))
    import sdy_passes

OPS_PER_LAYER = 14


def _t(shape, dtype="f32"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"


def layer_module(n_ops, distinct=False):
    """About `n_ops` ops (whole layers of 14) in one func, in generic form."""
    layers = max(1, n_ops // OPS_PER_LAYER)
    b, s, h, k = 8, 128, 256, 64
    lines = ['"builtin.module"() ({',
             f'  "func.func"() <{{function_type = ({_t([b, s, h])}) -> {_t([b, s, h + (layers if distinct else 0)])}, sym_name = "main"}}> ({{',
             f"  ^bb0(%x0: {_t([b, s, h])}):"]
    x, n = "%x0", 0
    for layer in range(layers):
        w, bias, z = f"%w{layer}", f"%b{layer}", f"%z{layer}"
        keep = h - k + (1 if distinct else 0)  # columns of x kept next to the layer's output

        def op(text):
            nonlocal n
            lines.append(f"    %{n} = {text}")
            n += 1
            return f"%{n - 1}"

        lines.append(f'    {w} = "stablehlo.constant"() <{{value = dense<1.0> : {_t([h, k])}}}> : () -> {_t([h, k])}')
        lines.append(f'    {bias} = "stablehlo.constant"() <{{value = dense<0.0> : {_t([k])}}}> : () -> {_t([k])}')
        lines.append(f'    {z} = "stablehlo.constant"() <{{value = dense<0.0> : tensor<f32>}}> : () -> tensor<f32>')
        y = op(f'"stablehlo.dot_general"({x}, {w}) <{{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [0]>}}> : ({_t([b, s, h])}, {_t([h, k])}) -> {_t([b, s, k])}')
        bb = op(f'"stablehlo.broadcast_in_dim"({bias}) <{{broadcast_dimensions = array<i64: 2>}}> : ({_t([k])}) -> {_t([b, s, k])}')
        y = op(f'"stablehlo.add"({y}, {bb}) : ({_t([b, s, k])}, {_t([b, s, k])}) -> {_t([b, s, k])}')
        y = op(f'"stablehlo.reshape"({y}) : ({_t([b, s, k])}) -> {_t([b, s * k])}')
        y = op(f'"stablehlo.reshape"({y}) : ({_t([b, s * k])}) -> {_t([b, s, k])}')
        y = op(f'"stablehlo.transpose"({y}) <{{permutation = array<i64: 1, 0, 2>}}> : ({_t([b, s, k])}) -> {_t([s, b, k])}')
        r = op(f'"stablehlo.reduce"({y}, {z}) <{{dimensions = array<i64: 2>}}> ({{\n    ^bb0(%p: tensor<f32>, %q: tensor<f32>):\n      %m = "stablehlo.maximum"(%p, %q) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n      "stablehlo.return"(%m) : (tensor<f32>) -> ()\n    }}) : ({_t([s, b, k])}, tensor<f32>) -> {_t([s, b])}')
        rb = op(f'"stablehlo.broadcast_in_dim"({r}) <{{broadcast_dimensions = array<i64: 0, 1>}}> : ({_t([s, b])}) -> {_t([s, b, k])}')
        y = op(f'"stablehlo.divide"({y}, {rb}) : ({_t([s, b, k])}, {_t([s, b, k])}) -> {_t([s, b, k])}')
        c = op(f'"stablehlo.compare"({y}, {rb}) <{{comparison_direction = #stablehlo<comparison_direction GT>}}> : ({_t([s, b, k])}, {_t([s, b, k])}) -> {_t([s, b, k], "i1")}')
        y = op(f'"stablehlo.select"({c}, {y}, {rb}) : ({_t([s, b, k], "i1")}, {_t([s, b, k])}, {_t([s, b, k])}) -> {_t([s, b, k])}')
        y = op(f'"stablehlo.transpose"({y}) <{{permutation = array<i64: 1, 0, 2>}}> : ({_t([s, b, k])}) -> {_t([b, s, k])}')
        lo = op(f'"stablehlo.slice"({x}) <{{limit_indices = array<i64: {b}, {s}, {keep}>, start_indices = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>}}> : ({_t([b, s, h])}) -> {_t([b, s, keep])}')
        x = op(f'"stablehlo.concatenate"({lo}, {y}) <{{dimension = 2 : i64}}> : ({_t([b, s, keep])}, {_t([b, s, k])}) -> {_t([b, s, keep + k])}')
        h = keep + k
    lines.append(f'    "func.return"({x}) : ({_t([b, s, h])}) -> ()')
    lines.append("  }) : () -> ()")
    lines.append("}) : () -> ()")
    return "\n".join(lines) + "\n"


def _run(text):
    module = sdy_passes.parse_module(text)
    func = module.funcs()[0]
    from sdy_passes.propagation.populate_op_sharding_rules import PopulateOpShardingRulesPass
    start = time.perf_counter()
    PopulateOpShardingRulesPass().run(func)
    return time.perf_counter() - start, sum(1 for _ in func.walk()) - 1


class PopulateOpShardingRules:
    params = [sizes([1_000, 10_000], [100_000]), [False, True]]
    param_names = ["n_ops", "distinct"]
    timeout = 900
    number = 1
    repeat = 1

    def setup(self, n_ops, distinct):
        self.text = layer_module(n_ops, distinct)

    def track_seconds_per_op(self, n_ops, distinct):
        """Best of three runs, each on a freshly parsed module (ops counted after the pass)."""
        return min(seconds / ops for seconds, ops in (_run(self.text) for _ in range(3)))

    track_seconds_per_op.unit = "seconds"
