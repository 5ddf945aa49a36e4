"""The package as a whole: its public names, how its tests find shared data, imports."""

from __future__ import annotations

import pathlib
import re

import sdy_passes

TESTS = pathlib.Path(__file__).resolve().parents[1]


def test_dir_lists_every_public_name():
    assert set(sdy_passes.__all__) <= set(dir(sdy_passes))
    assert callable(sdy_passes.explain)


_HEAVY = ("numpy", "ml_dtypes", "xarray", "pandas", "dask", "numba", "matplotlib", "tiling", "sharding.simulate",
          "sharding.cost", "sdy_passes.interpreter", "sdy_passes.propagation.basic_propagation")


def test_import_loads_no_heavy_module():
    """`import sdy_passes` (and `import sharding`) stay light (issue 37 item 3: <= 0.3 s each):
    numpy, xarray (through `sharding.DeviceMesh`), the interpreter, the cost report's numpy and
    the propagation passes load on first use of the names that need them, which then work."""
    import subprocess
    import sys

    root = str(pathlib.Path(sdy_passes.__file__).resolve().parents[1])
    script = (f"import sys; sys.path.insert(0, {root!r}); import sharding, sdy_passes; "
              f"print(sorted(m for m in {_HEAVY!r} if m in sys.modules)); "
              "print([callable(getattr(sdy_passes, n)) for n in sorted(sdy_passes._LAZY)])")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.stdout.splitlines() == ["[]", str([True] * len(sdy_passes._LAZY))], run.stderr[-2000:]


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
TEXT = ("func.func @main() -> (tensor<2xbf16>, tensor<2xf8E4M3FN>) {\n"
        "  %0 = stablehlo.constant dense<[1.5, 0.1]> : tensor<2xbf16>\n"
        "  %1 = stablehlo.constant dense<[0x3C, 0.3]> : tensor<2xf8E4M3FN>\n"
        "  return %0, %1 : tensor<2xbf16>, tensor<2xf8E4M3FN>\n}")
first = sys.argv[3]  # what the other thread calls first: parse_module, or a lazy name's load
threading.Thread(target=sdy_passes.parse_module if first == "parse" else getattr, args=(
    (TEXT,) if first == "parse" else (sdy_passes, first))).start()
time.sleep(float(sys.argv[1]))
pid = os.fork()
if pid == 0:
    sdy_passes.print_module(sdy_passes.parse_module(TEXT))
    if first != "parse":
        assert callable(getattr(sdy_passes, first))
    if first == "interpret":
        sdy_passes.interpret(TEXT)
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
        run = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, str(delay), root, "parse"], capture_output=True,
                             text=True, timeout=60)
        assert run.stdout.strip() == "child 0", (delay, run.stdout, run.stderr[-2000:])


def test_a_fork_during_the_first_load_of_a_lazy_name_does_not_hang():
    """The package's lazy names (`interpret`: xarray through `sharding.DeviceMesh`; `explain`:
    the propagation passes) load in another thread while the process forks: every child gets
    them and runs."""
    import subprocess
    import sys

    root = str(pathlib.Path(sdy_passes.__file__).resolve().parents[1])
    for first, delay in (("interpret", 0.0), ("interpret", 0.1), ("explain", 0.0), ("explain", 0.02)):
        run = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, str(delay), root, first], capture_output=True,
                             text=True, timeout=60)
        assert run.stdout.strip() == "child 0", (first, delay, run.stdout, run.stderr[-2000:])
