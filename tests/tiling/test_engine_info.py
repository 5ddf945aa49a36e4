"""Issue 36 item 2: `tiling.precompile` readies a shape's kernels before its first call, and
`tiling.engine_info` names the engine serving a shape now and its kernel's state, never
claiming a kernel that is not loaded. In a child with the compile thread on and its own cache."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, sys, time
import numpy as np
import tiling
from tiling import _runtime

out = {}
perm = "f32[16,24]{0,1:T(2,2)}"     # the permutation kernels: quick to compile
other = "u16[16,24]{0,1:T(2,2)}"    # the same dispatchers, another argument type
out["before"] = tiling.engine_info(perm)
out["numba_before"] = "numba" in sys.modules
_runtime.load_kernels()
loaded = set(sys.modules)
tiling.precompile(perm)
out["first_compile_imports"] = sorted(m for m in set(sys.modules) - loaded
                                      if m.startswith(("numba.np", "numba.cpython", "scipy")))
out["after"] = [tiling.engine_info(perm), tiling.engine_info(perm, direction="decode")]
out["other"] = tiling.engine_info(other)
x = np.arange(16 * 24, dtype=np.float32).reshape(16, 24)
before = _runtime._reference_seconds
buf = tiling.encode(x, perm)
out["first_call_on_kernel"] = _runtime._reference_seconds == before
out["exact"] = bool(np.array_equal(tiling.decode(buf, perm), x))
tiling.precompile([other], wait=False)
states = [tiling.engine_info(other)["state"]]
start = time.monotonic()
while tiling.engine_info(other)["state"] != "ready" and time.monotonic() - start < 300:
    time.sleep(0.05)
states.append(tiling.engine_info(other)["state"])
out["queued"] = states
out["copy"] = tiling.engine_info("f32[8,128]{1,0:T(8,128)}")
out["layout"] = tiling.engine_info("{0,1:T(2,2)}", dtype=np.float32)
print("@@" + json.dumps(out))
"""


def test_precompile_and_engine_info(tmp_path):
    child = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, capture_output=True,
                           text=True, timeout=600,
                           env=dict(os.environ, PYTHONPATH=str(ROOT),
                                    TILING_NUMBA_CACHE_DIR=str(tmp_path),
                                    TILING_NUMBA_CACHE="1", TILING_BACKGROUND_COMPILE="1"))
    assert child.returncode == 0 and "@@" in child.stdout, child.stderr[-3000:]
    r = json.loads(child.stdout.split("@@")[1])
    # nothing loaded yet: the numpy engine, no kernel claimed, and asking loads nothing
    assert r["before"] == {"engine": "numpy", "kernel": None, "state": "absent"}, r
    assert not r["numba_before"]
    # numba's implementations were installed when the kernels loaded (on the thread that loads
    # numba), not in the first kernel's compile or cache load
    assert r["first_compile_imports"] == [], r
    for info, name in zip(r["after"], ("scatter", "gather")):
        assert info == {"engine": "serial", "kernel": name, "state": "ready"}, r
    # the same dispatcher compiled (and on disk) for f32 only: u16 is neither claimed ready
    # nor cached, as the disk holds no code for its argument types
    assert r["other"] == {"engine": "numpy", "kernel": "scatter", "state": "absent"}, r
    assert r["first_call_on_kernel"] and r["exact"], r
    assert r["queued"][0] in ("compiling", "ready") and r["queued"][-1] == "ready", r
    assert r["copy"] == {"engine": "numpy", "kernel": "copy", "state": "ready"}, r
    assert r["layout"]["kernel"] in ("move", "scatter"), r
