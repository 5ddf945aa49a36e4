"""`sdy-convert-global-to-local`'s `collective_permute` (spec execute.md §6, collectives.md
§3.1): every device receives its new tile from the sender of §3.1 (the holder whose mesh
coordinates differ from the receiver's on the fewest axes, ties to the smallest mesh position),
keeps it when it holds it already, and gets nothing for a tile that is all padding. Random
reshards on 2x2x2 and 2x4 meshes (uneven dims included), checked against that rule written
out device by device here, and every device's buffer against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from sdy_passes.common._value_shardings import get_sharding
from sdy_passes.execution import execute
from sdy_passes.parser import parse_module
from sdy_passes.partition import GLOBAL_STEPS
from sdy_passes.pass_manager import run_passes
from sharding import DeviceMesh, Mesh, TensorSharding

MESHES = {"2x2x2": '<["x"=2, "y"=2, "z"=2]>', "2x4": '<["x"=2, "y"=4]>'}


def _spec_pairs(src: TensorSharding, dst: TensorSharding, mesh: Mesh, shape) -> list[list[int]]:
    """`[sender, receiver]` per receiver with data, by collectives.md §3.1, device by device."""
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
            pairs.append([r, r])
            continue
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


@pytest.mark.parametrize("text", [REGRESSION, *_draws(35, 24)])
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
    found = [sorted(op.properties["source_target_pairs"].to_numpy().reshape(-1, 2).tolist(), key=lambda p: p[1])
             for op in local.walk() if op.name == "stablehlo.collective_permute"]
    assert found == expected
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    out = execute(text, a).outputs[0]
    for d, buf in out.per_device():
        index = out.index_map()[d]
        assert np.array_equal(buf[tuple(slice(0, s.stop - s.start) for s in index)], a[index]), d
