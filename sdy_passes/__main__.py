"""`sdy-opt` / `python -m sdy_passes`: run Shardy import passes on MLIR text, like `sdy_opt`.

    sdy-opt [options] [pass flags] [FILE | -]

Pass flags run in the order given: `-sdy-lift-inlined-meshes` or `--sdy-lift-inlined-meshes`
(options as `--sdy-x=key=value`), `--pass-pipeline='builtin.module(a,b)'`. Other options:
`--split-input-file` (process each `// -----` chunk on its own; outputs joined by `// -----`),
`--mlir-print-op-generic`, `--mlir-print-debuginfo` (print locations), `-o FILE`,
`--list-passes`, `-h/--help`. The input defaults to stdin. Diagnostics go to stderr as
`FILE:LINE:COL: error: message` with the source line and a caret; the exit status is 1 when
any chunk fails.
"""

from __future__ import annotations

import sys

from sdy_passes.attributes import FileLineColLoc
from sdy_passes.errors import IRParseError, SdyError
from sdy_passes.parser import parse_module, split_input
from sdy_passes.pass_manager import PASSES, PIPELINES, get_pass, parse_pipeline, run_passes
from sdy_passes.printer import print_module

PROG = "sdy-opt"


class _Usage(Exception):
    pass


def _parse_args(argv: list[str]):
    opts = {"split": False, "generic": False, "locs": False, "output": None, "input": None,
            "pipeline": [], "help": False, "list": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "-" or not arg.startswith("-"):
            if opts["input"] is not None:
                raise _Usage(f"too many positional arguments: '{arg}' (one input file or '-')")
            opts["input"] = arg
            continue
        flag, eq, value = arg.lstrip("-").partition("=")
        if flag in ("h", "help"):
            opts["help"] = True
        elif flag == "list-passes":
            opts["list"] = True
        elif flag == "split-input-file":
            opts["split"] = True
        elif flag == "mlir-print-op-generic":
            opts["generic"] = True
        elif flag == "mlir-print-debuginfo":
            opts["locs"] = True
        elif flag == "o":
            if not eq:
                if i >= len(argv):
                    raise _Usage("-o needs a file name")
                value = argv[i]
                i += 1
            opts["output"] = value
        elif flag == "pass-pipeline":
            if not eq:
                if i >= len(argv):
                    raise _Usage("--pass-pipeline needs a value, e.g. 'builtin.module(sdy-lift-inlined-meshes)'")
                value = argv[i]
                i += 1
            opts["pipeline"].append(value)
        elif flag in PASSES or flag in PIPELINES:
            opts["pipeline"].append(f"{flag}{{{value}}}" if eq and value else flag)
        else:
            known = ", ".join(sorted([*PASSES, *PIPELINES]))
            raise _Usage(f"Unknown command line argument '{arg}'. Passes and pipelines: {known}. "
                         f"Try: '{PROG} --help'")
    return opts


def _help() -> str:
    lines = [__doc__.strip(), "", "Passes:"]
    for name in sorted(PASSES):
        try:
            summary = get_pass(name).summary
        except (ImportError, AttributeError) as e:  # a pass module that fails to import
            summary = f"(unavailable: {e})"
        lines.append(f"  --{name:<36} {summary}")
    lines.append("Pipelines:")
    for name, items in sorted(PIPELINES.items()):
        lines.append(f"  --{name:<36} {', '.join(items)}")
    return "\n".join(lines)


def _render(err: SdyError, filename: str, text: str) -> str:
    """`file:line:col: error: message` plus the source line and a caret, like mlir-opt."""
    if isinstance(err, IRParseError):
        return str(err)
    loc = getattr(err, "location", None)
    message = getattr(err, "message", str(err))
    if isinstance(loc, FileLineColLoc) and loc.line >= 1:
        lines = text.splitlines()
        source = lines[loc.line - 1] if loc.line <= len(lines) else ""
        head = f"{filename}:{loc.line}:{loc.col}: error: {message}"
        return f"{head}\n{source}\n{' ' * (loc.col - 1)}^" if source else head
    return f"{filename}: error: {message}"


def _process(chunk: str, padded: str, filename: str, pipeline: list[str], opts) -> tuple[str | None, str | None]:
    try:
        module = parse_module(padded, filename=filename)
        run_passes(module, pipeline)
    except SdyError as e:
        return None, _render(e, filename, padded)
    except Exception as e:  # a bug, not bad input: say so rather than print a traceback
        return None, f"{filename}: error: internal error ({type(e).__name__}: {e}); please report it"
    return print_module(module, generic=opts["generic"], print_locations=opts["locs"],
                        mlir_names=True), None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse_args(argv)
        if opts["help"]:
            print(_help())
            return 0
        if opts["list"]:
            print("\n".join(sorted([*PASSES, *PIPELINES])))
            return 0
        pipeline = opts["pipeline"]
        for p in pipeline:
            parse_pipeline(p)  # unknown names fail before reading any input
    except (_Usage, SdyError) as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    path = opts["input"] or "-"
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    except OSError as e:
        print(f"{PROG}: cannot read '{path}': {e.strerror}", file=sys.stderr)
        return 1
    filename = "<stdin>" if path == "-" else path
    chunks = split_input(text) if opts["split"] else [text]
    outputs, failed, line = [], False, 0
    for chunk in chunks:
        # Pad with newlines so diagnostics give line numbers in the whole file, like mlir-opt.
        padded = "\n" * line + chunk
        line += chunk.count("\n")  # the chunk keeps the newline that ended the separator line
        out, err = _process(chunk, padded, filename, pipeline, opts)
        if err is not None:
            failed = True
            print(err, file=sys.stderr)
        else:
            outputs.append(out.rstrip("\n"))
    result = "\n// -----\n".join(outputs) + "\n" if outputs else ""
    if opts["output"]:
        with open(opts["output"], "w", encoding="utf-8") as f:
            f.write(result)
    else:
        sys.stdout.write(result)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
