"""Bad arguments, unknown ops and malformed modules get the package's error (ExecutionError,
UnsupportedOpError: SdyErrors and ValueErrors) with what was expected, what was found and where;
`sdy-run` prints one error line (no traceback) and exits 1 (2 for a bad command line)."""

from __future__ import annotations

import os
import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdy_passes
from sdy_passes._run_cli import draw
from sdy_passes._run_cli import main as sdy_run
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import ExecutionError, SdyError, UnsupportedOpError
from tests.sdy_passes.jax_corpus import PROGRAMS, lower_all

MODULE = """func.func @main(%a: tensor<2x3xf32>, %b: tensor<i32>) -> tensor<2x3xf32> {
  %0 = stablehlo.convert %b : (tensor<i32>) -> tensor<f32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
  %2 = stablehlo.add %a, %1 : tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}"""


def test_runs():
    (out,) = sdy_passes.interpret(MODULE, np.ones((2, 3), np.float32), 2)
    assert out.tolist() == [[3.0] * 3] * 2


@pytest.mark.parametrize("args, found", [
    ((np.ones((2, 3), np.float64), 2), "float64[2, 3]"),
    ((np.ones((3, 2), np.float32), 2), "float32[3, 2]"),
    ((np.ones((2, 3), np.float32), 2.5), "Python float 2.5"),
    ((np.ones((2, 3), np.float32), 2 ** 40), "out of range"),
    ((np.ones((2, 3), ml_dtypes.bfloat16), 2), "bfloat16[2, 3]"),
    (([[1.0] * 3] * 2, 2), "list"),
])
def test_bad_argument_names_it(args, found):
    with pytest.raises(ExecutionError, match="argument #") as e:
        sdy_passes.interpret(MODULE, *args)
    assert found in str(e.value) and "expected" in str(e.value)
    assert isinstance(e.value, SdyError) and isinstance(e.value, ValueError)


def test_wrong_argument_count():
    with pytest.raises(ExecutionError, match="takes 2 arguments .* found 1"):
        sdy_passes.interpret(MODULE, np.ones((2, 3), np.float32))


def test_unknown_function_and_numerics():
    with pytest.raises(ExecutionError, match="no function @nope"):
        sdy_passes.interpret(MODULE, np.ones((2, 3), np.float32), 2, func="nope")
    with pytest.raises(ExecutionError, match="numerics"):
        sdy_passes.interpret(MODULE, np.ones((2, 3), np.float32), 2, numerics="exact")


def test_unsupported_op_is_located():
    text = MODULE.replace("%2 = stablehlo.add %a, %1 : tensor<2x3xf32>",
                          "%2 = stablehlo.custom_call @my_kernel(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>")
    with pytest.raises(UnsupportedOpError) as e:
        sdy_passes.interpret(text, np.ones((2, 3), np.float32), 2)
    assert str(e.value).startswith("4:8: stablehlo.custom_call @my_kernel: no evaluator")


def test_op_without_evaluator_is_located():
    text = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "stablehlo.batch_norm_inference"(%a, %a, %a, %a, %a) {epsilon = 1.0 : f32, feature_index = 0 : i64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
    with pytest.raises(UnsupportedOpError, match=r"^2:8: stablehlo.batch_norm_inference: no evaluator"):
        sdy_passes.interpret(text, np.ones(4, np.float32))


def test_malformed_module_is_a_parse_error():
    with pytest.raises(sdy_passes.IRParseError):
        sdy_passes.interpret("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %b : tensor<4xf32>\n}",
                             np.ones(4, np.float32))
    with pytest.raises(ExecutionError, match="expected a Module or MLIR text"):
        sdy_passes.interpret(42)


def test_recursion_is_refused():
    text = """func.func @main(%a: tensor<i32>) -> tensor<i32> {
  %0 = func.call @main(%a) : (tensor<i32>) -> tensor<i32>
  return %0 : tensor<i32>
}"""
    with pytest.raises(ExecutionError, match="recursive call"):
        sdy_passes.interpret(text, 1)


def test_callbacks_are_unsupported():
    text = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%a) {has_side_effect = true} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
    with pytest.raises(UnsupportedOpError, match="xla_ffi_python_cpu_callback"):
        sdy_passes.interpret(text, np.ones(4, np.float32))


# -- sdy-run ------------------------------------------------------------------------------------

def _write(tmp_path, text=MODULE):
    p = tmp_path / "m.mlir"
    p.write_text(text)
    return str(p)


def test_cli_random_and_args(tmp_path, capsys):
    path = _write(tmp_path)
    assert sdy_run([path, "--random", "0", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0].rsplit("/", 1)[1] for line in lines] == ["in_0.npy", "in_1.npy", "out_0.npy"]
    assert "float32[2,3]" in lines[2] and "crc32" in lines[2]
    a, b = np.load(tmp_path / "in_0.npy"), np.load(tmp_path / "in_1.npy")
    out = np.load(tmp_path / "out_0.npy")
    assert np.array_equal(out, a + np.float32(b))
    again = tmp_path / "again"
    assert sdy_run([path, "--arg", str(tmp_path / "in_0.npy"), "--arg", str(tmp_path / "in_1.npy"),
                    "--numerics", "reference", "--out", str(again)]) == 0
    assert np.array_equal(np.load(again / "out_0.npy"), out)


@pytest.mark.parametrize("argv, status, message", [
    (["--random"], 2, "--random needs a value"),
    (["--random", "x"], 2, "integer seed"),
    (["--numerics", "exact"], 2, "--numerics must be one of"),
    (["--interpret", "--mesh", '<["x"=2]>'], 2, "--mesh needs the partitioned run"),
    (["--bogus"], 2, "unknown option"),
    (["--arg", "missing.npy"], 1, "takes 2 arguments"),
])
def test_cli_bad_command_lines(tmp_path, capsys, argv, status, message):
    assert sdy_run([_write(tmp_path), *argv]) == status
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sdy-run: error:") and message in err[0]


def test_cli_bad_inputs(tmp_path, capsys):
    path = _write(tmp_path)
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float64))
    np.save(tmp_path / "i.npy", np.array(1, np.int32))
    assert sdy_run([path, "--arg", str(tmp_path / "x.npy"), "--arg", str(tmp_path / "i.npy")]) == 1
    err = capsys.readouterr().err
    assert "error: @main: argument #0: expected 'tensor<2x3xf32>'" in err and "Traceback" not in err
    (tmp_path / "bad.npy").write_bytes(b"not an array")
    assert sdy_run([path, "--arg", str(tmp_path / "bad.npy"), "--arg", str(tmp_path / "i.npy")]) == 1
    assert "cannot read" in capsys.readouterr().err
    bad = _write(tmp_path, "func.func @main( {")
    assert sdy_run([bad, "--random", "0", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:1:") and "error:" in err
    assert sdy_run([str(tmp_path / "absent.mlir"), "--random", "0"]) == 1
    assert "sdy-run: error: cannot read" in capsys.readouterr().err


def test_evaluator_failure_is_located():
    text = """func.func @main(%a: tensor<4x2xf32>) -> tensor<2x4xf32> {
  %0 = stablehlo.transpose %a, dims = [0, 0] : (tensor<4x2xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}"""
    module = sdy_passes.parse_module(text, verify=False)  # what the verifier does not check yet
    with pytest.raises(ExecutionError, match=r"^2:8: stablehlo.transpose: cannot evaluate"):
        sdy_passes.interpret(module, np.ones((4, 2), np.float32))


def test_sizes_beyond_memory_are_refused_before_allocating():
    text = """func.func @main() -> tensor<100000x100000x100xf32> {
  %0 = stablehlo.iota dim = 0 : tensor<100000x100000x100xf32>
  return %0 : tensor<100000x100000x100xf32>
}"""
    with pytest.raises(ExecutionError, match=r"^2:8: stablehlo.iota: result #0 .* needs 3725.3 GiB"):
        sdy_passes.interpret(text)


_NUMBER = re.compile(r"(?<![%#@\w])\d+")


@settings(max_examples=2 * int(os.environ.get("SDY_INTERPRETER_RANDOM_EXAMPLES", "20")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(name for name, _ in PROGRAMS)), st.data())  # (no jaxlib child at collection)
def test_mutated_corpus_modules_get_package_errors(name, data):
    """Numbers of a corpus program changed at random (dims, sizes, attribute values): reading and
    running it either works or raises an SdyError, never another exception."""
    text = lower_all()[name].get("pretty")
    if text is None:
        return
    spots = [m.span() for m in _NUMBER.finditer(text)]
    for _ in range(data.draw(st.integers(1, 3))):
        a, b = data.draw(st.sampled_from(spots))
        text = text[:a] + str(data.draw(st.sampled_from([0, 1, 2, 3, 7, 64, 2 ** 31]))) + text[b:]
        spots = [m.span() for m in _NUMBER.finditer(text)]
    if "stablehlo.while" in text:  # a mutated trip count may loop 2^31 times: legal, but long
        return
    try:
        module = sdy_passes.parse_module(text, verify=data.draw(st.booleans()))
        f = module.lookup_symbol("main")
        if f is None:
            return
        rng = np.random.default_rng(0)
        args = []
        for t in f.properties["function_type"].type.inputs:
            dt = numpy_dtype(getattr(t, "element_type", None)) if hasattr(t, "element_type") else None
            shape = getattr(t, "shape", None)
            if dt is None or shape is None or None in shape or np.prod(shape) > 1 << 16:
                return
            args.append(draw(rng, tuple(shape), dt))
        sdy_passes.interpret(module, *args)
    except SdyError:
        pass
