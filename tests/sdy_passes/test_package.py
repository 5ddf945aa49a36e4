"""The package as a whole: its public names, how its tests find shared data, imports."""

from __future__ import annotations

import pathlib
import re

import sdy_passes

TESTS = pathlib.Path(__file__).resolve().parents[1]


def test_dir_lists_every_public_name():
    assert set(sdy_passes.__all__) <= set(dir(sdy_passes))
    assert callable(sdy_passes.explain)


def test_absent_shared_data_has_one_skip_message():
    """Tests find ../shared through conftest (`SHARED`) and skip through `needs_shared`, which
    gives the one message naming the folder."""
    for path in TESTS.rglob("*.py"):
        if path.name in ("conftest.py", "test_package.py"):
            continue
        text = path.read_text()
        assert not re.search(r'parents\[\d\] / "shared"', text), path
        assert "not found at" not in text, path
        for reason in re.findall(r"skipif\([^\n]*reason=([^\n]*)", text):
            assert "shared" not in reason and "CASES" not in reason, (path, reason)


def test_no_imports_inside_functions():
    """Imports at module level, layered without circles: a function-level import run while
    another thread forks can leave the child holding a dead thread's import lock (issue 37 item
    2). numpy and ml_dtypes load through `sdy_passes._lazy`, which forks wait for."""
    import ast

    found = []
    for path in sorted(pathlib.Path(sdy_passes.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [f"{path.name}:{n.lineno}" for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert found == []


_FORK_SCRIPT = r"""
import os, sys, threading, time
sys.path.insert(0, sys.argv[2])
import sdy_passes
TEXT = ("func.func @f() -> (tensor<2xbf16>, tensor<2xf8E4M3FN>) {\n"
        "  %0 = stablehlo.constant dense<[1.5, 0.1]> : tensor<2xbf16>\n"
        "  %1 = stablehlo.constant dense<[0x3C, 0.3]> : tensor<2xf8E4M3FN>\n"
        "  return %0, %1 : tensor<2xbf16>, tensor<2xf8E4M3FN>\n}")
threading.Thread(target=sdy_passes.parse_module, args=(TEXT,)).start()
time.sleep(float(sys.argv[1]))
pid = os.fork()
if pid == 0:
    sdy_passes.print_module(sdy_passes.parse_module(TEXT))
    os._exit(0)
for _ in range(400):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("child", os.waitstatus_to_exitcode(status))
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    print("child hung")
"""


def test_a_fork_during_the_first_parse_does_not_hang():
    """Forks at many moments of a first `parse_module` that loads numpy and ml_dtypes in
    another thread: every child parses and exits within 20 s."""
    import subprocess
    import sys

    root = str(pathlib.Path(sdy_passes.__file__).resolve().parents[1])
    for delay in (0.0, 0.01, 0.05, 0.2):
        run = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, str(delay), root], capture_output=True,
                             text=True, timeout=60)
        assert run.stdout.strip() == "child 0", (delay, run.stdout, run.stderr[-2000:])
