"""HloSharding text (export and import) and JAX NamedSharding conversion."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from sharding import (DeviceMesh, HloSharding, InvalidShardingError, Mesh, MeshAxis, MeshTable, ShardingError,
                      TensorSharding, from_hlo_sharding, to_hlo_sharding, to_named_sharding)
from tests.conftest import ORACLE_JSON, needs_shared
from tests.sharding import _device_oracle as oracle
from tests.sharding.strategies import shardings
from tests.sharding.test_simulate import small_meshes


def S(text: str) -> TensorSharding:
    return TensorSharding.parse(text)


def M(text: str) -> Mesh:
    return Mesh.parse(text)


# The spec's table (§7.3), each checked with jaxlib there.
SPEC_TABLE = [
    ('<["x"=2, "y"=4]>', '[{"x"}, {"y"}]', "{devices=[2,4]<=[8]}"),
    ('<["x"=2, "y"=4]>', '[{"y"}, {"x"}]', "{devices=[4,2]<=[2,4]T(1,0)}"),
    ('<["x"=2, "y"=4]>', '[{"y", "x"}, {}]', "{devices=[8,1]<=[2,4]T(1,0)}"),
    ('<["x"=2, "y"=4]>', '[{}, {"y"}]', "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    ('<["x"=2, "y"=4]>', '[{?}, {"y"}]', "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    ('<["x"=2, "y"=4]>', '[{"x"}, {}]', "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"),
    ('<["x"=2, "y"=4]>', '[{}, {}]', "{replicated}"),
    ('<["x"=2, "y"=2, "z"=2]>', '[{"z", "x"}, {"y"}]', "{devices=[4,2]<=[4,2]T(1,0)}"),
    ('<["x"=2, "y"=2, "z"=2]>', '[{"y"}, {}, {"x"}]', "{devices=[2,1,2,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}"),
    ('<["x"=8]>', '[{"x":(1)4}, {}]', "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"),
    ('<["x"=8]>', '[{"x":(2)4}, {}]', "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    ('<["a"=8]>', '[{"a":(1)2, "a":(4)2}, {}]', "{devices=[4,1,2]<=[2,2,2]T(0,2,1) last_tile_dim_replicate}"),
    ('<["a"=8]>', '[{"a":(4)2, "a":(1)2}, {}]', "{devices=[4,1,2]<=[4,2]T(1,0) last_tile_dim_replicate}"),
    ('<["a"=2, "b"=4]>', '[{"b":(1)2}, {"a", "b":(2)2}]', "{devices=[2,4]<=[2,2,2]T(1,0,2)}"),
    ('<["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>', '[{"x"}, {"y"}]', "{devices=[2,4]7,6,5,4,3,2,1,0}"),
    ('<["x"=2, "y"=4], device_ids=[0, 2, 4, 6, 1, 3, 5, 7]>', '[{"x"}, {"y"}]', "{devices=[2,4]0,2,4,6,1,3,5,7}"),
    # Ex 1-3 of §6
    ('<["x"=8]>', '[{"x":(2)2}, {"x":(1)2}]', "{devices=[2,2,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}"),
    ('<["x"=4, "y"=2], device_ids=[0, 2, 4, 6, 1, 3, 5, 7]>', '[{"x":(2)2, "y"}, {}], replicated={"x":(1)2}',
     "{devices=[4,1,2]0,1,2,3,4,5,6,7 last_tile_dim_replicate}"),
    ('<["a"=2, "b"=4], device_ids=[3, 1, 2, 0, 7, 5, 6, 4]>', '[{"b":(2)2}, {"a"}]',
     "{devices=[2,2,2]2,3,6,7,0,1,4,5 last_tile_dim_replicate}"),
    # §7.1 step 1 and unreduced subgroups (checked live below too)
    ('<[]>', '[{}, {}]', "{replicated}"),
    ('<[], device_ids=[3]>', '[]', "{maximal device=3}"),
    ('<["a"=1]>', '[{"a"}]', "{replicated}"),
    ('<["a"=2, "b"=2]>', '[{}, {}], unreduced={"a"}', "{devices=[1,1,2,2]<=[4] last_tile_dims={unreduced, replicated}}"),
    ('<["a"=2, "b"=4]>', '[{"b":(2)2}, {}], unreduced={"a"}',
     "{devices=[2,1,2,2]<=[4,2]T(1,0) last_tile_dims={unreduced, replicated}}"),
    ('<["a"=2, "b"=4], device_ids=[3, 1, 2, 0, 7, 5, 6, 4]>', '[{"b":(2)2}, {}], unreduced={"a"}',
     "{devices=[2,1,2,2]2,3,6,7,0,1,4,5 last_tile_dims={unreduced, replicated}}"),
]


@pytest.mark.parametrize("mesh, dims, hlo", SPEC_TABLE)
def test_to_hlo_sharding_spec_table(mesh, dims, hlo):
    assert to_hlo_sharding(S(f"#sdy.sharding<@m, {dims}>"), M(mesh)) == hlo


def test_inline_mesh_and_mesh_table():
    assert to_hlo_sharding(S('#sdy.sharding<mesh<["x"=2, "y"=4]>, [{"y"}, {"x"}]>')) == "{devices=[4,2]<=[2,4]T(1,0)}"
    table = MeshTable.parse('sdy.mesh @a = <["x"=8]> sdy.mesh @b = <["x"=2, "y"=4]>')
    assert to_hlo_sharding(S('#sdy.sharding<@b, [{"y"}, {"x"}]>'), table) == "{devices=[4,2]<=[2,4]T(1,0)}"
    with pytest.raises(InvalidShardingError, match="unknown mesh: @c"):
        to_hlo_sharding(S('#sdy.sharding<@c, [{"x"}]>'), table)
    with pytest.raises(ShardingError, match="pass its Mesh or a MeshTable"):
        to_hlo_sharding(S('#sdy.sharding<@c, [{"x"}]>'))


def test_manual_axes():
    mesh = M('<["x"=2, "y"=4]>')
    assert to_hlo_sharding(S('#sdy.sharding<@m, [{}, {}]>'), mesh, manual_axes=["x", "y"]) == "{manual}"
    assert (to_hlo_sharding(S('#sdy.sharding<@m, [{"y"}, {}]>'), mesh, manual_axes=["x"])
            == "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dims={manual}}")
    with pytest.raises(ShardingError, match='unknown manual axis: "w"'):
        to_hlo_sharding(S('#sdy.sharding<@m, [{}, {}]>'), mesh, manual_axes=["w"])


@needs_shared(ORACLE_JSON)
def test_recorded_hlo_shardings():
    cases = [c for c in json.loads(ORACLE_JSON.read_text()) if "hlo_sharding" in c]
    checked = 0
    for c in cases:
        if "mesh_axes" in c:
            mesh = Mesh(tuple(MeshAxis(a, s) for a, s in c["mesh_axes"]), tuple(c["device_ids"] or ()))
            s = S(c["sdy"])
            assert to_hlo_sharding(s, None if isinstance(s.mesh_or_ref, Mesh) else mesh) == c["hlo_sharding"], c
        elif "maximal" not in c["hlo_sharding"]:
            # GSPMD text -> our mesh + sharding -> the device map JAX recorded
            mesh, s = from_hlo_sharding(c["hlo_sharding"], rank=len(c["shape"]), num_devices=c["num_devices"])
            assert oracle.as_ranges(DeviceMesh(mesh).index_map(s, c["shape"])) == c["per_device"], c
        else:
            # JAX's GSPMDSharding reports the whole array on every device for `{maximal device=3}`;
            # the data lives on device 3 only.
            mesh, s = from_hlo_sharding(c["hlo_sharding"])
            assert DeviceMesh(mesh).index_map(s, c["shape"]) == {3: (slice(0, 4), slice(0, 4))}
        checked += 1
    assert checked == 32  # 22 sdy shardings (JAX-built, XLA-exported) and 10 GSPMD texts


# -- HloSharding text ---------------------------------------------------------------------------


@pytest.mark.parametrize("text, printed", [
    ("{devices=[2,2,2]<=[2,2,2]T(2,0,1)}", "{devices=[2,2,2]<=[4,2]T(1,0)}"),
    ("{devices=[2,4]<=[1,8]T(1,0)}", "{devices=[2,4]<=[8]}"),
    ("{ devices=[2,2] 0, 2, 1, 3 }", "{devices=[2,2]0,2,1,3}"),
    ("{devices=[2,1,2]0,1,2,3 last_tile_dims={replicated}}", "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"),
    ("{maximal device=3}", "{maximal device=3}"),
    ("{manual}", "{manual}"),
])
def test_hlo_text_parse_print(text, printed):
    assert str(HloSharding.parse(text)) == printed


@pytest.mark.parametrize("text, message", [
    ("{devices=[2,2]0,1,2}", "expected 4 devices for tile dims"),
    ("{devices=[2,2]<=[8]}", "to hold the 4 devices"),
    ("{devices=[2,2]<=[2,2]T(0,0)}", "permutation"),
    ("{devices=[2]0,1 last_tile_dims={partial}}", "expected a subgroup type"),
    ("{ devices = [2] 0, 1}", "expected a sharding: "),  # XLA's lexer reads `devices=` as one token
    ("devices=[2]0,1", "expected '{' to start sharding attribute"),
])
def test_hlo_text_errors(text, message):
    with pytest.raises(ShardingError, match=message):
        HloSharding.parse(text)


def test_from_hlo_sharding_factors_the_mesh():
    mesh, s = from_hlo_sharding("{devices=[2,2,2]<=[2,2,2]T(1,0,2) last_tile_dim_replicate}")
    assert mesh.body() == '<["axis_0"=2, "axis_1"=2, "axis_2"=2]>'
    assert str(s) == '#sdy.sharding<@mesh, [{"axis_1"}, {"axis_0"}]>'
    mesh, s = from_hlo_sharding("{devices=[2,4]<=[8]}", mesh_name="m")
    assert (mesh.body(), str(s)) == ('<["axis_0"=8]>', '#sdy.sharding<@m, [{"axis_0":(1)2}, {"axis_0":(2)4}]>')
    # Reactant.jl's case (a tile dim made of two mesh axes)
    mesh, s = from_hlo_sharding("{devices=[3,4]<=[2,3,2]T(1,0,2)}")
    assert (mesh.body(), str(s)) == ('<["axis_0"=2, "axis_1"=3, "axis_2"=2]>',
                                     '#sdy.sharding<@mesh, [{"axis_1"}, {"axis_0", "axis_2"}]>')
    assert to_hlo_sharding(s, mesh) == "{devices=[3,4]<=[2,3,2]T(1,0,2)}"
    # not a split of the transposed iota (4 vs 6): one axis per tile dim, with device_ids
    mesh, s = from_hlo_sharding("{devices=[6,2]<=[3,4]T(1,0)}")
    assert mesh.body() == '<["axis_0"=6, "axis_1"=2], device_ids=[0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]>'
    tiles = [[0, 4], [8, 1], [5, 9], [2, 6], [10, 3], [7, 11]]  # arange(12).reshape(3, 4).T.reshape(6, 2)
    index_map = DeviceMesh(mesh).index_map(s, (6, 4))
    for i, row in enumerate(tiles):
        for j, dev in enumerate(row):
            assert index_map[dev] == (slice(i, i + 1), slice(2 * j, 2 * j + 2))
    assert to_hlo_sharding(s, mesh) == "{devices=[6,2]0,4,8,1,5,9,2,6,10,3,7,11}"
    mesh, s = from_hlo_sharding("{devices=[1,2,2]<=[4] last_tile_dims={unreduced, replicated}}")
    assert str(s) == '#sdy.sharding<@mesh, [{}], unreduced={"axis_0":(1)2}>'
    assert from_hlo_sharding("{replicated}", rank=2, num_devices=4)[0].body() == '<["axis_0"=4]>'
    assert from_hlo_sharding("{maximal device=5}")[0].body() == "<[], device_ids=[5]>"


@pytest.mark.parametrize("text, kwargs, message", [
    ("{replicated}", {}, "expected rank="),
    ("{manual}", {}, "manual HloSharding"),
    ("{devices=[2,2]<=[4] last_tile_dims={manual}}", {}, "manual HloSharding"),
    ("{devices=[2,4]<=[8]}", {"rank": 3}, "expected 2 tensor dims"),
    ("{devices=[2,4]<=[8]}", {"num_devices": 4}, "expected num_devices=8"),
    ("{devices=[2]3,4}", {}, "to be 0..1 once each"),
])
def test_from_hlo_sharding_errors(text, kwargs, message):
    with pytest.raises(ShardingError, match=message):
        from_hlo_sharding(text, **kwargs)


@given(st.data())
def test_hlo_round_trip(data):
    mesh = data.draw(small_meshes())
    rank = data.draw(st.integers(0, 3))
    s = data.draw(shardings(mesh, rank=rank))
    text = to_hlo_sharding(s, mesh)
    assert str(HloSharding.parse(text)) == text
    m2, s2 = from_hlo_sharding(text, rank=rank, num_devices=mesh.total_size)
    again = to_hlo_sharding(s2, m2)
    # An explicit list equal to iota comes back as iota: Shardy drops iota device_ids.
    assert again == text or HloSharding.parse(again).tile_assignment().tolist() == HloSharding.parse(text).tile_assignment().tolist()
    shape = tuple(data.draw(st.integers(0, 9)) for _ in range(rank))
    if text not in ("{replicated}",) and "maximal" not in text:
        assert DeviceMesh(m2).index_map(s2, shape) == DeviceMesh(mesh).index_map(s, shape)


# -- live: XLA's export and printer, JAX's NamedSharding (one child process) ------------------------


@pytest.mark.jaxlib
def test_to_hlo_sharding_equals_xla_export_live():
    results = oracle.results()
    for case, res in zip(oracle.cases(), results["cases"]):
        mesh, s = M(case["mesh"]), S(case["sharding"])
        assert res["hlo"] == to_hlo_sharding(s, mesh), case
        if "jax_hlo" in res and not mesh.device_ids:
            # JAX writes permuted meshes into the device assignment, not the HloSharding (spec §8)
            assert res["jax_hlo"] == res["hlo"], case
    for text, printed in zip(oracle.HLO_TEXTS, results["printed"]):
        assert str(HloSharding.parse(text)) == printed


@pytest.mark.jaxlib
def test_to_named_sharding_live():
    named = 0
    for case, res in zip(oracle.cases(), oracle.results()["cases"]):
        mesh, s = M(case["mesh"]), S(case["sharding"])
        if s.unreduced_axes:  # P(..., unreduced=...) on the mesh axes (or pieces) they name
            want = sorted(r.name if r.sub_axis_info is None else f"{r.name}_{r.pre_size}_{r.sub_axis_info.size}"
                          for r in s.unreduced_axes)
            assert res["named_unreduced"] == want, (case, res)
            continue
        ours = oracle.as_ranges(DeviceMesh(mesh).index_map(s, case["shape"]))
        assert res["named_map"] == ours, case
        named += 1
    assert named >= 40


def test_to_named_sharding_errors_before_importing_jax(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jax", None)  # `import jax` fails; the test process never loads it
    with pytest.raises(ShardingError, match="has no axes"):
        to_named_sharding(S('#sdy.sharding<@m, []>'), M('<[], device_ids=[3]>'))
    with pytest.raises(ShardingError, match="unknown axis name"):
        to_named_sharding(S('#sdy.sharding<@m, [{}], unreduced={"z"}>'), M('<["x"=2]>'))
    with pytest.raises(ShardingError, match="import jax first"):
        to_named_sharding(S('#sdy.sharding<@m, [{"x"}]>'), M('<["x"=2]>'))


_MANUAL_CODE = r"""
import glob, os, re
import numpy as np
import jax
from jax._src import compiler
from jax._src.interpreters import mlir as jmlir
from jax._src.lib import xla_client as xc
from jax._src.lib.mlir import ir

DEVS = jax.devices()
RESULT = []
for k, case in enumerate(PAYLOAD["cases"]):
    text = PAYLOAD["template"].format(k=k, **case)
    with jmlir.make_ir_context():
        module = ir.Module.parse(text)
        opts = compiler.get_compile_options(num_replicas=1, num_partitions=8,
                                            device_assignment=np.array(DEVS).reshape(1, 8), backend=DEVS[0].client)
        compiler.backend_compile_and_load(DEVS[0].client, module, xc.DeviceList(tuple(DEVS)), opts, [])
    dump = glob.glob(os.path.join(PAYLOAD["dir"], f"*.m{k}.*after_shardy-xla*.txt"))[0]
    # the constraint becomes a copy of the add
    found = re.findall(r"copy\(%add[.0-9]*\), sharding=(\{[^}]*\}\}?)", open(dump).read())
    RESULT.append(found)
"""

_MANUAL_TEMPLATE = """module @m{k} attributes {{mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32}} {{
  sdy.mesh @mesh = {mesh}
  func.func public @main(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {{
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{{"x"}}, {{}}]>] out_shardings=[<@mesh, [{{"x"}}, {{}}]>] manual_axes={{"x"}} (%arg1: tensor<4x8xf32>) {{
      %1 = stablehlo.add %arg1, %arg1 : tensor<4x8xf32>
      %2 = sdy.sharding_constraint %1 <@mesh, {dims}> : tensor<4x8xf32>
      %3 = stablehlo.multiply %2, %2 : tensor<4x8xf32>
      sdy.return %3 : tensor<4x8xf32>
    }} : (tensor<8x8xf32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }}
}}"""


@pytest.mark.jaxlib
def test_manual_axes_equal_xla_export_live(tmp_path):
    """Inside `sdy.manual_computation`: the sharding XLA gives a constraint after its `shardy-xla` pass."""
    from tests.jaxlib_child import run_child

    cases = [dict(mesh='<["x"=2, "y"=4]>', dims=d) for d in ('[{"y"}, {}]', '[{"y":(2)2}, {}]', '[{}, {}]', '[{}, {"y"}]')]
    cases += [dict(mesh='<["x"=2, "y"=2, "z"=2]>', dims=d) for d in ('[{"z"}, {"y"}]', '[{"z", "y"}, {}]', '[{}, {"y"}]')]
    flags = f"--xla_force_host_platform_device_count=8 --xla_dump_to={tmp_path} --xla_dump_hlo_pass_re=shardy-xla"
    found = run_child(_MANUAL_CODE, {"cases": cases, "template": _MANUAL_TEMPLATE, "dir": str(tmp_path)},
                      env={"XLA_FLAGS": flags})
    for case, shardings_seen in zip(cases, found):
        ours = to_hlo_sharding(S(f"#sdy.sharding<@mesh, {case['dims']}>"), M(case["mesh"]), manual_axes=["x"])
        assert shardings_seen and set(shardings_seen) == {ours}, (case, shardings_seen, ours)
