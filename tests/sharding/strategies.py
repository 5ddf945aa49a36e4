"""Hypothesis strategies for meshes and shardings: valid ones, mutated (mostly invalid) ones, and
noisy-but-equivalent text (whitespace, clause order, hex integers)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from sharding import AxisRef, DimensionSharding, Mesh, MeshAxis, TensorSharding
from sharding.axes import can_merge, merge, quote, sort_and_merge
from sharding.mesh import symbol_name
from tests.sharding.oracle import Case

NAMES = ["a", "b", "c", "x", "y", "z", "data", "x.y", "", 'q"r', "b\\s", "é"]
SIZES = [1, 2, 3, 4, 6, 8, 12, 16]


@st.composite
def meshes(draw, max_axes: int = 3, allow_maximal: bool = True) -> Mesh:
    n = draw(st.integers(0, max_axes))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=n, max_size=n, unique=True))
    sizes = [draw(st.sampled_from(SIZES)) for _ in names]
    total = math.prod(sizes)
    device_ids: tuple[int, ...] = ()
    if n and total <= 64 and draw(st.booleans()):
        device_ids = tuple(draw(st.permutations(range(total))))
    elif n == 0 and allow_maximal and draw(st.booleans()):
        device_ids = (draw(st.integers(0, 7)),)
    return Mesh(tuple(MeshAxis(a, s) for a, s in zip(names, sizes)), device_ids)


def _factorizations(n: int) -> list[list[int]]:
    """All ways to write n as an ordered product of at least two factors > 1."""
    out = []

    def rec(rest: int, acc: list[int]) -> None:
        if rest == 1:
            if len(acc) >= 2:
                out.append(acc)
            return
        for d in range(2, rest + 1):
            if rest % d == 0:
                rec(rest // d, acc + [d])

    rec(n, [])
    return out


def _merge_neighbours(refs: list[AxisRef], mesh: Mesh) -> list[AxisRef]:
    out: list[AxisRef] = []
    for ref in refs:
        if out and can_merge(out[-1], ref):
            out[-1] = merge(out[-1], ref, mesh)
        else:
            out.append(ref)
    return out


@st.composite
def shardings(draw, mesh: Mesh, mesh_or_ref: str | Mesh = "mesh", rank: int | None = None) -> TensorSharding:
    """A sharding Shardy accepts on a tensor of `rank` dims over `mesh`."""
    if mesh.is_maximal:
        return TensorSharding(mesh_or_ref, ())
    if rank is None:
        rank = draw(st.integers(0, 4))
    targets = rank + 2  # dims, then replicated, then unreduced
    lists: list[list[AxisRef]] = [[] for _ in range(targets)]
    for axis in mesh.axes:
        options = _factorizations(axis.size)
        if options and draw(st.booleans()):
            factors = draw(st.sampled_from(options))
            pre = 1
            pieces = []
            for f in factors:
                pieces.append(AxisRef.sub(axis.name, pre, f))
                pre *= f
        else:
            pieces = [AxisRef(axis.name)]
        for piece in pieces:
            where = draw(st.integers(-1, targets - 1))  # -1: unused
            if where >= 0:
                lists[where].append(piece)
    dims = []
    for d in range(rank):
        axes = draw(st.permutations(lists[d])) if lists[d] else []
        axes = _merge_neighbours(list(axes), mesh)
        is_closed = draw(st.booleans())
        priority = draw(st.one_of(st.none(), st.integers(0, 12)))
        if is_closed and not axes:
            priority = None
        dims.append(DimensionSharding(tuple(axes), is_closed, priority))
    return TensorSharding(
        mesh_or_ref, tuple(dims), sort_and_merge(lists[rank], mesh), sort_and_merge(lists[rank + 1], mesh)
    )


@st.composite
def tensor_types(draw, rank: int, dynamic: bool = True) -> str:
    dims = [draw(st.sampled_from(["0", "1", "2", "3", "7", "8", "16"] + (["?"] if dynamic else []))) for _ in range(rank)]
    return "tensor<" + "".join(d + "x" for d in dims) + "f32>"


@st.composite
def valid_cases(draw) -> tuple[Case, TensorSharding]:
    mesh = draw(meshes())
    inline = draw(st.integers(0, 4)) == 0
    sharding = draw(shardings(mesh, mesh if inline else "mesh"))
    case = Case(mesh.body(), str(sharding), draw(tensor_types(sharding.rank)))
    return case, sharding


# -- noisy text ----------------------------------------------------------------------------------

_SPACES = st.sampled_from(["", "", " ", "  ", "\n", " \t"])


@st.composite
def noisy_text(draw, sharding: TensorSharding) -> str:
    """An equivalent spelling of `sharding`: free whitespace, clause order, hex integers."""
    sp = lambda: draw(_SPACES)  # noqa: E731

    def num(n: int) -> str:
        return hex(n) if n >= 0 and draw(st.integers(0, 3)) == 0 else str(n)

    def ref(r: AxisRef) -> str:
        if r.sub_axis_info is None:
            return quote(r.name)
        i = r.sub_axis_info
        return f"{quote(r.name)}{sp()}:{sp()}({sp()}{num(i.pre_size)}{sp()}){sp()}{num(i.size)}"

    def refs(rs) -> str:
        return f",{sp()}".join(ref(r) + sp() for r in rs)

    def dim(d: DimensionSharding) -> str:
        body = refs(d.axes)
        if not d.is_closed:
            body = f"{body},{sp()}?" if d.axes else "?"
        text = "{" + sp() + body + sp() + "}"
        return text if d.priority is None else f"{text}{sp()}p{d.priority}"

    m = sharding.mesh_or_ref
    if isinstance(m, Mesh):
        axes = f",{sp()}".join(f"{quote(a.name)}{sp()}={sp()}{num(a.size)}" for a in m.axes)
        mesh_text = f"mesh{sp()}<{sp()}[{sp()}{axes}{sp()}]"
        if m.device_ids:
            mesh_text += f"{sp()},{sp()}device_ids{sp()}={sp()}[" + f",{sp()}".join(num(i) for i in m.device_ids) + "]"
        mesh_text += f"{sp()}>"
    else:
        mesh_text = symbol_name(m)
    clauses = []
    if sharding.replicated_axes:
        clauses.append(f"replicated{sp()}={sp()}{{{sp()}{refs(sharding.replicated_axes)}}}")
    if sharding.unreduced_axes:
        clauses.append(f"unreduced{sp()}={sp()}{{{sp()}{refs(sharding.unreduced_axes)}}}")
    clauses = draw(st.permutations(clauses))
    text = f"#sdy.sharding<{sp()}{mesh_text}{sp()},{sp()}[{sp()}" + f",{sp()}".join(dim(d) + sp() for d in sharding.dim_shardings) + "]"
    for c in clauses:
        text += f"{sp()},{sp()}{c}"
    return text + sp() + ">"


@st.composite
def noisy_cases(draw) -> Case:
    case, sharding = draw(valid_cases())
    return Case(case.mesh, draw(noisy_text(sharding)), case.type)


# -- mutations ----------------------------------------------------------------------------------


def _all_refs(s: TensorSharding) -> list[AxisRef]:
    return list(s.axis_refs())


@st.composite
def mutated_sharding(draw, mesh: Mesh, s: TensorSharding) -> TensorSharding:
    """`s` with one change that usually breaks a verifier rule."""
    dims = [list(d.axes) for d in s.dim_shardings]
    meta = [(d.is_closed, d.priority) for d in s.dim_shardings]
    rep, unr = list(s.replicated_axes), list(s.unreduced_axes)
    lists = dims + [rep, unr]
    target = draw(st.sampled_from(lists))
    names = list(mesh.axis_names)
    kind = draw(st.sampled_from([
        "unknown", "duplicate", "priority", "reverse", "split", "full_and_sub", "bad_sub", "bad_sub", "overlap",
    ]))
    if kind == "unknown":
        # At most one unknown name per list: Shardy's mesh comparator has undefined behaviour
        # for two different unknown names.
        target.insert(draw(st.integers(0, len(target))), AxisRef("zz"))
    elif kind == "duplicate" and _all_refs(s):
        target.insert(draw(st.integers(0, len(target))), draw(st.sampled_from(_all_refs(s))))
    elif kind == "priority" and meta:
        i = draw(st.integers(0, len(meta) - 1))
        dims[i] = []
        meta[i] = (True, draw(st.integers(0, 5)))
    elif kind == "reverse":
        target.reverse()
    elif kind == "split" and names:
        name = draw(st.sampled_from(names))
        size = mesh.axis_size(name)
        divs = [d for d in range(2, size) if size % d == 0]
        if divs:
            d = draw(st.sampled_from(divs))
            target.extend([AxisRef.sub(name, 1, d), AxisRef.sub(name, d, size // d)])
    elif kind == "full_and_sub" and names:
        name = draw(st.sampled_from(names))
        target.append(AxisRef(name))
        draw(st.sampled_from(lists)).append(AxisRef.sub(name, 1, 2))
    elif kind == "bad_sub" and names:
        name = draw(st.sampled_from(names))
        target.append(AxisRef.sub(name, draw(st.sampled_from([-1, 0, 1, 2, 3, 4])), draw(st.sampled_from([0, 1, 2, 3, 4, 8]))))
    elif kind == "overlap" and names:
        name = draw(st.sampled_from(names))
        target.append(AxisRef.sub(name, draw(st.sampled_from([1, 2])), draw(st.sampled_from([2, 4]))))
        draw(st.sampled_from(lists)).append(AxisRef.sub(name, draw(st.sampled_from([1, 2])), draw(st.sampled_from([2, 4]))))
    new_dims = tuple(DimensionSharding(tuple(a), c, p) for a, (c, p) in zip(dims, meta))
    return TensorSharding(s.mesh_or_ref, new_dims, tuple(rep), tuple(unr))


_TEXT_EDITS = [
    ("{}", "{}p3"), ("{}", "{?, ?}"), ("{}", '{?, "a"}'), ("{}", '{"a",}'), ("{}", "{a}"), ("]", "],"),
    ("]", "], foo={\"b\"}"), ("]", "], replicated={}"), ("]", "], unreduced=max{\"a\"}"),
    ("]", "], unreduced{\"a\"}"), ("]", "], replicated={\"a\"}, replicated={\"b\"}"), ("}", "}phigh"),
    ("}", "}p01"), ("}", "}p-1"), ("}", "}p9999999999999999999"), ("}", "} p1"), ("@mesh", "@other"),
    ("@mesh", "<[\"a\"=2]>"), ("@mesh", "\"mesh\""), ('"', ""), ("{", ""), ("}", ""), ("[", ""), (",", ""),
    (",", ",,"), (":", ""), (")", ""), ("(", "(-"), ("]", "]]"), ("<", "<<"),
]


@st.composite
def mutated_cases(draw) -> Case:
    """A case with one thing wrong: the sharding, its text, the type's rank or the mesh."""
    case, sharding = draw(valid_cases())
    mesh = Mesh.parse(case.mesh)
    what = draw(st.sampled_from(["sharding", "sharding", "sharding", "text", "text", "rank", "mesh"]))
    if what == "sharding" and isinstance(sharding.mesh_or_ref, str):
        return Case(case.mesh, str(draw(mutated_sharding(mesh, sharding))), case.type)
    if what == "text":
        old, new = draw(st.sampled_from(_TEXT_EDITS))
        text = case.sharding
        spots = [i for i in range(len(text)) if text.startswith(old, i)]
        if spots:
            i = draw(st.sampled_from(spots))
            text = text[:i] + new + text[i + len(old):]
        return Case(case.mesh, text, case.type)
    if what == "rank":
        return Case(case.mesh, case.sharding, draw(tensor_types(draw(st.integers(0, 4)))))
    edits = [
        ('=', '=0'), ('=', '=-'), ('[', '["a"=2, "a"=2, '), (']>', '], device_ids=[1, 1]>'),
        (']>', '], device_ids=[0, 2, 1, 3, 4, 5]>'), (']>', '], device_ids=[-1]>'), (']>', '], device_ids=[]>'),
        ('<[', '<[], device_ids=[1, 0]><['), ('<[]>', '<[], device_ids=[3]>'),
    ]
    old, new = draw(st.sampled_from(edits))
    if old not in case.mesh:
        return case
    return Case(case.mesh.replace(old, new, 1), case.sharding, case.type)


@st.composite
def sub_axis_cases(draw) -> Case:
    """Random (often invalid) sub-axes of two axes, to exercise the sub-axis rules."""
    sizes = {"a": draw(st.sampled_from([4, 8, 12, 16])), "b": draw(st.sampled_from([2, 6, 8]))}
    mesh = Mesh(tuple(MeshAxis(n, s) for n, s in sizes.items()))
    ref = st.one_of(
        st.sampled_from([AxisRef("a"), AxisRef("b")]),
        st.builds(AxisRef.sub, st.sampled_from(["a", "b"]), st.sampled_from([0, 1, 2, 3, 4, 8]), st.sampled_from([0, 1, 2, 3, 4, 8])),
        st.builds(AxisRef.sub, st.sampled_from(["a", "b"]), st.sampled_from([1, 2, 4]), st.sampled_from([2, 4])),
    )
    rank = draw(st.integers(1, 3))
    dims = tuple(DimensionSharding(tuple(draw(st.lists(ref, max_size=3))), draw(st.booleans())) for _ in range(rank))
    sharding = TensorSharding("mesh", dims, tuple(draw(st.lists(ref, max_size=2))), tuple(draw(st.lists(ref, max_size=2))))
    return Case(mesh.body(), str(sharding), draw(tensor_types(rank)))


def as_constraint(case: Case) -> Case:
    """The same sharding as the bare body of a pretty `sdy.sharding_constraint`."""
    text = case.sharding
    if text.startswith("#sdy.sharding<"):
        text = text[len("#sdy.sharding"):]
    return Case(case.mesh, text, case.type, "constraint")
