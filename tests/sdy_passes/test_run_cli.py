"""`sdy-run` on a mesh (spec execute.md §1.4): dry reports, partitioned runs with their files, the
partitioned module, JSON, links/algorithm/device profiles, dask and per-device checksums, and
bad command lines as one error line (status 2) or one located diagnostic (status 1)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sdy_passes import interpret, print_module
from sdy_passes._run_cli import main as sdy_run
from sdy_passes.element_types import numpy_dtype
from sdy_passes.execution import Execution, execute
from sdy_passes.parser import parse_module

EXAMPLES = Path(__file__).resolve().parents[2] / "sdy_passes" / "examples"
BLOCK_64 = str(EXAMPLES / "transformer_block_64x64.mlir")
BLOCK_2X4 = str(EXAMPLES / "transformer_block_2x4.mlir")
ROOT = Path(__file__).resolve().parents[2]

HAS_DASK_BACKEND = "backend" in inspect.signature(execute).parameters
HAS_CHECKSUMS = hasattr(Execution, "checksums")


class _Shape:
    def __init__(self, t):
        self.shape, self.dtype = tuple(t.shape), numpy_dtype(t.element_type)


def _dry(path, **kwargs):
    text = Path(path).read_text()
    types = parse_module(text).lookup_symbol("main").properties["function_type"].type.inputs
    return execute(text, *map(_Shape, types), dry=True, **kwargs)


def test_dry_report_on_64x64(capsys):
    assert sdy_run([BLOCK_64, "--dry"]) == 0
    out = capsys.readouterr().out
    assert out == str(_dry(BLOCK_64).report) + "\n"
    assert out.startswith('sdy-run: @main on <["x"=64, "y"=64]> (4096 devices)')
    # the mesh given is the module's: the same report
    assert sdy_run([BLOCK_64, "--dry", "--mesh", '<["x"=64, "y"=64]>']) == 0
    assert capsys.readouterr().out == out


def test_json_links_algorithm_and_device(capsys):
    argv = [BLOCK_64, "--dry", "--json", "--links", "x=2.7e-6,19.3e9;y=1e-6,1e11", "--algorithm",
            "bidirectional_ring", "--device", "flops=9.9e14,hbm=3.35e12"]
    assert sdy_run(argv) == 0
    got = json.loads(capsys.readouterr().out)
    want = _dry(BLOCK_64, links={"x": (2.7e-6, 19.3e9), "y": (1e-6, 1e11)}, algorithm="bidirectional_ring",
                device={"flops": 9.9e14, "hbm_bytes": 3.35e12}).report
    assert got == {"report": json.loads(want.to_json())}
    assert got["report"]["cost"]["algorithm"] == "bidirectional_ring" and got["report"]["time"]["total"] > 0
    assert got["report"]["cost"]["total"] != json.loads(_dry(BLOCK_64).report.to_json())["cost"]["total"]


def test_partitioned_run_writes_the_global_outputs(tmp_path, capsys):
    assert sdy_run([BLOCK_2X4, "--random", "0", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0].rsplit("/", 1)[1] for line in lines[:8]]
    assert names == [f"in_{i}.npy" for i in range(7)] + ["out_0.npy"]
    assert lines[8].startswith('sdy-run: @main on <["x"=2, "y"=4]> (8 devices)')
    args = [np.load(tmp_path / f"in_{i}.npy") for i in range(7)]
    (want,) = interpret(Path(BLOCK_2X4).read_text(), *args)
    got = np.load(tmp_path / "out_0.npy")
    # float tier: the partitioned sums add in another order (f32 rounding of the largest values)
    assert np.allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
    # the same files as inputs: the same outputs, bit for bit
    again = tmp_path / "again"
    assert sdy_run([BLOCK_2X4, *(a for i in range(7) for a in ("--arg", str(tmp_path / f"in_{i}.npy"))),
                    "--out", str(again), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert np.array_equal(np.load(again / "out_0.npy"), got)
    assert [f["path"] for f in found["files"]] == [str(again / "out_0.npy")]
    assert found["report"]["num_devices"] == 8


def test_emit_local_prints_the_partitioned_module(capsys):
    assert sdy_run([BLOCK_2X4, "--emit-local"]) == 0
    out = capsys.readouterr().out
    assert out == print_module(_dry(BLOCK_2X4).local)
    assert "stablehlo.all_reduce" in out and "tensor<2x16x32xf32>" in out  # batch over x: local rows
    parse_module(out)


@pytest.mark.skipif(not HAS_CHECKSUMS, reason="Execution.checksums() is not on this branch yet (engine35)")
def test_checksum_per_device(tmp_path, capsys):
    assert sdy_run([BLOCK_2X4, "--random", "0", "--out", str(tmp_path), "--checksum"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("out_0  device")]
    assert len(lines) == 8 and not (tmp_path / "out_0.npy").exists()
    args = [np.load(tmp_path / f"in_{i}.npy") for i in range(7)]
    run = execute(Path(BLOCK_2X4).read_text(), *args)
    want = [f"out_0  device {d}  crc32 {int(v):08x}" for d, v in zip(run.checksums()[0].device.values,
                                                                        run.checksums()[0].values)]
    assert lines == want


@pytest.mark.skipif(not (HAS_DASK_BACKEND and HAS_CHECKSUMS),
                    reason="execute(backend='dask') and Execution.checksums() are not on this branch yet (engine35)")
def test_dask_checksums_equal_the_eager_ones(tmp_path, capsys):
    assert sdy_run([BLOCK_2X4, "--random", "0", "--out", str(tmp_path), "--checksum"]) == 0
    eager = capsys.readouterr().out
    assert sdy_run([BLOCK_2X4, "--random", "0", "--out", str(tmp_path), "--checksum", "--dask"]) == 0
    assert capsys.readouterr().out == eager


def test_bad_mesh_text_has_a_caret(capsys):
    assert sdy_run([BLOCK_2X4, "--mesh", '<["x"=2']) == 2
    err = capsys.readouterr().err.rstrip().splitlines()
    assert err[0] == "sdy-run: error: --mesh: expected ']' at position 7" and err[2].strip() == "^"


@pytest.mark.parametrize("argv, status, message", [
    (["--links", "x=fast"], 2, "--links as AXIS=ALPHA,BETA"),
    (["--links", "x=1e-6,0"], 2, "beta > 0"),
    (["--device", "flops=1e12"], 2, "--device as flops=F,hbm=B"),
    (["--device", "flops=1e12,hbm=-1"], 2, "--device as flops=F,hbm=B"),
    (["--algorithm", "tree"], 2, "--algorithm must be one of ring, bidirectional_ring"),
    (["--interpret", "--dry"], 2, "--dry needs the partitioned run"),
    (["--dry", "--dask"], 2, "--dry computes no values; --dask"),
    (["--dry", "--checksum"], 2, "--dry computes no values; --checksum"),
    (["--dry=yes"], 2, "--dry takes no value"),
    (["--dry", "--mesh", '<["x"=4, "y"=2]>'], 1, 'mesh <["x"=4, "y"=2]> is not the module\'s mesh'),
    (["--dry", "--links", "z=1e-6,1e9"], 1, "unknown mesh axis 'z'"),
    (["--dry", "--func", "absent"], 1, "no function @absent"),
])
def test_bad_command_lines(capsys, argv, status, message):
    assert sdy_run([BLOCK_2X4, *argv]) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert err[0].startswith("sdy-run: error:" if status == 2 or "@absent" in message else f"{BLOCK_2X4}: error:")


def test_located_errors_carry_a_caret(tmp_path, capsys):
    bad = tmp_path / "bad.mlir"
    bad.write_text(Path(BLOCK_2X4).read_text().replace("stablehlo.dot_general", "stablehlo.dot_generalx", 1))
    assert sdy_run([str(bad), "--dry"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{bad}:") and ": error:" in err[0] and err[-1].strip() == "^"


def test_closed_stdout_is_one_error_line():
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "sdy_passes._run_cli", BLOCK_64, "--help"], cwd=ROOT,
                              stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    err = proc.stderr.decode().strip().splitlines()
    assert proc.returncode == 1 and len(err) == 1 and "broken pipe" in err[0] and "Traceback" not in proc.stderr.decode()


def test_help_names_every_flag(capsys):
    assert sdy_run(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--mesh", "--dry", "--dask", "--checksum", "--emit-local", "--json", "--links", "--algorithm",
                 "--device", "--out", "--interpret"):
        assert flag in out
