"""Fork safety of the package's deferred imports, and its import layering (issue 37 item 2).

A child forked while another thread imports inherits the held module lock and hangs on its own
first use of that module. Here one thread makes a first use of `DeviceMesh` (shard, reshard,
unshard, the plan's traffic) while the main thread forks at many moments of it; every child
makes the same use and must finish (a hung child is ended by `SIGALRM` and counted). Cold: a
fresh interpreter that has only run `import sharding`; warm: the simulation already loaded and
used once, then used again, ten times (`sharding.DeviceMesh` with xarray, dask and the plan's
cost).
The parent's thread computes no dask graph and the children compute theirs in their own thread:
a lock that another thread holds at the fork (dask's thread pool, Python 3.11's
`functools.cached_property` lock inside a dask graph) stays held in the child whatever this
package does; the imports are what this test is about (xarray imports dask even for numpy
shards).
"""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = str(pathlib.Path(__file__).resolve().parents[2])

_SCRIPT = r"""
import faulthandler, os, signal, sys, threading, time, traceback
sys.path.insert(0, ROOT)
import numpy as np
import sharding

def use(backends=("numpy", "dask")):
    dm = sharding.DeviceMesh('<["x"=2, "y"=2]>')
    s = sharding.TensorSharding.parse('<@m, [{"x"}, {}], unreduced={"y"}>')
    t = sharding.TensorSharding.parse('<@m, [{}, {"x"}], unreduced={"y"}>')
    for backend in backends:
        x = dm.shard(np.arange(30.0).reshape(5, 6), s, backend=backend)
        y, plan = dm.reshard(x, t)
        assert (np.asarray(dm.unshard(y)) == np.arange(30.0).reshape(5, 6)).all()
    plan.traffic, plan.report()
    sharding.visualize(t, dm, (5, 6)).text()

if WARM:
    use()
done = threading.Event()
worker = threading.Thread(target=lambda: ([use(("numpy",)) for _ in range(REPEAT)], done.set()))
start = time.perf_counter()
worker.start()
children = []
while len(children) < FORKS:
    during = not done.is_set()  # the fork is asked for during the first use (it may wait for imports)
    pid = os.fork()
    if pid == 0:
        faulthandler.dump_traceback_later(TIMEOUT - 10)  # where a hung child waits
        signal.alarm(TIMEOUT)  # a hung child dies here (status: SIGALRM)
        try:
            import dask  # dask's thread pool does not survive a fork (its threads stay behind)
            with dask.config.set(scheduler="synchronous"):
                use()
        except BaseException:
            print("child failed: " + traceback.format_exc(), file=sys.stderr, flush=True)
            os._exit(3)
        os._exit(0)
    children.append((pid, time.perf_counter() - start, during))
    time.sleep(STEP)
worker.join()
hung = failed = 0
for pid, at, _ in children:
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        hung += 1
        print(f"child forked at {at:.3f} s: signal {os.WTERMSIG(status)}", flush=True)
    elif os.WEXITSTATUS(status):
        failed += 1
print(f"forks={len(children)} hung={hung} failed={failed} during_first_use={sum(c[2] for c in children)}")
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_children_forked_during_a_first_use_finish(warm):
    script = (_SCRIPT.replace("ROOT", repr(ROOT)).replace("WARM", str(warm)).replace("FORKS", "10" if warm else "8")
              .replace("TIMEOUT", "90").replace("STEP", "0.003" if warm else "0.02")
              .replace("REPEAT", "10" if warm else "1"))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=280)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = out.stdout.strip().splitlines()[-1]
    assert " hung=0 failed=0 " in summary, out.stdout + out.stderr[-3000:]
    assert int(summary.split("during_first_use=")[1]) >= 1, summary  # a fork landed during the use


RUNTIME = ["__init__", "_backends", "_checks", "_dask", "_imports", "_moves", "_numpy", "_partials", "_placement",
           "_ragged", "_runtime", "_traffic", "collectives", "cost", "reshard", "simulate", "visualization"]


def _imports(path: pathlib.Path):
    """`(module-level relative imports, nested import statements)` of a module."""
    tree = ast.parse(path.read_text())
    top = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            top.update([node.module] if node.module else [a.name for a in node.names])
    nested = [node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
              and node not in tree.body]
    return top, nested


def test_runtime_imports_at_module_level_without_circles():
    """The runtime's modules import at module level only (deferred imports go through
    `_imports.load`, which the at-fork handler covers), no library module imports the CLI, and
    the package's module-level imports have no circle."""
    package = pathlib.Path(ROOT) / "sharding"
    graph = {}
    for path in package.glob("*.py"):
        top, nested = _imports(path)
        graph[path.stem] = top
        if path.stem in RUNTIME:
            assert not nested, f"sharding/{path.name}: imports inside functions at lines {nested}"
        if path.stem != "__main__":
            assert "__main__" not in top, f"sharding/{path.name} imports the CLI"
    done: set = set()

    def visit(module, path):
        assert module not in path, "import circle: " + " -> ".join(path[path.index(module):] + [module])
        if module in done:
            return
        for dep in graph.get(module, ()):
            visit(dep, path + [module])
        done.add(module)

    for module in graph:
        visit(module, [])
