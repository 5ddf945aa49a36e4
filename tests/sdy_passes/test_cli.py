"""`python -m sdy_passes` / `sdy-opt`: flags, pipelines, split input, diagnostics, exit status."""

import os
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
    options = {"suffix": "_r"}

    def run(self, module: Module) -> None:
        for op in module.ops:
            if "sym_name" in op.properties:
                op.properties["sym_name"] = StringAttr(op.properties["sym_name"].value + self.options["suffix"])


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
    assert code == 2 and out == ""
    assert err.startswith("sdy-opt: error: Unknown command line argument '--sdy-no-such-pass'")
    code, out, err = _run(capsys, monkeypatch, ["--pass-pipeline=builtin.module(nope)"], MODULE)
    assert code == 2 and "'nope' does not refer to a registered pass or pass pipeline" in err


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
    assert err.startswith(f"{path}:2:24: error: expected SSA operand (found ':')\n")  # jaxlib's words and place


def test_output_file_and_missing_input(tmp_path, capsys, monkeypatch):
    out_path = tmp_path / "out.mlir"
    code, out, _ = _run(capsys, monkeypatch, ["-o", str(out_path), "-"], MODULE)
    assert code == 0 and out == "" and out_path.read_text().startswith("module {")
    code, _, err = _run(capsys, monkeypatch, [str(tmp_path / "missing.mlir")])
    assert code == 1 and "cannot read" in err


def test_help_lists_passes(capsys, monkeypatch):
    code, out, _ = _run(capsys, monkeypatch, ["--help"])
    assert code == 0 and "--split-input-file" in out and "--sdy-import-pipeline" in out
    assert "      add-data-flow-edges-on-named-computations=true\n" in out


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


# -- pass options and nested pipelines, as sdy_opt and jaxlib's pass manager read them ------------

@pytest.mark.parametrize("args, message", [
    (["--sdy-lift-inlined-meshes=foo=bar"], "no such option foo"),
    (["--sdy-import-func-calls=add-data-flow-edges-on-named-computations=maybe"],
     "'maybe' is invalid value for boolean argument! Try 0 or 1"),
    (["--pass-pipeline=builtin.module(sdy-import-pipeline{dedup=1})"], "no such option dedup"),
    (["--pass-pipeline=builtin.module(func.func(symbol-dce))"], "runs on 'builtin.module'"),
    (["--pass-pipeline=builtin.module(sdy-save-module)"], "'sdy-save-module' does not refer"),
    (["--pass-pipeline=builtin.module(symbol-dce"], "expected ')'"),
])
def test_bad_pass_options_are_usage_errors(capsys, monkeypatch, args, message):
    code, out, err = _run(capsys, monkeypatch, args, MODULE)
    assert code == 2 and out == ""
    assert err.startswith("sdy-opt: error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize("value", ["", "=true", "=1", "=TRUE", "=True"])
def test_boolean_options_as_llvm_reads_them(capsys, monkeypatch, value):
    flag = "--pass-pipeline=builtin.module(sdy-import-pipeline{dedup-functions-fully%s})" % value
    code, out, err = _run(capsys, monkeypatch, [flag], MODULE)
    assert code == 0, err


def test_func_passes_nest_and_pass_options_reach_the_pass(capsys, monkeypatch, rename_pass):
    code, out, _ = _run(capsys, monkeypatch, [
        "--pass-pipeline", 'builtin.module(test-rename{suffix="_a"}, test-rename{suffix=_b})'], MODULE)
    assert code == 0 and "@mesh_a_b" in out


def test_pipeline_text_round_trips_like_jaxlib():
    from sdy_passes.pass_manager import parse_pipeline, pipeline_text
    steps = parse_pipeline("builtin.module(sdy-import-pipeline{dedup-functions-fully=true})")
    assert pipeline_text(steps) == (
        "builtin.module(symbol-dce,sdy-lift-inlined-meshes,sdy-remove-size-one-axes,"
        "sdy-propagate-sharding-from-func-to-call,sdy-constant-or-scalar-splitter,symbol-dce,"
        "sdy-manual-axes-cleanup,sdy-save-module,sdy-add-data-flow-edges,"
        "sdy-apply-sharding-constraints{debug-propagation-edge-sharding=false "
        "debug-sharding-origins=false},sdy-sharding-group-import)")  # jaxlib's str(PassManager)
    steps = parse_pipeline("builtin.module(sdy-import-func-calls, func.func(), symbol-dce)")
    assert pipeline_text(steps) == ("builtin.module(sdy-import-func-calls{add-data-flow-edges-on-"
                                    "named-computations=true},func.func(),symbol-dce)")


_CALLS = """func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = call @foo(%arg0) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = call @foo(%0) : (tensor<8xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
func.func private @foo(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
"""


def test_warnings_once_per_process_like_shardy():
    # Shardy's emitOpWarningOnce: only the first chunk warns (a fresh process, so run a child).
    proc = subprocess.run([sys.executable, "-m", "sdy_passes", "--split-input-file",
                           "--sdy-import-func-calls", "-"],
                          input=_CALLS + "// -----\n" + _CALLS, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ("<stdin>:3:8: warning: function @foo has multiple call ops, we need to "
                           "clone the function body for each call\n"
                           "  %1 = call @foo(%0) : (tensor<8xf32>) -> tensor<8xf32>\n"
                           "       ^\n")


# -- hostile environments: one `error:` line, exit 1, never a traceback (issue 22 item 12) --------

def _cli(args, *, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, shell_suffix=None):
    if shell_suffix is not None:
        cmd = " ".join([sys.executable, "-m", "sdy_passes", *args]) + " " + shell_suffix
        return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    return subprocess.run([sys.executable, "-m", "sdy_passes", *args], stdin=stdin, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


def _one_error(proc, code=1):
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("sdy-opt: error: ") and proc.stderr.count("\n") == 1, proc.stderr


def test_non_utf8_input(tmp_path):
    path = tmp_path / "latin1.mlir"
    path.write_bytes(b"// caf\xe9\n" + MODULE.encode())
    proc = _cli([str(path)])
    _one_error(proc)
    assert "is not UTF-8 text: byte 0xe9 at offset 6" in proc.stderr


def test_closed_stdin_and_stdout(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(MODULE)
    _one_error(_cli(["-"], shell_suffix="<&-"))
    proc = _cli([str(path)], shell_suffix=">&-")
    _one_error(proc)
    assert "stdout is closed" in proc.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_stdout_on_dev_full(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(MODULE)
    proc = _cli([str(path)], shell_suffix="> /dev/full")
    _one_error(proc)
    assert "No space left on device" in proc.stderr


def test_output_is_a_directory(tmp_path):
    path = tmp_path / "m.mlir"
    path.write_text(MODULE)
    proc = _cli([str(path), "-o", str(tmp_path)])
    _one_error(proc)
    assert "Is a directory" in proc.stderr


def test_piped_into_head_that_already_exited():
    # `sdy-opt m.mlir | head -c 0`: the reader is gone before the output is written.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, "-m", "sdy_passes", "-"], input=MODULE.encode(),
                              stdout=write_end, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    _one_error(subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stderr.decode()))
    assert b"broken pipe" in proc.stderr


def test_version_and_positional_help(capsys, monkeypatch):
    code, out, _ = _run(capsys, monkeypatch, ["--version"])
    assert code == 0 and out.startswith("sdy-opt (layout-toolkit ")
    code, out, _ = _run(capsys, monkeypatch, ["--help"])
    assert "positional arguments:\n  FILE" in out
