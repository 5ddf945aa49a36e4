"""HloSharding text against XLA's own parser and printer (jaxlib 0.10.2's `xla_client.HloSharding`).

XLA canonicalizes while it builds a sharding (`HloSharding::Subgroup`, `PartialTile`): what it
prints is what `HloSharding.parse(text)` must print. Texts XLA rejects must raise
`ShardingParseError`. XLA's parser also takes some texts its validator would refuse (duplicate
or negative device ids, iota sizes that do not match the tile); the library refuses those too,
so they are left out here. `SHARDING_HLO_EXAMPLES` sets how many random texts go to XLA.
"""

from __future__ import annotations

import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharding import HloSharding, ShardingError, ShardingParseError, from_hlo_sharding, to_hlo_sharding
from sharding import Mesh, TensorSharding
from tests.jaxlib_child import run_child

EXAMPLES = int(os.environ.get("SHARDING_HLO_EXAMPLES", "300"))

_XLA = r"""
from jax._src.lib import xla_client as xc
RESULT = []
for text in PAYLOAD:
    try:
        RESULT.append([True, str(xc.HloSharding.from_string(text))])
    except Exception as e:
        RESULT.append([False, str(e).splitlines()[-3] if "\n" in str(e) else str(e)])
"""


def xla(texts: list[str]) -> list[tuple[bool, str]]:
    return [tuple(r) for r in run_child(_XLA, texts)]


def ours(text: str) -> tuple[bool, str]:
    try:
        return True, str(HloSharding.parse(text))
    except ShardingParseError as e:
        return False, e.message


def _disagreements(texts):
    bad = []
    for text, (ok, printed) in zip(texts, xla(texts)):
        mine = ours(text)
        if mine[0] != ok or (ok and mine[1] != printed):
            bad.append(f"{text!r}: XLA {'prints ' + printed if ok else 'rejects: ' + printed}; here {mine}")
    return bad


# Canonicalization and rejection cases (the printed forms come from XLA in the child).
CASES = [
    "{devices=[4,1]<=[4] last_tile_dim_replicate}",          # size-1 subgroup dim dropped
    "{devices=[4]<=[4] last_tile_dim_replicate}",            # trivial tile: {replicated}
    "{devices=[1]<=[1] last_tile_dim_replicate}",
    "{devices=[2,2,1]<=[4] last_tile_dims={manual, replicated}}",
    "{devices=[2,1,2]<=[4] last_tile_dims={manual, replicated}}",
    "{devices=[1,4,1]<=[4] last_tile_dims={manual, replicated}}",
    "{devices=[1,1,4]<=[4] last_tile_dims={unreduced, replicated}}",
    "{devices=[2,2,1]<=[4] last_tile_dims={unreduced, replicated}}",
    "{devices=[1,4]<=[4] last_tile_dims={unreduced}}",
    "{devices=[1,8]7,6,5,4,3,2,1,0 last_tile_dims={manual}}",
    "{devices=[2,2,2]<=[8] last_tile_dims={replicated, manual}}",   # subgroups reordered
    "{devices=[2,2,2]<=[8] last_tile_dims={manual, manual}}",       # and merged
    "{devices=[2,2,2]<=[8] last_tile_dims={replicated, manual, replicated}}",
    "{devices=[2,2,2,2]<=[16] last_tile_dims={replicated, unreduced, manual}}",
    "{devices=[2,2,2]7,6,5,4,3,2,1,0 last_tile_dims={replicated, manual}}",
    "{devices=[2,2,2]7,6,5,4,3,2,1,0 last_tile_dims={unreduced, replicated}}",
    "{devices=[2,2,2,2]15,14,13,12,11,10,9,8,7,6,5,4,3,2,1,0 last_tile_dims={replicated, unreduced, manual}}",
    "{devices=[2,2]3,1,2,0 last_tile_dim_replicate}",               # devices sorted per group
    "{devices=[2,4]7,3,1,5,0,2,4,6 last_tile_dims={replicated}}",
    "{devices=[2,2]<=[4] last_tile_dims={}}",
    "{devices=[2,2]<=[2,2]T(0,1)}", "{devices=[2,2,2]<=[2,2,2]T(2,0,1)}", "{devices=[1]<=[1]}",
    "{devices=[0]<=[0]}", "{devices=[2147483648]<=[2147483648]}",
    "{devices=[9223372036854775807]<=[9223372036854775807]}",
    "{devices=[" + "1," * 64 + "2]<=[2]}",                         # 65 tile dims
    "{unknown}", "{unreduced}", "{replicated}", "{manual}", "{maximal device=3}", "{}", "{ }",
    "{{replicated}, {maximal device=2}}", "{ {replicated}, {devices=[2]0,1} }",
    "{ devices=[2,2] 0, 2, 1, 3 }", "{devices=[2]<=[ 2 ]}", "{devices=[02]0,1}",
    # rejected by XLA
    "{devices=[1]0}", "{devices=[2,2]<=[4]T(0)}", "{devices=[2,2]<=[2,2]T(0)}", "{devices = [2] 0 , 1}",
    "{devices=[2]0,\x1c1}", "{devices=[2]0,\x0b1}", "{devices=[\u0662,\u0662]<=[4]}", "{devices=[2]<=[2]T()}",
    "{devices=[0]}", "{devices=[2]0x1,0}", "{replicated", "replicated", "{devices=[2]0,1,}",
]


@pytest.mark.jaxlib
def test_canonical_forms_and_rejections_match_xla():
    bad = _disagreements(CASES)
    assert not bad, "\n".join(bad)


@st.composite
def hlo_texts(draw):
    rank = draw(st.integers(0, 3))
    n_sub = draw(st.integers(0 if rank else 1, 3))
    dims = [draw(st.sampled_from([1, 2, 2, 3, 4])) for _ in range(rank)] + [draw(st.sampled_from([1, 1, 2, 3, 4])) for _ in range(n_sub)]
    if math.prod(dims) > 256:
        dims = [min(d, 2) for d in dims]
    n = math.prod(dims)
    if draw(st.booleans()):
        devices = ",".join(map(str, draw(st.permutations(range(n)))))  # one device: XLA refuses
    else:
        factors = draw(st.permutations(_factor(n)))
        reshape = list(factors) or [1]
        order = draw(st.permutations(range(len(reshape))))
        devices = f"<=[{','.join(map(str, reshape))}]"
        if draw(st.booleans()):
            devices += f"T({','.join(map(str, order))})"
    kinds = [draw(st.sampled_from(["manual", "unreduced", "replicated"])) for _ in range(n_sub)]
    if kinds == ["replicated"] and draw(st.booleans()):
        tail = " last_tile_dim_replicate"
    else:
        tail = " last_tile_dims={" + ", ".join(kinds) + "}" if kinds else ""
    return f"{{devices=[{','.join(map(str, dims))}]{devices}{tail}}}"


def _factor(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@pytest.mark.jaxlib
def test_random_shardings_print_like_xla():
    texts = []

    @settings(max_examples=EXAMPLES, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(hlo_texts())
    def collect(text):
        texts.append(text)

    collect()
    bad = _disagreements(texts)
    assert not bad, f"{len(bad)} of {len(texts)} differ from XLA:\n" + "\n".join(bad[:10])


def test_fully_unreduced_exports_as_unreduced():
    mesh = Mesh.parse('<["a"=2, "b"=2]>')
    assert to_hlo_sharding(TensorSharding.parse('<@m, [{}, {}], unreduced={"a", "b"}>'), mesh) == "{unreduced}"
    assert (to_hlo_sharding(TensorSharding.parse('<@m, [{}, {}], unreduced={"a"}>'), mesh)
            == "{devices=[1,1,2,2]<=[4] last_tile_dims={unreduced, replicated}}")


def test_new_kinds_parse_and_convert():
    assert HloSharding.parse("{{replicated}, {devices=[2]1,0}}").elements[1] == HloSharding.parse("{devices=[2]1,0}")
    assert str(HloSharding.parse("{ }")) == "{}"
    mesh, s = from_hlo_sharding("{unreduced}", rank=2, num_devices=4)
    assert (mesh.body(), str(s)) == ('<["axis_0"=4]>', '#sdy.sharding<@mesh, [{}, {}], unreduced={"axis_0"}>')
    for text in ("{unknown}", "{{replicated}}"):
        with pytest.raises(ShardingError, match="expected a single known HloSharding"):
            from_hlo_sharding(text, rank=1)
