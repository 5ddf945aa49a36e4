"""`sdy-opt` / `python -m sdy_passes`: run Shardy passes on MLIR text, like `sdy_opt`.

usage: sdy-opt [options] [pass flags] [FILE]

positional arguments:
  FILE                  the MLIR module to read (UTF-8 text, pretty or generic form);
                        '-' or nothing reads stdin

pass flags (run in the order given):
  --PASS, -PASS         run a pass or pipeline, e.g. --sdy-import-pipeline
  --PASS='k=v k2=v2'    with options, e.g. --sdy-import-func-calls=add-data-flow-edges-on-named-computations=false
                        (func passes are nested in func.func(...) for you)
  --pass-pipeline=TEXT  an MLIR pipeline, e.g. 'builtin.module(symbol-dce,func.func(sdy-populate-op-sharding-rules))'
  --explain=VALUE       print why propagation gives VALUE (e.g. %3, %arg0, @main:%3) its
                        sharding instead of the module: the user sharding each axis started at
                        and the ops and factors it crossed (sdy_passes.explain). Runs the pass
                        flags given (they must include a propagate pass), else
                        sdy-propagation-pipeline (what JAX runs), up to its propagation step

options:
  --split-input-file    process each `// -----` chunk on its own; outputs joined by `// -----`
  --mlir-print-op-generic
                        print the generic form
  --mlir-print-debuginfo
                        print locations
  --report-cost         print, instead of the module, the communication of every reshard and
                        collective after the passes: steps, bytes per device and per mesh axis,
                        alpha-beta time, totals per func and per axis (sdy_passes.cost_report)
  --allow-unregistered-dialect
                        accept ops of dialects jaxlib does not register ("test.op"); without it
                        they are refused where the op is, as sdy-opt refuses them
  -o FILE               write the output to FILE (default: stdout)
  --list-passes         list the passes and pipelines
  --version             print the version
  -h, --help            print this help

Diagnostics go to stderr as `FILE:LINE:COL: error: message` (or `warning:`) with the source
line and a caret. Exit status: 0 on success, 1 when reading, a pass or writing fails, 2 for a
bad command line.
"""

from __future__ import annotations

import sys
import warnings
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version

from sdy_passes._cli import Failure, Usage, error, read, render, write
from sdy_passes.cost_report import cost_report
from sdy_passes.errors import SdyError, SdyWarning
from sdy_passes.parser import parse_module, split_input
from sdy_passes.pass_manager import PASSES, PIPELINES, build_pipeline, get_pass, run_passes
from sdy_passes.printer import print_module
from sdy_passes.explanation import PIPELINE, explain

PROG = "sdy-opt"


def version(prog: str) -> str:
    try:
        return f"{prog} (layout-toolkit {dist_version('layout-toolkit')})"
    except PackageNotFoundError:
        return f"{prog} (layout-toolkit, not installed)"


def _parse_args(argv: list[str]):
    opts = {"split": False, "generic": False, "locs": False, "output": None, "input": None,
            "pipeline": [], "help": False, "list": False, "version": False, "explain": None,
            "unregistered": False, "cost": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            if opts["input"] is not None:
                raise Usage(f"too many positional arguments: '{arg}' (one input file or '-')")
            opts["input"] = arg
            continue
        flag, eq, value = arg.lstrip("-").partition("=")
        if flag in ("h", "help"):
            opts["help"] = True
        elif flag == "version":
            opts["version"] = True
        elif flag == "list-passes":
            opts["list"] = True
        elif flag == "split-input-file":
            opts["split"] = True
        elif flag == "mlir-print-op-generic":
            opts["generic"] = True
        elif flag == "mlir-print-debuginfo":
            opts["locs"] = True
        elif flag == "allow-unregistered-dialect":
            opts["unregistered"] = True
        elif flag == "report-cost":
            opts["cost"] = True
        elif flag in ("o", "pass-pipeline", "explain"):
            if not eq:
                if i >= len(argv):
                    raise Usage(f"{arg} needs a value")
                value = argv[i]
                i += 1
            if flag == "o":
                opts["output"] = value
            elif flag == "explain":
                opts["explain"] = value
            else:
                opts["pipeline"].append(value)
        elif flag in PASSES or flag in PIPELINES:
            opts["pipeline"].append(f"{flag}{{{value}}}" if eq else flag)
        else:
            raise Usage(f"Unknown command line argument '{arg}'. Try: '{PROG} --help' "
                         f"or '{PROG} --list-passes'")
    return opts


def _help() -> str:
    lines = [__doc__.strip()]
    for title, names in (("Passes", PASSES), ("Pipelines", PIPELINES)):
        lines += ["", f"{title} (options with their defaults):"]
        for name in sorted(names):
            cls = get_pass(name)
            lines.append(f"  --{name:<40} {cls.summary}")
            for key, default in cls.options.items():
                value = (str(default).lower() if isinstance(default, bool)
                         else "{" + ",".join(default) + "}" if isinstance(default, tuple) else default)
                lines.append(f"      {key}={value}")
    return "\n".join(lines)


def _process(padded: str, filename: str, pipeline: list[str], opts) -> tuple[str | None, list[str]]:
    """(output or None, diagnostics) for one chunk."""
    diagnostics: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SdyWarning)
        try:
            module = parse_module(padded, filename=filename, allow_unregistered_dialect=opts["unregistered"])
            if opts["explain"] is not None:
                # the text, parsed, so that the explanation cites the file's lines
                out = str(explain(padded, opts["explain"], pipeline=pipeline or PIPELINE))
            else:
                run_passes(module, pipeline)
                out = (str(cost_report(module)) + "\n" if opts["cost"] else
                       print_module(module, generic=opts["generic"], print_locations=opts["locs"],
                                    mlir_names=True))
        except SdyError as e:
            out = None
            diagnostics.append(render("error", e, filename, padded))
        except Exception as e:  # a bug, not bad input: say so rather than print a traceback
            out = None
            diagnostics.append(f"{filename}: error: internal error ({type(e).__name__}: {e}); "
                               "please report it")
    warned = [render("warning", w.message, filename, padded)
              for w in caught if isinstance(w.message, SdyWarning)]
    return out, warned + diagnostics


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse_args(argv)
        if opts["help"] or opts["version"] or opts["list"]:
            text = (_help() if opts["help"] else version(PROG) if opts["version"]
                    else "\n".join(sorted([*PASSES, *PIPELINES])))
            write(text + "\n", None)
            return 0
        pipeline = opts["pipeline"]
        build_pipeline(pipeline)  # unknown names and options fail before reading any input
    except (Usage, SdyError) as e:
        error(PROG, str(e))
        return 2
    except Failure as e:
        error(PROG, str(e))
        return 1
    path = opts["input"] or "-"
    try:
        text = read(path)
    except Failure as e:
        error(PROG, str(e))
        return 1
    filename = "<stdin>" if path == "-" else path
    chunks = split_input(text) if opts["split"] else [text]
    outputs, failed, line = [], False, 0
    for chunk in chunks:
        # Pad with newlines so diagnostics give line numbers in the whole file, like mlir-opt.
        padded = "\n" * line + chunk
        line += chunk.count("\n")  # the chunk keeps the newline that ended the separator line
        out, diagnostics = _process(padded, filename, pipeline, opts)
        for d in diagnostics:
            if sys.stderr is not None:
                print(d, file=sys.stderr)
        if out is None:
            failed = True
        else:
            outputs.append(out.rstrip("\n"))
    result = "\n// -----\n".join(outputs) + "\n" if outputs else ""
    try:
        write(result, opts["output"])
    except Failure as e:
        error(PROG, str(e))
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
