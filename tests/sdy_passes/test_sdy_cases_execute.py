"""Shardy's executable global-to-local tests (`../shared/sdy_cases_execute/`, spec execute.md
§10): part 1 through our `sdy-convert-global-to-local`, then part 2 in our interpreter
(`interpreter.run_parallel` runs the converted functions on every partition, `check.expect_eq`
and `check.expect_almost_eq` compare with the expected constants), as the file's RUN lines do."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from sdy_passes import parse_module, print_module, run_passes
from sdy_passes.errors import SdyError
from sdy_passes.interpreter import interpret
from tests.conftest import SHARED, needs_shared
from tests.jaxlib_child import cached, run_child
from tests.sdy_passes.execute_oracle import oracle_module

FOLDER = SHARED / "sdy_cases_execute"
MANIFEST = json.loads((FOLDER / "manifest.json").read_text()) if (FOLDER / "manifest.json").exists() else []
pytestmark = needs_shared(FOLDER / "manifest.json")

def _parts(text: str) -> tuple[str, str]:
    _, rest = text.split("//--- part1.mlir", 1)
    part1, part2 = rest.split("//--- part2.mlir", 1)
    return part1, part2


def _body(module) -> str:
    """The module's ops as text (`sed '1d; /^}/,$d'` of the RUN lines)."""
    lines = print_module(module).splitlines()
    return "\n".join(lines[1:lines.index("}")]) + "\n"


_CONVERT = "sdy-convert-global-to-local{%s}, sdy-drop-sharding-and-mesh"


def _combined(name: str, rgv3: bool = False):
    """The file as its RUN lines combine it; `rgv3`: converted with `enable-rgv3=true`, whose
    replica groups name the mesh, so the mesh stays (once)."""
    part1, part2 = _parts((FOLDER / name).read_text())
    convert = "sdy-convert-global-to-local{enable-rgv3=true}" if rgv3 else _CONVERT % ""
    pieces = []
    if name == "sdy_all_gather.mlir":  # its own RUN lines: two conversions, renamed
        for new, option in (("combined_gather", "false"), ("per_dim_gather", "true")):
            pieces.append(run_passes(parse_module(part1.replace("all_gather_test", new)),
                                     convert.replace("}", f" per-dim-all-gather={option}}}") if rgv3
                                     else _CONVERT % f"per-dim-all-gather={option}"))
    else:
        pieces.append(run_passes(parse_module(part1), convert))
        if "@parallel_" in part1 and "@sequential_" not in part1:
            pieces.append(run_passes(parse_module(part1.replace("parallel_", "sequential_")),
                                     "sdy-drop-sharding-and-mesh"))
    if rgv3:
        for m in pieces[1:]:
            for op in m.meshes():
                op.erase()
    return parse_module("".join(_body(m) for m in pieces) + part2)


@pytest.mark.parametrize("record", MANIFEST, ids=[r["file"] for r in MANIFEST])
def test_shardy_executable_case(record):
    assert interpret(_combined(record["file"]), func="main") == ()


def test_rgv3_keeps_every_check():
    """`enable-rgv3`: collectives name mesh axes (`#stablehlo.replica_group_mesh_axes`), which
    the interpreter resolves on the mesh; every file still passes."""
    texts = {r["file"]: _combined(r["file"], rgv3=True) for r in MANIFEST}
    assert sum("replica_group_mesh_axes" in print_module(m) for m in texts.values()) >= 10
    for name, module in texts.items():
        assert interpret(module, func="main") == (), name


def test_a_failing_check_is_reported():
    module = _combined("sdy_all_reduce.mlir")
    text = re.sub(r"dense<1111>", "dense<1112>", print_module(module))
    with pytest.raises(SdyError, match="values differ"):
        interpret(text, func="main")


# Every collective mode of StableHLO's process groups over 2 replicas x 2 partitions
# (cross_replica, cross_replica_and_partition, flattened_ids, cross_partition), replica_id and
# partition_id, as `run_parallel` runs them.
_PROCESS_GROUPS = """
func.func @prog(%x: tensor<2xi32>) -> (TYPES) {
  %a = "stablehlo.all_reduce"(%x) <{replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>}> ({
  ^bb0(%p: tensor<i32>, %q: tensor<i32>):
    %s = stablehlo.add %p, %q : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<2xi32>) -> tensor<2xi32>
  %g = "stablehlo.all_gather"(%x) <{all_gather_dim = 0 : i64, channel_handle = #stablehlo.channel_handle<handle = 1,
    type = 1>, replica_groups = dense<[[0], [1]]> : tensor<2x1xi64>}> : (tensor<2xi32>) -> tensor<4xi32>
  %f = "stablehlo.all_reduce"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 2, type = 1>,
    replica_groups = dense<[[0, 3], [1, 2]]> : tensor<2x2xi64>, use_global_device_ids}> ({
  ^bb0(%p: tensor<i32>, %q: tensor<i32>):
    %s = stablehlo.maximum %p, %q : tensor<i32>
    stablehlo.return %s : tensor<i32>
  }) : (tensor<2xi32>) -> tensor<2xi32>
  %cp = "stablehlo.collective_permute"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 3, type = 1>,
    source_target_pairs = dense<[[0, 1], [1, 0]]> : tensor<2x2xi64>}> : (tensor<2xi32>) -> tensor<2xi32>
  %cr = "stablehlo.collective_permute"(%x) <{source_target_pairs = dense<[[0, 1]]> : tensor<1x2xi64>}>
    : (tensor<2xi32>) -> tensor<2xi32>
  %t = "stablehlo.all_to_all"(%x) <{concat_dimension = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>,
    split_count = 2 : i64, split_dimension = 0 : i64}> : (tensor<2xi32>) -> tensor<2xi32>
  %tp = "stablehlo.all_to_all"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 4, type = 1>,
    concat_dimension = 0 : i64, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, split_count = 2 : i64,
    split_dimension = 0 : i64}> : (tensor<2xi32>) -> tensor<2xi32>
  %r = stablehlo.replica_id : tensor<ui32>
  %pi = stablehlo.partition_id : tensor<ui32>
  return %a, %g, %f, %cp, %cr, %t, %tp, %r, %pi : TYPES
}
"""
_TYPES = ["tensor<2xi32>", "tensor<4xi32>"] + ["tensor<2xi32>"] * 5 + ["tensor<ui32>"] * 2


def _process_groups_module() -> str:
    types = ", ".join(_TYPES * 4)
    args = "".join(f"  %x{i} = stablehlo.constant dense<[{10 ** i}, {2 * 10 ** i}]> : tensor<2xi32>\n" for i in range(4))
    results = ", ".join(f"%r#{i}" for i in range(4 * len(_TYPES)))
    return (_PROCESS_GROUPS.replace("TYPES", ", ".join(_TYPES)) + f"func.func @main() -> ({types}) {{\n{args}"
            f'  %r:{4 * len(_TYPES)} = "interpreter.run_parallel"(%x0, %x1, %x2, %x3) {{programs = [[@prog, @prog], '
            f"[@prog, @prog]]}} : ({', '.join(['tensor<2xi32>'] * 4)}) -> ({types})\n  return {results} : {types}\n}}\n")


_EVAL = """
import numpy as np
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir
from jaxlib.mlir.dialects import stablehlo
ctx = jax_mlir.make_ir_context()
ctx.enable_multithreading(False)
stablehlo.register_interpreter_dialect(ctx)
with ctx, ir.Location.unknown():
    m = ir.Module.parse(PAYLOAD["text"])
    RESULT = [np.array(r).tolist() for r in stablehlo.eval_module(m, [])]
"""


@pytest.mark.jaxlib
def test_run_parallel_process_groups_match_jaxlib():
    """Replicas and partitions: every collective mode gives the reference interpreter's values."""
    text = _process_groups_module()
    env = oracle_module()._interpreter_env(4)  # the oracle's thread shim on small hosts
    want = cached([_EVAL, text], lambda: run_child(_EVAL, {"text": text}, env=env, crash_retries=3))
    got = interpret(text, func="main")
    assert [np.asarray(g).tolist() for g in got] == want


_COLLECTIVE = re.compile(r'"stablehlo\.(all_gather|all_reduce|reduce_scatter|all_to_all|collective_permute)"')
_CONVERT_TEXT = """
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir, passmanager
RESULT = []
for text, options in PAYLOAD:
    ctx = jax_mlir.make_ir_context()
    ctx.enable_multithreading(False)
    with ctx, ir.Location.unknown():
        m = ir.Module.parse(text)
        passmanager.PassManager.parse("builtin.module(sdy-convert-global-to-local{%s})" % options).run(m.operation)
        RESULT.append(m.operation.get_asm(print_generic_op_form=True))
"""
_OPTIONS = ("per-dim-all-gather=true", "combine-multi-dimension-reduce-scatter=true", "enable-rgv3=true")
_MESH_AXES = re.compile(r"#stablehlo\.replica_group_mesh_axes<[^>]*>[^>]*>")


@pytest.mark.jaxlib
def test_options_keep_numbers_and_emit_jaxlibs_collectives():
    """Each option of `sdy-convert-global-to-local` on every file: the checks still pass, and
    the StableHLO collectives emitted are jaxlib's (kind and count, and the mesh-axes replica
    groups of `enable-rgv3`)."""
    items = []
    for record in MANIFEST:
        part1, part2 = _parts((FOLDER / record["file"]).read_text())
        for options in ("", *_OPTIONS):
            items.append((part1, options))
    want = cached([_CONVERT_TEXT, items], lambda: run_child(_CONVERT_TEXT, items))
    checked = 0
    for (part1, options), theirs in zip(items, want):
        ours = print_module(run_passes(parse_module(part1), f"sdy-convert-global-to-local{{{options}}}"), generic=True)
        assert sorted(_COLLECTIVE.findall(ours)) == sorted(_COLLECTIVE.findall(theirs)), (options, part1)
        assert sorted(_MESH_AXES.findall(ours)) == sorted(_MESH_AXES.findall(theirs)), (options, part1)
        checked += 1
    assert checked == 4 * len(MANIFEST)
    for name in ("sdy_all_gather.mlir", "sdy_reduce_scatter.mlir"):
        part1, part2 = _parts((FOLDER / name).read_text())
        for options in _OPTIONS[:2]:  # (rgv3's numbers: test_rgv3_keeps_every_check)
            renamed = [(new, run_passes(parse_module(part1.replace("all_gather_test", new)), _CONVERT % options))
                       for new in ("combined_gather", "per_dim_gather")] if "all_gather" in name \
                else [(None, run_passes(parse_module(part1), _CONVERT % options))]
            module = parse_module("".join(_body(m) for _, m in renamed) + part2)
            assert interpret(module, func="main") == ()
