"""Parsing and printing of sdy attributes: spec tables (§2), entry points, round trips."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sharding import (
    AxisRef, DimensionSharding, ManualAxes, Mesh, MeshAxis, MeshTable, ShardingError, ShardingParseError,
    TensorSharding, TensorShardingPerValue,
)
from sharding.syntax import (
    parse_attribute, parse_manual_axes_body, parse_mesh_body, parse_tensor_sharding,
    parse_tensor_sharding_body, parse_tensor_sharding_per_value_body, print_body,
)
from tests.sharding.strategies import NAMES, meshes, noisy_text, shardings

# -- §2.2: what Shardy prints -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, printed",
    [
        ('<@m, [{"a"} , {"b" , ?}  ]>', '#sdy.sharding<@m, [{"a"}, {"b", ?}]>'),
        ('<@m, [{}, {}], unreduced={"a"}, replicated={"b"}>', '#sdy.sharding<@m, [{}, {}], replicated={"b"}, unreduced={"a"}>'),
        ('<@m, [{"a": (1) 2}, {}]>', '#sdy.sharding<@m, [{"a":(1)2}, {}]>'),
        ('<@m, [{"a"}, {?} p1]>', '#sdy.sharding<@m, [{"a"}, {?}p1]>'),
        ('#sdy.sharding<@m, []>', '#sdy.sharding<@m, []>'),
        ('sharding<@mesh_xy, [{"x"}, {"y"}]>', '#sdy.sharding<@mesh_xy, [{"x"}, {"y"}]>'),
        ('#sdy.sharding<mesh<["x"=2, "y"=4]>, [{"x"}, {"y"}]>', '#sdy.sharding<mesh<["x"=2, "y"=4]>, [{"x"}, {"y"}]>'),
        ('<@"my mesh", [{"x.y"}]>', '#sdy.sharding<@"my mesh", [{"x.y"}]>'),
        ('<@m, [{"a", ?}p0, {}]>', '#sdy.sharding<@m, [{"a", ?}p0, {}]>'),
        ('#sdy<sharding<@m, [{}]>>', '#sdy.sharding<@m, [{}]>'),
        ('<@m, [{"q\\"r"}, {"\\0A"}]> // comment', '#sdy.sharding<@m, [{"q\\22r"}, {"\\0A"}]>'),
    ],
)
def test_sharding_prints_like_shardy(text, printed):
    assert str(TensorSharding.parse(text)) == printed


@pytest.mark.parametrize(
    "text, printed",
    [
        ('<["a" = 2 , "b"= 2]>', '#sdy.mesh<["a"=2, "b"=2]>'),
        ('<["a"=2, "b"=2], device_ids=[0, 1, 2, 3]>', '#sdy.mesh<["a"=2, "b"=2]>'),  # iota dropped
        ('<["a"=1], device_ids=[0]>', '#sdy.mesh<["a"=1]>'),
        ('<["a"=2], device_ids=[1, 0]>', '#sdy.mesh<["a"=2], device_ids=[1, 0]>'),
        ('<[]>', '#sdy.mesh<[]>'),
        ('#sdy.mesh<[], device_ids=[3]>', '#sdy.mesh<[], device_ids=[3]>'),
        ('mesh<["x"=0x10]>', '#sdy.mesh<["x"=16]>'),
        ('sdy.mesh @mesh_xy = <["x"=4, "y"=2]>', '#sdy.mesh<["x"=4, "y"=2]>'),
    ],
)
def test_mesh_prints_like_shardy(text, printed):
    assert str(Mesh.parse(text)) == printed


def test_mesh_kinds():
    assert Mesh.parse("<[]>").is_empty and not Mesh.parse("<[]>").is_maximal
    maximal = Mesh.parse("<[], device_ids=[3]>")
    assert maximal.is_maximal and maximal.maximal_device_id == 3 and maximal.devices == (3,)
    one = Mesh.parse('<["a"=1]>')
    assert not one.is_maximal and one.total_size == 1


# -- §2.3: parse errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, message",
    [
        ('<@m, [{?, "a"}]>', "expected '}'"),
        ("<@m, [{?, ?}]>", "expected '}'"),
        ('<@m, [{"a"}phigh]>', "expecting priority in format 'p<number>', got: phigh"),
        ('<@m, [{"a"}p-1]>', "expecting priority in format 'p<number>', got: p"),
        ('<@m, [{"a"}p01]>', "priorities with leading zeros are not allowed, got: p01"),
        ("<@m, [{?}p9999999999999999999]>", "expecting integer priority, got: p9999999999999999999"),
        ('<@m, [{"a",}]>', "expected string"),
        ("<@m, [{a}]>", "expected string"),
        ("<@m, [{}], replicated={}>", "expected string"),
        ('<@m, [{"a"}, {}],>', "failed to parse Sdy_TensorSharding, expected valid named axis list after comma"),
        ('<@m, [{}], foo={"b"}>', "failed to parse Sdy_TensorSharding, expected valid named axis list after comma"),
        ('<@m, [{}], replicated={"a"}, replicated={"b"}>',
         "failed to parse Sdy_TensorSharding, expected valid named axis list after comma"),
        ('<@m, [{}], unreduced=max{"a"}>', "expected '{'"),
        ('<@m, [{}], unreduced{"a"}>', "expected '='"),
        ("<mesh<[\"a\"=2], device_ids=[]>, [{}]>", "expected integer value"),
        ('<["a"=2]>, [{}]>', "expected attribute value"),
        ('#sdy.sharding<@m, [{"a"]>', "unbalanced '{' character in pretty dialect name"),
        ('<@m, [{"a\\q"}]>', "unknown escape in string literal"),
        ('<@m, [{"a}]>', "expected '\"' in string literal"),
        ('<@m, [{"a":(1)2.5}]>', "expected integer value"),
        ('<mesh<["a"=99999999999999999999]>, []>', "integer value too large"),
    ],
)
def test_parse_error_messages(text, message):
    with pytest.raises(ShardingParseError) as info:
        parse_tensor_sharding(text)
    assert info.value.message == message
    assert isinstance(info.value, ShardingError) and isinstance(info.value, ValueError)


def test_parse_error_shows_position_and_caret():
    text = '<@m, [{"a"}p01, {}]>'
    with pytest.raises(ShardingParseError) as info:
        parse_tensor_sharding(text)
    assert 0 < info.value.pos <= len(text)
    lines = str(info.value).splitlines()
    assert lines[1].strip() == text and lines[2].strip() == "^"


@pytest.mark.parametrize(
    "text, message",
    [
        ('<["a"=2, "b"=0]>', "axis size must be at least 1, got: 0"),
        ('<["a"=2, "a"=4]>', 'duplicate axis name: "a"'),
        ('<["a"=2], device_ids=[1, 1]>', "sorted device ids must be iota(product(axes)), got: 1, 1"),
        ('<["a"=2, "b"=2], device_ids=[0, 2, 1, 3, 4, 5]>',
         "total product of axis sizes must match total number of device ids, got: 4 != 6"),
        ("<[], device_ids=[-1]>", "device id must be non-negative, got: -1"),
        ("<[], device_ids=[1, 0]>", "axes is empty and device_ids has more than one element"),
    ],
)
def test_mesh_verified_while_parsing(text, message):
    with pytest.raises(ShardingParseError) as info:
        Mesh.parse(text)
    assert info.value.message == message


def test_shardy_main_reduction_forms():
    # Newer than jaxlib 0.10.2: only with shardy_main=True.
    s = parse_tensor_sharding('<@m, [{}], unreduced=max{"a"}>', shardy_main=True)
    assert s.reduction_op == "max" and str(s) == '#sdy.sharding<@m, [{}], unreduced=max{"a"}>'
    s = parse_tensor_sharding('<@m, [{}], unreduced=sum{"a"}>', shardy_main=True)
    assert str(s) == '#sdy.sharding<@m, [{}], unreduced={"a"}>'
    s = parse_tensor_sharding('<@m, [{}], unreduced{"a"}>', shardy_main=True)
    assert s.unreduced_axes == (AxisRef("a"),) and s.reduction_op == "sum"


# -- entry points for embedded text (used by sdy_passes) -----------------------------------------


def test_parse_attribute_in_larger_text():
    text = 'func.func @f(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@m, [{"x", ?}p2]>}) -> ...'
    start = text.index("#sdy")
    value, end = parse_attribute(text, start)
    assert isinstance(value, TensorSharding)
    assert text[end:].startswith("})") and str(value) == text[start:end]


@pytest.mark.parametrize(
    "text, cls",
    [
        ('#sdy.sharding<@m, [{"x"}]>', TensorSharding),
        ('#sdy.sharding_per_value<[<@m, [{"x"}]>, <mesh<[]>, []>]>', TensorShardingPerValue),
        ("#sdy.sharding_per_value<[]>", TensorShardingPerValue),
        ('#sdy.mesh<["x"=2]>', Mesh),
        ('#sdy<manual_axes{"a", "b"}>', ManualAxes),
        ("#sdy<manual_axes{}>", ManualAxes),
        ('#sdy<mesh<["x"=2]>>', Mesh),
        ('mesh<["x"=2]>', Mesh),
        ('sharding<@m, [{"x"}]>', TensorSharding),
    ],
)
def test_parse_attribute_kinds(text, cls):
    value, end = parse_attribute("  " + text + " xyz", 2)
    assert isinstance(value, cls) and end == 2 + len(text)
    again, _ = parse_attribute(str(value))
    assert again == value


def test_bare_bodies_as_pretty_ops_print_them():
    op = 'sdy.sharding_constraint %0 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>'
    s, end = parse_tensor_sharding_body(op, op.index("<@"))
    assert print_body(s) == '<@mesh, [{"x"}, {}]>' and op[end:] == " : tensor<8x8xf32>"
    s, _ = parse_tensor_sharding_body('<mesh<["a"=2]>, [{}]>')
    assert s.mesh_or_ref == Mesh((MeshAxis("a", 2),))
    m, end = parse_mesh_body('sdy.mesh @m = <["x"=2, "y"=4]> ', 14)
    assert print_body(m) == '<["x"=2, "y"=4]>' and end == 30
    manual, _ = parse_manual_axes_body('{"x", "y"}')
    assert manual == ManualAxes(("x", "y")) and print_body(manual) == '{"x", "y"}'
    per_value, _ = parse_tensor_sharding_per_value_body('[<@m, [{"x"}]>, <@m, []>]')
    assert print_body(per_value) == '[<@m, [{"x"}]>, <@m, []>]'
    assert str(per_value) == '#sdy.sharding_per_value<[<@m, [{"x"}]>, <@m, []>]>'


def test_error_pos_is_absolute():
    text = 'prefix <@m, [{"a",}]>'
    with pytest.raises(ShardingParseError) as info:
        parse_tensor_sharding_body(text, 7)
    assert text[info.value.pos] == "}"


def test_mesh_table():
    table = MeshTable.parse('sdy.mesh @mesh_0 = <["a"=4, "b"=2]>\nsdy.mesh @mesh_1 = <["x"=2, "y"=2, "z"=2]>')
    assert table.names == ("mesh_0", "mesh_1") and table.same_devices("mesh_0", "mesh_1")
    assert str(table) == 'sdy.mesh @mesh_0 = <["a"=4, "b"=2]>\nsdy.mesh @mesh_1 = <["x"=2, "y"=2, "z"=2]>'
    with pytest.raises(ShardingParseError, match="redefinition of symbol named 'm'"):
        MeshTable.parse("sdy.mesh @m = <[]> sdy.mesh @m = <[]>")


# -- round trips ---------------------------------------------------------------------------------

_ints = st.integers(-(2**63), 2**63 - 1)
_refs = st.one_of(
    st.builds(AxisRef, st.sampled_from(NAMES + ["\x00", "tab\t", "\udcff"])),
    st.builds(AxisRef.sub, st.sampled_from(NAMES), _ints, _ints),
)
_dims = st.builds(
    DimensionSharding, st.lists(_refs, max_size=3).map(tuple), st.booleans(),
    st.one_of(st.none(), st.integers(0, 2**63 - 1)),
)


@st.composite
def any_sharding(draw):
    mesh_or_ref = draw(st.one_of(st.sampled_from(["m", "mesh_xy", "my mesh", "a.b$c", "9"]), meshes()))
    return TensorSharding(
        mesh_or_ref, tuple(draw(st.lists(_dims, max_size=4))), tuple(draw(st.lists(_refs, max_size=3))),
        tuple(draw(st.lists(_refs, max_size=3))),
    )


@given(any_sharding())
def test_round_trip_any_sharding_value(s):
    assert TensorSharding.parse(str(s)) == s
    assert parse_tensor_sharding_body(s.body())[0] == s


@given(meshes())
def test_round_trip_mesh(mesh):
    assert Mesh.parse(str(mesh)) == mesh
    assert Mesh.parse(mesh.body()) == mesh


@given(st.data())
def test_noisy_text_parses_to_the_same_value(data):
    mesh = data.draw(meshes())
    s = data.draw(shardings(mesh, data.draw(st.sampled_from(["mesh", mesh]))))
    assert TensorSharding.parse(data.draw(noisy_text(s))) == s


@given(st.lists(any_sharding(), max_size=3), st.lists(st.sampled_from(NAMES), max_size=3))
def test_round_trip_per_value_and_manual_axes(shardings_, names):
    per_value = TensorShardingPerValue(tuple(shardings_))
    assert TensorShardingPerValue.parse(str(per_value)) == per_value
    manual = ManualAxes(tuple(names))
    assert ManualAxes.parse(str(manual)) == manual


@pytest.mark.parametrize(
    "text, at",
    [
        # A wrong token is reported at the end of the previous token, as MLIR does ...
        ('<@m, [{"a"}   {}]>', '   {}]>'),
        ('<@m, [{"a"}, {}], replicated {"a"}>', ' {"a"}>'),
        ('<@m, [{"a"},\n  ]>', "\n  ]>"),
        # ... other errors at the current token.
        ("<@m, [{a}]>", "a}]>"),
        ('<@m, [{"a"}p01  , {}]>', ", {}]>"),
        ('<@m, [{"a":(1)x}]>', "x}]>"),
        ('<@m, [{}],  foo>', "foo>"),
        ('<mesh<["a"=2], ids=[1]>, []>', "ids=[1]>, []>"),
    ],
)
def test_error_positions(text, at):
    with pytest.raises(ShardingParseError) as info:
        parse_tensor_sharding(text)
    assert text[info.value.pos:] == at
