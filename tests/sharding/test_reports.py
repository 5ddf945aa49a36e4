"""Reports people look at (issue 36, item 4): notebook views, traffic heatmaps, condensed text
for large meshes, `plan.plot` without matplotlib, and `python -m sharding reshard`'s flags."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import sharding
from sharding import DeviceMesh, ShardingError, visualize
from sharding.__main__ import main, parse_links
from sharding.visualization import MAX_TEXT_LINES, format_bytes

MESH = '<["x"=2, "y"=4]>'
XY, YX = '<@mesh, [{"x"}, {"y"}]>', '<@mesh, [{"y"}, {"x"}]>'


def plan_of(mesh=MESH, source=XY, target=YX, shape=(8192, 8192), dtype="bf16"):
    return sharding.reshard_plan(source, target, mesh, shape, dtype=dtype)


@pytest.mark.parametrize("n, text", [(0, "0 B"), (1023, "1023 B"), (1536, "1.50 KiB"), (16 << 20, "16.00 MiB"),
                                     (3 << 30, "3.00 GiB")])
def test_binary_units(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize("mesh, source, target", [
    (MESH, XY, YX),
    ('<["x"=4, "y"=2, "z"=8]>', '<@m, [{"x"}, {"z"}]>', '<@m, [{"z"}, {"y", "x"}]>'),
    ('<["a"=3, "b"=2], device_ids=[5, 4, 3, 2, 1, 0]>', '<@m, [{"a"}, {}]>', '<@m, [{}, {"a", "b"}]>'),
    ('<["x"=16]>', '<@m, [{"x"}, {}]>', '<@m, [{}, {"x"}]>'),
])
def test_heatmaps_are_the_traffic_on_the_mesh(mesh, source, target):
    plan = plan_of(mesh, source, target, (48, 96), "f32")
    pic = visualize(plan)
    m = plan.mesh_of(plan.source)
    sizes = m.shape
    largest = sorted(sorted(range(len(sizes)), key=lambda i: -sizes[i])[:2])
    assert pic.axes == tuple(m.axes[i].name for i in largest)
    sent = plan.traffic.bytes_sent.values.reshape((len(plan.steps),) + sizes)
    received = plan.traffic.bytes_received.values
    for i in range(len(plan.steps)):
        per_device = np.moveaxis(sent[i], largest, list(range(len(largest))))
        expected = per_device.reshape(per_device.shape[:len(largest)] + (-1,)).max(axis=-1)
        assert np.array_equal(pic.grids[i].reshape(expected.shape), expected)
        # The sender -> receiver matrix, from the plan's messages, adds up to the per-device traffic.
        assert np.array_equal(pic.pairs[i].sum(axis=1), plan.traffic.bytes_sent.values[i])
        assert np.array_equal(pic.pairs[i].sum(axis=0), received[i])
    svg = pic.svg()
    ET.fromstring(svg)
    assert pic._repr_svg_() == svg
    assert "sent per device" in pic.text()


def test_heatmap_text_names_axes_and_units():
    text = visualize(plan_of()).text()
    assert text.splitlines()[:4] == [
        "step 0 collective_permute: MiB sent per device",
        "         y=0    y=1    y=2    y=3",
        "  x=0      .      .  16.00  16.00",
        "  x=1  16.00  16.00      .      .",
    ]
    assert "  d2   .   .      .      .  16.00      .   .   ." in text  # device 2 sends 16 MiB to device 4
    big = visualize(plan_of('<["x"=16, "y"=16, "z"=4]>')).text()
    assert "KiB sent per device (the most over 'z')" in big
    assert "device (row) sends" not in big  # 1024 devices: no sender -> receiver matrix


def test_notebook_views():
    plan = plan_of()
    page = plan._repr_html_()
    for line in plan.report().splitlines()[:3]:
        for word in line.split("  "):
            if word.strip():
                assert f">{word.strip()}<" in page
    assert "<svg" in page and "sdy.all_to_all" in page
    dm = DeviceMesh(MESH)
    assert "<td>x=1</td><td>4</td><td>5</td><td>6</td><td>7</td>" in dm._repr_html_()
    sh = dm.shard(np.arange(64.0).reshape(8, 8), XY)
    html = sh._repr_html_()
    assert "<td>device buffer</td><td>(4, 2)</td>" in html and "<svg" in html
    big = DeviceMesh('<["a"=2, "b"=2, "c"=64]>')._repr_html_()
    assert big.count("<tr>") == 5 and "…" in big


@pytest.mark.parametrize("mesh, s, shape", [
    ('<["x"=16, "y"=16]>', '<@m, [{"x"}, {"y"}]>', (1024, 1000)),
    ('<["x"=64, "y"=64]>', '<@m, [{"x", "y"}]>', (100000,)),
    ('<["x"=64, "y"=64, "z"=4]>', '<@m, [{"x"}, {}, {"y"}]>', (64, 3, 1000)),
    ('<["a"=4, "b"=4, "c"=4, "d"=4]>', '<@m, [{"a"}, {"b"}, {"c"}, {"d"}]>', (8, 8, 8, 8)),
    ('<["x"=256]>', '<@m, [{}, {}]>', (4, 4)),
    ('<["x"=128, "y"=2]>', '<@m, [{"y"}, {}]>', (4, 4)),
])
@pytest.mark.parametrize("width", [None, 60, 100, 200])
def test_large_meshes_are_condensed(mesh, s, shape, width):
    pic = visualize(s, mesh, shape)
    text = pic.text(width=width)
    assert len(text.splitlines()) <= MAX_TEXT_LINES + 2
    if width:
        assert max(map(len, text.splitlines())) <= width
    if "condensed" in text:
        first, last = pic.blocks[0], pic.blocks[-1]
        assert f"[{first.slices[-1].start}:{first.slices[-1].stop}" in text or str(first.slices[-1].start) in text
        assert str(last.devices[-1]) in text or "…" in text


def test_small_meshes_are_not_condensed():
    text = visualize('<@m, [{"x"}, {"y"}]>', '<["x"=8, "y"=8]>', (64, 64)).text()
    assert "condensed" not in text and "device 63" in text


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ShardingError, match=r"pip install 'layout-toolkit\[plot\]'"):
        plan_of().plot(str(tmp_path / "p.png"))


def test_links_syntax_is_the_cost_mapping():
    links = {"x": (2.7e-6, 19.3e9), "y": (1e-6, 5e10)}
    assert parse_links('{"x": (2.7e-6, 19.3e9), "y": (1e-6, 5e10)}') == links
    assert parse_links("x=2.7e-6,19.3e9; y=1e-6,5e10") == links
    for bad in ("x=1", "{'x': 1}", "x=-1,2", "x=1,0", "{", "x=nan,1"):
        with pytest.raises(ShardingError, match="--links"):
            parse_links(bad)


def test_reshard_cli_links_algorithm_json_svg(tmp_path, capsys):
    args = ["reshard", MESH, XY, YX, "8192x8192", "--dtype", "bf16"]
    plan = plan_of()
    links = {"x": (2.7e-6, 19.3e9)}
    assert main(args + ["--links", "x=2.7e-6,19.3e9", "--algorithm", "bidirectional_ring"]) == 0
    out = capsys.readouterr().out
    assert out.split("\n\n", 1)[1].rstrip("\n") == plan.report(links, algorithms=("bidirectional_ring",))
    assert " ring" not in out.split("\n\n", 1)[1].splitlines()[0]
    svg = tmp_path / "t.svg"
    assert main(args + ["--links", '{"x": (2.7e-6, 19.3e9)}', "--json", "--svg", str(svg)]) == 0
    data = json.loads(capsys.readouterr().out)
    for algorithm in ("ring", "bidirectional_ring"):
        cost = plan.cost(links, algorithm=algorithm)
        assert data["seconds"][algorithm] == pytest.approx(cost.total)
        assert [s["seconds"][algorithm] for s in data["steps"]] == pytest.approx(list(cost.steps))
    assert [s["bytes_sent"] for s in data["steps"]] == plan.traffic.bytes_sent.values.sum(axis=1).tolist()
    assert data["links"]["x"] == {"alpha_s": 2.7e-6, "beta_bytes_per_s": 19.3e9}
    assert data["links"]["y"] == {"alpha_s": 0.6e-6, "beta_bytes_per_s": 87.7e9}
    assert ET.parse(svg).getroot().tag.endswith("svg")
    with pytest.raises(SystemExit) as e:
        main(args + ["--links", "x=1"])
    assert e.value.code == 2
    assert main(args + ["--links", "q=1,2"]) == 1
    assert "unknown mesh axis in links: 'q'" in capsys.readouterr().err
    assert main(args + ["--svg", str(tmp_path / "t.png")]) == 1
