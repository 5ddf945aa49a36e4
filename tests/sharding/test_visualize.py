"""Pictures of placements: the text grid (any rank), SVG and PNG."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from sharding import DeviceMesh, Mesh, ShardingError, TensorSharding, visualize


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
