"""`python -m sharding show|hlo`."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from sharding import ShardingError
from sharding.__main__ import main, parse_shape
from tests.sharding.test_visualize import TOUR

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_tour_command_in_a_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "sharding", "show", '<["x"=2, "y"=4]>', '#sdy.sharding<@mesh, [{"x"}, {"y"}]>', "6x8"],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == TOUR + "\n"


def test_show_with_named_meshes_and_svg(tmp_path, capsys):
    svg = tmp_path / "out.svg"
    code = main(["show", 'sdy.mesh @a = <["x"=4]> sdy.mesh @b = <["y"=2]>', '<@b, [{"y"}]>', "tensor<3xf32>",
                 "--svg", str(svg)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == '#sdy.sharding<@b, [{"y"}]> on <["y"=2]>'
    assert "│ [2:3]    │" in out and "pad 1" in out
    assert svg.read_text().startswith("<svg")


def test_hlo_command(capsys):
    assert main(["hlo", '<["x"=8]>', '#sdy.sharding<@m, [{"x":(2)2}, {"x":(1)2}]>']) == 0
    assert capsys.readouterr().out == "{devices=[2,2,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}\n"


@pytest.mark.parametrize("args, message", [
    (["show", '<["x"=2]>', '<@m, [{"z"}]>', "4"], 'error: unknown axis name: "z"'),
    (["show", '<["x"=2]>', '<@m, [{"x"}]>', "4xq"], "error: expected a shape"),
    (["show", '<["x"=2', '<@m, [{"x"}]>', "4"], "error: "),
    (["show", 'sdy.mesh @a = <["x"=2]>', '<@m, [{"x"}]>', "4"], "error: unknown mesh: @m"),
])
def test_errors_exit_2_with_a_message(args, message, capsys):
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(message) and captured.out == ""


@pytest.mark.parametrize("text, shape", [
    ("6x8", (6, 8)), ("6,8", (6, 8)), ("[6, 8]", (6, 8)), ("(6, 8)", (6, 8)), ("tensor<6x8xf32>", (6, 8)),
    ("tensor<f32>", ()), ("()", ()), ("7", (7,)),
])
def test_parse_shape(text, shape):
    assert parse_shape(text) == shape


def test_parse_shape_error():
    with pytest.raises(ShardingError, match="expected a shape"):
        parse_shape("six")
