"""Issue 37 item 14: a module that breaks rules in several places fails at the place jaxlib's
verifier names (MLIR's order over functions, ops and nested regions, then the symbol table's
order for the checks Shardy and `func.call` do in `verifySymbolUses`), with its message.

Generator: JAX's lowered programs, their functions copied (renamed) so that every module has
several, with two to five errors injected at random places of any function or nested region
(while/case bodies, manual computations, reducers): a non-dialect argument attribute, a result
type its `return` (and its callers) do not give, a use before its definition, a
`propagation_barrier` that allows `BOTH` directions (checked on the walk), chains of
`sdy.data_flow_edge` and a `sharding_constraint` of the wrong rank (checked in the symbol
table's walk). The issue's case: programs (copied the same way) whose manual
computations (and loops, conds) already carry edges in some functions, through
`sdy-import-pipeline`: random JAX programs (shard_maps, loops, conds, nested jits).
`ERROR_ORDER_EXAMPLES` sets the number of modules (default 60), `MUTATION_SEED` their seed.
"""

from __future__ import annotations

import os
import random
import re

import pytest

from sdy_passes import SdyError, parse_module, print_module, run_passes
from tests.mutation import SEED
from tests.sdy_passes.jax_corpus import lower_all
from tests.sdy_passes.pass_oracle import jaxlib_parse_kept, run_jaxlib_passes

EXAMPLES = int(os.environ.get("ERROR_ORDER_EXAMPLES", "60"))

_FUNC = re.compile(r"^  func\.func [^@]*@(\"[^\"]*\"|[\w$.]+)\(.*?^  }\n", re.M | re.S)
_ARG = re.compile(r"%arg\d+: tensor<[0-9x]*[a-z]+[0-9]*>(?= *[,)])")
_RESULT = re.compile(r"\) -> \(?tensor<(\d+)x")
# a value of a ranked tensor type defined by an op without regions, and its type
_VALUE = re.compile(r"^( *)(%[\w$.-]+) = [^\n{]*(?::|->) (tensor<([0-9x]*)[a-z]+[0-9]*>)\n", re.M)


def _rename(func: str, names: list[str], suffix: str) -> str:
    """`func` with its references to `names` (bare or quoted symbols) renamed with `suffix`."""
    def renamed(m: re.Match) -> str:
        name = m.group(1)
        return f'@"{name[1:-1]}{suffix}"' if name.startswith('"') else f"@{name}{suffix}"
    return re.sub(r"@(%s)(?![\w$.])" % "|".join(map(re.escape, names)), renamed, func)


def _merged(texts: list[str], rng: random.Random, copies: int) -> str:
    """The first text's module with the functions of all `texts` (those of the second on
    renamed), followed by `copies` renamed copies of them all, in random order after the first."""
    bodies = []
    for t, text in enumerate(texts):
        funcs = [m.group(0) for m in _FUNC.finditer(text)]
        names = [m.group(1) for m in _FUNC.finditer(text)]
        for c in range(copies + 1):
            suffix = f"_p{t}c{c}" if t or c else ""
            bodies += [_rename(f, names, suffix).replace("func.func public", "func.func private") if suffix else f
                       for f in funcs]
    funcs = list(_FUNC.finditer(texts[0]))
    rest = bodies[1:]
    rng.shuffle(rest)
    return texts[0][:funcs[0].start()] + "".join(bodies[:1] + rest) + texts[0][funcs[-1].end():]


def _sharding(rank: int) -> str:
    return '<mesh<["q"=1]>, [%s]>' % ", ".join(["{}"] * rank)


def _inject(text: str, rng: random.Random, k: int) -> str:
    kind = rng.randrange(6)
    if kind == 0:  # an argument attribute without a dialect prefix
        args = [m for m in _ARG.finditer(text) if text.rfind("func.func", 0, m.start()) > text.rfind("\n", 0, m.start())]
        if args:
            m = rng.choice(args)
            return text[:m.end()] + " {bad_attr = 1 : i32}" + text[m.end():]
    if kind == 1:  # a result type the returns (and calls) do not give
        results = [m for m in _RESULT.finditer(text) if text.rfind("func.func", 0, m.start()) > text.rfind("\n", 0, m.start())]
        if results:
            m = rng.choice(results)
            return text[:m.start(1)] + str(int(m.group(1)) + 1) + text[m.end(1):]
    m = rng.choice(list(_VALUE.finditer(text)))
    indent, value, type_, dims = m.groups()
    rank = dims.count("x")
    lines = {
        2: [f"%u{k} = sdy.propagation_barrier %w{k} allowed_direction=FORWARD : {type_}",
            f"%w{k} = sdy.propagation_barrier {value} allowed_direction=FORWARD : {type_}"],
        3: [f"%b{k} = sdy.propagation_barrier {value} allowed_direction=BOTH : {type_}"],
        4: [f"%e{k}a = sdy.data_flow_edge {value} : {type_}", f"%e{k}b = sdy.data_flow_edge %e{k}a : {type_}"],
        5: [f"%s{k} = sdy.sharding_constraint {value} {_sharding(rank + 1)} : {type_}"],
    }[max(kind, 2)]
    return text[:m.end()] + "".join(f"{indent}{line}\n" for line in lines) + text[m.end():]


def _corpus(pattern: str) -> list[str]:
    return [v["pretty"] for v in lower_all().values()
            if isinstance(v, dict) and v.get("pretty") and re.search(pattern, v["pretty"]) and _FUNC.search(v["pretty"])
            and _VALUE.search(v["pretty"])]


def _modules(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    corpus = _corpus("")
    out = []
    for _ in range(n):
        text = _merged([rng.choice(corpus)], rng, rng.randint(1, 3))
        for k in range(rng.randint(2, 5)):
            text = _inject(text, rng, k)
        out.append(text)
    return out


def _first_error(run) -> str | None:
    try:
        run()
    except SdyError as e:
        return f"{e.location}: {e.message}" if hasattr(e, "location") else f'loc("-":{e.line}:{e.col}): {e.message}'
    return None


@pytest.mark.jaxlib
def test_the_first_error_of_several_is_jaxlibs():
    texts = _modules(EXAMPLES, SEED)
    bad = []
    for text, theirs in zip(texts, jaxlib_parse_kept(texts)):
        mine = _first_error(lambda: parse_module(text))
        if mine != theirs.get("error"):
            bad.append(f"here:   {mine}\njaxlib: {theirs.get('error')}\n{text}")
    assert not bad, f"MUTATION_SEED={SEED}: {len(bad)} of {len(texts)} differ:\n\n" + "\n\n".join(bad[:3])


def _stage(rng: random.Random, depth: int, manual: bool) -> str:
    """A random JAX function of one (8, 8) or per-device array, as an expression: elementwise
    math, loops, conds, shard_maps (not nested) and nested jits (private functions), nested."""
    kinds = ["jnp.sin", "(lambda x: x * 2.0)"]
    if depth < 3:
        kinds += ["loop", "cond", "jit"] + ([] if manual else ["smap", "smap"])
    kind = rng.choice(kinds)
    sub = lambda: _chain(rng, depth + 1, manual or kind == "smap")  # noqa: E731
    if kind == "loop":
        return f"(lambda x: lax.fori_loop(0, 2, lambda i, y: {sub()}(y), x))"
    if kind == "cond":
        return f"(lambda x: lax.cond(x.sum() > 0, {sub()}, {sub()}, x))"
    if kind == "jit":
        return f"jax.jit({sub()})"
    if kind == "smap":
        return f"shard_map({sub()}, mesh=mesh, in_specs=P('x'), out_specs=P('x'), check_vma=False)"
    return kind


def _chain(rng: random.Random, depth: int, manual: bool) -> str:
    stages = [_stage(rng, depth, manual) for _ in range(rng.randint(1, 3))]
    body = "x"
    for stage in stages:
        body = f"{stage}({body})"
    return f"(lambda x: {body})"


def _with_edges(n: int, seed: int) -> list[str]:
    """Random JAX programs with shard_maps, loops, conds and nested jits (copied: more
    functions) that carry a random part of the data-flow edges `sdy-add-data-flow-edges` adds."""
    rng = random.Random(seed)
    programs = [(f"random_{seed}_{i}", f"f = jax.jit({_chain(rng, 0, False)})\nargs = (S((8, 8), jnp.float32),)")
                for i in range(n)]
    lowered = lower_all(programs)
    texts = [lowered[name].get("pretty") for name, _ in programs]
    assert all(texts), [v for v in lowered.values() if "error" in v][:1]
    out = []
    for text in texts:
        module = run_passes(parse_module(_merged([text], rng, rng.randint(0, 2))), ["sdy-add-data-flow-edges"])
        edges = [op for op in module.walk() if op.name == "sdy.data_flow_edge"]
        for edge in rng.sample(edges, rng.randint(0, len(edges))):
            edge.result.replace_all_uses_with(edge.operands[0])
            edge.erase()
        out.append(print_module(module))
    return out


@pytest.mark.jaxlib
def test_import_pipeline_over_manual_computations_with_edges_fails_where_jaxlib_does():
    """The issue's instance: modules whose manual computations already carry edges fail after
    `sdy-import-pipeline` in both, at the op jaxlib names, with its message."""
    texts = _with_edges(max(EXAMPLES // 2, 4), SEED)
    bad = []
    for text, verdict in zip(texts, run_jaxlib_passes([(t, ["sdy-import-pipeline"]) for t in texts])):
        assert not verdict.crashed
        mine = _first_error(lambda: run_passes(parse_module(text), ["sdy-import-pipeline"]))
        theirs = verdict.errors[0] if verdict.errors else None
        if mine != theirs:
            bad.append(f"here:   {mine}\njaxlib: {theirs}\n{text}")
    assert not bad, f"MUTATION_SEED={SEED}: {len(bad)} of {len(texts)} differ:\n\n" + "\n\n".join(bad[:3])
