"""jaxlib 0.10.2's `sdy-propagation-pipeline`, stage by stage.

* `pipeline_stages()`: real inputs (the 83 `sdy-propagation-pipeline` cases of
  `shared/sdy_cases_propagation` when present, and `CALL_PROGRAMS`, JAX programs with calls,
  lowered by jaxlib) run through jaxlib in one child: first every pass up to and including
  `sdy-user-priority-propagate`, then each later pass alone (the call-graph export passes and
  those of `sdy-export-pipeline`; `sdy-save-module` has no flag and does nothing here), the
  generic text printed after each. `jaxlib_tail()` names the call-graph passes before the export
  pipeline, as jaxlib prints them; `assert_pass_matches_stages(flag)` runs one later pass here
  on the text before it and wants jaxlib's text after it, byte for byte (MLIR's SSA names).
* `call_graph_modules()`, `check_random_pipeline(texts)`: random modules with calls through the
  pipeline in both modes, here and in jaxlib (its explicit pass list).
* `lit_verdicts()`: Shardy's lit tests of these passes (`transforms/export/test/*.mlir` at the
  revision jaxlib matches, from `SHARDY_SRC` or a default place, as the dialect tests), each
  chunk canonicalised and run by jaxlib;
  `assert_lit_file_matches(name)` compares one file's chunks.
"""

from __future__ import annotations

import functools
import warnings

import hypothesis.strategies as st
import pytest

from tests.conftest import SHARED
from tests.jaxlib_child import ChildFailed, cached, run_child
from tests.sdy_passes import shardy_dialect_tests
from tests.sdy_passes.pass_oracle import _MATRIX_CODE, pipeline_text
from tests.sdy_passes.propagation_modules import MESHES, _sharding, ttype

CASES_DIR = SHARED / "sdy_cases_propagation"
CASE_FOLDERS = {False: "sdy-propagation-pipeline", True: "sdy-propagation-pipeline.dedup-functions-fully=true"}
FLAGS = {False: "sdy-propagation-pipeline", True: "sdy-propagation-pipeline{dedup-functions-fully=true}"}
FIRST_EXPORT_PASS = "func.func(sdy-constant-or-scalar-merger)"
"""Where jaxlib's `sdy-export-pipeline` starts."""

CALL_PROGRAMS = [
    ("calls_sharded_arg", "g = jax.jit(lambda x: jnp.sin(x) * 2)\nf = jax.jit(lambda x: g(x) + g(x + 1), in_shardings=NS(mesh, P('x', 'y')))\nargs = (S((8, 8), jnp.float32),)"),
    ("calls_constraint_inside", "g = jax.jit(lambda x: lax.with_sharding_constraint(x * 2, NS(mesh, P('y', None))))\nf = lambda x, y: g(x) @ g(y)\nargs = (S((8, 8), jnp.float32), S((8, 8), jnp.float32))"),
    ("calls_different_shardings", "g = jax.jit(lambda x: jnp.exp(x) + 1)\nf = jax.jit(lambda a, b: g(a) + g(b).T, in_shardings=(NS(mesh, P('x', None)), NS(mesh, P(None, 'y'))))\nargs = (S((8, 8), jnp.float32), S((8, 8), jnp.float32))"),
    ("calls_nested", "h = jax.jit(lambda x: x * x)\ng = jax.jit(lambda x: (h(x) + 1, h(x - 1)))\nf = jax.jit(lambda x: sum(g(x)) + g(x)[0], in_shardings=NS(mesh, P('x')))\nargs = (S((8, 4), jnp.float32),)"),
    ("calls_out_sharding", "g = jax.jit(lambda x: x @ x.T, out_shardings=NS(mesh, P('x', 'y')))\nf = lambda x: g(x) + g(2 * x)\nargs = (S((8, 8), jnp.float32),)"),
    ("calls_shard_map", "g = jax.jit(shard_map(lambda x: lax.psum(x, 'y'), mesh=mesh, in_specs=P('x', 'y'), out_specs=P('x')))\nf = jax.jit(lambda x: g(x) + g(x * 2), in_shardings=NS(mesh, P('x', 'y')))\nargs = (S((8, 8), jnp.float32),)"),
    ("calls_remat", "f = jax.jit(jax.grad(lambda x: jax.checkpoint(lambda y: jnp.sin(y) @ y)(x).sum()), in_shardings=NS(mesh, P('x', None)))\nargs = (S((8, 8), jnp.float32),)"),
    ("calls_scan", "g = jax.jit(lambda c, x: (c + x, c * x))\nf = jax.jit(lambda xs: lax.scan(g, jnp.zeros(4), xs), in_shardings=NS(mesh, P(None, 'x')))\nargs = (S((3, 4), jnp.float32),)"),
]
"""JAX programs whose lowering has `func.call`s: sharded arguments, constraints, out-shardings
and shard_maps inside callees, nested and repeated calls."""

_STAGES = """
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir, passmanager

def split(pipeline):
    inner, out, depth, cur = pipeline[pipeline.index("(") + 1:-1], [], 0, ""
    for ch in inner:
        depth += ch in "({"
        depth -= ch in ")}"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]

with jax_mlir.make_ir_context():
    STEPS = [split(str(passmanager.PassManager.parse(p))) for p in (
        "builtin.module(sdy-propagation-pipeline)",
        "builtin.module(sdy-propagation-pipeline{dedup-functions-fully=true})")]
RESULT = {"steps": STEPS, "runs": []}
for text, dedup in PAYLOAD:
    steps = [s for s in STEPS[dedup] if s != "sdy-save-module"]
    split_at = next(i for i, s in enumerate(steps) if s.startswith("sdy-user-priority-propagate")) + 1
    ctx = jax_mlir.make_ir_context()
    ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        stages = [["", module.operation.get_asm(print_generic_op_form=True)]]
        for step in [",".join(steps[:split_at])] + steps[split_at:]:
            passmanager.PassManager.parse("builtin.module(" + step + ")").run(module.operation)
            stages.append([step, module.operation.get_asm(print_generic_op_form=True)])
    RESULT["runs"].append(stages)
"""


def _run_stages(payload):
    code = _STAGES
    try:
        return run_child(code, payload, timeout=600)
    except ChildFailed:  # jaxlib's intermittent user-priority segfault: retry one input per child
        pass
    steps, runs = None, []
    for one in payload:
        try:
            result = run_child(code, [one], timeout=600)
            steps, runs = result["steps"], runs + result["runs"]
        except ChildFailed:
            runs.append(None)
    return {"steps": steps, "runs": runs}


@functools.lru_cache(maxsize=None)
def _lowered() -> tuple[tuple[str, str], ...]:
    from tests.sdy_passes.jax_corpus import lower_all
    lowered = lower_all(CALL_PROGRAMS)
    failed = {n: v["error"] for n, v in lowered.items() if "error" in v}
    assert not failed, f"JAX could not lower: {failed}"
    return tuple((name, lowered[name]["generic"]) for name, _ in CALL_PROGRAMS)


def inputs() -> list[tuple[str, str]]:
    """(name, text) of every real input: the shared cases when present, then the JAX programs."""
    out = []
    for folder in CASE_FOLDERS.values():
        out.extend((f"{folder}/{p.name}", p.read_text())
                   for p in sorted((CASES_DIR / folder).glob("*.in.generic.mlir")))
    return out + list(_lowered())


@functools.lru_cache(maxsize=None)
def pipeline_stages() -> tuple[dict, list]:
    """(`{"steps": jaxlib's printed pipelines}`, [(name, dedup, stages or None if jaxlib crashed)]).

    Each case runs in its own mode; each JAX program in both. `stages` is `[[step, text], ...]`:
    the canonical input (step ""), after the prefix through propagation, after each later pass."""
    items = []
    for name, text in inputs():
        modes = [name.startswith(CASE_FOLDERS[True])] if "/" in name else [False, True]
        items.extend((name, dedup, text) for dedup in modes)
    payload = [[text, dedup] for _, dedup, text in items]
    # six test modules read these stages: one child run for all test processes
    result = cached([_STAGES, payload], lambda: _run_stages(payload),
                    keep=lambda result: None not in result["runs"])
    return result, [(name, dedup, stages) for (name, dedup, _), stages in zip(items, result["runs"])]


def jaxlib_tail(dedup: bool) -> list[str]:
    """The passes jaxlib runs after propagation and before `sdy-export-pipeline`, as it prints them."""
    steps = pipeline_stages()[0]["steps"][dedup]
    start = next(i for i, s in enumerate(steps) if s.startswith("sdy-user-priority-propagate")) + 1
    return steps[start:steps.index(FIRST_EXPORT_PASS)]


def run_here(text: str, pipeline) -> str:
    """Our generic output with MLIR's SSA names, for a byte-for-byte comparison (warnings,
    which jaxlib emits once per process, aside)."""
    import sdy_passes
    module = sdy_passes.parse_module(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sdy_passes.run_passes(module, pipeline)
    return sdy_passes.print_module(module, generic=True, mlir_names=True)


def _first_difference(ours: str, theirs: str) -> str:
    a, b = ours.rstrip("\n").splitlines(), theirs.rstrip("\n").splitlines()
    return next((f"line {i + 1}:\n  ours:   {x}\n  jaxlib: {y}" for i, (x, y) in enumerate(zip(a, b))
                 if x != y), f"{len(a)} vs {len(b)} lines")


def same(ours: str, theirs: str) -> bool:
    return ours.rstrip("\n") == theirs.rstrip("\n")


def assert_pass_matches_stages(flag: str, *, min_changed: int) -> None:
    """Every stage jaxlib made with pass `flag` (its base name) is what the pass makes here from
    the stage before; at least `min_changed` of them differ from the stage before."""
    failures, compared, changed = [], 0, 0
    for name, dedup, stages in pipeline_stages()[1]:
        for (_, before), (step, after) in zip(stages or [], (stages or [])[1:]):
            if step.removeprefix("func.func(").partition("{")[0].rstrip(")") != flag:
                continue
            ours = run_here(before, [step])
            compared += 1
            changed += not same(before, after)
            if not same(ours, after):
                failures.append(f"{name} ({step}): {_first_difference(ours, after)}")
    assert not failures, f"{len(failures)} of {compared} differ; first: {failures[0]}"
    assert changed >= min_changed, f"only {changed} of {compared} stages changed by {flag}"


# -- Shardy's lit tests of the passes ----------------------------------------------------------

EXPORT_TEST_DIR = "shardy/dialect/sdy/transforms/export/test"
LIT_FILES = {
    "export_named_computations.mlir": ["sdy-export-named-computations"],
    "propagate_to_func_results.mlir": ["sdy-propagate-to-func-results"],
    "unflatten_call_graph.mlir": ["sdy-unflatten-call-graph"],
    "unflatten_call_graph_dedup_functions_fully_true.mlir":
        ["sdy-unflatten-call-graph{dedup-functions-fully=true}"],
    "insert_func_call_reshards.mlir": ["sdy-insert-func-call-reshards"],
    "sink_func_data_flow_edges.mlir": ["func.func(sdy-sink-func-data-flow-edges)"],
}
"""Each lit file of these passes and the passes its RUN line runs."""
UNREADABLE = {"propagate_to_func_results.mlir#7":
              "an unregistered op (`test.terminator`, -allow-unregistered-dialect)"}
"""Chunks jaxlib's parser refuses as the tests read them."""


def shardy_src() -> str:
    """The Shardy source the dialect tests use (`SHARDY_SRC` or a default place), or a skip."""
    src = shardy_dialect_tests.shardy_source()
    if src is None:
        pytest.skip(shardy_dialect_tests.MISSING)
    return src


@functools.lru_cache(maxsize=None)
def lit_verdicts(src: str) -> dict[str, tuple[str, str, list]]:
    """`file#chunk` -> (passes, jaxlib's canonical text, its raw result), all files in one child."""
    files = shardy_dialect_tests.test_files(src, EXPORT_TEST_DIR)
    items = [(name, text, LIT_FILES[name.partition("#")[0]])
             for name, text in shardy_dialect_tests.chunks({n: files[n] for n in LIT_FILES})]
    raw = run_child(_MATRIX_CODE, [[text, [pipeline_text(p)]] for _, text, p in items], timeout=600)
    return {name: (passes, canonical, results) for (name, _, passes), (canonical, results) in zip(items, raw)}


def assert_lit_file_matches(file: str, *, min_changed: int) -> None:
    failures, changed = [], 0
    for name, (passes, canonical, results) in lit_verdicts(shardy_src()).items():
        if not name.startswith(file + "#"):
            continue
        if not canonical["ok"]:
            assert name in UNREADABLE, f"jaxlib cannot read {name}: {canonical['errors']}"
            continue
        theirs = results[0]
        assert theirs["ok"], f"{name}: jaxlib failed: {theirs['errors']}"
        ours = run_here(canonical["text"], passes)
        changed += not same(canonical["text"], theirs["text"])
        if not same(ours, theirs["text"]):
            failures.append(f"{name}: {_first_difference(ours, theirs['text'])}")
    assert not failures, f"{len(failures)} chunk(s) differ; first: {failures[0]}"
    assert changed >= min_changed, f"only {changed} chunks of {file} changed"


# -- random modules with calls ------------------------------------------------------------------

@st.composite
def call_graph_modules(draw):
    """A module in pretty MLIR: a public `@main` and 1-3 private funcs, all on one tensor
    shape; func i calls only funcs after it (so the call graph is acyclic), main calls any func,
    some several times. Arguments and results carry random shardings, bodies mix element-wise
    ops and sharding constraints with the calls."""
    mesh = draw(st.sampled_from(MESHES))
    shape = tuple(draw(st.sampled_from((2, 4, 6, 8))) for _ in range(2))
    t = ttype(shape)
    count = draw(st.integers(1, 3))
    arity = [(draw(st.integers(1, 2)), draw(st.integers(1, 2))) for _ in range(count)]

    def sharded(prefix):
        return (f" {{sdy.sharding = #sdy.sharding{draw(_sharding(mesh, 2, False))}}}"
                if draw(st.integers(0, 2)) == 0 else "")

    def func(name, visibility, n_in, n_out, callees, kinds):
        args = [f"%arg{i}: {t}{sharded('arg')}" for i in range(n_in)]
        values, lines = [f"%arg{i}" for i in range(n_in)], []
        for k in range(draw(st.integers(1, 5))):
            kind = "call" if k == 0 and name == "main" else draw(st.sampled_from(kinds))
            operand = draw(st.sampled_from(values))
            if kind == "call" and callees:
                j = draw(st.sampled_from(callees))
                ins = [draw(st.sampled_from(values)) for _ in range(arity[j][0])]
                outs = arity[j][1]
                result = f"%v{k}" + (f":{outs}" if outs > 1 else "")
                types = f"({', '.join([t] * outs)})" if outs > 1 else t
                lines.append(f"  {result} = call @f{j}({', '.join(ins)}) : ({', '.join([t] * len(ins))}) -> {types}")
                values += [f"%v{k}#{r}" for r in range(outs)] if outs > 1 else [f"%v{k}"]
                continue
            if kind == "unary":
                lines.append(f"  %v{k} = stablehlo.{draw(st.sampled_from(('negate', 'abs')))} {operand} : {t}")
            elif kind == "add":
                lines.append(f"  %v{k} = stablehlo.add {operand}, {draw(st.sampled_from(values))} : {t}")
            else:
                lines.append(f"  %v{k} = sdy.sharding_constraint {operand} {draw(_sharding(mesh, 2, False))} : {t}")
            values.append(f"%v{k}")
        results = [draw(st.sampled_from(values[n_in:] or values)) for _ in range(n_out)]
        res_types = ", ".join(f"{t}{sharded('res')}" for _ in range(n_out))
        return "\n".join([f"func.func {visibility}@{name}({', '.join(args)}) -> ({res_types}) {{", *lines,
                          f"  return {', '.join(results)} : {', '.join([t] * n_out)}", "}"])

    mesh_text = "[" + ", ".join(f'"{n}"={s}' for n, s in mesh) + "]"
    funcs = [func("main", "", draw(st.integers(1, 2)), 1, list(range(count)),
                  ("unary", "add", "constraint", "call", "call", "call"))]
    funcs += [func(f"f{i}", "private ", *arity[i], list(range(i + 1, count)),
                   ("unary", "add", "constraint", "call")) for i in range(count)]
    return "\n".join([f"sdy.mesh @mesh = <{mesh_text}>", *funcs])


def explicit_pipeline(dedup: bool) -> str:
    """The pass list jaxlib runs for the project's `sdy-propagation-pipeline` (the import and
    export pipelines by name: their `sdy-save-module` has no flag)."""
    tail = ("sdy-propagate-to-func-results,func.func(sdy-sink-func-data-flow-edges)" if dedup else
            "sdy-export-named-computations,sdy-propagate-to-func-results")
    head = ("sdy-import-pipeline{dedup-functions-fully=true},sdy-add-func-data-flow-edges" if dedup else
            "sdy-import-pipeline,sdy-flatten-call-graph,symbol-dce,sdy-import-func-calls,symbol-dce,"
            "sdy-apply-sharding-constraints,sdy-sharding-group-import")
    return (f"builtin.module({head},sdy-pre-order-funcs,sdy-user-priority-propagate{{keep-sharding-rules=true}},"
            f"{tail},sdy-unflatten-call-graph,symbol-dce,sdy-insert-func-call-reshards,"
            "sdy-export-pipeline)")


def check_random_pipeline(texts) -> int:
    """Our `sdy-propagation-pipeline` in both modes equals jaxlib's explicit pass list, run twice
    (a module whose runs crash or differ gets no verdict: jaxlib's intermittent user-priority
    segfault). Returns the number of (module, mode) pairs compared."""
    from tests.sdy_passes.propagation_oracle import populate_and_run
    pipelines = [explicit_pipeline(d) for d in (False, False, True, True)]
    failures, compared = [], 0
    for text, (canonical, verdicts) in zip(texts, populate_and_run(texts, pipelines, populate=False)):
        assert canonical.ok or canonical.crashed, f"jaxlib rejected a generated module: {canonical.errors}\n{text}"
        for dedup, runs in ((False, verdicts[:2]), (True, verdicts[2:])):
            if not canonical.ok or not all(v.ok for v in runs) or runs[0].text != runs[1].text:
                continue
            compared += 1
            ours = run_here(canonical.text, [FLAGS[dedup]])
            if not same(ours, runs[0].text):
                failures.append(f"{FLAGS[dedup]}: {_first_difference(ours, runs[0].text)}\n"
                                f"--- input ---\n{text}")
    assert not failures, f"{len(failures)} disagreement(s); first:\n{failures[0]}"
    return compared
