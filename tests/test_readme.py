"""README.md runs as written (issue 36, item 6): every Python block and every shell command,
in a scratch directory, with the checkout on PYTHONPATH and `python` / `sdy-opt` on PATH as a
venv would put them. Commands that install into or run from `.venv/` are the exception (the
test runs in the test environment instead). A Python line `expr  # value...` must evaluate to
what its comment shows (its `repr` or `str` starts the comment), and a shell block followed by
a plain or `text` block must print exactly that block. Every environment variable the tests
read is in the README's table."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def blocks() -> list[tuple[str, str, str | None, int]]:
    """`(language, code, expected output, line)` of every `python` and `sh` block, in order; the
    expected output of a `sh` block is the plain or `text` block right after it; `line` is the
    README line of the opening fence."""
    found = [(m.group(1), m.group(2), m.start(), m.end()) for m in BLOCK.finditer(README)]
    out = []
    for i, (lang, code, start, end) in enumerate(found):
        if lang not in ("python", "sh"):
            continue
        expected = None
        if lang == "sh" and i + 1 < len(found) and found[i + 1][0] in ("", "text") and found[i + 1][2] == end:
            expected = found[i + 1][1]
        out.append((lang, code, expected, README.count("\n", 0, start) + 1))
    return out


# Blocks share files through their names: the first block that names a file makes it (README's
# `model.mlir`, `block64.mlir`, ...), and a later block naming it runs after that one.
FILE_NAME = re.compile(r"[\w-]+\.(?:mlir|npy|bin|json|svg|png|txt)\b")


def dependencies(index: int, all_blocks) -> list[int]:
    """Indices of the earlier blocks that make the files block `index` names."""
    maker = {}
    for i, (_, code, _, _) in enumerate(all_blocks[:index]):
        for name in FILE_NAME.findall(code):
            maker.setdefault(name, i)
    return sorted({maker[name] for name in FILE_NAME.findall(all_blocks[index][1]) if name in maker})


# A child process runs one Python block statement by statement; a statement that is an
# expression with a value-looking comment (`# 262144`, `# '...'`, `# (4, 4): ...`) is checked.
_RUNNER = r'''
import ast, io, json, sys, tokenize
source = sys.stdin.read()
comments = {t.start[0]: t.string[1:].strip() for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type == tokenize.COMMENT}
lines = source.splitlines()
namespace = {"__name__": "__main__"}
mismatches = []
for node in ast.parse(source).body:
    code = compile(ast.Module([node], []), "<README>", "exec")
    comment = comments.get(node.end_lineno)
    if comment is None and node.end_lineno < len(lines) and lines[node.end_lineno].lstrip().startswith("#"):
        comment = comments.get(node.end_lineno + 1)  # a comment continued on the next line
    checked = (isinstance(node, ast.Expr) and comment
               and (comment[0] in "'\"0123456789([{#<-" or comment.split()[0] in ("True", "False", "None")))
    if not checked:
        exec(code, namespace)
        continue
    value = eval(compile(ast.Expression(node.value), "<README>", "eval"), namespace)
    if not (comment.startswith(repr(value)) or comment.startswith(str(value))):
        mismatches.append([ast.get_source_segment(source, node), comment, repr(value)])
print(json.dumps(mismatches))
'''


def _runnable(code: str) -> str | None:
    """The block without its `.venv/` lines (installing into a venv); None if nothing else runs."""
    kept = [line for line in code.splitlines() if ".venv/" not in line]
    if not [line for line in kept if line.strip() and not line.startswith("cd ")]:
        return None
    return "\n".join(kept) + "\n"


BLOCKS = blocks()
RUNNABLE = [i for i, (lang, code, _, _) in enumerate(BLOCKS) if lang == "python" or _runnable(code)]


@pytest.fixture(scope="session")
def readme_runs(tmp_path_factory):
    """Runs README blocks, each in its own directory holding the files of the blocks it depends
    on, with `python` and every `[project.scripts]` entry point on PATH as the README's venv has
    them; a block another one depends on runs once per worker (`run(i)` returns its directory)."""
    where = tmp_path_factory.mktemp("readme")
    bin_dir = where / "bin"
    bin_dir.mkdir()
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    runs = {"python": ""}
    for name, target in scripts.items():
        module, func = target.split(":")
        runs[name] = f" -c 'import sys; from {module} import {func}; sys.argv[0] = \"{name}\"; sys.exit({func}())'"
    for name, run in runs.items():
        (bin_dir / name).write_text(f'#!/bin/sh\nexec "{sys.executable}"{run} "$@"\n')
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(ROOT),
               COLUMNS="100", MPLBACKEND="Agg")
    done: dict[int, pathlib.Path] = {}

    def run(index: int) -> pathlib.Path:
        if index in done:
            return done[index]
        lang, code, expected, line = BLOCKS[index]
        cwd = tmp_path_factory.mktemp(f"block{index}")  # (numbered: a failed block runs again)
        for dep in dependencies(index, BLOCKS):
            shutil.copytree(run(dep), cwd, dirs_exist_ok=True)
        if lang == "python":
            proc = subprocess.run([sys.executable, "-c", _RUNNER], input=code, capture_output=True, text=True,
                                  cwd=cwd, env=env, timeout=600)
            assert proc.returncode == 0, f"README line {line}:\n{code}\n{proc.stderr}"
            assert json.loads(proc.stdout.splitlines()[-1]) == [], f"README line {line}:\n{code}"
        else:
            script = _runnable(code)
            proc = subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, cwd=cwd,
                                  env=env, timeout=600)
            assert proc.returncode == 0, f"README line {line}:\n{script}\n{proc.stderr}"
            if expected is not None:
                got = [line.rstrip() for line in proc.stdout.splitlines()]
                assert got == [line.rstrip() for line in expected.splitlines()], f"README line {line}:\n{script}"
        done[index] = cwd
        return cwd

    return run


@pytest.mark.parametrize("index", RUNNABLE, ids=[f"line{BLOCKS[i][3]}-{BLOCKS[i][0]}" for i in RUNNABLE])
def test_block_runs_as_written(index, readme_runs):
    # One test per block, so that workers share them; the blocks it depends on run first.
    readme_runs(index)


def test_blocks_and_their_dependencies_are_found():
    assert len(RUNNABLE) >= 12
    makes_model = next(i for i, b in enumerate(BLOCKS) if "cat > model.mlir" in b[1])
    uses_model = [i for i, b in enumerate(BLOCKS) if "model.mlir" in b[1] and i != makes_model]
    assert uses_model and all(dependencies(i, BLOCKS) == [makes_model] for i in uses_model), uses_model
    assert dependencies(makes_model, BLOCKS) == []
    assert dependencies(1, [("sh", "echo hi > a.txt\n", None, 1), ("sh", "cat a.txt b.npy\n", None, 3)]) == [0]


def test_comments_are_checked():
    # The runner catches a comment that does not match the value.
    proc = subprocess.run([sys.executable, "-c", _RUNNER], input="1 + 1  # 3\nx = 2  # 5\n'a'  # 'a', a string\n",
                          capture_output=True, text=True, timeout=60)
    assert json.loads(proc.stdout) == [["1 + 1", "3", "2"]]


ENV_READ = re.compile(r'os\.environ(?:\.get\(|\[)"([A-Z][A-Z0-9_]+)"(?!\]\s*=[^=])|"([A-Z][A-Z0-9_]+)" (?:not )?in os\.environ')


def environment_read(folder: pathlib.Path) -> set[str]:
    """The environment variables the Python files under `folder` read."""
    return {m.group(1) or m.group(2) for path in folder.rglob("*.py") for m in ENV_READ.finditer(path.read_text())}


def environment_tables() -> set[str]:
    """The variables the README's tables name (rows that start with a quoted upper-case name)."""
    return {name for row in re.findall(r"^\| (`[A-Z].*?) \|", README, re.M)
            for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row)}


def test_every_environment_variable_the_tests_read_is_in_the_table():
    read, table = environment_read(ROOT / "tests"), environment_tables()
    assert {"RESHARD_FUZZ", "SHARDING_HLO_EXAMPLES", "SDY_FUZZ_EXAMPLES"} <= read
    assert read - {"PYTHONPATH"} <= table, sorted(read - table)


def test_functions_that_take_a_sharding_or_a_mesh_take_its_text():
    # README: "Functions that take a sharding or a mesh also take its text."
    import numpy as np

    import sharding

    assert "Functions that take a sharding or a mesh also take its text." in README
    mesh_text, s_text = '<["x"=2, "y"=4]>', '#sdy.sharding<@mesh, [{"x"}, {"y"}]>'
    mesh, s = sharding.Mesh.parse(mesh_text), sharding.TensorSharding.parse(s_text)
    dm = sharding.DeviceMesh(mesh_text)
    calls = {
        "verify": lambda m, t: sharding.verify(t, mesh=m, shape=(8, 8)),
        "verify_mesh": lambda m, t: sharding.verify_mesh(m),
        "local_shape": lambda m, t: s.local_shape((8, 8), m),
        "num_shards_per_dim": lambda m, t: s.num_shards_per_dim(m),
        "to_hlo_sharding": lambda m, t: sharding.to_hlo_sharding(t, m),
        "visualize": lambda m, t: sharding.visualize(t, m, (8, 8)).text(),
        "reshard_plan": lambda m, t: sharding.reshard_plan(t, t, m, (8, 8)).steps,
        "index_map": lambda m, t: dm.index_map(t, (8, 8)),
        "shard": lambda m, t: dm.unshard(dm.shard(np.arange(64.0).reshape(8, 8), t)).tolist(),
    }
    for name, call in calls.items():
        assert call(mesh_text, s_text) == call(mesh, s), name
    with pytest.raises(sharding.ShardingError, match="expected a Mesh, a MeshTable or mesh text, got: int"):
        sharding.verify(s, mesh=3, shape=(8, 8))
    with pytest.raises(sharding.ShardingParseError):
        sharding.verify("#sdy.sharding<@mesh, [{", mesh=mesh)


def test_the_progress_bar_only_on_a_terminal(tmp_path, monkeypatch):
    # `python -m tiling encode` of a large input: a bar on a terminal, none in a log or a pipe.
    import argparse
    import io

    from tiling import __main__ as cli

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    big = cli._PROGRESS_THRESHOLD
    for stderr, progress, shown in ((Terminal(), None, True), (io.StringIO(), None, False),
                                    (io.StringIO(), True, True), (Terminal(), False, False)):
        monkeypatch.setattr(sys, "stderr", stderr)
        assert cli._show_progress(argparse.Namespace(progress=progress), big) is shown
        assert cli._show_progress(argparse.Namespace(progress=None), big - 1) is False
