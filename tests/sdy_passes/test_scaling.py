"""Linear time: parsing, printing and `sdy-sharding-group-import` at n and 10n.

Each check allows 3x slack over linear (10n may take up to 30 times n), best of three runs of CPU
time with the garbage collector paused; absolute times are the benchmarks' business (asv_bench).
"""

import gc
import time

import pytest

import sdy_passes


def _best_time(fn, repeat=3) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.disable()  # (no gc.collect first: a worker's heap took ~0.3-1 s a collect, 6 per test)
        try:
            start = time.process_time()  # CPU time: other processes on the machine do not count
            fn()
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best


def _assert_linear(make, run, n=300):
    small, large = make(n), make(10 * n)
    t_small = _best_time(lambda: run(small))
    t_large = _best_time(lambda: run(large))
    assert t_large < 30 * t_small + 0.05, (t_small, t_large)


def chain(n):
    body = "\n".join(f"  %{i} = stablehlo.add {f'%{i - 1}' if i else '%arg0'}, %arg0 : tensor<8xf32>"
                     for i in range(n))
    return (f'sdy.mesh @mesh = <["x"=2]>\nfunc.func @f(%arg0: tensor<8xf32> {{sdy.sharding = '
            f'#sdy.sharding<@mesh, [{{"x"}}]>}}) -> tensor<8xf32> {{\n{body}\n  return %{n - 1} : tensor<8xf32>\n}}')


def top_level(n):
    return "\n".join(f'sdy.mesh @m{i} = <["x"=2]>' for i in range(n))


def blocks(n):
    succ = "\n".join(f'  ^bb{i}:\n    "t.br"()[^bb{i + 1}] : () -> ()' for i in range(n))
    return f'"t.op"() ({{\n{succ}\n  ^bb{n}:\n    "t.end"() : () -> ()\n}}) : () -> ()'


def dense_constant(n):
    """A decimal f32 constant of n elements (more than 100: read at once), as MLIR prints up to 100."""
    t = f"tensor<{n}xf32>"
    body = ", ".join(f"{(i * 7919 % 10007 - 5000) / 997:.6e}" for i in range(n))
    return f"func.func @f() -> {t} {{\n  %0 = stablehlo.constant dense<[{body}]> : {t}\n  return %0 : {t}\n}}"


@pytest.mark.parametrize("make", [chain, top_level, blocks, dense_constant])
def test_parse_is_linear(make):
    _assert_linear(make, lambda text: sdy_passes.parse_module(text, verify=False))


@pytest.mark.parametrize("make", [chain, top_level, blocks, dense_constant])
@pytest.mark.parametrize("generic", [False, True])
def test_print_is_linear(make, generic):
    _assert_linear(lambda n: sdy_passes.parse_module(make(n), verify=False),
                   lambda m: sdy_passes.print_module(m, generic=generic))


def duplicate_groups(n):
    """n values, each in two groups (i and i+1): one merged class, n duplicates to erase."""
    lines = ["func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {"]
    for i in range(n):
        lines.append(f"  %{i} = stablehlo.negate %arg0 : tensor<8xf32>")
        lines.append(f"  sdy.sharding_group %{i} group_id={i} : tensor<8xf32>")
        lines.append(f"  sdy.sharding_group %{i} group_id={(i + 1) % n} : tensor<8xf32>")
    lines.append("  return %arg0 : tensor<8xf32>\n}")
    return "\n".join(lines)


def test_sharding_group_import_with_duplicate_groups_is_linear():
    def run(text):
        module = sdy_passes.parse_module(text, verify=False)
        start = time.process_time()
        sdy_passes.run_passes(module, ["sdy-sharding-group-import"], verify=False)
        return time.process_time() - start
    n = 500
    small, large = duplicate_groups(n), duplicate_groups(10 * n)
    t_small = min(run(small) for _ in range(3))
    t_large = min(run(large) for _ in range(3))
    assert t_large < 30 * t_small + 0.05, (t_small, t_large)
    module = sdy_passes.parse_module(duplicate_groups(4))
    sdy_passes.run_passes(module, ["sdy-sharding-group-import"])
    groups = [op for op in module.walk() if op.name == "sdy.sharding_group"]
    assert [op.properties["group_id"].value for op in groups] == [0, 0, 0, 0]
