"""`sdy_passes.interpret` on every program of the JAX corpus (lowered live, two seeds): equal to
JAX per spec execute.md §7.2/§7.3 in both numerics modes, and bit for bit equal to jaxlib's
StableHLO reference interpreter (`eval_module`) in `numerics="reference"` wherever it runs."""

from __future__ import annotations

import pytest

import sdy_passes
from sdy_passes.interpreter.movement import combiner
from tests.sdy_passes.interpreter_oracle import compare, corpus_results, decode, programs
from tests.sdy_passes.jax_corpus import lower_all

SEEDS = (0, 1)
NAMES = [name for name, _ in programs()]

_EXACT_OPS = frozenset((
    "stablehlo.constant stablehlo.iota stablehlo.broadcast_in_dim stablehlo.reshape stablehlo.transpose "
    "stablehlo.slice stablehlo.dynamic_slice stablehlo.dynamic_update_slice stablehlo.pad stablehlo.concatenate "
    "stablehlo.reverse stablehlo.gather stablehlo.select stablehlo.compare stablehlo.maximum stablehlo.minimum "
    "stablehlo.clamp stablehlo.abs stablehlo.negate stablehlo.sign stablehlo.convert stablehlo.bitcast_convert "
    "stablehlo.floor stablehlo.ceil stablehlo.round_nearest_even stablehlo.round_nearest_afz stablehlo.is_finite "
    "stablehlo.real stablehlo.imag stablehlo.complex stablehlo.sort stablehlo.while stablehlo.case "
    "stablehlo.optimization_barrier stablehlo.return func.return func.call sdy.sharding_constraint sdy.return "
    "stablehlo.reduce_precision").split())
"""Ops whose float results are exact (spec §7.2); `scatter` only with an assigning body."""


def _float(t) -> bool:
    el = getattr(t, "element_type", None)
    return el is not None and type(el).__name__ in ("FloatType", "ComplexType")


def float_exact(module) -> bool:
    """Whether every float value of the module comes from exact ops (then floats compare as bits)."""
    for op in module.walk():
        if op.name == "stablehlo.scatter" and combiner(op.regions[0]) == "assign":
            continue
        if any(_float(r.type) for r in op.results) and op.name not in _EXACT_OPS:
            return False
        if op.name == "stablehlo.scatter":
            return False
    return True


@pytest.fixture(scope="module")
def results():
    return corpus_results(SEEDS)


def _case(results, name, seed):
    r = results[f"{name}@{seed}"]
    if "error" in r:
        pytest.skip(f"JAX could not run {name}: {r['error'][:200]}")
    return r


_CALLBACKS = ("debug_callback", "pure_callback")


@pytest.mark.parametrize("numerics", ["fast", "reference"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", NAMES)
def test_equals_jax(results, name, seed, numerics):
    r = _case(results, name, seed)
    module = sdy_passes.parse_module(r["text"])
    args = [decode(x) for x in r["inputs"]]
    if name in _CALLBACKS:  # the program text does not hold the Python function
        with pytest.raises(sdy_passes.UnsupportedOpError, match="xla_ffi_python"):
            sdy_passes.interpret(module, *args, numerics=numerics)
        return
    got = sdy_passes.interpret(module, *args, numerics=numerics)
    want = [decode(x) for x in r["outputs"]]
    assert len(got) == len(want)
    exact = float_exact(module)
    for j, (g, w) in enumerate(zip(got, want)):
        ok, detail = compare(g, w, exact=exact)
        assert ok, f"output {j}: {detail}"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", NAMES)
def test_reference_bit_identical(results, name, seed):
    r = _case(results, name, seed)
    ref = r.get("reference")
    if ref is None:
        pytest.skip("the reference interpreter does not run this program (chlo, custom_call, rng, manual)")
    if "error" in ref:
        pytest.skip(f"the reference interpreter failed: {ref['error'][:200]}")
    args = [decode(x) for x in r["inputs"]]
    got = sdy_passes.interpret(r["text"], *args, numerics="reference")
    want = [decode(x) for x in ref["outputs"]]
    assert len(got) == len(want)
    for j, (g, w) in enumerate(zip(got, want)):
        ok, detail = compare(g, w, exact=True)
        assert ok, f"output {j}: {detail}"


@pytest.fixture(scope="module")
def texts():
    return lower_all()  # the corpus's texts in every form (shared with test_jax_corpus)


_FORMS = ("generic", "pretty_debug", "generic_debug")


@pytest.mark.parametrize("name, form", [(n, _FORMS[i % 3]) for i, n in enumerate(NAMES)])
def test_every_text_form_runs_alike(results, texts, name, form):
    """JAX's text pretty or generic, with or without debug info: the same numbers (each program in
    one of the other forms, the forms in turn)."""
    r = _case(results, name, 0)
    if name in _CALLBACKS or form not in texts.get(name, {}):
        pytest.skip("no such text")
    args = [decode(x) for x in r["inputs"]]
    want = sdy_passes.interpret(texts[name]["pretty"], *args)
    got = sdy_passes.interpret(texts[name][form], *args)
    for g, w in zip(got, want):
        ok, detail = compare(g, w, exact=True)
        assert ok, detail
