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


def test_errors_exit_1_with_caret(capsys):
    code, out, err = show(capsys, "f32[3,5]{1,0:E(16)T(2,2)}")
    assert code == 1 and not out
    assert "T must come before E" in err and err.rstrip().endswith("^")


def test_limited_listing_names_real_elements(capsys):
    # Only 16 slots listed: each still names the element it holds (none of them is padding).
    _, out, _ = show(capsys, "bf16[1000,1000]{1,0:T(8,128)(2,1)}", "--limit", "16")
    line = next(ln for ln in out.splitlines() if re.match(r"\s+0: ", ln))
    assert line.split(": ", 1)[1].split() == [f"{r},{c}" for c in range(8) for r in range(2)]


# ---------------------------------------------------------------------------------------------
# No traceback ever (issue 22 #12, #13): one `error:` line and status 1, 2 for usage


def _cli(*args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "tiling", *args], capture_output=True,
                          text=True, cwd=cwd, stdin=stdin,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)


def test_bad_files_get_one_error_line(tmp_path):
    import pickle

    import numpy as np
    x = np.arange(15, dtype=np.float32).reshape(3, 5)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "obj.npy", np.array([{}], dtype=object), allow_pickle=True)
    (tmp_path / "empty.npy").write_bytes(b"")
    (tmp_path / "garbage.npy").write_bytes(b"hello world" * 10)
    (tmp_path / "pickled.npy").write_bytes(pickle.dumps([1, 2]))
    (tmp_path / "adir").mkdir()
    assert _cli("encode", "x.npy", "{1,0:T(2,2)}", "x.bin", cwd=tmp_path).returncode == 0
    shape = "f32[3,5]{1,0:T(2,2)}"
    cases = [
        (("encode", "missing.npy", "{1,0}", "o.bin"), "missing.npy: No such file"),
        (("encode", "empty.npy", "{1,0}", "o.bin"), "empty.npy is not a readable .npy"),
        (("encode", "garbage.npy", "{1,0}", "o.bin"), "garbage.npy is not a readable .npy"),
        (("encode", "pickled.npy", "{1,0}", "o.bin"), "pickled.npy is not a readable .npy"),
        (("encode", "obj.npy", "{0}", "o.bin"), "obj.npy is not a readable .npy"),
        (("encode", "adir", "{1,0}", "o.bin"), "adir is not a regular file"),
        (("encode", "/dev/zero", "{1,0}", "o.bin"), "/dev/zero is not a regular file"),
        (("encode", "x.npy", "{1,0}", "/dev/full"), "/dev/full: No space left"),
        (("encode", "x.npy", "{1,0}", "nodir/o.bin"), "nodir/o.bin: No such file"),
        (("decode", "x.bin", shape, "adir"), "adir: Is a directory"),
        (("decode", "/dev/zero", shape, "o.npy"), "/dev/zero holds more bytes"),
        (("decode", "adir", shape, "o.npy"), "adir is a directory"),
        (("decode", "empty.npy", shape, "o.npy"), "holds only 0 bytes but"),
        (("decode", "x.bin", shape, "/dev/full"), "/dev/full: No space left"),
        (("decode", "x.bin", shape, "nodir/y.npy"), "nodir/y.npy: No such file"),
        (("show", "f32[1000000000000,1000000000000]{1,0:T(8,128)}"), "2**63 element slots"),
    ]
    for args, message in cases:
        proc = _cli(*args, cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (1, ""), (args, proc.stderr)
        assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, (args,
                                                                                   proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)
    assert not (tmp_path / "adir.npy").exists()
    proc = _cli("decode", "x.bin", shape, "plain-name", cwd=tmp_path)  # written as named
    assert proc.returncode == 0 and np.array_equal(np.load(tmp_path / "plain-name"), x)


def test_huge_dims_usage_version_and_pipes(tmp_path):
    proc = _cli("show", "f32[3,1000000000000]{0,1}", "--limit", "3", cwd=tmp_path)
    assert proc.returncode == 0 and "(2999999999997 more slots)" in proc.stdout
    proc = _cli("show", "f32[3,5]", "--limit", "-1", cwd=tmp_path)
    assert proc.returncode == 2 and "expected a count" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = _cli("--version", cwd=tmp_path)
    assert proc.returncode == 0 and re.fullmatch(r"python -m tiling \S+\n", proc.stdout)
    for command in ("show", "encode", "decode"):
        helptext = _cli(command, "--help", cwd=tmp_path).stdout
        positional = helptext.split("positional arguments:")[1].split("options:")[0]
        assert all(len(line.split(None, 1)) == 2 for line in positional.strip().splitlines()
                   if not line.startswith("      ")), helptext
    # piped into `head`: the closed pipe ends the command quietly
    pipe = subprocess.Popen(f"{sys.executable} -m tiling show 'f32[300,500]' | head -1",
                            shell=True, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    out, err = pipe.communicate(timeout=120)
    assert out == "f32[300,500]{1,0}\n" and err == ""
