"""Parse + generic print of generated modules of 1k, 10k and 100k ops (`sdy_passes` IR).

The module (`module_text`) is what jaxlib prints in generic form for `generated_module`: funcs
of 100 ops mixing `stablehlo.add`/`multiply`/`negate`/`constant`, `sdy.sharding_constraint` and
`sdy.sharding` attributes, with func argument shardings. (jaxlib's generic form numbers values
across funcs, the last func first; our printer matches it, so `module_text` prints ours.) `ParsePrint` times each step; `PerOp` tracks

* `track_us_per_op`: parse + print CPU time per op (best of 5; CPU time because the benchmark
  machine may be shared);
* `track_per_op_vs_1k`: that time at N over the time at 1k (target: <= 1.5 at 100k, linear);
* `track_ratio_to_jaxlib`: our time over jaxlib's `ir.Module.parse` + generic `get_asm` of the
  same text, CPU time measured inside a child process (the benchmark process never imports jax;
  jaxlib's parse also verifies; its context is single-threaded). Skipped without jax or when `SDY_BENCH_NO_JAXLIB` is set.
"""

import gc
import json
import os
import pathlib
import subprocess
import sys
import time

import numpy as np

try:
    from ._common import SkipNotImplemented, attempt, measured, sizes
except ImportError:  # imported as a top-level module (tests/ put this folder on sys.path)
    from _common import SkipNotImplemented, attempt, measured, sizes

ROOT = pathlib.Path(__file__).resolve().parents[2]
try:
    from sdy_passes import parse_module, print_module
except ImportError:  # `asv run --python=same` from a checkout that is not installed
    sys.path.insert(0, str(ROOT))
    from sdy_passes import parse_module, print_module

SIZES = sizes([1000, 10000], [100000])
T = "tensor<8x16xf32>"


def generated_module(num_ops: int, ops_per_func: int = 100) -> str:
    """Generic-form text of a module with `num_ops` ops (jaxlib prints it back unchanged)."""
    lines = ['"builtin.module"() ({',
             '  "sdy.mesh"() <{mesh = #sdy.mesh<["x"=2, "y"=4]>, sym_name = "mesh"}> : () -> ()']
    count, f, value = 2, 0, 0
    while count < num_ops:
        lines.append(f'  "func.func"() <{{arg_attrs = [{{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}, {{}}], '
                     f'function_type = ({T}, {T}) -> {T}, sym_name = "f{f}"}}> ({{')
        lines.append(f"  ^bb0(%arg{2 * f}: {T}, %arg{2 * f + 1}: {T}):")
        prev, other = f"%arg{2 * f}", f"%arg{2 * f + 1}"
        count += 2
        for i in range(min(ops_per_func, num_ops - count + 1) - 1):
            v = f"%{value}"
            value += 1
            k = i % 5
            if k == 0:
                lines.append(f'    {v} = "stablehlo.add"({prev}, {other}) : ({T}, {T}) -> {T}')
            elif k == 1:
                lines.append(f'    {v} = "stablehlo.multiply"({prev}, {prev}) {{sdy.sharding = '
                             f'#sdy.sharding_per_value<[<@mesh, [{{"x", ?}}, {{"y"}}p1]>]>}} : ({T}, {T}) -> {T}')
            elif k == 2:
                lines.append(f'    {v} = "sdy.sharding_constraint"({prev}) <{{sharding = '
                             f'#sdy.sharding<@mesh, [{{}}, {{"y"}}]>}}> : ({T}) -> {T}')
            elif k == 3:
                lines.append(f'    {v} = "stablehlo.constant"() <{{value = dense<1.000000e+00> : {T}}}> : () -> {T}')
                other = v
            else:
                lines.append(f'    {v} = "stablehlo.negate"({prev}) : ({T}) -> {T}')
            if k != 3:
                prev = v
            count += 1
        lines.append(f'    "func.return"({prev}) : ({T}) -> ()')
        lines.append("  }) : () -> ()")
        f += 1
    lines.append("}) : () -> ()")
    return "\n".join(lines) + "\n"


def module_text(num_ops: int) -> str:
    """`generated_module` as jaxlib prints it back (generic form, jaxlib's value numbering)."""
    return print_module(parse_module(generated_module(num_ops)), generic=True)


def _ours_seconds(text: str, repeat: int = 5) -> float:
    """Best CPU time of parse + generic print (CPU time: the machine may be shared)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        print_module(parse_module(text), generic=True)
        best = min(best, time.process_time() - start)
    return best


_JAXLIB_CHILD = """
import json, sys, time
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir
text = sys.stdin.read()
ctx = jax_mlir.make_ir_context()
ctx.enable_multithreading(False)
best = float("inf")
with ctx, ir.Location.unknown():
    for _ in range(5):
        start = time.process_time()
        module = ir.Module.parse(text)
        out = module.operation.get_asm(print_generic_op_form=True)
        best = min(best, time.process_time() - start)
        del module
print(json.dumps(best))
"""


def _jaxlib_seconds(text: str) -> float:
    if os.environ.get("SDY_BENCH_NO_JAXLIB"):
        raise SkipNotImplemented("SDY_BENCH_NO_JAXLIB is set")
    proc = subprocess.run([sys.executable, "-c", _JAXLIB_CHILD], input=text, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, JAX_PLATFORMS="cpu"))
    if proc.returncode != 0:
        raise SkipNotImplemented(f"jaxlib child failed: {proc.stderr[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


class ParsePrint:
    """Each step on its own: parse, generic print, pretty print, and parse + generic print."""

    params = [SIZES]
    param_names = ["num_ops"]
    timeout = 600

    def setup_cache(self):
        """The texts, made (and checked to print back unchanged) once for every row."""
        texts = {}
        for num_ops in SIZES:
            texts[num_ops] = text = module_text(num_ops)
            assert print_module(parse_module(text), generic=True) == text
        return texts

    def setup(self, texts, num_ops):
        self.text = texts[num_ops]
        self.module = parse_module(self.text)

    def time_parse(self, texts, num_ops):
        parse_module(self.text)

    def time_print_generic(self, texts, num_ops):
        print_module(self.module, generic=True)

    def time_print_pretty(self, texts, num_ops):
        print_module(self.module)

    def time_parse_print(self, texts, num_ops):
        print_module(parse_module(self.text), generic=True)


class PerOp:
    """Time per op, its growth from 1k ops, and the ratio to jaxlib: each measured once for all
    three rows (`setup_cache`)."""

    params = [SIZES]
    param_names = ["num_ops"]
    timeout = 1200
    number = 1
    repeat = 1

    def setup_cache(self):
        runs = {}
        for num_ops in sorted(set(SIZES) | {1000}):
            text = generated_module(num_ops)
            runs[num_ops] = dict(ours=_ours_seconds(text), jaxlib=attempt(_jaxlib_seconds, text))
        return runs

    def track_us_per_op(self, runs, num_ops):
        return runs[num_ops]["ours"] / num_ops * 1e6

    track_us_per_op.unit = "us"

    def track_per_op_vs_1k(self, runs, num_ops):
        return (runs[num_ops]["ours"] / num_ops) / (runs[1000]["ours"] / 1000)

    track_per_op_vs_1k.unit = "ratio"

    def track_ratio_to_jaxlib(self, runs, num_ops):
        return runs[num_ops]["ours"] / measured(runs[num_ops]["jaxlib"])

    track_ratio_to_jaxlib.unit = "ratio"


def dense_constant_module(num_elements: int) -> str:
    """One `stablehlo.constant` of `num_elements` f32 values written as decimals (`%.6e`, the
    way MLIR prints up to 100 elements), seeded random normal values."""
    values = np.random.default_rng(0).standard_normal(num_elements).astype(np.float32)
    t = f"tensor<{num_elements}xf32>"
    body = ", ".join(f"{v:.6e}" for v in values.tolist())
    return (f"func.func @main() -> {t} {{\n  %0 = stablehlo.constant dense<[{body}]> : {t}\n"
            f"  return %0 : {t}\n}}\n")


class DecimalDenseConstant:
    """Parse + generic print of one decimal dense constant (issue 37 item 13): target <= 3x
    jaxlib at 1M elements (`track_ratio_to_jaxlib`)."""

    params = [sizes([10_000], [1_000_000])]
    param_names = ["num_elements"]
    timeout = 600
    number = 1
    repeat = 1

    def setup(self, num_elements):
        self.text = dense_constant_module(num_elements)

    def time_parse_print(self, num_elements):
        print_module(parse_module(self.text), generic=True)

    def track_ratio_to_jaxlib(self, num_elements):
        return _ours_seconds(self.text, repeat=3) / _jaxlib_seconds(self.text)

    track_ratio_to_jaxlib.unit = "ratio"
