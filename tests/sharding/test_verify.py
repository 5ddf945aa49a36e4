"""The verifier: one test per Shardy rule (spec §3), and differential runs against jaxlib."""

import pytest
from hypothesis import HealthCheck, given, settings

from sharding import (
    InvalidMeshError, InvalidShardingError, Mesh, MeshAxis, MeshTable, TensorSharding, verify, verify_mesh,
)
from sharding.mesh import mesh_verifier_error
from sharding.verify import sharding_errors
from tests.sharding.oracle import ORACLE_CASES, Case, jaxlib_results, mismatches
from tests.sharding.strategies import as_constraint, mutated_cases, noisy_cases, sub_axis_cases, valid_cases

M_AB = '<["a"=2, "b"=4]>'
M_A8 = '<["a"=8, "b"=2]>'


def check(mesh_text, dims, shape=(8, 8), **kwargs):
    verify(TensorSharding.parse(f"<@mesh, {dims}>"), mesh=Mesh.parse(mesh_text), shape=shape, **kwargs)


@pytest.mark.parametrize(
    "mesh, dims, shape, message",
    [
        ('<[], device_ids=[3]>', '[{}]', (8,), "a maximal sharding can only have a sharding with rank 0 and no replicated or unreduced axes."),
        (M_AB, '[{"a"}]', (8, 8), "sharding doesn't match tensor rank: 1 != 2"),
        (M_AB, '[{"a"}, {}p3]', (8, 8), "dim 1 is empty and closed but has a priority"),
        ('<["a"=2]>', '[{"c"}, {}]', (8, 8), 'unknown axis name: "c"'),
        ('<["a"=2]>', '[{"a"}, {"a"}]', (8, 8), 'duplicate axis ref: "a"'),
        (M_A8, '[{}, {"a":(2)2}], replicated={"a":(2)2}', (8, 8), 'duplicate axis ref: "a":(2)2'),
        (M_A8, '[{}, {"a":(2)2, "a":(4)2}]', (8, 8), 'two consecutive sub-axes can be merged: "a":(2)2, "a":(4)2'),
        ('<["c"=2, "a"=2, "b"=2]>', '[{}, {}], replicated={"a", "c"}', (8, 8), "replicated axes are not ordered w.r.t. mesh"),
        ('<["a"=2, "b"=2]>', '[{}, {}], unreduced={"b", "a"}', (8, 8), "unreduced axes are not ordered w.r.t. mesh"),
        ('<["a"=2, "b"=2]>', '[{"a"}, {}], replicated={"a"}', (8, 8), 'duplicate axis ref: "a"'),
        (M_A8, '[{}, {"a"}], replicated={"a":(2)2}', (8, 8), 'both sub-axis and full-axis are used for axis name: "a"'),
        (M_A8, '[{}, {"a":(0)2}]', (8, 8), 'sub-axis pre-size must be at least 1: "a":(0)2'),
        (M_A8, '[{}, {"a":(2)1}]', (8, 8), 'sub-axis sizes must be greater than 1: "a":(2)1'),
        (M_A8, '[{}, {"a":(3)2}]', (8, 8), "sub-axis next pre-size 6 doesn't divide the size of the full axis 8: \"a\":(3)2"),
        (M_A8, '[{}, {"a":(1)8}]', (8, 8), 'sub-axis size is equal to the full axis size: "a":(1)8'),
        ('<["a"=8]>', '[{"a":(1)4, "a":(2)4}, {}]', (8, 8), 'overlapping sub-axes: "a":(1)4, "a":(2)4'),
        ('<["a"=8]>', '[{"a":(1)2}, {"a":(1)4}]', (8, 8), 'overlapping sub-axes: "a":(1)2, "a":(1)4'),
        ('<["a"=4]>', '[{"a":(1)2, "a":(2)2}]', (8,), 'two consecutive sub-axes can be merged: "a":(1)2, "a":(2)2'),
        ('<["a"=4]>', '[{}], replicated={"a":(1)2, "a":(2)2}', (8,), 'two consecutive sub-axes can be merged: "a":(1)2, "a":(2)2'),
        ('<["a"=4]>', '[{}], replicated={"a":(2)2, "a":(1)2}', (8,), "replicated axes are not ordered w.r.t. mesh"),
        (M_AB, '[{"a"}, {}]', "!stablehlo.token",
         "non-shaped tensors can only have a sharding with rank 0 and no replicated or unreduced axes. "
         "type: '!stablehlo.token', sharding: #sdy.sharding<@mesh, [{\"a\"}, {}]>"),
        (M_AB, '[{"a"}]', "tensor<*xf32>", "only ranked tensors can have a sharding. type: 'tensor<*xf32>'"),
    ],
)
def test_verifier_messages(mesh, dims, shape, message):
    with pytest.raises(InvalidShardingError) as info:
        check(mesh, dims, shape)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "mesh, dims, shape",
    [
        ('<["x"=8, "y"=2, "z"=3]>', '[{"x"}, {"y"}, {"z"}]', (7, 3, 8)),  # divisibility not checked
        ('<["a"=4]>', '[{"a"}, {}]', (0, 8)),  # size-0 dims may be sharded
        (M_A8, '[{"a":(4)2}, {"a":(1)2}]', (8, 8)),  # different lists are not merge-checked
        (M_A8, '[{"a":(1)2, "a":(4)2}, {}]', (8, 8)),  # not contiguous
        (M_A8, '[{"a":(2)2}, {}], replicated={"a":(1)2, "a":(4)2}', (8, 8)),
        (M_A8, '[{"a":(1)2}, {}], replicated={"a":(2)2}', (8, 8)),
        ('<["a"=1]>', '[{"a"}, {}]', (8, 8)),
        ("<[]>", "[{}]", (8,)),
        ("<[], device_ids=[3]>", "[]", ()),
        (M_AB, '[{"a", ?}p0, {?}p3]', (8, 8)),
        (M_AB, '[{"a"}, {}]', "tensor<?x8xf32>"),  # a dynamic dim
        ("<[]>", "[]", "!stablehlo.token"),
    ],
)
def test_verifier_accepts(mesh, dims, shape):
    check(mesh, dims, shape)


def test_check_divisibility():
    with pytest.raises(InvalidShardingError, match="^dim 0 with size 7 is not divisible by its sharded size 2$"):
        check('<["x"=2]>', '[{"x"}, {}]', (7, 8), check_divisibility=True)
    check('<["x"=2]>', '[{"x"}, {}]', "tensor<?x8xf32>", check_divisibility=True)  # dynamic dims are skipped
    with pytest.raises(InvalidShardingError, match="not divisible"):
        check('<["x"=2]>', '[{"x"}, {}]', "tensor<7x8xbf16>", check_divisibility=True)
    check('<["x"=2]>', '[{"x"}, {}]', (7, 8))


def test_unknown_mesh_and_mesh_table():
    table = MeshTable.parse('sdy.mesh @mesh_0 = <["a"=4, "b"=2]>\nsdy.mesh @mesh_1 = <["x"=2, "y"=2, "z"=2]>')
    verify(TensorSharding.parse('<@mesh_1, [{"z"}]>'), mesh=table, shape=(4,))
    with pytest.raises(InvalidShardingError, match="^unknown mesh: @other$"):
        verify(TensorSharding.parse('<@other, [{"z"}]>'), mesh=table, shape=(4,))
    with pytest.raises(InvalidShardingError, match='^unknown axis name: "z"$'):
        verify(TensorSharding.parse('<@mesh_0, [{"z"}]>'), mesh=table, shape=(4,))
    # An inlined mesh wins over the one passed in.
    verify(TensorSharding.parse('<mesh<["q"=2]>, [{"q"}]>'), mesh=table, shape=(4,))


def test_manual_axes_of_parents():
    with pytest.raises(InvalidShardingError, match='operates on axis "a" which is already bound'):
        check(M_AB, '[{"b"}, {}], replicated={"a"}', manual_axes=("a",))


def test_verify_mesh():
    verify_mesh(Mesh.parse('<["a"=2], device_ids=[1, 0]>'))
    with pytest.raises(InvalidMeshError, match='^duplicate axis name: "a"$'):
        verify_mesh(Mesh((MeshAxis("a", 2), MeshAxis("a", 2))))
    with pytest.raises(InvalidMeshError, match="^axis size must be at least 1, got: 0$"):
        verify(TensorSharding.parse("<@m, []>"), mesh=Mesh.of(a=0), shape=())
    # Rule M7 cannot be reached through `Mesh` (iota device ids are dropped, as in Shardy).
    assert Mesh((MeshAxis("a", 2),), (0, 1)).device_ids == ()
    assert mesh_verifier_error((MeshAxis("a", 2),), (0, 1)) == (
        "if the ordered device ids are the same as iota(product(axes)), no need to specify them for simplicity"
    )


def test_sub_axis_errors_for_two_names_are_all_candidates():
    s = TensorSharding.parse('<@mesh, [{"a":(3)2}, {"b":(1)1}]>')
    errors = sharding_errors(s, mesh=Mesh.parse(M_A8), shape=(8, 8))
    assert set(errors) == {
        "sub-axis next pre-size 6 doesn't divide the size of the full axis 8: \"a\":(3)2",
        'sub-axis sizes must be greater than 1: "b":(1)1',
    }


def test_seed_doc_replicated_order():
    mesh = Mesh.parse('<["x"=2, "y"=8]>')
    bad = TensorSharding.parse('<@m, [{}], replicated={"y":(4)2, "x", "y":(1)2}>')
    with pytest.raises(InvalidShardingError, match="replicated axes are not ordered"):
        verify(bad, mesh=mesh, shape=(8,))
    from sharding.axes import sort_axis_refs

    good = TensorSharding("m", bad.dim_shardings, sort_axis_refs(bad.replicated_axes, mesh))
    assert str(good) == '#sdy.sharding<@m, [{}], replicated={"x", "y":(1)2, "y":(4)2}>'
    verify(good, mesh=mesh, shape=(8,))


# -- differential against jaxlib ---------------------------------------------------------------

N_CASES = ORACLE_CASES


def _collect(strategy, n=N_CASES):
    cases = []

    @settings(max_examples=n, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(case):
        cases.append(case)

    collect()
    return cases


def _assert_agrees(cases):
    bad = mismatches(cases, jaxlib_results(cases))
    assert not bad, f"{len(bad)} of {len(cases)} cases differ from jaxlib:\n" + "\n".join(bad[:10])


@pytest.mark.jaxlib
def test_valid_shardings_print_like_jaxlib():
    cases = _collect(valid_cases().map(lambda pair: pair[0]))
    results = jaxlib_results(cases)
    assert all(r["ok"] for r in results), [(c, r) for c, r in zip(cases, results) if not r["ok"]][:5]
    bad = mismatches(cases, results)
    assert not bad, "\n".join(bad[:10])


@pytest.mark.jaxlib
def test_noisy_text_prints_like_jaxlib():
    _assert_agrees(_collect(noisy_cases()))


@pytest.mark.jaxlib
def test_mutated_cases_fail_like_jaxlib():
    cases = _collect(mutated_cases(), 2 * N_CASES)
    _assert_agrees(cases)


@pytest.mark.jaxlib
def test_sub_axes_fail_like_jaxlib():
    _assert_agrees(_collect(sub_axis_cases()))


@pytest.mark.jaxlib
def test_spec_examples_agree_with_jaxlib():
    """The oracle script's section G cases, and a few more, through both implementations."""
    rows = [
        ('<["a"=2, "b"=0]>', None), ('<["a"=2, "a"=4]>', None), ('<["a"=2], device_ids=[1, 1]>', None),
        ('<["a"=2, "b"=2], device_ids=[0, 2, 1, 3, 4, 5]>', None), ('<["a"=2, "b"=2], device_ids=[0, 1, 2, 3]>', '[{"a"}, {"b"}]'),
        ('<[], device_ids=[-1]>', None), ('<[], device_ids=[1, 0]>', None), ('<["a"=2]>', '[{"c"}, {}]'),
        ('<["a"=2]>', '[{"a"}]'), ('<["a"=2]>', '[{"a"}, {"a"}]'), ('<["a"=2, "b"=2]>', '[{"a"}, {}], replicated={"a"}'),
        ('<["c"=2, "a"=2, "b"=2]>', '[{}, {}], replicated={"a", "c"}'), ('<["c"=2, "a"=2, "b"=2]>', '[{}, {}], replicated={"c", "a"}'),
        (M_AB, '[{"a"}, {}p3]'), (M_AB, '[{"a"}p0, {?}p3]'), (M_AB, '[{"a"}p01, {}]'),
        (M_A8, '[{}, {"a":(2)2}], replicated={"a":(2)2}'), (M_A8, '[{}, {"a"}], replicated={"a":(2)2}'),
        (M_A8, '[{}, {"a":(2)2, "a":(4)2}]'), (M_A8, '[{"a":(4)2}, {"a":(1)2}]'),
        (M_A8, '[{}, {}], replicated={"a":(4)2, "a":(1)2}'), (M_A8, '[{}, {"a":(2)1}]'), (M_A8, '[{}, {"a":(3)2}]'),
        (M_A8, '[{}, {"a":(4)4}]'), (M_A8, '[{}, {"a":(1)8}]'),
        ('<["a"=8, "b"=4]>', '[{"a":(2)4}, {"b":(2)2}], replicated={"a":(1)4}'),
        ('<["a"=8, "b"=4]>', '[{"a":(1)2, "b"}, {"a":(4)2}]'), ('<["a"=2]>', '[{"a", ?}, {?}]'),
        ('<["a"=2]>', '[{?, "a"}, {}]'), ('<["a"=2]>', '[{}, {}], unreduced={"a"}'),
        ('<["a"=2, "b"=2]>', '[{}, {}], unreduced={"b", "a"}'), ('<["a"=8]>', '[{"a":(1)2, "a":(4)2}, {}]'),
        ('<["a"=8]>', '[{"a":(1)2}, {"a":(1)4}]'), ('<["a"=1]>', '[{"a"}, {}]'), ('<["a"=2]>', '[{"a"}, {}], replicated={}'),
        ('<["a"=2, "b"=2]>', '[{}, {}], unreduced={"a"}, replicated={"b"}'), ('<["a"=2, "b"=2]>', '[{}, {}], unreduced=max{"a"}'),
        ('<["a"=2, "b"=2]>', '[{}, {}], replicated={"a"}, replicated={"b"}'),
        ('<["a"=2]>', '[{"a"}, {"a"}, {"b"}]'), ('<["a"=2]>', '[{"a"}, {}], unreduced{"a"}'),
        ('<["q\\22r"=2, "b\\\\s"=2]>', '[{"q\\"r"}, {"q\\"r"}]'), ('<["\\C3\\A9"=2]>', '[{"é"}, {"é":(1)1}]'),
    ]
    cases = [Case(m, f"#sdy.sharding<@mesh, {d if d is not None else '[{}, {}]'}>", "tensor<8x8xf32>") for m, d in rows]
    cases += [
        Case('<["x"=8, "y"=2, "z"=3]>', '#sdy.sharding<@mesh, [{"x"}, {"y"}, {"z"}]>', "tensor<7x3x8xf32>"),
        Case('<["a"=4]>', '#sdy.sharding<@mesh, [{"a"}, {}]>', "tensor<0x8xf32>"),
        Case("<[], device_ids=[3]>", "#sdy.sharding<@mesh, []>", "tensor<f32>"),
        Case("<[], device_ids=[3]>", "#sdy.sharding<@mesh, [{}]>", "tensor<8xf32>"),
        Case("<[]>", "#sdy.sharding<@mesh, [{}]>", "tensor<8xf32>"),
        Case('<["a"=2]>', '#sdy.sharding<@mesh, [{"a"}, {}]>', "!stablehlo.token"),
        Case('<["a"=2]>', '#sdy.sharding<@mesh, [{"a"}]>', "tensor<*xf32>"),
        Case('<["a"=2]>', '#sdy.sharding<@other, [{"a"}]>', "tensor<8xf32>"),
        Case('<["a"=2]>', '#sdy.sharding<mesh<["x"=2, "y"=4]>, [{"x"}, {"y"}]>', "tensor<8x8xf32>"),
    ]
    _assert_agrees(cases)


def test_no_type_like_an_op_without_results():
    from sharding.verify import NO_TYPE

    mesh = Mesh.parse('<["a"=2]>')
    verify(TensorSharding.parse("<@m, []>"), mesh=mesh, shape=NO_TYPE)
    with pytest.raises(InvalidShardingError, match="^a maximal sharding can only have a sharding with rank 0"):
        verify(TensorSharding.parse("<@m, [{}]>"), mesh=mesh, shape=NO_TYPE)
    with pytest.raises(InvalidShardingError, match="^a maximal sharding can only have a sharding with rank 0"):
        verify(TensorSharding.parse('<@m, [], replicated={"a"}>'), mesh=mesh, shape=NO_TYPE)
    verify(TensorSharding.parse("<@m, [{}]>"), mesh=mesh)  # shape=None: the type is just unknown


@pytest.mark.jaxlib
def test_pretty_op_bodies_like_jaxlib():
    """Bare `<@mesh, [...]>` bodies of `sdy.sharding_constraint` (no bracket pre-scan there)."""
    cases = [as_constraint(c) for c in _collect(valid_cases().map(lambda pair: pair[0]), N_CASES // 4)]
    cases += [as_constraint(c) for c in _collect(noisy_cases(), N_CASES // 4)]
    cases += [as_constraint(c) for c in _collect(mutated_cases(), N_CASES // 2)]
    _assert_agrees(cases)
