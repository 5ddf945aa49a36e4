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
def test_errors_exit_1_with_a_message(args, message, capsys):
    assert main(args) == 1
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


def _run(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "sharding", *args], capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="80"), timeout=120, **kwargs)


@pytest.mark.parametrize("args, message", [
    (["show", '<["x"=2147483648, "y"=4294967296]>', '<@m, [{"x"}, {"y"}]>', "8x8"],
     "error: 9223372036854775808 devices are too many"),
    (["show", '<["x"=2]>', '<@m, [{"x"}]>', "4", "--png", "missing/dir/out.png"], "error: --png missing/dir/out.png: "
     "directory missing/dir does not exist"),
    (["show", '<["x"=2]>', '<@m, [{"x"}]>', "4", "--svg", "out.png"], "error: expected a .svg file name for --svg"),
    (["show", '<["x"=2]>', '<@m, [{"x"}]>', "4", "--png", "out.svg"], "error: expected a .png file name for --png"),
    (["show", '<["x"=2]>', '<@m, [{"x"}]>', "4", "--svg", "."], "error: expected a .svg file name"),
])
def test_bad_outputs_and_huge_meshes_are_one_error_line(args, message):
    proc = _run(*args)
    assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr  # checked before printing the table
    assert proc.stderr.startswith(message) and proc.stderr.count("\n") == 1, proc.stderr


def test_usage_errors_exit_2():
    proc = _run("show", '<["x"=2]>')
    assert proc.returncode == 2 and "usage:" in proc.stderr and "Traceback" not in proc.stderr


def test_version_and_help_for_positional_arguments():
    proc = _run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("python -m sharding (layout-toolkit ")
    helped = _run("show", "--help").stdout
    assert "the mesh: " in helped and "the global shape: " in helped and "the sharding: " in helped


def test_piped_into_head_is_one_error_line():
    # Stdout closed after the first line of ~350 kB (a condensed table, 256 columns wide), as
    # `| head -1` does: no BrokenPipeError traceback.
    args = ["show", '<["x"=64, "y"=256]>', '<@m, [{"x"}, {"y"}]>', "640x2560"]
    proc = subprocess.Popen([sys.executable, "-m", "sharding", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="100000"))
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 1 and "Traceback" not in err
    assert err == "error: standard output was closed before everything was written\n"


def test_wide_tables_fit_the_terminal():
    for mesh, shape, band in (('<["x"=4, "y"=8]>', "1000x1000", "columns 0-2 of 8"),
                              ('<["x"=2, "y"=8]>', "1000000000000x1000000000000", "column 7 of 8"),
                              ('<["x"=16, "y"=16]>', "1000x1000", "│ device 255 ")):  # condensed
        proc = _run("show", mesh, '<@m, [{"x"}, {"y"}]>', shape)
        assert proc.returncode == 0
        assert max(map(len, proc.stdout.splitlines())) <= 80
        assert band in proc.stdout
