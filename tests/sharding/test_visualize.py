"""Pictures of placements: the text grid (any rank), SVG and PNG."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from sharding import DeviceMesh, Mesh, ShardingError, TensorSharding, to_hlo_sharding, visualize


def S(text: str) -> TensorSharding:
    return TensorSharding.parse(text)


def M(text: str) -> Mesh:
    return Mesh.parse(text)


TOUR = """\
#sdy.sharding<@mesh, [{"x"}, {"y"}]> on <["x"=2, "y"=4]>
global 6x8, tiles 2x4, device buffer 3x2, HloSharding {devices=[2,4]<=[8]}
┌────────────┬────────────┬────────────┬────────────┐
│ device 0   │ device 1   │ device 2   │ device 3   │
│ [0:3, 0:2] │ [0:3, 2:4] │ [0:3, 4:6] │ [0:3, 6:8] │
├────────────┼────────────┼────────────┼────────────┤
│ device 4   │ device 5   │ device 6   │ device 7   │
│ [3:6, 0:2] │ [3:6, 2:4] │ [3:6, 4:6] │ [3:6, 6:8] │
└────────────┴────────────┴────────────┴────────────┘"""


def test_text_grid_2d():
    assert str(visualize(S('#sdy.sharding<@mesh, [{"x"}, {"y"}]>'), M('<["x"=2, "y"=4]>'), (6, 8))) == TOUR


def test_text_grid_1d_uneven_marks_padding():
    text = visualize(S('#sdy.sharding<@mesh, [{"a"}]>'), M('<["a"=4]>'), (5,)).text()
    assert text.splitlines()[3:6] == [
        "│ device 0        │ device 1        │ device 2        │ device 3        │",
        "│ [0:2]           │ [2:4]           │ [4:5]           │ [5:5]           │",
        "│                 │                 │ pad 1           │ pad 2 (no data) │",
    ]
    assert text.endswith("pad n: padding at the end of the device buffer along each dim (fill values, not data)")


def test_text_any_rank_uses_panels_for_leading_dims():
    pic = visualize(S('#sdy.sharding<@mesh, [{"x"}, {"y"}, {}, {"z"}]>'), M('<["x"=2, "y"=2, "z"=2, "w"=4]>'),
                    (3, 2, 3, 5))
    lines = pic.text().splitlines()
    titles = [line for line in lines if line.startswith("dim 0")]
    assert titles == ["dim 0: 0:2, dim 1: 0:1", "dim 0: 0:2, dim 1: 1:2",
                      "dim 0: 2:3 (pad 1), dim 1: 0:1", "dim 0: 2:3 (pad 1), dim 1: 1:2"]
    assert "│ devices 0-3   │ devices 4-7   │" in lines
    assert len(pic.blocks) == 8 and pic.blocks[0].devices == (0, 1, 2, 3)
    assert pic.blocks[-1].padding == (1, 0, 0, 1)


def test_text_rank0_maximal_and_device_ids():
    assert "│ devices 0,1 │" in visualize(S('#sdy.sharding<@m, []>'), M('<["x"=2]>'), ()).text()
    maximal = visualize(S('#sdy.sharding<@m, []>'), M('<[], device_ids=[3]>'), (4, 4)).text()
    assert "{maximal device=3}" in maximal and "│ device 3   │" in maximal
    permuted = visualize(S('#sdy.sharding<@m, [{"x"}]>'), DeviceMesh(M('<["x"=2], device_ids=[1, 0]>')), (4,))
    assert "│ device 1 │ device 0 │" in permuted.text()


def test_svg_is_xml_with_every_device():
    pic = visualize(S('#sdy.sharding<@m, [{"z"}, {"y"}, {"x"}]>'), M('<["x"=2, "y"=2, "z"=2]>'), (4, 3, 7))
    root = ET.fromstring(pic.svg())
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in root.iter(f"{ns}text")]
    for dev in range(8):
        assert f"device {dev}" in texts
    hatched = [r for r in root.iter(f"{ns}rect") if r.get("fill") == "url(#pad)"]
    assert len(hatched) == 8  # every block has padding in dim 1 or dim 2
    assert pic._repr_svg_() == pic.svg()


def test_save_svg_png_and_errors(tmp_path):
    pic = visualize(S('#sdy.sharding<@m, [{"x"}, {}]>'), M('<["x"=2]>'), (3, 2))
    pic.save(tmp_path / "p.svg")
    assert (tmp_path / "p.svg").read_text().startswith("<svg")
    with pytest.raises(ShardingError, match="expected a .svg or .png file name"):
        pic.save(tmp_path / "p.txt")
    pytest.importorskip("matplotlib")
    pic.save(tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_invalid_sharding_is_reported():
    with pytest.raises(ShardingError, match='unknown axis name: "q"'):
        visualize(S('#sdy.sharding<@m, [{"q"}]>'), M('<["x"=2]>'), (4,))


# -- a first hour with the pictures (issue 22, items 16 and 17) --------------------------------

WIDE = [  # 16x16 meshes whose labels do not fit a 150 px cell at 11 px
    ('<@m, [{"x"}, {"y"}]>', '<["x"=16, "y"=16]>', (10**12, 10**12)),
    ('<@m, [{}, {"y"}]>', '<["x"=16, "y"=16], device_ids=[' + ", ".join(map(str, range(255, -1, -1))) + "]>",
     (1000, 1000)),
]


@pytest.mark.parametrize("sharding, mesh, shape", WIDE)
def test_png_labels_fit_their_cells(sharding, mesh, shape):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    pic = visualize(S(sharding), M(mesh), shape)
    rects, texts, width, _ = pic._shapes()
    fig = pic._png_figure(plt, Rectangle)
    renderer = fig.canvas.get_renderer()
    cells = [(x, y, x + w, y + h) for x, y, w, h, _, hatched in rects if not hatched]
    try:
        # At 100 dpi a pixel of the figure is a unit of x; the texts come in _shapes' order.
        for artist, (x, y, _, _) in zip(fig.axes[0].texts, texts, strict=True):
            right = artist.get_window_extent(renderer).x1
            cell = [c for c in cells if c[0] <= x < c[2] and c[1] <= y < c[3]] or [(0, 0, width, 0)]  # or a header
            assert right <= cell[0][2], (artist.get_text(), x, right, cell[0])
            assert artist.get_fontsize() >= 7 * 0.72  # readable
    finally:
        plt.close(fig)


@pytest.mark.parametrize("sharding, mesh, shape", WIDE)
def test_text_table_fits_a_width(sharding, mesh, shape):
    text = visualize(S(sharding), M(mesh), shape).text(width=100)
    assert max(map(len, text.splitlines())) <= 100
    assert "device 255" in text or "devices 15,31,47" in text


def test_png_without_matplotlib_is_a_sharding_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    with pytest.raises(ShardingError, match=r"PNG output needs matplotlib \(pip install 'layout-toolkit\[plot\]'\)"):
        visualize(S('<@m, [{"x"}]>'), M('<["x"=2]>'), (4,)).save(tmp_path / "p.png")
    assert not (tmp_path / "p.png").exists()


def test_visualize_a_sharded_array_like_jax():
    dm = DeviceMesh('<["x"=2, "y"=4]>')
    sharded = dm.shard(np.arange(48).reshape(6, 8), '#sdy.sharding<@mesh, [{"x"}, {"y"}]>')  # text is fine
    assert str(visualize(sharded)) == TOUR
    with pytest.raises(ShardingError, match="takes no mesh or shape"):
        visualize(sharded, dm, (6, 8))
    assert str(visualize('<@mesh, [{"x"}, {"y"}]>', '<["x"=2, "y"=4]>', (6, 8))) == TOUR


def test_text_is_taken_where_objects_are():
    assert to_hlo_sharding('<@m, [{"y"}, {"x"}]>', '<["x"=2, "y"=4]>') == "{devices=[4,2]<=[2,4]T(1,0)}"
    dm = DeviceMesh('<["x"=2]>')
    assert dm.index_map('<@m, [{"x"}]>', (4,)) == {0: (slice(0, 2),), 1: (slice(2, 4),)}
    with pytest.raises(ShardingError, match="expected a TensorSharding or sharding text, got: int"):
        dm.shard(np.zeros(4), 5)


def test_dir_lists_the_lazy_names():
    import sharding

    assert {"DeviceMesh", "ShardedArray", "visualize", "HloSharding", "to_hlo_sharding"} <= set(dir(sharding))
    assert set(sharding.__all__) <= set(dir(sharding))


@pytest.mark.jaxlib
def test_visualize_a_jax_array_like_jax():
    from tests.jaxlib_child import run_child

    code = """
    import jax, numpy as np, sharding
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    RESULT = []
    for spec, shape in (((("y", "x"), None), (8, 6)), (("x", "y"), (6, 8)), ((None, "y"), (5, 8))):
        arr = jax.device_put(np.zeros(shape), NamedSharding(mesh, P(*spec)))
        ours = sharding.visualize(arr).placement.index_map()
        theirs = {d.id: tuple(s.indices(n)[:2] for s, n in zip(idx, shape))
                  for d, idx in arr.sharding.devices_indices_map(shape).items()}
        assert {d: tuple((s.start, s.stop) for s in sl) for d, sl in ours.items()} == theirs, (ours, theirs)
        RESULT.append(sharding.visualize(arr).text())
    RESULT.append(sharding.visualize(jax.device_put(np.zeros((3, 3)), jax.devices()[5])).text())
    """
    root = str(__import__("pathlib").Path(__file__).resolve().parents[2])
    got = run_child(code, None, env={"XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PYTHONPATH": root})
    mesh = M('<["x"=2, "y"=4]>')
    assert got[:3] == [visualize(S(f"<@mesh, {dims}>"), mesh, shape).text() for dims, shape in (
        ('[{"y", "x"}, {}]', (8, 6)), ('[{"x"}, {"y"}]', (6, 8)), ('[{}, {"y"}]', (5, 8)))]
    assert got[3] == visualize(S("<@mesh, []>"), M("<[], device_ids=[5]>"), (3, 3)).text()
