"""Shardy's own dialect tests (`shardy/dialect/sdy/ir/test/*.mlir`), chunk by chunk, with
jaxlib 0.10.2's verdict on each and the project's.

The source is a Shardy checkout or a bare git mirror of openxla/shardy (then the files are
read at `REVISION`, the Shardy that jaxlib 0.10.2 matches closely): `SHARDY_SRC` if set, else the
first of `DEFAULT_SOURCES` that has the files (a checkout beside the project, `../shardy`, as
`git clone https://github.com/openxla/shardy` there makes it, or this machine's mirror). Nothing
is copied into the project. A verdict is `("ok", pretty, generic)` or `("error", "LINE:COL: message")` (the
first error); `compare()` gives the chunks on which the two disagree.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

REVISION = "d62c224b402167e169a9c98135e677a5741d6fc9"
TEST_DIR = "shardy/dialect/sdy/ir/test"
SKIPPED_PREFIX = "collective_"
"""The sdy collectives are the collectives work's (their own files)."""


_ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_SOURCES = (_ROOT.parent / "shardy", pathlib.Path("/work/.mirror/openxla+shardy/repo"))
"""Where a Shardy checkout or mirror is looked for when `SHARDY_SRC` is not set."""


def _has_tests(src: pathlib.Path) -> bool:
    if (src / TEST_DIR).is_dir():
        return True
    return src.is_dir() and subprocess.run(["git", "-C", str(src), "cat-file", "-e", f"{REVISION}:{TEST_DIR}"],
                                           capture_output=True).returncode == 0


def shardy_source() -> str | None:
    """`SHARDY_SRC`, else the first of `DEFAULT_SOURCES` holding the dialect tests, else None."""
    if os.environ.get("SHARDY_SRC"):
        return os.environ["SHARDY_SRC"]
    return next((str(src) for src in DEFAULT_SOURCES if _has_tests(src)), None)


MISSING = (f"no Shardy source: set SHARDY_SRC, or put a checkout of openxla/shardy (or a git mirror "
           f"with commit {REVISION[:12]}) at one of {', '.join(map(str, DEFAULT_SOURCES))}")
"""The skip message when `shardy_source()` finds nothing."""


def test_files(src: str, test_dir: str = TEST_DIR) -> dict[str, str]:
    """File name -> text of every `.mlir` file in `test_dir` (the dialect tests by default,
    without the collectives')."""
    root = pathlib.Path(src)
    checkout = root / test_dir
    if checkout.is_dir():
        files = {p.name: p.read_text() for p in sorted(checkout.glob("*.mlir"))}
    else:
        names = subprocess.run(["git", "-C", src, "ls-tree", "--name-only", f"{REVISION}:{test_dir}"],
                               capture_output=True, text=True, check=True).stdout.split()
        files = {n: subprocess.run(["git", "-C", src, "show", f"{REVISION}:{test_dir}/{n}"],
                                   capture_output=True, text=True, check=True).stdout
                 for n in names if n.endswith(".mlir")}
    return {n: t for n, t in files.items() if test_dir != TEST_DIR or not n.startswith(SKIPPED_PREFIX)}


def chunks(files: dict[str, str]) -> list[tuple[str, str]]:
    """(`file#index`, chunk text) for every `// -----` chunk of files run with
    `-split-input-file`, the whole file otherwise."""
    from sdy_passes import split_input
    out = []
    for name, text in files.items():
        parts = split_input(text) if "-split-input-file" in text.splitlines()[0] else [text]
        out.extend((f"{name}#{i}", part) for i, part in enumerate(parts))
    return out


_CHILD = """
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
RESULT = []
for text in PAYLOAD:
    with mlir.make_ir_context() as ctx:
        ctx.enable_multithreading(False)
        ctx.allow_unregistered_dialects = True
        try:
            m = ir.Module.parse(text)
            RESULT.append(["ok", m.operation.get_asm(), m.operation.get_asm(print_generic_op_form=True)])
        except ir.MLIRError as e:
            d = e.error_diagnostics[0]
            loc = str(d.location)  # loc("-":LINE:COL)
            RESULT.append(["error", loc[len('loc("-":'):-1] + ": " + d.message])
"""


def jaxlib_verdicts(texts: list[str]) -> list[tuple]:
    from tests.jaxlib_child import run_child
    return [tuple(v) for v in run_child(_CHILD, texts, timeout=600)]


def project_verdict(text: str) -> tuple:
    from sdy_passes import IRParseError, VerificationError, parse_module, print_module
    from sdy_passes.attributes import FileLineColLoc
    try:
        module = parse_module(text)
    except IRParseError as e:
        return ("error", f"{e.line}:{e.col}: {e.message}")
    except VerificationError as e:
        loc = e.location
        where = f"{loc.line}:{loc.col}" if isinstance(loc, FileLineColLoc) else str(loc)
        return ("error", f"{where}: {e.message}")
    return ("ok", print_module(module), print_module(module, generic=True))


def compare(src: str) -> tuple[int, dict[str, tuple[tuple, tuple]]]:
    """(number of chunks, {chunk: (jaxlib's verdict, the project's)} where they differ)."""
    items = chunks(test_files(src))
    theirs = jaxlib_verdicts([t for _, t in items])
    differ = {}
    for (name, text), verdict in zip(items, theirs):
        ours = project_verdict(text)
        if ours != verdict:
            differ[name] = (verdict, ours)
    return len(items), differ
