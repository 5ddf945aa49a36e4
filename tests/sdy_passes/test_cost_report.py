"""`sdy_passes.cost_report` and `sdy-opt --report-cost`: the communication of exported modules,
on modules and JAX programs whose collectives and bytes are derived by hand below."""

import io
import math
import sys

import pytest

import sdy_passes
from sdy_passes.__main__ import main
from sdy_passes.errors import SdyError
from sharding.cost import INTRA_HOST

ALPHA, BETA = INTRA_HOST  # a 2x4 mesh fits one host of 8 devices: every axis is intra-host

MODULE = """sdy.mesh @mesh = <["x"=2, "y"=4]>
func.func @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %0 = sdy.reshard %arg0 <@mesh, [{}, {}]> : tensor<8x16xf32>
  %1 = sdy.all_reduce {"y"} %arg1 out_sharding=<@mesh, [{}, {}]> : tensor<8x16xf32>
  %2 = sdy.all_slice [{}, {"y"}] %arg1 out_sharding=<@mesh, [{}, {"y"}]> : tensor<8x16xf32>
  %3 = call @g(%arg1) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %0, %1, %3 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
func.func private @g(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = sdy.reduce_scatter [{"y"}, {}] %arg0 out_sharding=<@mesh, [{"y"}, {}]> : tensor<8x16xf32>
  %1 = sdy.replicated_to_unreduced {"x"} %0 out_sharding=<@mesh, [{"y"}, {}], unreduced={"x"}> : tensor<8x16xf32>
  %2 = sdy.all_reduce {"x"} %1 out_sharding=<@mesh, [{"y"}, {}]> : tensor<8x16xf32>
  %3 = sdy.all_gather [{"y"}, {}] %2 out_sharding=<@mesh, [{}, {}]> : tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}
"""


def test_bytes_and_times_derived_by_hand():
    ds = sdy_passes.cost_report(MODULE).dataset
    assert list(ds.kind.values) == ["sdy.reshard", "sdy.all_reduce", "sdy.all_slice", "sdy.reduce_scatter",
                                    "sdy.replicated_to_unreduced", "sdy.all_reduce", "sdy.all_gather"]
    assert list(ds.func.values) == ["main"] * 3 + ["g"] * 4
    assert list(ds.location.values[:2]) == ["3:8", "4:8"]
    # the reshard is an all-gather over "x" of a 4x16 f32 block (256 B): one block to one peer
    assert ds.steps.values[0] == 'sdy.all_gather [{"x"}, {}] out_sharding=<@mesh, [{}, {}]>'
    # all-reduce over "y" (4) of a replicated 8x16 (512 B): 2 * 3/4 * 512 sent per device
    # reduce-scatter over "y" of 512 B: 3/4 * 512; an all-slice and r2u are local;
    # all-reduce over "x" (2) of a 2x16 block (128 B): 2 * 1/2 * 128; all-gather over "y" of 128 B: 3 * 128
    assert list(ds.bytes_per_device.values) == [256, 768, 0, 384, 0, 128, 384]
    crossing = {axis: list(ds.bytes_crossing.sel(axis=axis).values) for axis in ("x", "y")}
    assert crossing == {"x": [8 * 256, 0, 0, 0, 0, 8 * 128, 0], "y": [0, 8 * 768, 0, 8 * 384, 0, 0, 8 * 384]}
    expected = [ALPHA + 256 / BETA, 6 * ALPHA + 768 / BETA, 0, 3 * ALPHA + 384 / BETA, 0,
                2 * ALPHA + 128 / BETA, 3 * ALPHA + 3 * 128 / BETA]
    assert all(math.isclose(a, b) for a, b in zip(ds.seconds.values, expected))
    per_func = ds.seconds.groupby("func").sum()
    assert math.isclose(float(per_func.sel(func="g")), sum(expected[3:]))


def test_text_has_a_row_per_op_and_totals_per_func_and_axis():
    text = str(sdy_passes.cost_report(MODULE))
    lines = text.splitlines()
    assert lines[0].split() == ["func", "op", "at", "steps", "max", "sent/dev", "over", "x", "over", "y", "time"]
    assert len(lines) == 1 + 7 + 3
    assert lines[-1].startswith("all") and "3.00 KiB" in lines[-1]  # over "x": 2048 + 1024 B


def test_links_change_the_times_and_unknown_axes_are_refused():
    slow = sdy_passes.cost_report(MODULE, links={"x": (1e-3, 1e6)}).dataset
    assert math.isclose(float(slow.seconds[0]), 1e-3 + 256 / 1e6)
    with pytest.raises(SdyError, match="unknown mesh axis"):
        sdy_passes.cost_report(MODULE, links={"z": (1e-3, 1e6)})


def test_a_reshard_the_planner_refuses_is_listed_with_the_reason():
    # between meshes of other axes Shardy keeps the reshard (no collectives)
    text = MODULE.replace('%0 = sdy.reshard %arg0 <@mesh, [{}, {}]>', '%0 = sdy.reshard %arg0 <@other, [{"z"}, {}]>')
    text = 'sdy.mesh @other = <["z"=8]>\n' + text
    report = sdy_passes.cost_report(text)
    assert report.dataset.note.values[0].startswith("not planned: ")
    assert "note: sdy.reshard at 4:8: not planned" in str(report)


def test_cli_reports_after_the_passes(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(MODULE))
    assert main(["--sdy-close-shardings", "--report-cost", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("func  op") and "sdy.reduce_scatter" in out and "func.func" not in out


def test_plot(tmp_path):
    pytest.importorskip("matplotlib")
    path = sdy_passes.cost_report(MODULE).plot(str(tmp_path / "cost.png"))
    assert (tmp_path / "cost.png").stat().st_size > 1000 and path.endswith("cost.png")


def test_plot_without_matplotlib_is_a_package_error(tmp_path, monkeypatch):
    report = sdy_passes.cost_report(MODULE)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    with pytest.raises(SdyError, match=r"needs matplotlib \(pip install 'layout-toolkit\[plot\]'\); str\(report\)"):
        report.plot(str(tmp_path / "cost.png"))
    assert not (tmp_path / "cost.png").exists()


PROGRAMS = [
    # an f32[8, 16] sharded over "x" (2) on dim 0, replicated by a constraint: an all-gather of
    # each device's 4x16 block (256 B) over "x"
    ("gather_rows", "f = jax.jit(lambda a: lax.with_sharding_constraint(a * 2, NS(mesh, P(None, None))), "
                    "in_shardings=NS(mesh, P('x', None)))\nargs = (S((8, 16), jnp.float32),)"),
    # f32[8, 16] sharded over "y" (4) on dim 1 moved to dim 0: each device keeps 2x4 of its 8x4
    # block and sends the other three 2x4 parts (3 * 32 B) over "y": an all-to-all
    ("move_dim", "f = jax.jit(lambda a: lax.with_sharding_constraint(a + 1, NS(mesh, P('y', None))), "
                 "in_shardings=NS(mesh, P(None, 'y')))\nargs = (S((8, 16), jnp.float32),)"),
]


@pytest.mark.jaxlib
def test_jax_programs_after_the_pipeline_with_explicit_collectives():
    # jaxlib's default export leaves these reshards implicit (the partitioner's); with
    # enable-insert-explicit-collectives they are the module's collectives
    from sdy_passes.pass_manager import get_pass
    from tests.sdy_passes.jax_corpus import lower_all
    lowered = lower_all(PROGRAMS)
    pipeline = get_pass("sdy-propagation-pipeline")().pipeline().replace(
        "sdy-export-pipeline", "sdy-export-pipeline{enable-insert-explicit-collectives=true}")
    reports = {}
    for name, _ in PROGRAMS:
        module = sdy_passes.parse_module(lowered[name]["generic"])
        sdy_passes.run_passes(module, pipeline)
        reports[name] = sdy_passes.cost_report(module).dataset
    gather, move = reports["gather_rows"], reports["move_dim"]
    # (the constant operand of the multiply is sliced, locally)
    assert list(gather.kind.values) == ["sdy.all_slice", "sdy.all_gather"]
    assert float(gather.bytes_per_device[0]) == 0
    assert float(gather.bytes_per_device[1]) == 256 and float(gather.bytes_crossing.sel(axis="x")[1]) == 8 * 256
    assert list(move.kind.values) == ["sdy.all_to_all"]
    assert float(move.bytes_per_device[0]) == 3 * 2 * 4 * 4
    assert float(move.bytes_crossing.sel(axis="y")[0]) == 8 * 3 * 2 * 4 * 4
