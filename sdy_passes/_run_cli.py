"""`sdy-run`: run a StableHLO module (what `jax.jit(f).lower(...).as_text()` writes) with numpy,
as every device of its mesh runs it (spec execute.md §1.4), or globally.

usage: sdy-run FILE [--arg X.npy ...] [--random SEED] [--mesh MESH] [--dry] [--dask] [--checksum]
               [--emit-local] [--json] [--links LINKS] [--algorithm ALG] [--device PROFILE]
               [--numerics fast|reference] [--func NAME] [--out DIR] [--interpret]

  FILE                 the MLIR module (pretty or generic text); '-' reads stdin
  --arg X.npy          an argument of the function, in order (repeat once per argument)
  --random SEED        draw every argument instead: floats standard normal, signed ints in
                       [-20, 20], unsigned in [0, 40] (uint32/uint64 over 32 bits), bools fair,
                       4-bit ints over their range, complex normal; written as in_<i>.npy
  --mesh MESH          the device mesh, e.g. '<["x"=64, "y"=64]>' (it must be the module's;
                       default: the module's sdy.mesh)
  --dry                no data: print the report (memory, bytes per collective and mesh axis,
                       time) from the shapes alone; no arguments needed
  --dask               keep every device's value lazy (dask), one chunk per distinct shard
  --checksum           print each device's CRC-32 of every output buffer instead of writing
                       the global outputs (bounded memory with --dask)
  --emit-local         print the partitioned module every device runs, and stop
  --json               print the report (and the outputs or checksums) as one JSON object
  --links LINKS        alpha-beta links per mesh axis: 'x=2.7e-6,19.3e9;y=0.6e-6,87.7e9'
                       (seconds, bytes per second; default: DTensor's)
  --algorithm ALG      ring (default) or bidirectional_ring
  --device PROFILE     a compute profile for the roofline time: 'flops=9.9e14,hbm=3.35e12'
                       (flops per second, HBM bytes per second)
  --numerics MODE      fast (default: BLAS, pairwise sums) or reference (bit-identical to the
                       StableHLO reference interpreter)
  --func NAME          the function to run (default: main)
  --out DIR            where out_<i>.npy (and in_<i>.npy) go (default: the current folder)
  --interpret          global interpretation on one device (the default for a module without
                       an sdy.mesh when no mesh flag is given)
  -h, --help           print this help

A module with a mesh runs partitioned: the global outputs are written as out_<i>.npy and
described (file, dtype, shape, CRC-32 of the bytes), then the report is printed. bf16/f8/int4
arrays are saved as raw bytes of their width (numpy has no such dtypes); --arg files of that
width are read back the same way. Errors: one `sdy-run: error: ...` line, or
`FILE:LINE:COL: error: ...` with the source line and a caret; exit status 1 (2 for a bad
command line).
"""

from __future__ import annotations

import json
import os
import re
import sys
import zlib

import ml_dtypes
import numpy as np

from sharding import DeviceMesh, Mesh, ShardingError
from sharding.__main__ import parse_links

from sdy_passes._cli import Failure, Usage, error, read, render, write
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import SdyError
from sdy_passes.execution import execute
from sdy_passes.execution_report import ALGORITHMS
from sdy_passes.interpreter import NUMERICS, interpret
from sdy_passes.parser import parse_module
from sdy_passes.printer import print_module

PROG = "sdy-run"
_VALUED = ("--arg", "--random", "--numerics", "--func", "--out", "--mesh", "--links", "--algorithm", "--device")
_SWITCHES = ("--interpret", "--dry", "--dask", "--checksum", "--emit-local", "--json")
_PARTITIONED = ("mesh", "dry", "dask", "checksum", "emit-local", "json", "links", "algorithm", "device")
"""Options that ask for the partitioned run (refused with --interpret)."""
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def _parse_args(argv):
    opts = {"file": None, "args": [], "random": None, "numerics": "fast", "func": "main", "out": ".",
            "help": False, "mesh": None, "links": None, "algorithm": None, "device": None,
            **{flag[2:]: False for flag in _SWITCHES}}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            if opts["file"] is not None:
                raise Usage(f"too many positional arguments: '{arg}' (one module file)")
            opts["file"] = arg
            continue
        flag, eq, value = arg.partition("=")
        if flag in ("-h", "--help"):
            opts["help"] = True
        elif flag in _SWITCHES:
            if eq:
                raise Usage(f"{flag} takes no value, found '{arg}'")
            opts[flag[2:]] = True
        elif flag in _VALUED:
            if not eq:
                if i >= len(argv):
                    raise Usage(f"{flag} needs a value")
                value = argv[i]
                i += 1
            _option(opts, flag, value)
        else:
            raise Usage(f"unknown option '{arg}'. Try: '{PROG} --help'")
    if opts["help"]:
        return opts
    if opts["file"] is None:
        raise Usage("no module file given (FILE, or '-' for stdin)")
    if opts["args"] and opts["random"] is not None:
        raise Usage("give either --arg files or --random SEED, not both")
    asked = [f"--{k}" for k in _PARTITIONED if opts[k] not in (None, False)]
    if opts["interpret"] and asked:
        raise Usage(f"--interpret runs the global program on one device; {asked[0]} needs the partitioned run")
    if opts["dry"] and (opts["dask"] or opts["checksum"]):
        raise Usage(f"--dry computes no values; {'--dask' if opts['dask'] else '--checksum'} needs them")
    return opts


def _option(opts, flag: str, value: str) -> None:
    if flag == "--arg":
        opts["args"].append(value)
    elif flag == "--random":
        try:
            opts["random"] = int(value)
        except ValueError:
            raise Usage(f"--random needs an integer seed, found '{value}'") from None
    elif flag == "--numerics":
        if value not in NUMERICS:
            raise Usage(f"--numerics must be one of {', '.join(NUMERICS)}, found '{value}'")
        opts["numerics"] = value
    elif flag == "--algorithm":
        if value not in ALGORITHMS:
            raise Usage(f"--algorithm must be one of {', '.join(ALGORITHMS)}, found '{value}'")
        opts["algorithm"] = value
    elif flag == "--mesh":
        try:
            opts["mesh"] = DeviceMesh(Mesh.parse(value))
        except ShardingError as e:
            raise Usage(f"--mesh: {e}") from None
    elif flag == "--links":
        try:
            opts["links"] = parse_links(value)
        except ShardingError as e:
            raise Usage(str(e)) from None
    elif flag == "--device":
        opts["device"] = _device(value)
    else:
        opts[flag[2:]] = value


def _device(text: str) -> dict:
    """`--device flops=9.9e14,hbm=3.35e12` as `execute`'s `device` profile."""
    found = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        m = re.fullmatch(rf"(flops|hbm)\s*=\s*({_NUMBER})", item)
        if not m or m[1] in found:
            raise Usage(f"expected --device as flops=F,hbm=B (per second), found '{text}'")
        found[m[1]] = float(m[2])
    if set(found) != {"flops", "hbm"} or not all(0 < v < float("inf") for v in found.values()):
        raise Usage(f"expected --device as flops=F,hbm=B (positive, per second), found '{text}'")
    return {"flops": found["flops"], "hbm_bytes": found["hbm"]}


def draw(rng, shape, dtype: np.dtype) -> np.ndarray:
    """Inputs as `../shared/oracle/jax_execute.py` draws them."""
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.name in ("int4", "uint4", "int2", "uint2"):
        info = ml_dtypes.iinfo(dtype)
        return rng.integers(info.min, info.max + 1, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind == "i":
        return rng.integers(-20, 21, shape).astype(dtype)
    if dtype.kind == "u":
        if dtype.itemsize >= 4:
            return rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(dtype)
        return rng.integers(0, 41, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def _signature(module, func: str):
    f = module.lookup_symbol(func)
    if f is None or f.name != "func.func":
        raise Failure(f"no function @{func} in the module")
    return f.properties["function_type"].type.inputs


class _Shape:
    """An argument of a dry run: its shape and dtype only."""

    def __init__(self, t):
        self.shape, self.dtype = tuple(t.shape), numpy_dtype(t.element_type)


def _load(path: str, t) -> np.ndarray:
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise Failure(f"cannot read '{path}' as a .npy array: {e}") from None
    want = numpy_dtype(getattr(t, "element_type", t))
    if want is not None and a.dtype.kind == "V" and a.dtype.itemsize == want.itemsize:
        a = a.view(want)  # bf16/f8/int4 saved as raw bytes
    return a


def _save(path: str, a: np.ndarray) -> None:
    a = np.asarray(a)
    raw = a.view(f"V{a.dtype.itemsize}") if a.dtype.kind == "V" else a
    try:
        np.save(path, raw, allow_pickle=False)
    except OSError as e:
        raise Failure(f"cannot write '{path}': {e.strerror or e}") from None


def _crc(a: np.ndarray) -> int:
    a = np.asarray(a)
    return zlib.crc32(np.ascontiguousarray(a).tobytes()) if a.size else 0


def _describe(name: str, a: np.ndarray) -> str:
    a = np.asarray(a)
    return f"{name}  {a.dtype.name}[{','.join(map(str, a.shape))}]  crc32 {_crc(a):08x}"


def _arguments(opts, types) -> list:
    if opts["dry"] or opts["emit-local"]:
        return [_Shape(t) for t in types]
    if opts["random"] is not None:
        rng = np.random.default_rng(opts["random"])
        return [draw(rng, tuple(t.shape), numpy_dtype(t.element_type)) for t in types]
    if len(opts["args"]) != len(types):
        raise Failure(f"@{opts['func']} takes {len(types)} arguments, {len(opts['args'])} --arg files given")
    return [_load(p, t) for p, t in zip(opts["args"], types)]


def _save_all(opts, names_values) -> list:
    """Writes `(name, array)` pairs under --out: `[(path, array)]`."""
    os.makedirs(opts["out"], exist_ok=True)
    out = []
    for name, a in names_values:
        p = os.path.join(opts["out"], name)
        _save(p, a)
        out.append((p, a))
    return out


def _run(opts, module, text: str, types) -> str:
    """The text to print for one run."""
    args = _arguments(opts, types)
    inputs = list(enumerate(args)) if opts["random"] is not None and not (opts["dry"] or opts["emit-local"]) else []
    partitioned = not opts["interpret"] and (
        any(op.name == "sdy.mesh" for op in module.ops) or any(opts[k] not in (None, False) for k in _PARTITIONED))
    if not partitioned:
        outs = interpret(module, *args, func=opts["func"], numerics=opts["numerics"])
        files = _save_all(opts, [(f"in_{i}.npy", a) for i, a in inputs] + [(f"out_{i}.npy", o) for i, o in enumerate(outs)])
        return "\n".join(_describe(p, a) for p, a in files)
    run = execute(module, *args, mesh=opts["mesh"], func=opts["func"], numerics=opts["numerics"],
                  dry=opts["dry"] or opts["emit-local"], links=opts["links"], algorithm=opts["algorithm"] or "ring",
                  device=opts["device"], **({"backend": "dask"} if opts["dask"] else {}))
    if opts["emit-local"]:
        return print_module(run.local).rstrip("\n")
    found = {"report": json.loads(run.report.to_json())}
    lines = []
    if not opts["dry"]:
        files = _save_all(opts, [(f"in_{i}.npy", a) for i, a in inputs])
        if opts["checksum"]:
            sums = [(i, [int(d) for d in c.device.values], [int(v) for v in c.values]) for i, c in enumerate(run.checksums())]
            found["checksums"] = [{"output": i, "devices": ds, "crc32": vs} for i, ds, vs in sums]
            lines += [f"out_{i}  device {d}  crc32 {v:08x}" for i, ds, vs in sums for d, v in zip(ds, vs)]
        else:
            files += _save_all(opts, [(f"out_{i}.npy", o) for i, o in enumerate(run.global_outputs())])
        found["files"] = [{"path": p, "dtype": np.asarray(a).dtype.name, "shape": list(np.shape(a)),
                           "crc32": _crc(a)} for p, a in files]
        lines = [_describe(p, a) for p, a in files] + lines
    if opts["json"]:
        return json.dumps(found)
    return "\n".join(lines + [str(run.report)])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse_args(argv)
    except Usage as e:
        error(PROG, str(e))
        return 2
    path = opts["file"]
    filename = "<stdin>" if path == "-" else path
    text = ""
    try:
        if opts["help"]:
            write(__doc__.strip() + "\n", None)
            return 0
        text = read(path)
        module = parse_module(text, filename=filename)
        result = _run(opts, module, text, _signature(module, opts["func"]))
        write(result + "\n", None)
    except Failure as e:
        error(PROG, str(e))
        return 1
    except SdyError as e:
        if sys.stderr is not None:
            print(render("error", e, filename, text), file=sys.stderr)
        return 1
    except OSError as e:
        error(PROG, f"cannot write to '{opts['out']}': {e.strerror or e}")
        return 1
    except Exception as e:  # a bug, not bad input: say so rather than print a traceback
        error(PROG, f"internal error ({type(e).__name__}: {e}); please report it")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
