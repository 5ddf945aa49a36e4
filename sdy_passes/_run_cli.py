"""`sdy-run`: run a StableHLO module (what `jax.jit(f).lower(...).as_text()` writes) with numpy.

usage: sdy-run FILE [--arg X.npy ...] [--random SEED] [--numerics fast|reference] [--func NAME]
               [--out DIR] [--interpret]

  FILE                 the MLIR module (pretty or generic text); '-' reads stdin
  --arg X.npy          an argument of the function, in order (repeat once per argument)
  --random SEED        draw every argument instead: floats standard normal, signed ints in
                       [-20, 20], unsigned in [0, 40] (uint32/uint64 over 32 bits), bools fair,
                       4-bit ints over their range, complex normal; written as in_<i>.npy
  --numerics MODE      fast (default: BLAS, pairwise sums) or reference (bit-identical to the
                       StableHLO reference interpreter)
  --func NAME          the function to run (default: main)
  --out DIR            where out_<i>.npy go (default: the current folder)
  --interpret          global interpretation (the only mode so far; partitioned execution on a
                       mesh, --mesh/--dry/--dask/--emit-local, is not built yet)
  -h, --help           print this help

Prints each output's file, dtype, shape and CRC-32 checksum of its bytes. bf16/f8/int4 arrays
are saved as raw bytes of their width (numpy has no such dtypes); --arg files of that width are
read back the same way. Errors: one `sdy-run: error: ...` line, or `FILE:LINE:COL: error: ...`
with the source line and a caret; exit status 1 (2 for a bad command line).
"""

from __future__ import annotations

import os
import sys
import zlib

import ml_dtypes
import numpy as np

from sdy_passes.__main__ import _Failure, _read, _render
from sdy_passes.element_types import numpy_dtype
from sdy_passes.errors import SdyError
from sdy_passes.interpreter import NUMERICS, interpret
from sdy_passes.parser import parse_module

PROG = "sdy-run"
_NOT_YET = ("--mesh", "--dry", "--dask", "--checksum", "--emit-local", "--links", "--algorithm",
            "--device", "--json")


class _Usage(Exception):
    pass


def _parse_args(argv):
    opts = {"file": None, "args": [], "random": None, "numerics": "fast", "func": "main", "out": ".",
            "help": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            if opts["file"] is not None:
                raise _Usage(f"too many positional arguments: '{arg}' (one module file)")
            opts["file"] = arg
            continue
        flag, eq, value = arg.partition("=")
        if flag in ("-h", "--help"):
            opts["help"] = True
        elif flag == "--interpret":
            pass
        elif flag in ("--arg", "--random", "--numerics", "--func", "--out"):
            if not eq:
                if i >= len(argv):
                    raise _Usage(f"{flag} needs a value")
                value = argv[i]
                i += 1
            if flag == "--arg":
                opts["args"].append(value)
            elif flag == "--random":
                try:
                    opts["random"] = int(value)
                except ValueError:
                    raise _Usage(f"--random needs an integer seed, found '{value}'") from None
            elif flag == "--numerics":
                if value not in NUMERICS:
                    raise _Usage(f"--numerics must be one of {', '.join(NUMERICS)}, found '{value}'")
                opts["numerics"] = value
            else:
                opts[flag[2:]] = value
        elif flag in _NOT_YET:
            raise _Usage(f"{flag}: partitioned execution on a mesh is not built yet; "
                         "sdy-run interprets the global program (--interpret)")
        else:
            raise _Usage(f"unknown option '{arg}'. Try: '{PROG} --help'")
    if opts["help"]:
        return opts
    if opts["file"] is None:
        raise _Usage("no module file given (FILE, or '-' for stdin)")
    if opts["args"] and opts["random"] is not None:
        raise _Usage("give either --arg files or --random SEED, not both")
    return opts


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
        raise _Failure(f"no function @{func} in the module")
    return f.properties["function_type"].type.inputs


def _load(path: str, t) -> np.ndarray:
    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise _Failure(f"cannot read '{path}' as a .npy array: {e}") from None
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
        raise _Failure(f"cannot write '{path}': {e.strerror or e}") from None


def _describe(name: str, a: np.ndarray) -> str:
    a = np.asarray(a)
    crc = zlib.crc32(np.ascontiguousarray(a).tobytes()) if a.size else 0
    return f"{name}  {a.dtype.name}[{','.join(map(str, a.shape))}]  crc32 {crc:08x}"


def _error(message: str) -> None:
    if sys.stderr is not None:
        try:
            print(f"{PROG}: error: {message}", file=sys.stderr)
        except (OSError, ValueError):
            pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse_args(argv)
    except _Usage as e:
        _error(str(e))
        return 2
    if opts["help"]:
        print(__doc__.strip())
        return 0
    path = opts["file"]
    filename = "<stdin>" if path == "-" else path
    text = ""
    try:
        text = _read(path)
        module = parse_module(text, filename=filename)
        types = _signature(module, opts["func"])
        if opts["random"] is not None:
            rng = np.random.default_rng(opts["random"])
            args = [draw(rng, tuple(t.shape), numpy_dtype(t.element_type)) for t in types]
        else:
            if len(opts["args"]) != len(types):
                raise _Failure(f"@{opts['func']} takes {len(types)} arguments, "
                               f"{len(opts['args'])} --arg files given")
            args = [_load(p, t) for p, t in zip(opts["args"], types)]
        outs = interpret(module, *args, func=opts["func"], numerics=opts["numerics"])
        os.makedirs(opts["out"], exist_ok=True)
        lines = []
        if opts["random"] is not None:
            for i, a in enumerate(args):
                p = os.path.join(opts["out"], f"in_{i}.npy")
                _save(p, a)
                lines.append(_describe(p, a))
        for i, o in enumerate(outs):
            p = os.path.join(opts["out"], f"out_{i}.npy")
            _save(p, o)
            lines.append(_describe(p, o))
    except _Failure as e:
        _error(str(e))
        return 1
    except SdyError as e:
        if sys.stderr is not None:
            print(_render("error", e, filename, text), file=sys.stderr)
        return 1
    except OSError as e:
        _error(f"cannot write to '{opts['out']}': {e.strerror or e}")
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
