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
            text = explain(module, value, pipeline=pipeline).text
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
    text = explain(module, "%arg1").text
    assert sdy_passes.print_module(module) == before  # the pipeline ran on a copy
    lines = text.splitlines()
    assert lines[0] == "%arg1 in @main: tensor<8x16xf32>"
    assert lines[2].startswith('  axis "c" of dim 1 from "constraint_0" (the sdy.sharding_constraint %2 ')
    # The constraint hands "c" to its operand, the dot to its rhs along the non-contracting factor.
    assert re.match(r"    step \d+: sdy.sharding_constraint \(%2\) along factor \w of size 16: "
                    r"%2 \(result 0, dim 1\) -> %1 \(operand 0, dim 1\)$", lines[3])
    assert re.match(r"    step \d+: stablehlo.dot_general \(%1\) along factor j of size 16: "
                    r"%1 \(result 0, dim 1\) -> %arg1 \(operand 1, dim 1\)$", lines[4])
    text = explain(module, "@main:%3").text  # "b" of the result sharding arrives before "c"
    assert explained_origins(text) == {"a": "input: 0", "b": "output: 0"}
    assert "the user sharding #sdy.sharding<@mesh, [{\"a\"}, {}]> of %arg0" in text
    assert explained_origins(explain(module, "%2").text) == {"a": "input: 0", "c": "constraint_0"}


def test_a_returned_constraint_is_its_own_source():
    # The step that gives the func result the constraint's axis is not a step into a value.
    module = sdy_passes.parse_module(MODULE.replace("%3 = stablehlo.abs %2", "%3 = stablehlo.abs %1")
                                     .replace("return %3", "return %2"))
    lines = explain(module, "%1").text.splitlines()
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
    text = explain(sdy_passes.parse_module(CALL), "%0").text
    assert text.startswith("%0 in @main") and explained_origins(text) == {"a": "input: 0"}
    assert "stablehlo.negate (%0 in @foo)" in text and "the data-flow edge of %0 (result 0" in text


def test_value_objects_and_other_pipelines():
    module = sdy_passes.parse_module(MODULE)
    dot = module.funcs()[0].regions[0].blocks[0].ops[1].result
    text = explain(module, dot, pipeline="sdy-basic-propagate").text
    assert text.startswith("%1 in @main") and explained_origins(text) == {"a": "input: 0", "c": "constraint_0"}


def test_module_text_and_wrong_types():
    from_text, from_module = explain(MODULE, "%0"), explain(sdy_passes.parse_module(MODULE), "%0")
    assert from_text.text == from_module.text and [a.origin for a in from_text.axes] == [a.origin for a in from_module.axes]
    # Lines are the text's, or those of print_module(module) for a Module.
    printed = sdy_passes.print_module(sdy_passes.parse_module(MODULE)).splitlines()
    assert MODULE.splitlines()[from_text.line - 1].startswith("  %0 = stablehlo.negate")
    assert printed[from_module.line - 1].lstrip().startswith("%0 = stablehlo.negate")
    with pytest.raises(sdy_passes.SdyError, match="expected a Module or MLIR text, got int"):
        explain(3, "%0")
    with pytest.raises(sdy_passes.SdyError, match="expected a value name"):
        explain(MODULE, 3)


def test_an_unsharded_value_says_so():
    module = sdy_passes.parse_module(MODULE.replace('{sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}', ""))
    assert "no sharded axis reaches it" in explain(module, "%0").text


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
    assert out.startswith("explain %1 in @main: stablehlo.dot_general, line 4\n%1 in @main: tensor<8x16xf32>\n")
    assert err == ""
    assert main(["--explain", "%arg0", "--sdy-aggressive-propagate", str(path)]) == 0
    assert '"input: 0"' in capsys.readouterr()[0]
    assert main(["--explain=%7", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"{path}: error: explain: @main defines no value %7\n"
    assert main(["--explain"]) == 2
    assert "needs a value" in capsys.readouterr()[1]


# -- explanations as data, located (issue 36, item 5) ---------------------------------------------

def test_explanation_is_data_with_a_located_header():
    e = explain(MODULE, "%1")
    assert str(e) == f"{e.header}\n{e.text}"
    assert e.header == "explain %1 in @main: stablehlo.dot_general, line 4"
    assert (e.value, e.func, e.op, e.line, e.source, e.type) == ("%1", "main", "stablehlo.dot_general", 4, None,
                                                                 "tensor<8x16xf32>")
    assert str(e.sharding) == e.text.splitlines()[1].split(": ", 1)[1]
    assert [(str(a.axis), a.dim, a.origin) for a in e.axes] == [('"a"', 0, "input: 0"), ('"c"', 1, "constraint_0")]
    assert "\n".join(line for a in e.axes for line in a.lines()) in e.text
    steps = e.axes[0].steps
    assert [(s.op, s.line) for s in steps] == [("stablehlo.negate", 3), ("stablehlo.dot_general", 4)]
    assert all(s.source is None and "[" not in s.text for s in steps)
    arg = explain(MODULE, "%arg1")
    assert arg.header == "explain %arg1 in @main: argument 1 of func.func, line 2" and arg.argument == 1
    assert e._repr_html_().startswith("<pre>explain %1 in @main")


NESTED = """sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}, %arg1: tensor<i32>) -> tensor<8x8xf32> {
  %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_0 = %arg1) : tensor<8x8xf32>, tensor<i32>
  cond {
    %2 = stablehlo.compare LT, %iterArg_0, %iterArg_0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %2 : tensor<i1>
  } do {
    %2 = stablehlo.negate %iterArg : tensor<8x8xf32>
    stablehlo.return %2, %iterArg_0 : tensor<8x8xf32>, tensor<i32>
  }
  %1 = stablehlo.abs %0#0 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
"""


def test_a_name_of_several_values_is_refused_with_the_candidates():
    # MLIR's printer (and JAX's as_text) reuses names in sibling regions: %2 in cond and in do.
    assert sdy_passes.print_module(sdy_passes.parse_module(NESTED)).count("%2 = ") == 2
    defined = [(n, line.split(" = ")[1].split()[0]) for n, line in enumerate(NESTED.splitlines(), 1)
               if line.strip().startswith("%2 = ")]
    with pytest.raises(sdy_passes.SdyError) as e:
        explain(NESTED, "%2")
    listed = ", ".join(f"line {n}: {op}" for n, op in defined)
    assert str(e.value) == (f"explain: %2 names 2 values in @main ({listed}); pick one with '@main:%2@LINE', "
                            f"e.g. '@main:%2@{defined[0][0]}'")
    for n, op in defined:
        picked = explain(NESTED, f"@main:%2@{n}")
        assert (picked.line, picked.op) == (n, op) and picked.header.endswith(f"{op}, line {n}")
    assert explain(NESTED, f"%2@{defined[1][0]}").op == "stablehlo.negate"
    assert explain(NESTED, "%1").op == "stablehlo.abs"  # one value: no line needed
    with pytest.raises(sdy_passes.SdyError, match=r"@main defines no value %2 on line 2 \(line 5: "):
        explain(NESTED, "@main:%2@2")
    assert explain(NESTED, "%iterArg").header == "explain %iterArg in @main: argument 0 of stablehlo.while, line 3"


def test_locations_are_stripped_only_where_they_trail():
    from sdy_passes.explanation import _strip_locations

    text = ('#loc1 = loc("f.py":3:4)\n  %0 = "x.y"() {s = "a loc(b)"} : () -> i1 loc(#loc1)\n'
            '  ^bb0(%arg0: i32 loc("n"(callsite("a" at "b"))), %arg1: i32 loc(unknown)):\n')
    assert _strip_locations(text) == ('#loc1 = loc("f.py":3:4)\n  %0 = "x.y"() {s = "a loc(b)"} : () -> i1\n'
                                      '  ^bb0(%arg0: i32, %arg1: i32):\n')


_MODEL = '''import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((2, 4), ("a", "b"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
@jax.jit
def twice(a):
    return a * 2.0
def f(x, w):
    y = jnp.sin(x)
    z = y @ w
    z = jax.lax.fori_loop(0, 3, lambda i, c: c + 1.0, z)
    z = twice(twice(z))
    return jax.lax.with_sharding_constraint(z, NamedSharding(mesh, P(None, "b")))
x = jax.ShapeDtypeStruct((8, 16), jnp.float32, sharding=NamedSharding(mesh, P("a", None)))
w = jax.ShapeDtypeStruct((16, 8), jnp.float32)
print(jax.jit(f).lower(x, w).as_text(debug_info=True))
'''


@pytest.mark.jaxlib
def test_debug_info_cites_the_jax_source_line(tmp_path):
    import subprocess
    import sys
    import warnings

    pytest.importorskip("jax")  # only its presence: the model is lowered in a child process
    model = tmp_path / "model.py"
    model.write_text(_MODEL)
    proc = subprocess.run([sys.executable, str(model)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, JAX_PLATFORMS="cpu",
                                   XLA_FLAGS="--xla_force_host_platform_device_count=8"))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    source = {key: n for n, line in enumerate(_MODEL.splitlines(), 1)
              for key in ("jnp.sin", "y @ w", "twice(twice", "with_sharding_constraint") if key in line}
    dot_line = next(n for n, line in enumerate(text.splitlines(), 1) if "stablehlo.dot_general" in line)
    e = explain(text, "%1")
    assert e.header == f"explain %1 in @main: stablehlo.dot_general, line {dot_line} (model.py:{source['y @ w']})"
    steps = {s.op: s for a in e.axes for s in a.steps}
    assert steps["stablehlo.sine"].source == f"model.py:{source['jnp.sin']}"
    assert steps["stablehlo.sine"].text.endswith(f" [model.py:{source['jnp.sin']}]")
    assert steps["sdy.sharding_constraint"].source == f"model.py:{source['with_sharding_constraint']}"
    # The same text without debug info explains the same way, without sources.
    plain = explain(re.sub(r"(?<!=) loc\(#loc\d*\)|(?<!=) loc\(\"[xw]\"\)", "", text), "%1")
    assert [a.origin for a in plain.axes] == [a.origin for a in e.axes] and plain.source is None
    # Warnings cite it too: @twice is called twice (Shardy clones its body for each call).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from sdy_passes.errors import _WARNED
        _WARNED.discard("sdy-import-func-calls: multiple call ops")
        sdy_passes.run_passes(sdy_passes.parse_module(text), ["sdy-import-func-calls"])
    messages = [w.message for w in caught if isinstance(w.message, sdy_passes.SdyWarning)]
    multiple = [m for m in messages if "has multiple call ops" in m.message]
    assert multiple and multiple[0].source == f"model.py:{source['twice(twice']}"
    assert str(multiple[0]).endswith(f"(model.py:{source['twice(twice']})")
