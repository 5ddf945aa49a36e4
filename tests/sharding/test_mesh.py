"""Mesh values, mesh tables and symbol names; printing checked against jaxlib."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharding import ManualAxes, Mesh, MeshAxis, MeshTable, ShardingError, TensorShardingPerValue
from tests.sharding.oracle import ORACLE_CASES, jaxlib_print_attributes
from tests.sharding.strategies import NAMES, meshes, shardings


def test_mesh_properties():
    mesh = Mesh.parse('<["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>')
    assert mesh.axis_names == ("x", "y") and mesh.shape == (2, 4) and mesh.total_size == 8
    assert mesh.devices == (7, 6, 5, 4, 3, 2, 1, 0) and mesh.axis_size("y") == 4 and mesh.axis_index("y") == 1
    assert mesh.has_axis("x") and not mesh.has_axis("z") and mesh.axis_index("z") is None
    with pytest.raises(ShardingError, match='unknown axis name: "z"'):
        mesh.axis_size("z")
    assert Mesh.of(x=2, y=4) == Mesh((MeshAxis("x", 2), MeshAxis("y", 4))) == Mesh.parse('#sdy.mesh<["x"=2, "y"=4]>')
    assert Mesh.of(x=2, y=4).devices == tuple(range(8))
    assert Mesh([MeshAxis("x", 2)], [1, 0]).device_ids == (1, 0)  # lists become tuples
    assert hash(Mesh.of(x=2)) == hash(Mesh.parse('<["x"=2]>'))


def test_mesh_table_lookup():
    table = MeshTable.of(m=Mesh.of(x=2), n=Mesh.of(y=2))
    assert table["m"] == Mesh.of(x=2) and "n" in table and list(table) == ["m", "n"] and len(table) == 2
    assert table.get("q") is None
    with pytest.raises(ShardingError, match="unknown mesh: @q"):
        table["q"]
    with pytest.raises(ShardingError, match="redefinition of symbol named 'm'"):
        MeshTable((("m", Mesh()), ("m", Mesh())))


SYMBOLS = ["mesh", "my mesh", "9", "a.b$c", "_x", "é", 'q"r', "m-1"]


@st.composite
def printable_items(draw):
    names = draw(st.lists(st.sampled_from(SYMBOLS), min_size=1, max_size=3, unique=True))
    table = MeshTable(tuple((n, draw(meshes())) for n in names))
    kind = draw(st.sampled_from(["per_value", "manual", "mesh"]))
    if kind == "per_value":
        values = []
        for _ in range(draw(st.integers(0, 3))):
            name = draw(st.sampled_from(names))
            values.append(draw(shardings(table[name], name)))
        attr = TensorShardingPerValue(tuple(values))
    elif kind == "manual":
        attr = ManualAxes(tuple(draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True))))
    else:
        attr = draw(meshes())
    return table, attr


@pytest.mark.jaxlib
def test_printing_matches_jaxlib():
    items = []

    @settings(max_examples=ORACLE_CASES // 2, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(printable_items())
    def collect(item):
        items.append(item)

    collect()
    results = jaxlib_print_attributes([(str(t) + "\n", str(a)) for t, a in items])
    for (table, attr), result in zip(items, results):
        assert result["ok"], (str(table), str(attr), result)
        assert result["meshes"] == str(table).splitlines()
        assert result["attr"] == str(attr)


EDITS = [("[", ""), ("]", ""), ("<", ""), (">", ""), ('"', '"x'), ("{", "{,"), ("}", ",}"), ("<[", "<[,"),
         ("manual_axes", "manual_axe"), ("]", "],"), ("}", "}phigh"), ('"', ""), (",", ""), ("=", "=-"),
         ("@", ""), ("(", "(x"), ("{", "{?, "), ("}>", "} x>")]
# Messages that depend on the text around the attribute (an attribute dictionary here).
CONTEXT = ("expected '}' in attribute dictionary", "created with unregistered dialect")


@st.composite
def edited_attributes(draw):
    table, attr = draw(printable_items())
    text = str(attr)
    old, new = draw(st.sampled_from(EDITS))
    spots = [i for i in range(len(text)) if text.startswith(old, i)]
    if spots:
        i = draw(st.sampled_from(spots))
        text = text[:i] + new + text[i + len(old):]
    return str(table) + "\n", text


@pytest.mark.jaxlib
def test_edited_attributes_fail_like_jaxlib():
    from sharding import ShardingParseError
    from sharding.syntax import parse_attribute

    items = []

    @settings(max_examples=ORACLE_CASES, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(edited_attributes())
    def collect(item):
        items.append(item)

    collect()
    bad = []
    for (prefix, text), theirs in zip(items, jaxlib_print_attributes(items)):
        try:
            value, end = parse_attribute(text)
            ours = {"ok": True, "attr": str(value)} if not text[end:].strip() else None
        except ShardingParseError as e:
            ours = {"ok": False, "error": e.message}
        if ours is None or any(c in theirs.get("error", "") for c in CONTEXT):
            continue
        if theirs["ok"] != ours["ok"] or theirs.get("attr", theirs.get("error")) != ours.get("attr", ours.get("error")):
            bad.append(f"{text!r}\n  jaxlib: {theirs}\n  ours:   {ours}")
    assert not bad, "\n".join(bad[:10])
