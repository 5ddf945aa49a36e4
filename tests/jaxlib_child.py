"""Run oracle code with jaxlib in a child process.

jaxlib can abort or hang on some inputs (spec/sdy_passes.md §11, tiled_layout.md §10), so the
test process never imports it. `run_child(code, payload)` runs `code` in a fresh interpreter; the
code reads `payload` (JSON) from the variable `PAYLOAD` and must assign a JSON-able `RESULT`.
Batch many inputs per call: starting jax costs about a second.
Import it as `from tests.jaxlib_child import run_child` (tests/ is a package).
"""

import json
import os
import subprocess
import sys
import textwrap

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


def run_child(code, payload, *, timeout=300, env=None):
    full_env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER.format(code=textwrap.dedent(code))],
        input=json.dumps(payload), capture_output=True, text=True, timeout=timeout, env=full_env,
    )
    if proc.returncode != 0 or "@@RESULT@@" not in proc.stdout:
        raise ChildFailed(proc.returncode, proc.stderr)
    return json.loads(proc.stdout.rsplit("@@RESULT@@", 1)[1])


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
