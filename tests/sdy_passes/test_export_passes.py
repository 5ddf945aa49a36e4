"""The passes of `sdy-export-pipeline` (spec/export.md §2) and the pipeline itself: each pass on
jaxlib's own pipeline stages of real inputs, hand-made modules for the behaviours the spec
checks, the compositions for every option, and the CLI's refusals. The lit and end-to-end
corpus is `test_sdy_cases_export.py`."""

import io
import sys

import pytest
from hypothesis import given, settings

import sdy_passes
from sdy_passes.__main__ import main
from sdy_passes.errors import PassFailedError
from sdy_passes.pass_manager import UnknownPassError, parse_pipeline, pipeline_text
from tests.jaxlib_child import run_child
from tests.sdy_passes.module_gen import modules
from tests.sdy_passes.pass_oracle import assert_match_jaxlib
from tests.sdy_passes.propagation_modules import prop_modules
from tests.sdy_passes.propagation_oracle import FUZZ_MODULES, check_random_module
from tests.sdy_passes.propagation_pipeline_oracle import assert_pass_matches_stages

EXPORT_PASSES = [  # (flag, stages of the 83 cases and 8 JAX programs it changes at least)
    ("sdy-constant-or-scalar-merger", 1), ("sdy-sink-data-flow-edges", 40),
    ("sdy-remove-sharding-groups", 0), ("sdy-sharding-constraint-to-reshard", 1),
    ("sdy-update-non-divisible-input-output-shardings", 0),
    ("sdy-remove-sub-axes-in-input-output-shardings", 0), ("sdy-close-shardings", 40),
    ("sdy-insert-explicit-reshards", 1), ("canonicalize", 1), ("sdy-drop-sharding-rules", 40),
]


@pytest.mark.jaxlib
@pytest.mark.parametrize("flag, min_changed", EXPORT_PASSES, ids=[f for f, _ in EXPORT_PASSES])
def test_pipeline_stages_match_jaxlib(flag, min_changed):
    assert_pass_matches_stages(flag, min_changed=min_changed)


MESH = 'sdy.mesh @mesh = <["x"=2, "y"=2]>\n'

MERGER = MESH + """func.func @main(%arg0: tensor<f32>, %arg1: tensor<i32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i32>) {
  %0 = stablehlo.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} dense<1.0> : tensor<8xf32>
  %1 = stablehlo.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}]>]>} dense<1.0> : tensor<8xf32>
  %2 = stablehlo.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} dense<1.0> : tensor<8xf32>
  %3 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %4 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<f32>) -> tensor<8xf32>
  %5 = stablehlo.add %0, %1 : tensor<8xf32>
  %6 = stablehlo.add %2, %3 : tensor<8xf32>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %7:2 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %c) : tensor<i32>, tensor<i32>
   cond {
    %c_1 = stablehlo.constant dense<10> : tensor<i32>
    %8 = stablehlo.compare  LT, %iterArg, %c_1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %8 : tensor<i1>
  } do {
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %8 = stablehlo.add %iterArg, %c_1 : tensor<i32>
    %9 = stablehlo.add %8, %c_2 : tensor<i32>
    stablehlo.return %9, %iterArg_0 : tensor<i32>, tensor<i32>
  }
  return %5, %6, %4, %3, %7#0 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i32>
}
"""


@pytest.mark.jaxlib
def test_merger_keys_shardings_regions_and_broadcast_operands_as_jaxlib():
    assert_match_jaxlib([MERGER], ["func.func(sdy-constant-or-scalar-merger)"])


CANONICALIZE = MESH + """func.func @main(%arg0: tensor<8x8xf32>, %arg1: tensor<i32>) -> (tensor<8x8xf32>, tensor<i32>, tensor<8xf32>) {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0 = sdy.reshard %arg0 <@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>
  %1 = sdy.reshard %arg0 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>
  %2 = sdy.all_slice [{}, {"y"}] %1 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>
  %3 = sdy.all_gather [{}, {"y"}] %2 out_sharding=<@mesh, [{"x"}, {}]> : tensor<8x8xf32>
  %4 = sdy.all_slice [{}, {"y"}] %3 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>
  %5 = sdy.all_gather [{}, {}] %4 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>
  %6 = sdy.constant dense<2.0> : tensor<8x8xf32>
  %7 = stablehlo.custom_call @pure(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %8 = stablehlo.custom_call @effect(%arg0) {has_side_effect = true} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %9 = sdy.named_computation<"dead">(%arg0) (%a: tensor<8x8xf32>) {
    %10 = stablehlo.negate %a : tensor<8x8xf32>
    sdy.return %10 : tensor<8x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %11:2 = stablehlo.while(%iterArg = %arg1, %iterArg_0 = %c) : tensor<i32>, tensor<i32>
   cond {
    %c_1 = stablehlo.constant dense<10> : tensor<i32>
    %12 = stablehlo.compare  LT, %iterArg, %c_1 : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %12 : tensor<i1>
  } do {
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %cst_2 = stablehlo.constant dense<1.0> : tensor<8xf32>
    %12 = stablehlo.add %iterArg, %c_1 : tensor<i32>
    stablehlo.return %12, %iterArg_0 : tensor<i32>, tensor<i32>
  }
  %cst = stablehlo.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>} dense<1.0> : tensor<8xf32>
  %cst_3 = stablehlo.constant {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"y"}]>]>} dense<1.0> : tensor<8xf32>
  %13 = stablehlo.add %cst, %cst_3 : tensor<8xf32>
  return %5, %11#0, %13 : tensor<8x8xf32>, tensor<i32>, tensor<8xf32>
}
"""
COLLECTIVE_STEP = ("canonicalize{enable-patterns={sdy-collective} max-iterations=10 "
                   "region-simplify=aggressive top-down=false}")


@pytest.mark.jaxlib
@pytest.mark.parametrize("step", [COLLECTIVE_STEP, "canonicalize{enable-patterns={sdy-collective}}",
                                  "canonicalize{enable-patterns={sdy-reshard} region-simplify=disabled}",
                                  "func.func(canonicalize{enable-patterns={sdy-collective}})"])
def test_canonicalize_erases_dead_ops_hoists_and_merges_constants_as_jaxlib(step):
    # dead: the first reshard, the pure custom call, sdy.constant, the named computation and the
    # while body's unused constant; kept: a dead collective, the effectful custom call
    assert_match_jaxlib([CANONICALIZE], [step])


def test_canonicalize_hoists_constants_in_reverse_order_of_first_appearance():
    module = sdy_passes.parse_module(CANONICALIZE)
    sdy_passes.run_passes(module, [COLLECTIVE_STEP])
    text = sdy_passes.print_module(module)
    body = text[text.index("func.func"):].splitlines()[1:5]
    # the while body's unused 1.0 comes first in the walk: it is kept (and lives on without a
    # sharding) and both sharded 1.0 constants are replaced by it
    assert [line.split("=", 1)[1].strip() for line in body] == [
        "stablehlo.constant dense<1.000000e+00> : tensor<8xf32>",
        "stablehlo.constant dense<1> : tensor<i32>", "stablehlo.constant dense<10> : tensor<i32>",
        "stablehlo.constant dense<0> : tensor<i32>"]
    assert "%5 = stablehlo.add %cst, %cst" in text
    assert 'sdy.all_gather [{}, {"y"}]' in text and "@pure" not in text and "@effect" in text


RESHARDS = MESH + """func.func @main(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = sdy.reshard %arg0 <@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>
  %1 = sdy.reshard %0 <@mesh, [{"y"}, {}]> : tensor<8x8xf32>
  %2 = sdy.reshard %arg0 <@mesh, [{}, {"x"}]> : tensor<8x8xf32>
  %3 = sdy.reshard %2 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>
  %4 = stablehlo.negate %2 : tensor<8x8xf32>
  %5 = stablehlo.add %3, %4 : tensor<8x8xf32>
  return %1, %5 : tensor<8x8xf32>, tensor<8x8xf32>
}
"""


@pytest.mark.jaxlib
def test_reshard_of_a_single_use_reshard_folds_as_jaxlib():
    assert_match_jaxlib([RESHARDS], ["canonicalize{enable-patterns={sdy-reshard} max-iterations=10 "
                                     "region-simplify=aggressive top-down=false}"])


NON_DIVISIBLE = 'sdy.mesh @mesh = <["x"=4, "y"=2]>\n' + """func.func @main(%arg0: tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}p1, {"y"}p0]>}, %arg1: tensor<6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x":(1)2, "y", ?}], replicated={"x":(2)2}>}, %arg2: tensor<8x3xf32>) -> (tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", "x"}, {}]>}, tensor<6xf32>, tensor<8x3xf32>) {
  %0 = call @f(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>} : (tensor<6x8xf32>) -> tensor<6x8xf32>
  %1 = sdy.manual_computation(%arg2) in_shardings=[<@mesh, [{"x"}, {"y"}]>] out_shardings=[<@mesh, [{"x"}, {"y"}]>] manual_axes={"x"} (%a: tensor<2x3xf32>) {
    sdy.return %a : tensor<2x3xf32>
  } : (tensor<8x3xf32>) -> tensor<8x3xf32>
  return %0, %arg1, %1 : tensor<6x8xf32>, tensor<6xf32>, tensor<8x3xf32>
}
func.func private @f(%arg0: tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
  return %arg0 : tensor<6x8xf32>
}
"""


@pytest.mark.jaxlib
@pytest.mark.parametrize("passes", [["sdy-update-non-divisible-input-output-shardings"],
                                    ["sdy-remove-sub-axes-in-input-output-shardings"],
                                    ["sdy-close-shardings"]])
def test_in_out_sharding_passes_as_jaxlib(passes):
    assert_match_jaxlib([NON_DIVISIBLE], passes)


def test_update_non_divisible_cuts_dims_as_the_spec_says():
    module = sdy_passes.parse_module(NON_DIVISIBLE)
    sdy_passes.run_passes(module, ["sdy-update-non-divisible-input-output-shardings"])
    text = sdy_passes.print_module(module)
    assert '[{"x":(1)2, ?}, {"y"}p0]' in text  # rebuilt dims lose their priority
    assert '[{"x":(1)2, ?}], replicated={"x":(2)2}' in text
    assert '-> (tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}, tensor<6xf32>' in text
    assert 'call @f(%arg0) {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x":(1)2}, {}]>]>}' in text
    # the body sees [{}, {"y"}] on 2x3: "y" goes; the manual axis stays
    assert 'in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>]' in text


def test_a_module_without_main_fails_where_jaxlib_aborts(capsys, monkeypatch):
    text = MESH + ("func.func @a(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n  return %arg0 : tensor<8xf32>\n}\n"
                   "func.func @b(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n  return %arg0 : tensor<8xf32>\n}\n")
    for flags in (["--sdy-remove-sub-axes-in-input-output-shardings"], ["--sdy-export-pipeline"]):
        monkeypatch.setattr(sys, "stdin", io.StringIO(text))
        assert main([*flags, "-"]) == 1
        err = capsys.readouterr().err
        assert "<stdin>:2:1: error: Failed to lookup function: main" in err and "Traceback" not in err
    with pytest.raises(PassFailedError, match="Failed to lookup function: main"):
        sdy_passes.run_passes(sdy_passes.parse_module(MESH), ["sdy-export-pipeline"])


OPTIONS = ["", "enable-insert-explicit-collectives=true",
           "enable-insert-explicit-collectives=true remove-all-gather-reduce-scatter-for-cmv1=true",
           "remove-all-gather-reduce-scatter-for-cmv1=true", "avoid-export-for-partitioning=true",
           "update-non-divisible-input-output-shardings=false", "keep-sharding-rules=true",
           "dump-sharding-origins=true", "dump-propagation-edges=true",
           "dump-directory=/nowhere avoid-reshards-on-calls=true",
           "avoid-export-for-partitioning=true enable-insert-explicit-collectives=true "
           "dump-propagation-edges=true keep-sharding-rules=true"]
_PRINT = """
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import passmanager
RESULT = []
with jax_mlir.make_ir_context():
    for text in PAYLOAD:
        RESULT.append(str(passmanager.PassManager.parse(text)))
"""


@pytest.mark.jaxlib
def test_export_pipeline_compositions_are_jaxlibs():
    texts = [f"builtin.module(sdy-export-pipeline{{{o}}})" if o else "builtin.module(sdy-export-pipeline)"
             for o in OPTIONS] + ["builtin.module(canonicalize{enable-patterns={sdy-collective}})"]
    theirs = run_child(_PRINT, texts)
    assert [pipeline_text(parse_pipeline(t)) for t in texts] == theirs


@pytest.mark.parametrize("pipeline, message", [
    ("builtin.module(sdy-export-pipeline{bogus=1})", "no such option bogus"),
    ("builtin.module(canonicalize)", "give enable-patterns"),
    ("builtin.module(canonicalize{enable-patterns=foo})", "unknown: foo"),
    ("builtin.module(canonicalize{enable-patterns=sdy-collective max-iterations=x})",
     "value invalid for integer argument"),
    ("builtin.module(canonicalize{enable-patterns=sdy-collective region-simplify=some})",
     "Cannot find option named 'some'"),
    ("builtin.module(sdy-constant-or-scalar-merger)", "did you intend to nest"),
])
def test_bad_pipelines_are_refused(pipeline, message):
    with pytest.raises(UnknownPassError, match=message):
        parse_pipeline(pipeline)


UNREGISTERED = """func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "test.foo"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""


def test_cli_refuses_unregistered_dialects_unless_allowed(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(UNREGISTERED))
    assert main(["--sdy-close-shardings", "-"]) == 1
    out, err = capsys.readouterr()
    # jaxlib: loc("-":2:18), just after the quoted op name
    assert err.splitlines()[0] == ("<stdin>:2:18: error: operation being parsed with an unregistered "
                                   "dialect. If this is intended, please use -allow-unregistered-dialect "
                                   "with the MLIR tool used") and not out
    monkeypatch.setattr(sys, "stdin", io.StringIO(UNREGISTERED))
    assert main(["--allow-unregistered-dialect", "--sdy-close-shardings", "-"]) == 0
    assert '"test.foo"(%arg0)' in capsys.readouterr().out


_DUMPS = """
import os, tempfile
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir, passmanager
RESULT = []
for text, options in PAYLOAD:
    directory = tempfile.mkdtemp()
    ctx = jax_mlir.make_ir_context()
    ctx.enable_multithreading(False)
    with ctx:
        module = ir.Module.parse(text)
        passmanager.PassManager.parse(
            f"builtin.module(sdy-export-pipeline{{dump-directory={directory} {options}}})").run(module.operation)
    RESULT.append({name: open(os.path.join(directory, name)).read() for name in sorted(os.listdir(directory))})
"""


@pytest.mark.jaxlib
def test_dump_directory_files_are_jaxlibs(tmp_path):
    from tests.sdy_passes.test_sdy_cases_export import EXPORT_DIR
    text = (EXPORT_DIR / "e2e.sdy-export-pipeline" / "000.in.generic.mlir").read_text()
    options = ["", "enable-insert-explicit-collectives=true", "avoid-export-for-partitioning=true"]
    theirs = run_child(_DUMPS, [[text, o] for o in options])
    for i, (o, files) in enumerate(zip(options, theirs)):
        directory = tmp_path / str(i)
        directory.mkdir()
        module = sdy_passes.parse_module(text)
        sdy_passes.run_passes(module, f"builtin.module(sdy-export-pipeline{{dump-directory={directory} {o}}})")
        assert {p.name: p.read_text() for p in sorted(directory.iterdir())} == files
    assert [len(files) for files in theirs] == [2, 3, 1]


def _chain(n):
    """`n` links of sharded arithmetic with constants (a duplicate per link), constraints and
    dead ops, as propagation leaves them."""
    lines = [MESH.strip(), 'func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}, {?}]>}) -> tensor<8x8xf32> {']
    prev = "%arg0"
    for i in range(n):
        lines += [f'  %c{i} = sdy.constant {{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{{"x"}}, {{?}}]>]>}} dense<1.0> : tensor<8x8xf32>',
                  f'  %k{i} = stablehlo.constant dense<{i % 7}.0> : tensor<8x8xf32>',
                  f'  %a{i} = stablehlo.add {prev}, %c{i} {{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{{"x", ?}}, {{?}}]>]>}} : tensor<8x8xf32>',
                  f'  %s{i} = sdy.sharding_constraint %a{i} <@mesh, [{{"x"}}, {{"y", ?}}]> : tensor<8x8xf32>',
                  f'  %m{i} = stablehlo.multiply %s{i}, %k{i} : tensor<8x8xf32>',
                  f'  %d{i} = stablehlo.abs %m{i} : tensor<8x8xf32>']
        prev = f"%m{i}"
    return "\n".join(lines + [f"  return {prev} : tensor<8x8xf32>", "}"])


def test_the_export_pipeline_is_linear():
    from tests.sdy_passes.test_scaling import _assert_linear
    # (merging duplicates one erase at a time was quadratic: 7 s at 3000 links)
    _assert_linear(lambda n: sdy_passes.parse_module(_chain(n), verify=False),
                   lambda module: sdy_passes.run_passes(module.clone(), "sdy-export-pipeline", verify=False),
                   n=60)


EXPORT_ALONE = "builtin.module(sdy-export-pipeline)"
WITH_EDGES = "builtin.module(sdy-add-data-flow-edges,sdy-export-pipeline)"
WHOLE = "builtin.module(sdy-propagation-pipeline)"


@pytest.mark.jaxlib
@FUZZ_MODULES
@given(prop_modules(max_ops=15))
def test_random_modules_through_the_export_and_whole_pipelines_match_jaxlib(text):
    # jaxlib runs each twice: its user-priority propagation segfaults intermittently
    check_random_module(text, [EXPORT_ALONE, WITH_EDGES, WHOLE], runs=2)


@pytest.mark.jaxlib
@FUZZ_MODULES
@given(modules(inline_meshes=False))
def test_random_data_flow_modules_through_the_export_pipeline_match_jaxlib(text):
    # while loops, cases, barriers, named and manual computations (unregistered ops too)
    check_random_module(text, [WITH_EDGES], runs=2)


MY_PASSES = ["func.func(sdy-constant-or-scalar-merger)", "sdy-remove-sharding-groups",
             "func.func(sdy-sharding-constraint-to-reshard)",
             "sdy-update-non-divisible-input-output-shardings",
             "sdy-remove-sub-axes-in-input-output-shardings", "sdy-close-shardings", COLLECTIVE_STEP,
             "canonicalize{enable-patterns={sdy-collective,sdy-reshard}}",
             "func.func(sdy-drop-sharding-rules)",
             "func.func(sdy-remove-all-gather-reduce-scatter-for-cmv1)",
             "sdy-remove-propagation-debug-info", "sdy-export-pipeline",
             "sdy-export-pipeline{enable-insert-explicit-collectives=true keep-sharding-rules=true}"]


@settings(max_examples=10, deadline=None)
@given(modules(max_ops=10))
def test_every_export_pass_on_any_module_succeeds_or_raises_an_sdy_error(text):
    # inlined and duplicate meshes, sub-axes, unreduced axes, every data-flow op, calls, no main
    from sdy_passes.errors import SdyError
    for step in MY_PASSES:
        module = sdy_passes.parse_module(text)
        try:
            sdy_passes.run_passes(module, f"builtin.module({step})")
        except SdyError as e:
            assert getattr(e, "message", str(e))
            continue
        sdy_passes.verify_module(module)
        sdy_passes.parse_module(sdy_passes.print_module(module, generic=True))
