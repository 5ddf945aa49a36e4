"""Runs a script in a fresh interpreter, as the tiling tests' children (forks, exits, cold
caches, bounds-checked kernels) need: this checkout on the path, its own session, killed whole
on timeout."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_python(script, *args, timeout=300, **env):
    """Runs `python -c script args...` and returns (exit status or "timeout", stdout, stderr)."""
    child = subprocess.Popen([sys.executable, "-c", script, *args], cwd=ROOT,
                             env=dict(os.environ, PYTHONPATH=str(ROOT), **env), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, 9)
        out, err = child.communicate()
        return "timeout", out, err
    return child.returncode, out, err
