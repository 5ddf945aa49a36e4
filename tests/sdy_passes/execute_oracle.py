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


_W = "lax.with_sharding_constraint"
UNEVEN_PROGRAMS = [
    # spec execute.md §10 item 3: one op each on a dim sharded unevenly (JAX takes only even
    # arguments: a slice makes the uneven value, a sharding constraint shards it)
    ("uneven_reduce", f"f = lambda a: jnp.sum({_W}(a[:, :6], NS(mesh, P(None, 'y'))), axis=1)\n"
                      "args = (S((4, 8), jnp.float32),)\nspecs = (P(None, 'y'),)"),
    ("uneven_dot", f"f = lambda a, b: {_W}(a[:, :6], NS(mesh, P(None, 'y'))) @ {_W}(b[:6], NS(mesh, P('y', None)))\n"
                   "args = (S((4, 8), jnp.float32), S((8, 8), jnp.float32))\nspecs = (P(None, 'y'), P('y', None))"),
    ("uneven_conv", f"f = lambda x, w: lax.conv_general_dilated({_W}(x[:3], NS(mesh, P('y'))), w, (1, 1), 'SAME')\n"
                    "args = (S((4, 2, 6, 6), jnp.float32), S((4, 2, 3, 3), jnp.float32))\n"
                    "specs = (P('y', None, None, None), P())"),
    ("uneven_conv_features",
     f"f = lambda x, w: lax.conv_general_dilated({_W}(x[:, :6], NS(mesh, P(None, 'y'))), "
     f"{_W}(w[:, :6], NS(mesh, P(None, 'y'))), (1, 1), 'VALID')\n"
     "args = (S((2, 8, 5, 5), jnp.float32), S((4, 8, 3, 3), jnp.float32))\n"
     "specs = (P(None, 'y', None, None), P(None, 'y', None, None))"),
    ("uneven_gather", f"f = lambda a, i: jnp.take({_W}(a[:6], NS(mesh, P('y'))), i, axis=0, mode='clip')\n"
                      "args = (S((8, 4), jnp.float32), S((5,), jnp.int32))\nspecs = (P('y', None), P())"),
    ("uneven_scatter", f"f = lambda a, i, u: {_W}(a[:6], NS(mesh, P('y'))).at[i].add(u, mode='drop')\n"
                       "args = (S((8,), jnp.int32), S((3,), jnp.int32), S((3,), jnp.int32))\nspecs = (P('y'), P(), P())"),
    ("uneven_cumsum", f"f = lambda a: jnp.cumsum({_W}(a[:, :6], NS(mesh, P(None, 'y'))), axis=1)\n"
                      "args = (S((4, 8), jnp.int32),)\nspecs = (P(None, 'y'),)"),
    ("uneven_pad", f"f = lambda a: {_W}(jnp.pad({_W}(a[:6], NS(mesh, P('y'))), ((1, 2), (0, 0))), NS(mesh, P('y')))\n"
                   "args = (S((8, 4), jnp.float32),)\nspecs = (P('y', None),)"),
    ("uneven_slice", f"f = lambda a: {_W}({_W}(a[:6] * 2.0, NS(mesh, P('y')))[1:6], NS(mesh, P('y')))\n"
                     "args = (S((8, 4), jnp.float32),)\nspecs = (P('y', None),)"),
    ("uneven_sort", f"f = lambda a: jnp.sort({_W}(a[:6], NS(mesh, P('y'))), axis=1)\n"
                    "args = (S((8, 5), jnp.float32),)\nspecs = (P('y', None),)"),
]

STACKED_PROGRAMS = [
    # ops the corpus never runs on several distinct shards (each runs once over them stacked; a
    # strided slice stays a slice, a unit-stride one becomes a pad)
    ("sharded_sort", "f = lambda a: jnp.sort(a, axis=1)\nargs = (S((8, 5), jnp.float32),)\nspecs = (P('y', None),)"),
    ("sharded_dynamic_update_slice",
     "f = lambda a, u, i: lax.dynamic_update_slice(a, u, (0, i))[:, 1::2]\n"
     "args = (S((8, 6), jnp.float32), S((8, 2), jnp.float32), S((), jnp.int32))\n"
     "specs = (P('y', None), P('y', None), P())"),
]

HALO_PROGRAMS = [
    # pads and stride-1 slices whose operand and result are sharded alike: each device's output
    # tile needs rows its neighbours hold (the halo exchange of sdy-resolve-permutation-factors)
    ("halo_slice", f"f = lambda a: {_W}(a[2:10] * 2.0, NS(mesh, P('y')))\n"
                   "args = (S((16, 4), jnp.float32),)\nspecs = (P('y', None),)"),
    ("halo_pad", f"f = lambda a: {_W}(jnp.pad(a, ((2, 6), (0, 0)), constant_values=5), NS(mesh, P('y')))\n"
                 "args = (S((8, 4), jnp.int32),)\nspecs = (P('y', None),)"),
    ("halo_slice_2d", f"f = lambda a: {_W}(a[1:5, 4:12] + 1.0, NS(mesh, P('x', 'y')))\n"
                      "args = (S((8, 16), jnp.float32),)\nspecs = (P('x', 'y'),)"),
    # the last device's window reads past the operand: edge padding there, never a neighbour's zeros
    ("halo_pad_edges", f"f = lambda a: {_W}(jnp.pad(a, ((1, 3), (0, 0)), constant_values=5), NS(mesh, P('y')))\n"
                       "args = (S((8, 4), jnp.int32),)\nspecs = (P('y', None),)"),
    # padded (uneven) tiles on both sides: a neighbour's padding is never read as data
    ("halo_uneven_pad", f"f = lambda a: {_W}(jnp.pad({_W}(a[:6] * 3.0, NS(mesh, P('y'))), ((2, 1), (0, 0)), "
                        "constant_values=-1.5), NS(mesh, P('y')))\n"
                        "args = (S((8, 4), jnp.float32),)\nspecs = (P('y', None),)"),
    ("halo_interior_pad", f"f = lambda a: {_W}(lax.pad(a, 7, ((1, -1, 1), (0, 0, 0))), NS(mesh, P('y')))\n"
                          "args = (S((8, 4), jnp.int32),)\nspecs = (P('y', None),)"),
    ("halo_strided_slice", f"f = lambda a: {_W}(a[1:15:2] - 1.0, NS(mesh, P('y')))\n"
                           "args = (S((16, 4), jnp.float32),)\nspecs = (P('y', None),)"),
    ("halo_strided_slice_2d", f"f = lambda a: {_W}({_W}(a[:7, :10] * 2, NS(mesh, P('x', 'y')))[2:7:2, 1:9:3], "
                              "NS(mesh, P('x', 'y')))\n"
                              "args = (S((8, 16), jnp.int32),)\nspecs = (P('x', 'y'),)"),
    # a reverse of a sharded dim: each device takes the mirrored tile (padded: two tiles' rows)
    ("halo_reverse", f"f = lambda a: {_W}(jnp.flip(a, 0) * 2, NS(mesh, P('y')))\n"
                     "args = (S((8, 4), jnp.int32),)\nspecs = (P('y', None),)"),
    ("halo_reverse_uneven", f"f = lambda a: {_W}(lax.rev({_W}(a[:7, 1:], NS(mesh, P('y', 'x'))), (0, 1)) + 1.0, "
                            "NS(mesh, P('y', 'x')))\n"
                            "args = (S((8, 6), jnp.float32),)\nspecs = (P('y', 'x'),)"),
    # windows that cross tiles: XLA's halo exchange (edge rows from the neighbours, the init
    # value past the operand and in padded tiles)
    ("halo_reduce_window", f"f = lambda a: {_W}(lax.reduce_window(a, 0.0, lax.add, (3, 1), (1, 1), 'SAME'), "
                           "NS(mesh, P('y')))\n"
                           "args = (S((16, 4), jnp.float32),)\nspecs = (P('y', None),)"),
    ("halo_max_pool_uneven", f"f = lambda a: {_W}(lax.reduce_window({_W}(a[:7] - 4, NS(mesh, P('y'))), -jnp.inf, "
                             "lax.max, (3, 2), (2, 1), ((1, 1), (0, 1))), NS(mesh, P('y')))\n"
                             "args = (S((8, 4), jnp.float32),)\nspecs = (P('y', None),)"),
]


def variant_cases() -> Path:
    """The recorded cases of `UNEVEN_PROGRAMS`, `HALO_PROGRAMS` and `STACKED_PROGRAMS` (the
    oracle's `--file`), kept like `sharded_cases`."""
    programs = json.dumps(UNEVEN_PROGRAMS + HALO_PROGRAMS + STACKED_PROGRAMS)
    key = hashlib.sha256(ORACLE.read_bytes() + programs.encode() + json.dumps(
        [version("jax"), version("jaxlib"), sys.executable]).encode()).hexdigest()[:20]
    out = Path(tempfile.gettempdir()) / f"layout-toolkit-execute-uneven-{key}"
    with open(out.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = out / "done"
        if not done.exists():
            out.mkdir(parents=True, exist_ok=True)
            source = out / "programs.py"
            source.write_text(f"PROGRAMS = {programs}\n")
            subprocess.run([sys.executable, str(ORACLE), str(out), "--file", str(source)],
                           check=False, capture_output=True, timeout=1800)
            done.write_text("")
    return out


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
