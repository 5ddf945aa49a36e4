"""JAX's per-device results for the sharded corpus programs (spec execute.md §7.4): the shared
oracle `../shared/oracle/jax_execute.py --corpus ROOT --sharded`, run once in a child process and
kept in the temp folder under a hash of the oracle, the corpus and this interpreter (a lock makes
other test processes wait for the first)."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import subprocess
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ORACLE = ROOT.parent / "shared" / "oracle" / "jax_execute.py"
CORPUS = Path(__file__).with_name("jax_corpus.py")


def oracle_module():
    """The shared oracle script as a module (its `load`, `compare`, `SHARDED_SPECS`), or None."""
    if not ORACLE.exists():
        return None
    spec = importlib.util.spec_from_file_location("jax_execute_oracle", ORACLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def sharded_cases(builtin: bool = False) -> Path:
    """The folder holding one recorded case per sharded program (`NAME/meta.json`, ...): the
    corpus programs of the oracle's `SHARDED_SPECS`, or (`builtin`) the oracle's own programs
    (`uneven_slice_sum`, ...)."""
    key = hashlib.sha256(ORACLE.read_bytes() + CORPUS.read_bytes() + json.dumps(
        [version("jax"), version("jaxlib"), sys.executable, builtin]).encode()).hexdigest()[:20]
    out = Path(tempfile.gettempdir()) / f"layout-toolkit-execute-{key}"
    args = [] if builtin else ["--corpus", str(ROOT), "--sharded"]
    with open(out.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = out / "done"
        if not done.exists():
            subprocess.run([sys.executable, str(ORACLE), str(out), *args],
                           check=False, capture_output=True, timeout=1800)
            done.write_text("")
    return out
