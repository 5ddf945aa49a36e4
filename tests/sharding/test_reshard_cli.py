"""`python -m sharding reshard MESH SOURCE TARGET SHAPE [--dtype] [--png]`."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from sharding.__main__ import main

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_readme_tour_in_a_subprocess(tmp_path):
    png = tmp_path / "plan.png"
    proc = subprocess.run(
        [sys.executable, "-m", "sharding", "reshard", '<["x"=2, "y"=4]>', '<@mesh, [{"x"}, {"y"}]>',
         '<@mesh, [{"y"}, {"x"}]>', "8192x8192", "--dtype", "bf16", "--png", str(png)],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == ['sdy.collective_permute out_sharding=<@mesh, [{"y":(1)2}, {"x", "y":(2)2}]>',
                         'sdy.all_to_all [{"y":(2)2}: 1->0] out_sharding=<@mesh, [{"y"}, {"x"}]>']
    table = "\n".join(lines[3:])
    assert "collective_permute  16.00 MiB     64.00 MiB   4" in table
    assert "all_to_all          8.00 MiB      64.00 MiB   8" in table
    assert "PyTorch DTensor redistribute_cost" in table
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bad_input_is_an_error_line(capsys):
    # Bad input exits 1, bad usage 2 (issue 22, item 12).
    assert main(["reshard", '<["x"=2]>', '<@m, [{"x"}]>', '<@m, [{"q"}]>', "8"]) == 1
    assert 'unknown axis name: "q"' in capsys.readouterr().err
    assert main(["reshard", '<["x"=2]>', '<@m, [{"x"}]>', '<@m, [{}]>', "8", "--dtype", "zz"]) == 1
    assert "unknown dtype" in capsys.readouterr().err
    assert main(["reshard", '<["x"=2]>', '<@m, [{"x"}]>', '<@m, [{}]>', "8x"]) == 1
