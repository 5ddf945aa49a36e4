"""`sdy-convert-global-to-local`'s `collective_permute` (spec execute.md §6, collectives.md
§3.1): every device receives its new tile from the sender of §3.1 (the holder whose mesh
coordinates differ from the receiver's on the fewest axes, ties to the smallest mesh position);
a device that holds it already keeps it (no self pair), and a tile that is all padding is not
sent. Random
reshards on 2x2x2 and 2x4 meshes (uneven dims included), checked against that rule written
out device by device here, every device's buffer against numpy, and the local modules in
jaxlib's reference interpreter (the same bits as our engine)."""

from __future__ import annotations

import numpy as np
import pytest

from sdy_passes.common._value_shardings import get_sharding
from sdy_passes.execution import execute
from sdy_passes.parser import parse_module
from sdy_passes.partition import GLOBAL_STEPS
from sdy_passes.pass_manager import run_passes
from sharding import DeviceMesh, Mesh, TensorSharding
from tests.conftest import needs_shared
from tests.sdy_passes import execute_oracle
from tests.sdy_passes.test_execute_reference import differences, jaxlib_results

ORACLE = execute_oracle.oracle_module()

MESHES = {"2x2x2": '<["x"=2, "y"=2, "z"=2]>', "2x4": '<["x"=2, "y"=4]>'}


def _spec_pairs(src: TensorSharding, dst: TensorSharding, mesh: Mesh, shape) -> list[list[int]]:
    """`[sender, receiver]` per receiver that lacks its new tile's data, by collectives.md
    §3.1, device by device."""
    dm = DeviceMesh(mesh)
    have, want = dm.index_map(src, shape), dm.index_map(dst, shape)
    ids = np.asarray(mesh.devices).reshape(-1).tolist()
    coords = {d: np.unravel_index(p, mesh.shape) for p, d in enumerate(ids)}
    pairs = []
    for r in ids:
        tile = want[r]
        if any(s.stop <= s.start for s in tile):
            continue  # all padding: nothing is sent
        if have[r] == tile:
            continue  # it holds it: nothing is sent
        holders = [d for d in ids if have[d] == tile]
        differ = [sum(a != b for a, b in zip(coords[d], coords[r])) for d in holders]
        pairs.append([min(zip(differ, [ids.index(d) for d in holders], holders))[2], r])
    return sorted(pairs, key=lambda p: p[1])


def _module(mesh: str, shape, src: str, dst: str) -> str:
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    return (f"sdy.mesh @mesh = {mesh}\n"
            f"func.func @main(%a: {t} {{sdy.sharding = #sdy.sharding<@mesh, {src}>}}) -> "
            f"({t} {{sdy.sharding = #sdy.sharding<@mesh, {dst}>}}) {{\n"
            f"  %0 = sdy.reshard %a <@mesh, {dst}> : {t}\n  return %0 : {t}\n}}")


def _dims(rng, axes) -> str:
    """Each axis on dim 0, dim 1 or neither, in a random order."""
    dims = [[], []]
    for a in rng.permutation(axes):
        k = rng.integers(3)
        if k < 2:
            dims[k].append(str(a))
    return "[" + ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in dims) + "]"


def _draws(seed: int, n: int):
    """Random reshards whose plan has a collective_permute."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        name = ["2x2x2", "2x4"][rng.integers(2)]
        axes = ["x", "y", "z"] if name == "2x2x2" else ["x", "y"]
        shape = (int(rng.integers(1, 10)), int(rng.integers(1, 10)))
        text = _module(MESHES[name], shape, _dims(rng, axes), _dims(rng, axes))
        g = run_passes(parse_module(text), GLOBAL_STEPS)
        if any(op.name == "sdy.collective_permute" for op in g.walk()):
            out.append(text)
    return out


# [{"x"}] -> [{"y"}] on 2x2x2: device (0,1,1) takes tile 1 from (1,1,1), which differs on x only,
# not from (1,0,0), the holder with the smallest id
REGRESSION = _module(MESHES["2x2x2"], (4, 2), '[{"x"}, {}]', '[{"y"}, {}]')


TEXTS = [REGRESSION, *_draws(35, 24)]


@pytest.mark.parametrize("text", TEXTS)
def test_permute_senders_are_the_specs(text):
    g = run_passes(parse_module(text), GLOBAL_STEPS)
    mesh = Mesh.parse(text.splitlines()[0].split("= ", 1)[1])
    expected = []
    for op in g.walk():
        if op.name == "sdy.collective_permute":
            src = get_sharding(op.operands[0]) or TensorSharding.replicated("mesh", len(op.result.type.shape))
            expected.append(_spec_pairs(src, op.properties["out_sharding"], mesh, op.result.type.shape))
    shape = tuple(g.lookup_symbol("main").properties["function_type"].type.inputs[0].shape)
    local = run_passes(g, "sdy-convert-global-to-local")
    found = [op.properties["source_target_pairs"].to_numpy().reshape(-1, 2).tolist()
             for op in local.walk() if op.name == "stablehlo.collective_permute"]
    for pairs in found:  # StableHLO's rule: a source sends once, a target receives once
        assert len({s for s, _ in pairs}) == len(pairs) == len({t for _, t in pairs}), pairs
    # a holder that several devices need sends in rounds (one collective_permute each)
    assert sorted(p for pairs in found for p in pairs) == sorted(p for pairs in expected for p in pairs)
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    out = execute(text, a).outputs[0]
    for d, buf in out.per_device():
        index = out.index_map()[d]
        assert np.array_equal(buf[tuple(slice(0, s.stop - s.start) for s in index)], a[index]), d


@needs_shared(execute_oracle.ORACLE)
@pytest.mark.jaxlib
def test_local_modules_run_bit_identical_in_jaxlibs_interpreter():
    runs = []
    for text in TEXTS:
        shape = tuple(int(n) for n in text.split("tensor<", 1)[1].split("xf32")[0].split("x"))
        runs.append(execute(text, np.arange(np.prod(shape), dtype=np.float32).reshape(shape), numerics="reference"))
    runs = {str(k): run for k, run in enumerate(runs)}
    for name, r in jaxlib_results(runs).items():
        assert r is not None and "error" not in r, (name, r)
        assert not differences(name, runs[name], r)
