"""`python -m tiling show`: the memory map of a shape."""

import os
import pathlib
import re
import subprocess
import sys

from tiling.__main__ import main

ROOT = pathlib.Path(__file__).resolve().parents[2]


def show(capsys, *args):
    code = main(["show", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_figure_2_memory_map():
    proc = subprocess.run([sys.executable, "-m", "tiling", "show", "bf16[4,8]{1,0:T(2,4)(2,1)}"],
                          capture_output=True, text=True, cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "bf16[4,8]{1,0:T(2,4)(2,1)}"
    assert "32 element slots (32 elements, 0 padding), 16 bits each, 64 bytes" in lines[2]
    rows = [ln.split()[1:] for ln in lines if ln.strip().startswith("[")]
    assert rows == [[str(v) for v in row] for row in [
        [0, 2, 4, 6, 8, 10, 12, 14], [1, 3, 5, 7, 9, 11, 13, 15],
        [16, 18, 20, 22, 24, 26, 28, 30], [17, 19, 21, 23, 25, 27, 29, 31]]]
    assert "   0: 0,0 1,0 0,1 1,1 0,2 1,2 0,3 1,3" in lines


def test_figure_1_padding_marked(capsys):
    code, out, _ = show(capsys, "f32[3,5]{1,0:T(2,2)}")
    assert code == 0
    assert "24 element slots (15 elements, 9 padding), 32 bits each, 96 bytes" in out
    memory = [m.group(1).split() for ln in out.splitlines()
              if (m := re.match(r"\s+\d+: (.*)", ln))]
    assert sum(memory, []) == ("0,0 0,1 1,0 1,1 0,2 0,3 1,2 1,3 0,4 -- 1,4 -- "
                               "2,0 2,1 -- -- 2,2 2,3 -- -- 2,4 -- -- --").split()


def test_packed_pred_and_rank_0(capsys):
    _, out, _ = show(capsys, "pred[33,129]{1,0:T(32,128)(32,1)E(1)}", "--limit", "10")
    assert "1 bits each, 2048 bytes" in out and "more slots" in out and "more elements" in out
    _, out, _ = show(capsys, "f32[]{:T(256)}")
    assert "() -> 0" in out and "1024 bytes" in out


def test_nested_padding_is_explained(capsys):
    _, out, _ = show(capsys, "f32[4,4]{1,0:T(4,4)(3)}")
    assert "96 bytes" in out and "allow_nested_padding" in out


def test_errors_exit_2_with_caret(capsys):
    code, out, err = show(capsys, "f32[3,5]{1,0:E(16)T(2,2)}")
    assert code == 2 and not out
    assert "T must come before E" in err and err.rstrip().endswith("^")


def test_limited_listing_names_real_elements(capsys):
    # Only 16 slots listed: each still names the element it holds (none of them is padding).
    _, out, _ = show(capsys, "bf16[1000,1000]{1,0:T(8,128)(2,1)}", "--limit", "16")
    line = next(ln for ln in out.splitlines() if re.match(r"\s+0: ", ln))
    assert line.split(": ", 1)[1].split() == [f"{r},{c}" for c in range(8) for r in range(2)]
