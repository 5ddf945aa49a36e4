"""Run oracle code with jaxlib in a child process.

jaxlib can abort or hang on some inputs (spec/sdy_passes.md §11, tiled_layout.md §10), so the
test process never imports it. `run_child(code, payload)` runs `code` in a fresh interpreter; the
code reads `payload` (JSON) from the variable `PAYLOAD` and must assign a JSON-able `RESULT`.
Batch many inputs per call: starting jax costs about a second.
Import it as `from tests.jaxlib_child import run_child` (tests/ is a package).
"""

import fcntl
import hashlib
import json
import os
import select
import subprocess
import sys
import tempfile
import textwrap
import time
from importlib.metadata import version
from pathlib import Path

_WRAPPER = """
import json, sys
PAYLOAD = json.loads(sys.stdin.read())
{code}
sys.stdout.write("\\n@@RESULT@@" + json.dumps(RESULT))
"""


class ChildFailed(RuntimeError):
    """The child died (abort, crash) or timed out; `returncode`/`stderr` say how."""

    def __init__(self, returncode, stderr):
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"oracle child exited with {returncode}: {stderr[-2000:]}")


def run_child(code, payload, *, timeout=300, env=None, crash_retries=0):
    """`code`'s RESULT for `payload` in a fresh child. `crash_retries`: new children after a
    crash (a signal), for jaxlib code that crashes now and then on the same input (the reference
    interpreter's `run_parallel` threads)."""
    full_env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
    for _ in range(crash_retries + 1):
        proc = subprocess.run(
            [sys.executable, "-c", _WRAPPER.format(code=textwrap.dedent(code))],
            input=json.dumps(payload), capture_output=True, text=True, timeout=timeout, env=full_env,
        )
        if proc.returncode >= 0:
            break
    if proc.returncode != 0 or "@@RESULT@@" not in proc.stdout:
        raise ChildFailed(proc.returncode, proc.stderr)
    return json.loads(proc.stdout.rsplit("@@RESULT@@", 1)[1])


# What a child's answer depends on besides its code and payload (which a key holds; a child that
# imports this project's modules puts their sources' hash in its key: tests/sharding/_device_oracle.py).
ORACLE_VERSIONS = [version("jax"), version("jaxlib"), version("numpy"), version("ml_dtypes"),
                   sys.version]


def cached(key, compute, keep=lambda result: True):
    """`compute()` (JSON-able jaxlib results) once per `key` (JSON-able: the child's code and
    payload) for every test process: kept in the temp folder under a hash of `key` and what else
    decides the answer (`ORACLE_VERSIONS`), if `keep(result)` (not a crash that may not recur);
    a lock makes other xdist workers wait for the first. Keyed so, not by the interpreter's path,
    a fresh venv of the same versions (CI's fresh clone) reuses the answers."""
    digest = hashlib.sha256(json.dumps([ORACLE_VERSIONS, key]).encode()).hexdigest()[:20]
    path = Path(tempfile.gettempdir()) / f"layout-toolkit-jaxlib-{digest}.json"
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            return json.loads(path.read_text())
        result = compute()
        if not keep(result):
            return result
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(result))
        os.replace(tmp, path)
        return result


_ITEMS_WRAPPER = """
import json, sys
PAYLOAD = json.loads(sys.stdin.read())
{code}
for _item in PAYLOAD:
    sys.stdout.write("\\n@@ITEM@@" + json.dumps(run_item(_item)) + "\\n")
    sys.stdout.flush()
"""


def run_child_items(code, items, *, timeout=600, env=None):
    """`run_item(item)` (defined by `code`) on each item in one child, resumed past crashes.

    For inputs on which jaxlib segfaults: results stream back one line per item, so when the
    child dies the items done are kept, the item it died on gets None, and a new child takes the
    rest (one child per crash, not one per item).
    """
    full_env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
    script = _ITEMS_WRAPPER.format(code=textwrap.dedent(code))
    results, items = [], list(items)
    while len(results) < len(items):
        rest = items[len(results):]
        proc = subprocess.run([sys.executable, "-c", script], input=json.dumps(rest),
                              capture_output=True, text=True, timeout=timeout, env=full_env)
        done = [json.loads(line[len("@@ITEM@@"):]) for line in proc.stdout.splitlines()
                if line.startswith("@@ITEM@@")]
        results.extend(done)
        if len(results) < len(items):
            if proc.returncode >= 0:  # a Python error, not a crash (a signal)
                raise ChildFailed(proc.returncode, proc.stderr)
            results.append(None)
    return results


class JaxlibServer:
    """One long-lived child that runs `run_item(item)` (defined by `code`) per request, so a
    Hypothesis test (and its shrinking) pays jax's start-up once. `run(item)` returns the result,
    or None when the child died on it or took longer than `timeout` seconds (jaxlib can hang);
    the next request starts a new child. `close()` ends it.
    """

    def __init__(self, code, *, timeout=60, env=None):
        self._script = _ITEMS_WRAPPER.format(code=textwrap.dedent(code)).replace(
            "PAYLOAD = json.loads(sys.stdin.read())", "PAYLOAD = (json.loads(line) for line in sys.stdin)")
        self._env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
        self._timeout = timeout
        self._proc = None

    def run(self, item):
        if self._proc is None or self._proc.poll() is not None:
            self._stderr = tempfile.TemporaryFile("w+")
            self._proc = subprocess.Popen([sys.executable, "-c", self._script], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._stderr, bufsize=0,
                                          env=self._env)
            self._out = b""
        proc = self._proc
        try:
            proc.stdin.write(json.dumps(item).encode() + b"\n")
            proc.stdin.flush()
            deadline = time.monotonic() + self._timeout
            while True:
                for line in self._out.split(b"\n")[:-1]:
                    if line.startswith(b"@@ITEM@@"):
                        self._out = self._out[self._out.index(line) + len(line) + 1:]
                        return json.loads(line[len(b"@@ITEM@@"):])
                if not select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
                    break  # timed out
                chunk = os.read(proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    break  # the child died
                self._out += chunk
        except BrokenPipeError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # a hang
            proc.kill()
            proc.wait()
            return None
        if proc.returncode >= 0:  # a Python error, not a crash (a signal)
            self._stderr.seek(0)
            raise ChildFailed(proc.returncode, self._stderr.read())
        return None

    def close(self):
        if self._proc is not None and self._proc.poll() is None:
            self._proc.stdin.close()
            self._proc.wait()
