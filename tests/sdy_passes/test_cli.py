"""`python -m sdy_passes` / `sdy-opt`: flags, pipelines, split input, diagnostics, exit status."""

import subprocess
import sys

import pytest

from sdy_passes import PASSES, Module, Pass, StringAttr
from sdy_passes.__main__ import main
from tests.conftest import SDY_CASES, needs_shared

MODULE = """sdy.mesh @mesh = <["x"=2]>
func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.negate %arg0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""


class _Rename(Pass):
    """A test pass: appends `_r` to every symbol name, option `suffix` changes it."""

    name = "test-rename"
    summary = "Renames symbols (test only)."

    def run(self, module: Module) -> None:
        for op in module.ops:
            if "sym_name" in op.properties:
                op.properties["sym_name"] = StringAttr(op.properties["sym_name"].value + self.options.get("suffix", "_r"))


@pytest.fixture
def rename_pass(monkeypatch):
    monkeypatch.setitem(PASSES, "test-rename", _Rename)


def _run(capsys, monkeypatch, args, stdin=""):
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(stdin))
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_pretty_output_by_default(capsys, monkeypatch):
    code, out, err = _run(capsys, monkeypatch, ["-"], MODULE)
    assert code == 0 and err == ""
    assert out.startswith("module {\n  sdy.mesh @mesh = <[\"x\"=2]>\n  func.func @f(")


def test_generic_output(capsys, monkeypatch):
    code, out, _ = _run(capsys, monkeypatch, ["--mlir-print-op-generic"], MODULE)
    assert code == 0 and out.startswith('"builtin.module"() ({\n  "sdy.mesh"()')


def test_pass_flags_run_in_order_with_options(capsys, monkeypatch, rename_pass):
    code, out, _ = _run(capsys, monkeypatch, ["-test-rename", "--test-rename=suffix=_s", "-"], MODULE)
    assert code == 0 and "sdy.mesh @mesh_r_s" in out and "func.func @f_r_s(" in out


def test_pass_pipeline(capsys, monkeypatch, rename_pass):
    code, out, _ = _run(capsys, monkeypatch, ["--pass-pipeline=builtin.module(test-rename,test-rename{suffix=_q})"], MODULE)
    assert code == 0 and "@mesh_r_q" in out
    code, out, _ = _run(capsys, monkeypatch, ["--pass-pipeline", "builtin.module(test-rename)"], MODULE)
    assert code == 0 and "@mesh_r " in out


def test_unknown_pass_is_a_clear_error(capsys, monkeypatch):
    code, out, err = _run(capsys, monkeypatch, ["--sdy-no-such-pass"], MODULE)
    assert code == 1 and out == ""
    assert "Unknown command line argument '--sdy-no-such-pass'" in err and "sdy-import-pipeline" in err
    code, out, err = _run(capsys, monkeypatch, ["--pass-pipeline=builtin.module(nope)"], MODULE)
    assert code == 1 and "'nope' does not refer to a registered pass or pass pipeline" in err


def test_split_input_file_diagnostics_use_whole_file_lines(capsys, monkeypatch):
    text = (MODULE + "// -----\n"
            + 'func.func @g(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n'
              '  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}]>]>} : tensor<8xf32>\n'
              '  return %0 : tensor<8xf32>\n}\n'
            + "// -----\n" + "func.func @h() {\n  return\n}\n")
    code, out, err = _run(capsys, monkeypatch, ["--split-input-file", "-"], text)
    assert code == 1
    assert err == ("<stdin>:8:8: error: 'stablehlo.negate' op result - unknown mesh: @m\n"
                   "  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@m, [{}]>]>} : tensor<8xf32>\n"
                   "       ^\n")
    assert out.count("// -----") == 1 and "@f(" in out and "@h()" in out


def test_parse_error_from_a_file(tmp_path, capsys, monkeypatch):
    path = tmp_path / "bad.mlir"
    path.write_text('func.func @f() {\n  %0 = stablehlo.negate : tensor<8xf32>\n}\n')
    code, out, err = _run(capsys, monkeypatch, [str(path)])
    assert code == 1 and out == ""
    assert err.startswith(f"{path}:2:25: error: expected SSA value (%name), found ':'\n")


def test_output_file_and_missing_input(tmp_path, capsys, monkeypatch):
    out_path = tmp_path / "out.mlir"
    code, out, _ = _run(capsys, monkeypatch, ["-o", str(out_path), "-"], MODULE)
    assert code == 0 and out == "" and out_path.read_text().startswith("module {")
    code, _, err = _run(capsys, monkeypatch, [str(tmp_path / "missing.mlir")])
    assert code == 1 and "cannot read" in err


def test_help_lists_passes(capsys, monkeypatch):
    code, out, _ = _run(capsys, monkeypatch, ["--help"])
    assert code == 0 and "--split-input-file" in out and "--sdy-import-pipeline" in out


def test_console_entry_point_runs_as_a_module():
    proc = subprocess.run([sys.executable, "-m", "sdy_passes", "--mlir-print-op-generic", "-"],
                          input=MODULE, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"stablehlo.negate"(%arg0)' in proc.stdout


@needs_shared(SDY_CASES)
def test_generic_flag_gives_the_golden_generic_input(capsys, monkeypatch):
    for path in sorted(SDY_CASES.glob("*/*.in.mlir")):
        code, out, err = _run(capsys, monkeypatch, ["--mlir-print-op-generic", str(path)])
        assert code == 0, err
        # byte for byte: the CLI names values as MLIR does
        assert out == path.with_name(path.name.replace(".in.mlir", ".in.generic.mlir")).read_text()
