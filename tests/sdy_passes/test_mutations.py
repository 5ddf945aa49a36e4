"""Mutated real modules (JAX's lowered text, Shardy's lit cases) through the parser, the
verifier, `sdy-opt` and `sdy-run` (issue 37: hostile text). Each mutant is read or refused as
jaxlib reads or refuses it (its parser and verifier, in a child), an error is located (line:col,
the source line and a caret), and the CLIs print one `error:` line and no traceback.

`MUTATION_EXAMPLES` sets the number of mutants (default 120), `MUTATION_SEED` their seed.
"""

from __future__ import annotations

import os
import random
import re

import pytest

from sdy_passes import IRParseError, SdyError, parse_module, print_module
from sdy_passes.__main__ import main as sdy_opt
from sdy_passes._run_cli import main as sdy_run
from tests.conftest import SDY_CASES, needs_shared
from tests.mutation import SEED, mutants
from tests.sdy_passes.jax_corpus import lower_all
from tests.sdy_passes.pass_oracle import jaxlib_parse_kept

EXAMPLES = int(os.environ.get("MUTATION_EXAMPLES", "120"))


def _sources() -> list[str]:
    corpus = [v["pretty"] for v in lower_all().values() if isinstance(v, dict) and v.get("pretty")]
    lit = [p.read_text() for p in sorted(SDY_CASES.glob("*/*.in.generic.mlir"))[::7]]
    return corpus + lit


def _ours(text: str) -> str | None:
    """None when the text reads (and verifies); else the error as jaxlib writes it."""
    try:
        print_module(parse_module(text, allow_unregistered_dialect=False))
    except IRParseError as e:
        assert e.line > 0 and e.col > 0 and str(e).rstrip().endswith("^"), str(e)
        return f'loc("-":{e.line}:{e.col}): {e.message}'
    except SdyError as e:
        return str(e)
    return None


@pytest.mark.jaxlib
@needs_shared(SDY_CASES)
def test_mutated_modules_are_read_or_refused_as_jaxlib_does():
    texts = mutants(_sources(), EXAMPLES, SEED)
    bad = []
    for text, theirs in zip(texts, jaxlib_parse_kept(texts)):
        mine = _ours(text)
        if (mine is None) != (theirs.get("error") is None):
            bad.append(f"here: {mine}\njaxlib: {theirs.get('error')}\n{text[:400]!r}")
    assert not bad, f"MUTATION_SEED={SEED}: {len(bad)} of {len(texts)} differ from jaxlib:\n\n" + "\n\n".join(bad[:5])


@needs_shared(SDY_CASES)
@pytest.mark.parametrize("cli", ["sdy-opt", "sdy-run"])
def test_mutated_modules_give_one_error_line_on_the_clis(cli, tmp_path, capsys):
    texts = mutants(_sources() if cli == "sdy-opt" else [t for t in _sources() if "func.func" in t],
                    EXAMPLES // 4, SEED + 1)
    for i, text in enumerate(texts):
        path = tmp_path / f"m{i}.mlir"
        path.write_text(text, "utf-8", errors="surrogatepass")
        code = sdy_opt([str(path), "--sdy-import-pipeline"]) if cli == "sdy-opt" else sdy_run([str(path), "--dry"])
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err, f"MUTATION_SEED={SEED}: {cli} on {text[:300]!r}:\n{err}"
        assert code in (0, 1), (code, err)
        if code:
            assert len([line for line in err.splitlines() if ": error: " in line or line.startswith("error:")]) == 1, err


_F = 'func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {{\n  {}\n  return %a : tensor<2xf32>\n}}'
FOUND = [  # what the mutants found, each class once
    _F.format('%0 = stablehlo.abs %a {x = #foo.bar<"a">} : tensor<2xf32>'),
    _F.format("%0 = stablehlo.abs %a {x = #foo.bar} : tensor<2xf32>"),
    _F.format("%0 = stablehlo.abs %a {x = #foo<bar>} : tensor<2xf32>"),
    'func.func @f(%a: !foo.bar<1, "x">) {\n  return\n}', "func.func @f(%a: tensor<2x!foo.bar>) {\n  return\n}",
    'func.func @f() {\n  "foo.op"() {x = #foo.bar<"a">} : () -> ()\n  return\n}',
    "func.func @f() attributes {x = #foo.a, y = !foo.b} {\n  return\n}",
    _F.format("%0 = stablehlo.constant dense\x00<1.0> : tensor<2xf32>"),
    _F.format("%0 = stablehlo.constant dense // c\n<1.0> : tensor<2xf32>"),
    _F.format("%0 = stablehlo.abs %a : tensor<2xf32> loc (\"x\":1:2)"),
    _F.format('"stablehlo.abs"(%a) : (tensor<2xf32>) -> tensor<2xf32>'),
    "module attributes {mhlo.num_partitions = 1 : i32, num_replicas = 1 : i32} {\n}",
    "func.func @f(%a: tensor<2xf32> {foo = 1}) {\n  return\n}",
    'func.func @f() -> (tensor<2xf32> {jalt_info = "r"}) {\n  %0 = stablehlo.constant dense<1.0> : tensor<2xf32>\n'
    "  return %0 : tensor<2xf32>\n}",
    _F.format("%0 = sdy.data_flow_edge %a : tensor<2xf32>").replace("-> tensor<2xf32>", "-> tensor<3xf32>"),
    "func.func @f(%a: tensor<2xf32>) {\n  return %a : tensor<2xf32>\n}",
    # the most frequent parse errors whose words (or place) differed from jaxlib's, each once
    _F.format("%0 = stablehlo.abs %a : 7"), _F.format("%0 = stablehlo.abs %a :"),
    _F.format("%0 = stablehlo.abs %a :  // note\n\n  return"),
    _F.format("%0 = stablehlo.abs %a {x = 1 y = 2} : tensor<2xf32>"),
    "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> [\n  return %a : tensor<2xf32>\n}",
    _F.format("%0 = stablehlo.abs %zz : tensor<2xf32>"), _F.format("%0 = stablehlo.abs %) : tensor<2xf32>"),
    _F.format("%0 stablehlo.abs %a : tensor<2xf32>"), _F.format("%0 = stablehlo.abs %a : tensor<2xf32 %a"),
    _F.format("%0 = stablehlo.abs %a : tensor<2 f32>"), _F.format("%0 = stablehlo.abs %a : tensor<1.5xf32>"),
    _F.format('%0 = "stablehlo.abs"(%a %a) : (tensor<2xf32>) -> tensor<2xf32>'),
    _F.format("%0 = stablehlo.concatenate %a, %a, dix = 0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>"),
    "func.func f(%a: tensor<2xf32>) {\n  return\n}", _F.format("%0 = stablehlo.abs %a : tensor<2xf32> &"),
    "func.func @f() {\n", _F.format("%0 = 5"),
]


@pytest.mark.jaxlib
def test_the_classes_the_mutants_found_read_as_jaxlib_reads_them():
    for text, theirs in zip(FOUND, jaxlib_parse_kept(FOUND)):
        assert _ours(text) == theirs.get("error"), text


_GROUPS = re.compile(r"replica_groups = dense<([^>]*)> : tensor<(\d+)x(\d+)xi64>")


def _mutated_groups(n: int, seed: int) -> list[str]:
    """JAX's collectives with one replica-group table changed: an id replaced (a duplicate,
    a gap, -1), or the groups reshaped (same ids, other group size)."""
    rng = random.Random(seed)
    corpus = [v["pretty"] for v in lower_all().values() if isinstance(v, dict) and _GROUPS.search(v.get("pretty") or "")]
    out = []
    for _ in range(n):
        text = rng.choice(corpus)
        m = rng.choice(list(_GROUPS.finditer(text)))
        ids = [int(v) for v in re.findall(r"-?\d+", m.group(1))] or [0]
        rows, cols = int(m.group(2)), int(m.group(3))
        if len(ids) == 1:
            ids *= rows * cols
        if rng.random() < 0.7 or rows * cols < 2:
            ids[rng.randrange(len(ids))] = rng.choice([-1, 0, 1, len(ids), len(ids) + 3, rng.choice(ids)])
        else:
            rows, cols = cols, rows
        table = "[" + ", ".join("[" + ", ".join(map(str, ids[r * cols:(r + 1) * cols])) + "]" for r in range(rows)) + "]"
        out.append(text[:m.start()] + f"replica_groups = dense<{table}> : tensor<{rows}x{cols}xi64>" + text[m.end():])
    return out


def _assert_verdicts_are_jaxlibs(texts: list[str]) -> None:
    """Our verdict on each text (None or the located message) is jaxlib's."""
    bad = [f"here: {_ours(t)}\njaxlib: {r.get('error')}\n{t}" for t, r in zip(texts, jaxlib_parse_kept(texts))
           if _ours(t) != r.get("error")]
    assert not bad, f"MUTATION_SEED={SEED}: {len(bad)} of {len(texts)} differ:\n\n" + "\n\n".join(bad[:3])


@pytest.mark.jaxlib
def test_replica_groups_are_checked_as_jaxlib_checks_them():
    _assert_verdicts_are_jaxlibs(_mutated_groups(max(EXAMPLES // 4, 8), SEED))


_DOT_DIMS = re.compile(r"(batching_dims|contracting_dims) = \[([\d, ]*)\] x \[([\d, ]*)\]")


def _mutated_dots(n: int, seed: int) -> list[str]:
    """JAX's dot_generals with one dimension of their dimension numbers changed (another
    dimension, one out of range, one more or one less)."""
    rng = random.Random(seed)
    corpus = [v["pretty"] for v in lower_all().values() if isinstance(v, dict) and _DOT_DIMS.search(v.get("pretty") or "")]
    out = []
    for _ in range(n):
        text = rng.choice(corpus)
        m = rng.choice(list(_DOT_DIMS.finditer(text)))
        sides = [[int(v) for v in re.findall(r"\d+", m.group(k))] for k in (2, 3)]
        side = sides[rng.randrange(2)]
        kind = rng.randrange(3)
        if kind == 0 and side:
            side[rng.randrange(len(side))] = rng.randrange(5)
        elif kind == 1:
            side.append(rng.randrange(4))
        elif side:
            side.pop()
        new = f"{m.group(1)} = [{', '.join(map(str, sides[0]))}] x [{', '.join(map(str, sides[1]))}]"
        out.append(text[:m.start()] + new + text[m.end():])
    return out


@pytest.mark.jaxlib
def test_dot_dimension_numbers_are_checked_as_jaxlib_checks_them():
    _assert_verdicts_are_jaxlibs(_mutated_dots(max(EXAMPLES // 4, 8), SEED))


_ELEMENT = re.compile(r"(?<=[<x])([su]?i[0-9]+|b?f[0-9]+)(?=>)")


def _retyped(n: int, seed: int) -> list[str]:
    """JAX's programs with bitwise ops, shifts, popcnt with one element type replaced
    everywhere by another: ODS's operand constraints of each op family."""
    rng = random.Random(seed)
    corpus = [v["pretty"] for v in lower_all().values() if isinstance(v, dict) and v.get("pretty")
              and re.search(r"stablehlo\.(and|or|xor|not|shift_\w+|popcnt|count_leading_zeros) ", v["pretty"])
              and "stablehlo.compare" not in v["pretty"] and _ELEMENT.search(v["pretty"])]  # (compare's: not yet)
    out = []
    for _ in range(n):
        text = rng.choice(corpus)
        old = rng.choice(sorted(set(_ELEMENT.findall(text))))
        new = rng.choice(["f32", "i1", "i8", "ui16", "si32", "bf16", "i64"])
        out.append(_ELEMENT.sub(lambda m: new if m.group(0) == old else m.group(0), text))
    return out


@pytest.mark.jaxlib
def test_operand_types_are_checked_as_jaxlib_checks_them():
    _assert_verdicts_are_jaxlibs(_retyped(max(EXAMPLES // 4, 8), SEED))
