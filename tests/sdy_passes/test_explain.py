"""`sdy_passes.explain` and `sdy-opt --explain`: the origin each explanation names must be the
one jaxlib records (`sdy.sharding_origins` after `debug-sharding-origins=true`), on Shardy's
golden debug cases and on JAX-lowered modules; then the chain, the API and the CLI."""

from __future__ import annotations

import os
import re

import pytest

import sdy_passes
from sdy_passes.__main__ import main
from sdy_passes.attributes import ArrayAttr, DictionaryAttr
from sdy_passes.explanation import PIPELINE
from sdy_passes.ir import Module, Value
from tests.conftest import needs_shared
from tests.sdy_passes.propagation_oracle import CASES_DIR, D2_CASES, case_path

explain = sdy_passes.explain  # the package's lazy attribute, as users call it

ORIGIN_CASES = [c for c in D2_CASES if "debug-sharding-origins=true" in c["pipeline"]]

_AXIS_LINE = re.compile(r'^  axis (\S+) of dim \S+(?: \(.*?\))? from (?:"([^"]*)"|(the sdy\.sharding of ))', re.M)


def explained_origins(text: str) -> dict[str, str]:
    """axis (unquoted, as jaxlib's dictionary keys) -> the origin label the explanation names
    (`": 0"` where it names the value's own sharding, as jaxlib prints that case)."""
    return {axis.replace('"', ""): label if label is not None else ": 0"
            for axis, label, own in _AXIS_LINE.findall(text) if label is not None or own}


def _values_with_origins(module: Module):
    """(key, value or None, jaxlib-style origins dict or None) per func argument, func result
    and op result; keys match between a module and its propagated copy (ops by name and
    occurrence within their func)."""
    for func in module.funcs():
        fname = func.properties["sym_name"].value
        block = func.regions[0].blocks[0]
        for i, arg in enumerate(block.arguments):
            attrs = func.properties.get("arg_attrs")
            yield (fname, "arg", i), arg, attrs[i].get("sdy.sharding_origins") if attrs else None
        attrs = func.properties.get("res_attrs")
        for i, value in enumerate(block.terminator.operands):
            yield (fname, "res", i), value, attrs[i].get("sdy.sharding_origins") if attrs else None
        seen: dict[str, int] = {}
        for op in func.walk():
            if op is func or op.name == "sdy.data_flow_edge":
                continue
            k = seen[op.name] = seen.get(op.name, -1) + 1
            found = op.attributes.get("sdy.sharding_origins")
            for r in op.results:
                entry = found[r.index] if isinstance(found, ArrayAttr) else found
                yield (fname, op.name, k, r.index), r, entry


def _self_name(key, jaxlib_module: Module) -> str | None:
    """What jaxlib's "self" stands for at `key`."""
    if key[1] == "arg":
        return f"input: {key[2]}"
    if key[1] == "res":
        return f"output: {key[2]}"
    if key[1] == "sdy.sharding_constraint":
        func = next(f for f in jaxlib_module.funcs() if f.properties["sym_name"].value == key[0])
        op = [o for o in func.walk() if o.name == key[1]][key[2]]
        return op.attributes["sdy.sharding_origin_name"].value
    return None


def compare_with_jaxlib(module: Module, jaxlib_text: str, pipeline: str) -> list[str]:
    """Every value jaxlib gave origins to (matched by position): the explanation names the
    same origin for each axis. Returns the origins compared, one per value and axis."""
    out = sdy_passes.parse_module(jaxlib_text)
    expected = {key: d for key, _, d in _values_with_origins(out) if isinstance(d, DictionaryAttr)}
    counts: dict[tuple, int] = {}  # results per (func, op name)
    for sign, m in ((1, module), (-1, out)):
        for key, _, _ in _values_with_origins(m):
            counts[key[:2]] = counts.get(key[:2], 0) + sign
    compared = []
    for key, value, _ in _values_with_origins(module):
        if key not in expected or counts[key[:2]] != 0 and key[1] not in ("arg", "res"):
            continue  # ops of this name the pipeline added or removed: positions do not match
        want = {k: (_self_name(key, out) if v.value == "self" else v.value)
                for k, v in expected[key].entries}
        try:
            text = explain(module, value, pipeline=pipeline)
        except sdy_passes.SdyError as e:  # an unused value, erased by propagation
            assert "not in the module after the pipeline" in str(e)
            continue
        assert explained_origins(text) == want, (key, text)
        compared += want.values()
    return compared


@needs_shared(CASES_DIR)
def test_explanations_name_jaxlibs_origins_on_the_golden_cases():
    compared = []
    for case in ORIGIN_CASES:
        module = sdy_passes.parse_module(case_path(case, "in.generic.mlir").read_text())
        compared += compare_with_jaxlib(module, case_path(case, "out.mlir").read_text(), case["pipeline"])
    assert len(ORIGIN_CASES) == 29 and len(compared) >= 150, len(compared)
    assert {"input: 1", "output: 0", "constraint_1", "mc_0_input: 0", "mc_0_output: 0"} <= set(compared)


# -- JAX-lowered modules ------------------------------------------------------------------------

JAX_PROGRAMS = ("sharded_args", "sharding_constraint", "sharded_matmul", "shard_map_psum")
EXTRA = [("mlp_sharded", """
def g(x, w1, w2):
    h = jax.nn.relu(x @ w1)
    h = lax.with_sharding_constraint(h, NS(mesh, P(None, 'y')))
    return h @ w2
f = jax.jit(g, in_shardings=(NS(mesh, P('x', None)), NS(mesh, P()), NS(mesh, P('y', None))),
            out_shardings=NS(mesh, P('x')))
args = (S((16, 8), jnp.float32), S((8, 32), jnp.float32), S((32, 4), jnp.float32))""")]

DEBUG_PIPELINE = ("builtin.module(sdy-import-pipeline, sdy-flatten-call-graph, symbol-dce, "
                  "sdy-import-func-calls, symbol-dce, sdy-apply-sharding-constraints, "
                  "sdy-sharding-group-import, sdy-pre-order-funcs, "
                  "sdy-user-priority-propagate{debug-sharding-origins=true})")
"""jaxlib's sdy-propagation-pipeline up to its propagation step, recording origins."""


_LOWER_AND_PROPAGATE = """
import jax, jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding as NS, PartitionSpec as P
try:
    from jax import shard_map
except ImportError:
    from jax.experimental.shard_map import shard_map
mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
RESULT = []
for code, pipeline in PAYLOAD:
    env = dict(jax=jax, jnp=jnp, lax=lax, S=jax.ShapeDtypeStruct, mesh=mesh, P=P, NS=NS,
               shard_map=shard_map)
    exec(code, env)
    f = env["f"] if hasattr(env["f"], "lower") else jax.jit(env["f"])
    text = f.lower(*env["args"]).as_text()
    RESULT.append([text, run_one(text, pipeline)])
"""


@pytest.mark.jaxlib
def test_explanations_name_jaxlibs_origins_on_jax_programs():
    # Lowered by JAX and propagated by jaxlib in one child (run twice if jaxlib's intermittent
    # user-priority segfault hits, spec §4.6).
    from tests.jaxlib_child import ChildFailed, run_child
    from tests.sdy_passes.jax_corpus import PROGRAMS
    from tests.sdy_passes.pass_oracle import _RUN_ONE

    payload = [[code, DEBUG_PIPELINE] for name, code in PROGRAMS if name in JAX_PROGRAMS]
    payload += [[code, DEBUG_PIPELINE] for _, code in EXTRA]
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    try:
        results = run_child(_RUN_ONE + _LOWER_AND_PROPAGATE, payload, env=env)
    except ChildFailed:
        results = run_child(_RUN_ONE + _LOWER_AND_PROPAGATE, payload, env=env)
    compared = []
    for text, verdict in results:
        assert verdict["ok"], verdict["errors"]
        compared += compare_with_jaxlib(sdy_passes.parse_module(text), verdict["text"], PIPELINE)
    assert len(results) == 5 and len(compared) >= 20, compared
    assert {"input: 0", "input: 2", "output: 0", "constraint_0", "mc_0_input: 0"} <= set(compared), compared


@pytest.mark.jaxlib
@pytest.mark.skipif("EXPLAIN_JAX_VARIANTS" not in os.environ,
                    reason="all JAX corpus programs: set EXPLAIN_JAX_VARIANTS=N (about a minute each)")
def test_debug_output_and_explanations_on_the_whole_jax_corpus():
    # propagation_jax's random NamedShardings and constraints on every corpus program, N draws:
    # with both debug options on, our output is jaxlib's byte for byte, and every explanation
    # names the origin jaxlib records.
    from tests.jaxlib_child import run_child_items
    from tests.sdy_passes import propagation_jax
    from tests.sdy_passes.jax_corpus import PROGRAMS

    debug = "debug-sharding-origins=true debug-propagation-edge-sharding=true"
    pipeline = (propagation_jax.PIPELINE
                .replace("sdy-apply-sharding-constraints", f"sdy-apply-sharding-constraints{{{debug}}}")
                .replace("keep-sharding-rules=true", f"keep-sharding-rules=true {debug}"))
    programs = PROGRAMS + propagation_jax.EXTRA_PROGRAMS
    code = f"PIPELINE = {pipeline!r}\n" + propagation_jax._CHILD
    for variant in range(int(os.environ["EXPLAIN_JAX_VARIANTS"])):
        compared = []
        for r in run_child_items(code, [[name, text, variant] for name, text in programs]):
            if r is None or "runs" not in r or r["runs"][0] != r["runs"][1]:
                continue  # jaxlib crashed or failed, or its two runs differ: no verdict
            module = sdy_passes.parse_module(r["text"])
            assert sdy_passes.print_module(sdy_passes.run_passes(module.clone(), pipeline)) == r["runs"][0]
            compared += compare_with_jaxlib(module, r["runs"][0], PIPELINE)
        assert len(compared) > 1000, len(compared)


# -- the chain, the API, the CLI ----------------------------------------------------------------

MODULE = """sdy.mesh @mesh = <["a"=2, "b"=2, "c"=4]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, %arg1: tensor<8x16xf32>) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {"b"}]>}) {
  %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
  %1 = stablehlo.dot_general %0, %arg1, contracting_dims = [1] x [0] : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %2 = sdy.sharding_constraint %1 <@mesh, [{?}, {"c", ?}]> : tensor<8x16xf32>
  %3 = stablehlo.abs %2 : tensor<8x16xf32>
  %4 = stablehlo.cosine %arg1 : tensor<8x16xf32>
  return %3 : tensor<8x16xf32>
}
"""


def test_chain_of_ops_and_factors():
    module = sdy_passes.parse_module(MODULE)
    before = sdy_passes.print_module(module)
    text = explain(module, "%arg1")
    assert sdy_passes.print_module(module) == before  # the pipeline ran on a copy
    lines = text.splitlines()
    assert lines[0] == "%arg1 in @main: tensor<8x16xf32>"
    assert lines[2].startswith('  axis "c" of dim 1 from "constraint_0" (the sdy.sharding_constraint %2 ')
    # The constraint hands "c" to its operand, the dot to its rhs along the non-contracting factor.
    assert re.match(r"    step \d+: sdy.sharding_constraint \(%2\) along factor \w of size 16: "
                    r"%2 \(result 0, dim 1\) -> %1 \(operand 0, dim 1\)$", lines[3])
    assert re.match(r"    step \d+: stablehlo.dot_general \(%1\) along factor j of size 16: "
                    r"%1 \(result 0, dim 1\) -> %arg1 \(operand 1, dim 1\)$", lines[4])
    text = explain(module, "@main:%3")  # "b" of the result sharding arrives before "c"
    assert explained_origins(text) == {"a": "input: 0", "b": "output: 0"}
    assert "the user sharding #sdy.sharding<@mesh, [{\"a\"}, {}]> of %arg0" in text
    assert explained_origins(explain(module, "%2")) == {"a": "input: 0", "c": "constraint_0"}


def test_a_returned_constraint_is_its_own_source():
    # The step that gives the func result the constraint's axis is not a step into a value.
    module = sdy_passes.parse_module(MODULE.replace("%3 = stablehlo.abs %2", "%3 = stablehlo.abs %1")
                                     .replace("return %3", "return %2"))
    lines = explain(module, "%1").splitlines()
    assert lines[-2].startswith('  axis "c" of dim 1 from "constraint_0"')
    assert lines[-1].startswith("    step ") and "sdy.sharding_constraint (%2)" in lines[-1]


CALL = """sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> tensor<8x8xf32> {
  %0 = call @foo(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = stablehlo.abs %0 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
func.func private @foo(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
"""


def test_values_the_pipeline_replaces_keep_their_names():
    # sdy-import-func-calls turns the call into a named computation holding @foo's body.
    text = explain(sdy_passes.parse_module(CALL), "%0")
    assert text.startswith("%0 in @main") and explained_origins(text) == {"a": "input: 0"}
    assert "stablehlo.negate (%0 in @foo)" in text and "the data-flow edge of %0 (result 0" in text


def test_value_objects_and_other_pipelines():
    module = sdy_passes.parse_module(MODULE)
    dot = module.funcs()[0].regions[0].blocks[0].ops[1].result
    text = explain(module, dot, pipeline="sdy-basic-propagate")
    assert text.startswith("%1 in @main") and explained_origins(text) == {"a": "input: 0", "c": "constraint_0"}


def test_module_text_and_wrong_types():
    assert explain(MODULE, "%0") == explain(sdy_passes.parse_module(MODULE), "%0")
    with pytest.raises(sdy_passes.SdyError, match="expected a Module or MLIR text, got int"):
        explain(3, "%0")
    with pytest.raises(sdy_passes.SdyError, match="expected a value name"):
        explain(MODULE, 3)


def test_an_unsharded_value_says_so():
    module = sdy_passes.parse_module(MODULE.replace('{sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}', ""))
    assert "no sharded axis reaches it" in explain(module, "%0")


@pytest.mark.parametrize("value, message", [
    ("%9", "@main defines no value %9"),
    ("%arg5", "@main defines no value %arg5"),
    ("3", "expected a value name like '%3'"),
    ("@f:%1", "the module has no function @f (functions: @main)"),
    ("%4", "not in the module after the pipeline"),  # unused: propagation erases it
])
def test_bad_values_are_sdy_errors(value, message):
    with pytest.raises(sdy_passes.SdyError, match=re.escape(message)):
        explain(sdy_passes.parse_module(MODULE), value)


def test_value_of_another_module_and_pipeline_without_propagation():
    module = sdy_passes.parse_module(MODULE)
    other: Value = sdy_passes.parse_module(MODULE).funcs()[0].regions[0].blocks[0].arguments[0]
    with pytest.raises(sdy_passes.SdyError, match="is not a value of this module"):
        explain(module, other)
    with pytest.raises(sdy_passes.SdyError, match="needs a propagate pass"):
        explain(module, "%0", pipeline="symbol-dce")


def test_cli_explain(tmp_path, capsys):
    path = tmp_path / "m.mlir"
    path.write_text(MODULE)
    assert main(["--explain=%1", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("%1 in @main: tensor<8x16xf32>\n") and err == ""
    assert main(["--explain", "%arg0", "--sdy-aggressive-propagate", str(path)]) == 0
    assert '"input: 0"' in capsys.readouterr()[0]
    assert main(["--explain=%7", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"{path}: error: explain: @main defines no value %7\n"
    assert main(["--explain"]) == 2
    assert "needs a value" in capsys.readouterr()[1]
