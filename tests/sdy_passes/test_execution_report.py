"""The report of `sdy_passes.execute` (spec execute.md §8, §9.1): traffic per collective against
the textbook volumes of collectives.md §3.1 on every oracle program, compute per device against
XLA's `cost_analysis()`, memory liveness and padding, alpha-beta time, the roofline, JSON, the
picture, and dry runs of JAX's own transformer block on a 64x64 mesh."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import sharding
from sdy_passes import execution_report
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import ExecutionError
from sdy_passes.execution import execute
from sdy_passes.parser import parse_module
from tests.conftest import needs_shared
from tests.jaxlib_child import cached, run_child
from tests.sdy_passes import execute_oracle
from tests.sdy_passes.test_execute import BUILTIN, MATMUL, PASSING

ORACLE = execute_oracle.oracle_module()
EXAMPLES = Path(__file__).resolve().parents[2] / "sdy_passes" / "examples"


class _Shape:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype


def _shapes(text: str, func: str = "main"):
    f = parse_module(text).lookup_symbol(func)
    return [_Shape(t.shape, numpy_dtype(t.element_type)) for t in f.properties["function_type"].type.inputs]


def _dry(text: str, **kwargs):
    return execute(text, *_shapes(text), dry=True, **kwargs)


@pytest.fixture(scope="module")
def programs():
    """`{name: (lowered text, meta)}` of the oracle's sharded programs and its own ones."""
    out = {}
    for builtin, names in ((False, PASSING), (True, BUILTIN)):
        root = execute_oracle.sharded_cases(builtin=builtin)
        for name in names:
            out[name] = ((root / name / "lowered.mlir").read_text(),
                         json.loads((root / name / "meta.json").read_text()))
    return out


@pytest.fixture(scope="module")
def dry_runs(programs):
    """`{name: dry Execution}` of every program (computed once for the tests below)."""
    return {name: _dry(text) for name, (text, _) in programs.items()}


# -- traffic: collectives.md §3.1 -----------------------------------------------------------------

VOLUME = {"all_gather": lambda b, g: (g - 1) * b, "all_to_all": lambda b, g: (g - 1) / g * b,
          "reduce_scatter": lambda b, g: (g - 1) / g * b, "all_reduce": lambda b, g: 2 * (g - 1) / g * b}
MESSAGES = {"all_gather": 1, "all_to_all": 1, "reduce_scatter": 1, "all_reduce": 2}


@needs_shared(execute_oracle.ORACLE)
def test_every_collective_moves_the_textbook_volume(dry_runs):
    seen = set()
    for name, run in dry_runs.items():
        tr = run.report.traffic
        ops = [op for op in run.local.walk() if op.name in execution_report.COLLECTIVES]
        assert len(ops) == tr.sizes["collective"], name
        for i, op in enumerate(ops):
            kind = str(tr["kind"].values[i])
            seen.add(kind)
            b = sum(execution_report._bytes(v.type) for v in op.operands)
            sent, received = tr["bytes_sent"].values[i], tr["bytes_received"].values[i]
            crossing = tr["bytes_crossing"].values[i]
            assert sent.sum() == pytest.approx(received.sum()), (name, i)
            # every message crosses at least one mesh axis and at most all of them
            assert sent.sum() - 1e-9 <= crossing.sum() <= len(crossing) * sent.sum() + 1e-9, (name, i)
            if kind == "collective_permute":
                pairs = op.properties["source_target_pairs"].to_numpy().reshape(-1, 2)
                remote = pairs[pairs[:, 0] != pairs[:, 1]]
                assert sent.sum() == len(remote) * b and tr["messages"].values[i] == len(remote), (name, i)
                continue
            g = int(tr["group_size"].values[i])
            assert g == op.properties["replica_groups"].to_numpy().shape[1], (name, i)
            assert np.allclose(sent, VOLUME[kind](b, g)), (name, i, kind, sent, b, g)
            assert tr["messages"].values[i] == MESSAGES[kind] * len(sent) * (g - 1), (name, i)
    assert seen >= {"all_reduce", "all_gather", "all_to_all", "collective_permute"}


@needs_shared(execute_oracle.ORACLE)
def test_reduce_scatter_sends_each_member_one_chunk(dry_runs):
    # JAX's psum_scatter over y (4) of a replicated f32[8, 8] (256 B): each device sends the 3
    # other members their 64 B chunk of its partial sum (not the whole operand)
    run = dry_runs["shard_map_psum_scatter"]
    tr = run.report.traffic
    assert list(tr["kind"].values) == ["reduce_scatter"]
    assert (tr["bytes_sent"] == 192).all() and (tr["bytes_received"] == 192).all()
    assert tr["bytes_crossing"].sel(axis="y").item() == 8 * 192 and tr["bytes_crossing"].sel(axis="x").item() == 0
    assert tr["messages"].item() == 8 * 3


def test_alpha_beta_rings_as_the_cost_model():
    # the matmul's all-reduce over y (g = 4) of f32[4, 8] (B = 128) on default links
    text = MATMUL
    alpha, beta = 1e-6, 1e9
    links = {"x": (5e-6, 2e9), "y": (alpha, beta)}
    ring = _dry(text, links=links).report.cost
    bidi = _dry(text, links=links, algorithm="bidirectional_ring").report.cost
    assert ring.steps == pytest.approx((2 * 3 * alpha + 2 * 3 / 4 * 128 / beta,))
    assert bidi.steps == pytest.approx((2 * 2 * alpha + 3 / 4 * 128 / beta,))
    assert ring.algorithm == "ring" and ring.total == ring.steps[0]


@needs_shared(execute_oracle.ORACLE)
def test_permute_time_is_the_slowest_message(programs):
    text, _ = programs["shard_map_ppermute"]
    run = _dry(text, links={"x": (1e-6, 1e9), "y": (2e-6, 4e9)})
    (op,) = [op for op in run.local.walk() if op.name == "stablehlo.collective_permute"]
    b = execution_report._bytes(op.operands[0].type)
    shape, names = run.mesh.mesh.shape, run.mesh.mesh.axis_names
    links = {"x": (1e-6, 1e9), "y": (2e-6, 4e9)}
    want = 0.0
    for s, t in op.properties["source_target_pairs"].to_numpy().reshape(-1, 2):
        cs, ct = np.unravel_index(s, shape), np.unravel_index(t, shape)
        differ = [a for a in range(len(shape)) if cs[a] != ct[a]]
        if differ:
            hops = sum((ct[a] - cs[a]) % shape[a] * links[names[a]][0] for a in differ)
            want = max(want, hops + b / min(links[names[a]][1] for a in differ))
    assert run.report.cost.total == pytest.approx(want) and want > 0


def test_input_reshards_are_rows_of_their_own():
    text = """
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%a: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
  %0 = stablehlo.negate %a : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}"""
    run = _dry(text)
    mesh = sharding.Mesh.parse('<["x"=2, "y"=4]>')
    plan = sharding.reshard_plan('#sdy.sharding<@m, [{"y"}, {"x"}]>', '#sdy.sharding<@m, [{"x"}, {}]>', mesh, (8, 8))
    f = run.local.lookup_symbol("main")
    r = execution_report.report(run.local, f, run.mesh, input_reshards=[("%arg0", plan)])
    tr = r.traffic
    assert list(tr["kind"].values) == ["input_reshard"] and list(tr["op"].values) == ["%arg0"]
    assert np.array_equal(tr["bytes_sent"].values[0], plan.traffic["bytes_sent"].values.sum(0))
    assert np.array_equal(tr["bytes_crossing"].values[0], plan.traffic["bytes_crossing"].values.sum(0))
    assert plan.cost().total > 0 and r.cost.total == pytest.approx(plan.cost().total)
    assert "1 input reshards" in str(r).splitlines()[0]


# -- compute: XLA's cost_analysis -----------------------------------------------------------------

DOT_DOMINATED = ["matmul", "matmul_batched", "sharded_matmul", "attention", "transformer_block", "matmul_xy",
                 "mlp_grad", "train_step"]


@needs_shared(execute_oracle.ORACLE)
def test_compute_per_device_against_xla(programs, dry_runs):
    ratios = {}
    for name, (_, meta) in programs.items():
        c = dry_runs[name].report.compute
        xla = meta["cost_analysis"]
        assert (c["flops"] == c["flops"][0]).all()
        ratios[name] = {k: float(c[k].max()) / xla[x] if xla.get(x) else None
                        for k, x in (("flops", "flops"), ("transcendentals", "transcendentals"),
                                     ("bytes_accessed", "bytes accessed"))}
    print("ours / XLA's cost_analysis per device:")
    for name, r in sorted(ratios.items()):
        print(f"  {name:24} " + "  ".join(f"{k} {v:.3f}" if v is not None else f"{k} -" for k, v in r.items()))
    # exact where XLA's count is the unfused one (spec §8.3)
    for name in ("matmul_xy", "sum_rows"):
        assert ratios[name]["flops"] == 1.0, name
    assert ratios["matmul_xy"]["transcendentals"] == 1.0 and ratios["matmul_xy"]["bytes_accessed"] == 1.0
    for name in DOT_DOMINATED:
        assert abs(ratios[name]["flops"] - 1) <= 0.1, (name, ratios[name])


def test_roofline_time_with_a_device_profile():
    text = MATMUL
    plain = _dry(text).report
    assert plain.time.compute is None and plain.time.total is None and "no device profile" in str(plain)
    r = _dry(text, device={"flops": 1e3, "hbm_bytes": 1e15}).report
    # dot 2*4*8*4 and the all-reduce's 32 adds, bytes negligible
    assert r.time.compute == pytest.approx((256 + 32) / 1e3)
    assert r.time.total == pytest.approx(r.time.compute + r.cost.total)
    assert r.time.overlapped == pytest.approx(max(r.time.compute, r.cost.total))
    slow_memory = _dry(text, device={"flops": 1e15, "hbm_bytes": 1.0}).report
    assert slow_memory.time.compute == pytest.approx(float(slow_memory.compute["bytes_accessed"][0]))


@pytest.mark.parametrize("kwargs, match", [
    ({"device": {"flops": 1e12}}, "device: expected"),
    ({"device": {"flops": "fast", "hbm_bytes": 1}}, "device: expected numbers"),
    ({"device": {"flops": -1, "hbm_bytes": 1}}, "positive finite"),
    ({"links": {"z": (1e-6, 1e9)}}, "unknown mesh axis 'z'"),
    ({"links": {"x": (1e-6, 0)}}, "beta > 0"),
    ({"links": [("x", 1)]}, "links: expected"),
    ({"algorithm": "tree"}, "algorithm must be"),
])
def test_bad_profiles_are_refused(kwargs, match):
    text = MATMUL
    with pytest.raises(ExecutionError, match=match):
        _dry(text, **kwargs)


# -- memory -----------------------------------------------------------------------------------------

def _chain(donate: bool) -> str:
    attr = "{jax.buffer_donor = true}" if donate else ""
    return f"""
func.func @main(%a: tensor<16xf32> {attr}) -> tensor<16xf32> {{
  %0 = stablehlo.add %a, %a : tensor<16xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<16xf32>
  %2 = stablehlo.negate %1 : tensor<16xf32>
  return %2 : tensor<16xf32>
}}"""


def _naive_peak(func) -> int:
    """The peak by definition: at each top-level op, the bytes of the values defined at or before
    it and used at or after it (arguments and results throughout)."""
    block = func.regions[0].blocks[0]
    ops, peak = block.ops, 0
    results = set(ops[-1].operands)
    uses = {}
    for i, op in enumerate(ops):
        for inner in op.walk():
            for v in inner.operands:
                uses[v] = i
    for i in range(len(ops)):
        live = list(block.arguments) + [r for j, op in enumerate(ops[:i + 1]) for r in op.results
                                        if r in results or uses.get(r, j) >= i]
        peak = max(peak, sum(execution_report._bytes(v.type) for v in live))
    return peak


@needs_shared(execute_oracle.ORACLE)
def test_peak_equals_the_definition_on_jax_programs(dry_runs):
    for name, run in dry_runs.items():
        if not any(execution_report._donated(run.local.lookup_symbol("main"), i) for i in range(8)):
            assert int(run.report.memory["peak_bytes"][0]) == _naive_peak(run.local.lookup_symbol("main")), name


def test_peak_is_the_unfused_liveness_in_program_order():
    kept, donated = _dry(_chain(False)).report.memory, _dry(_chain(True)).report.memory
    # kept: %a lives throughout, each value until its one use: max(a+%0, a+%0+%1, a+%1+%2) = 3 buffers
    assert int(kept["peak_bytes"].item()) == 3 * 64
    # donated: %a is freed after its last use: %0+%1, %1+%2 = 2 buffers
    assert int(donated["peak_bytes"].item()) == 2 * 64
    assert int(kept["argument_bytes"].item()) == int(kept["output_bytes"].item()) == 64


def test_padding_of_the_uneven_buffers_live_at_the_peak():
    text = """
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%a: tensor<7x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<f32> {
  %0 = stablehlo.negate %a : tensor<7x4xf32>
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%0 init: %c) applies stablehlo.add across dimensions = [0, 1] : (tensor<7x4xf32>, tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}"""
    run = _dry(text)
    mem = run.report.memory
    assert int(mem["peak_bytes"][0]) == _naive_peak(run.local.lookup_symbol("main"))
    # the argument arrives whole (an uneven argument is replicated at the boundary) and each
    # device slices its 4 rows; at the peak the negated f32[4,4] of the x=1 devices holds rows
    # 4..6 and one row (16 B) of padding
    assert np.array_equal(mem["padding_bytes"].values, [0] * 4 + [16] * 4)
    assert list(mem.device.values) == list(range(8))
    a = np.arange(28, dtype=np.float32).reshape(7, 4)
    assert mem.equals(execute(text, a).report.memory)


def test_padding_bytes_per_device_follow_xla_tiles():
    dm = sharding.DeviceMesh('<["x"=2, "y"=4]>')
    t = parse_module("func.func @f(%a: tensor<6x5xbf16>) -> tensor<6x5xbf16> {\n  return %a : tensor<6x5xbf16>\n}"
                     ).lookup_symbol("f").properties["function_type"].type.inputs[0]
    s = sharding.TensorSharding.parse('#sdy.sharding<@mesh, [{"y"}, {"x"}]>')
    # rows 2 per y (y=3 holds none), columns 3 per x (x=1 holds 2): buffers of 2x3 bf16
    index = dm.index_map(s, (6, 5))
    want = [12 - 2 * (index[d][0].stop - index[d][0].start) * (index[d][1].stop - index[d][1].start)
            for d in dm.mesh.devices]
    assert list(execution_report.padding_bytes(dm, s, t)) == want and max(want) == 12


# -- forms: text, JSON, picture -----------------------------------------------------------------

def test_text_json_and_picture(tmp_path):
    text = (EXAMPLES / "transformer_block_2x4.mlir").read_text()
    r = _dry(text).report
    lines = str(r).splitlines()
    assert lines[0].startswith("sdy-run: @main on <[\"x\"=2, \"y\"=4]> (8 devices)")
    assert lines[1].startswith("memory per device") and lines[-1].startswith("compute per device")
    assert lines[2].split() == ["#", "op", "collective", "axes", "sent/dev", "total", "cross", "x", "cross", "y", "ring"]
    assert len(lines) == 3 + r.traffic.sizes["collective"] + 1 + 1
    out = json.loads(r.to_json())
    assert out["num_devices"] == 8 and out["memory"]["peak_bytes"] == r.memory["peak_bytes"].values.tolist()
    assert [c["kind"] for c in out["collectives"]] == list(r.traffic["kind"].values)
    assert out["cost"]["total"] == pytest.approx(r.cost.total)
    assert sum(c["bytes_sent_total"] for c in out["collectives"]) == pytest.approx(float(r.traffic["bytes_sent"].sum()))
    svg = r.svg()
    assert svg.startswith("<svg") and svg.count("<rect") == r.traffic["bytes_crossing"].size + 8
    assert "<pre>" in r._repr_html_() and svg in r._repr_html_()
    r.save(tmp_path / "r.svg")
    assert (tmp_path / "r.svg").read_text() == svg
    pytest.importorskip("matplotlib")
    r.save(tmp_path / "r.png")
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ExecutionError, match="expected a .svg or .png"):
        r.save(tmp_path / "r.pdf")


def test_png_without_matplotlib_is_a_package_error(tmp_path, monkeypatch):
    r = _dry(_chain(False)).report

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    with pytest.raises(ExecutionError, match=r"needs matplotlib \(pip install 'layout-toolkit\[plot\]'\)"):
        r.save(tmp_path / "r.png")


# -- scale: §9.1 ---------------------------------------------------------------------------------------

def test_dry_run_of_a_jax_transformer_block_on_64x64():
    text = (EXAMPLES / "transformer_block_64x64.mlir").read_text()
    r = _dry(text).report
    assert r.num_devices == 4096 and r.memory.sizes["device"] == 4096
    # batch over x, heads and MLP hidden over y: Megatron's two all-reduces over y of the
    # bf16[16, 2048, 8192] activations (512 MiB per device)
    assert list(r.traffic["kind"].values) == ["all_reduce", "all_reduce"]
    b = 16 * 2048 * 8192 * 2
    assert np.allclose(r.traffic["bytes_sent"].values, 2 * 63 / 64 * b)
    assert (r.traffic["bytes_crossing"].sel(axis="x") == 0).all()
    assert int(r.memory["argument_bytes"][0]) == b + (4 * 8192 * 8192 + 2 * 8192 * 32768) * 2 // 64
    # per device: the weight matmuls (4 of d x d, 2 of d x 4d) and the two attention einsums (one head)
    dots = (4 + 2 * 4) * 2 * 16 * 2048 * 8192 * 8192 / 64 + 2 * 2 * 16 * 2048 * 2048 * 128
    flops = float(r.compute["flops"][0])
    assert dots < flops < 1.1 * dots


@pytest.mark.parametrize("source, target, kind", [
    ('[{"y"}, {}]', '[{}, {}]', "all_gather"),
    ('[{"x", "y"}, {}]', '[{}, {}]', "all_gather"),
    ('[{"y"}, {}]', '[{}, {"y"}]', "all_to_all"),
])
@pytest.mark.parametrize("algorithm", ["ring", "bidirectional_ring"])
def test_time_and_traffic_equal_the_reshard_plans(source, target, kind, algorithm):
    # the collective the partitioner emits for a reshard costs what `ReshardPlan.cost` says
    text = f"""
sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%a: tensor<16x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, {source}>}}) -> (tensor<16x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, {target}>}}) {{
  %0 = stablehlo.negate %a : tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}}"""
    links = {"x": (3e-6, 2e10), "y": (1e-6, 9e10)}
    r = _dry(text, links=links, algorithm=algorithm).report
    assert list(r.traffic["kind"].values) == [kind]
    mesh = sharding.Mesh.parse('<["x"=2, "y"=4]>')
    plan = sharding.reshard_plan(f"#sdy.sharding<@mesh, {source}>", f"#sdy.sharding<@mesh, {target}>", mesh, (16, 8))
    assert r.cost.total == pytest.approx(plan.cost(links, algorithm=algorithm).total)
    assert np.array_equal(r.traffic["bytes_sent"].values[0], plan.traffic["bytes_sent"].values.sum(0))
    assert np.array_equal(r.traffic["bytes_crossing"].values[0], plan.traffic["bytes_crossing"].values.sum(0))
    assert r.traffic["messages"].values[0] == plan.traffic["messages"].values.sum()


_COST_PROGRAMS = r"""
import jax, jax.numpy as jnp, numpy as np
from jax import lax

def lowered(f, *shapes):
    low = jax.jit(f).lower(*[jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes])
    c = low.compile().cost_analysis()
    c = c[0] if isinstance(c, list) else c
    return {"text": low.as_text(), "flops": float(c.get("flops", 0.0))}

rng = np.random.default_rng(PAYLOAD["seed"])
RESULT = {"conv": [], "sort": [], "reduce_window": []}
while len(RESULT["conv"]) < PAYLOAD["n"]:
    ns, g = int(rng.integers(1, 3)), int(rng.integers(1, 3))
    size = [int(x) for x in rng.integers(2, 9, ns)]
    kernel = [int(x) for x in rng.integers(1, 4, ns)]
    strides = [int(x) for x in rng.integers(1, 3, ns)]
    pad = [tuple(int(x) for x in rng.integers(0, 3, 2)) for _ in range(ns)]
    lhs_dil, rhs_dil = ([int(x) for x in rng.integers(1, 3, ns)] for _ in range(2))
    span = [(s - 1) * d + 1 + lo + hi - ((k - 1) * r + 1) for s, d, (lo, hi), k, r in zip(size, lhs_dil, pad, kernel, rhs_dil)]
    if min(span) < 0:
        continue
    x, w = (2, 2 * g) + tuple(size), (3 * g, 2) + tuple(kernel)
    RESULT["conv"].append(lowered(lambda a, b: lax.conv_general_dilated(
        a, b, strides, pad, lhs_dil, rhs_dil, feature_group_count=g), x, w))
for _ in range(PAYLOAD["n"]):
    shape = tuple(int(x) for x in rng.integers(1, 40, int(rng.integers(1, 3))))
    RESULT["sort"].append(lowered(lambda a: jnp.sort(a, axis=-1), shape))
    window = tuple(int(x) for x in rng.integers(1, 4, len(shape)))
    shape = tuple(max(s, w) for s, w in zip(shape, window))
    RESULT["reduce_window"].append(lowered(lambda a: lax.reduce_window(a, 0.0, lax.add, window, window, "VALID"), shape))
body = lambda c: jnp.tanh(c @ c) + 1.0
RESULT["loop"] = lowered(lambda a: lax.fori_loop(0, 7, lambda i, c: body(c), a), (32, 32))
def unrolled(a):
    for _ in range(7):
        a = body(a)
    return a
RESULT["unrolled"] = lowered(unrolled, (32, 32))
"""


@pytest.fixture(scope="module")
def cost_programs():
    payload = {"seed": 3, "n": 12}
    return cached([_COST_PROGRAMS, payload], lambda: run_child(_COST_PROGRAMS, payload))


@pytest.mark.parametrize("kind", ["conv", "sort", "reduce_window"])
def test_flops_of_random_ops_equal_xla(cost_programs, kind):
    # random convolutions (padding, strides, both dilations, feature groups), sorts and reduce
    # windows as JAX lowers them: our flops are XLA's cost_analysis exactly
    for p in cost_programs[kind]:
        assert float(_dry(p["text"]).report.compute["flops"][0]) == p["flops"], p["text"]


def test_flops_of_a_static_loop_count_every_iteration(cost_programs):
    # XLA counts one iteration of a while loop whatever its trip count; ours counts the 7 of a
    # fori_loop: XLA's count of the same body unrolled 7 times, plus the loop counter's 7 adds
    # and 7 compares
    loop = float(_dry(cost_programs["loop"]["text"]).report.compute["flops"][0])
    assert loop == cost_programs["unrolled"]["flops"] + 14
    assert execution_report._trip_count(
        next(op for op in parse_module(cost_programs["loop"]["text"]).walk() if op.name == "stablehlo.while")) == 7
