"""Fuzz: any text only ever raises `ShardingError` (never another exception, never hangs).

`SHARDING_FUZZ_EXAMPLES=100000` runs a long fuzz; the default is short.
"""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharding import Mesh, MeshTable, ShardingError, TensorSharding, verify
from sharding.syntax import (
    parse_attribute, parse_manual_axes_body, parse_mesh, parse_mesh_body, parse_mesh_table,
    parse_tensor_sharding, parse_tensor_sharding_body, parse_tensor_sharding_per_value_body,
)
from sharding.verify import sharding_errors
from tests.sharding.strategies import meshes, noisy_text, shardings

EXAMPLES = int(os.environ.get("SHARDING_FUZZ_EXAMPLES", "300"))
fuzz = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

ALPHABET = st.sampled_from(list('<>[]{}(),=:?@#"\\ -pxa019\n.') + ["sdy.sharding", "mesh", "replicated", "unreduced", "device_ids", "\\22", "0x", "é", "\x00"])
ENTRY_POINTS = [
    lambda t: parse_attribute(t, 0), parse_tensor_sharding_body, parse_tensor_sharding_per_value_body,
    parse_mesh_body, parse_manual_axes_body, parse_tensor_sharding, parse_mesh, parse_mesh_table,
]
TABLE = MeshTable.of(m=Mesh.of(x=2, y=4), mesh=Mesh.of(a=8, b=2))


def only_sharding_errors(text):
    for entry in ENTRY_POINTS:
        try:
            value = entry(text)
        except ShardingError:
            continue
        if isinstance(value, tuple):
            value = value[0]
        if isinstance(value, TensorSharding):
            for mesh in (TABLE, TABLE["m"]):
                try:
                    sharding_errors(value, mesh=mesh, shape=(8,) * value.rank, check_divisibility=True)
                    value.local_shape((7,) * value.rank, mesh)
                    value.replicated_mesh_axes(mesh)
                except ShardingError:
                    pass


@fuzz
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_random_token_soup(text):
    only_sharding_errors(text)


@fuzz
@given(st.text(max_size=60))
def test_random_text(text):
    only_sharding_errors(text)


@fuzz
@given(st.data())
def test_mutated_valid_text(data):
    mesh = data.draw(meshes())
    text = data.draw(noisy_text(data.draw(shardings(mesh, data.draw(st.sampled_from(["m", "mesh", mesh]))))))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(text)))
        j = data.draw(st.integers(i, min(len(text), i + 3)))
        text = text[:i] + data.draw(st.lists(ALPHABET, max_size=2).map("".join)) + text[j:]
    only_sharding_errors(text)
    only_sharding_errors("  " + text[: len(text) // 2])


@fuzz
@given(st.data())
def test_verify_any_valid_sharding(data):
    mesh = data.draw(meshes())
    s = data.draw(shardings(mesh))
    verify(s, mesh=mesh, shape=(3,) * s.rank)


def _both_paths(text, rule):
    from sharding.syntax import _Parser

    try:
        p = _Parser(text, 0)
        precise = (rule(p), p.prev_end)
    except ShardingError:
        precise = None
    try:
        p = _Parser(text, 0, fast=True)
        fast = (rule(p), p.fast_end())
    except Exception:  # noqa: BLE001 - the fast path gives up by raising; then only precise counts
        return
    assert fast == precise, (text, fast, precise)


@fuzz
@given(st.data())
def test_fast_path_agrees_with_precise_path(data):
    """Whenever the regex fast path finishes, it gives what the MLIR-exact path gives."""
    from sharding.syntax import _Parser

    mesh = data.draw(meshes())
    text = data.draw(noisy_text(data.draw(shardings(mesh, data.draw(st.sampled_from(["m", "mesh", mesh]))))))
    for _ in range(data.draw(st.integers(0, 2))):
        i = data.draw(st.integers(0, len(text)))
        text = text[:i] + data.draw(ALPHABET) + text[i + data.draw(st.integers(0, 2)):]
    for rule in (_Parser.attribute, _Parser.tensor_sharding):
        _both_paths(text, rule)
        _both_paths(text[len("#sdy.sharding"):], rule)
