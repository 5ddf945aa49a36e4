"""Hypothesis strategy of small valid modules, as MLIR text, for differential fuzzing.

`modules()` draws a module in generic op form: meshes (named, duplicated, empty, maximal, with
device ids), funcs calling each other, constants and iotas feeding element-wise ops, broadcasts
(of scalars and of vectors), slices, reshapes, transposes, dots, sharding constraints, reshards,
sharding groups, named and manual computations, while, case, optimization barriers and
all-reduces over mesh axes. Shardings use sub-axes, open and closed dims, priorities, replicated
and unreduced axes, by reference or with an inlined mesh; every one is valid for its value.

The text is valid MLIR as jaxlib parses it; the differential test canonicalises it through jaxlib
(parse + generic print) before feeding both sides.
"""

import hypothesis.strategies as st

F32 = "f32"
SHAPES = ((8, 8), (4, 8), (8,), ())
MAIN_AXES = (("a", 2), ("b", 2), ("c", 4))

# Meshes a module may declare: (axes, device_ids).
_MESHES = {
    "main": (MAIN_AXES, ()),
    "xmesh": ((("x", 2),), (1, 0)),
    "empty": ((), ()),
    "maximal": ((), (3,)),
}
_UNARY = ("negate", "abs", "sine", "exponential", "tanh")
_BINARY = ("add", "multiply", "maximum", "subtract")


def tensor_type(shape, element=F32):
    return "tensor<%s>" % "x".join([*map(str, shape), element])


def mesh_body(axes, device_ids):
    text = "[%s]" % ", ".join(f'"{n}"={s}' for n, s in axes)
    if device_ids:
        text += ", device_ids=[%s]" % ", ".join(map(str, device_ids))
    return f"<{text}>"


class _Value:
    __slots__ = ("name", "shape", "element")

    def __init__(self, name, shape, element=F32):
        self.name, self.shape, self.element = name, shape, element

    @property
    def type(self):
        if self.shape is None:
            return "!stablehlo.token"
        return tensor_type(self.shape, self.element)


class _Scope:
    """Values visible at a point, and what shardings may use there."""

    def __init__(self, values, *, parent=None, bound_axes=(), manual_mesh=None, depth=0):
        self.values = list(values)
        self.parent = parent
        self.bound_axes = tuple(bound_axes)  # manual axes of enclosing manual computations
        self.manual_mesh = manual_mesh  # the mesh choice of the enclosing manual computation
        self.depth = depth

    def visible(self):
        out, scope = [], self
        while scope is not None:
            out.extend(scope.values)
            scope = scope.parent
        return out

    def child(self, values, *, isolated=False, **kw):
        """A nested region's scope; named/manual computation bodies are isolated from above."""
        kw.setdefault("bound_axes", self.bound_axes)
        kw.setdefault("manual_mesh", self.manual_mesh)
        return _Scope(values, parent=None if isolated else self, depth=self.depth + 1, **kw)


class _Gen:
    def __init__(self, draw, *, inline_meshes, max_ops):
        self.draw = draw
        self.inline_meshes = inline_meshes
        self.max_ops = max_ops
        self.counter = 0
        self.nc_counter = 0
        self.mesh_names = {}  # kind -> names declared
        self.funcs = []  # (name, arg types, result types)
        self.group_ids = set()
        self.lines = []

    # --- naming -----------------------------------------------------------------------------
    def fresh(self, prefix="v"):
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def emit(self, indent, text):
        self.lines.append("  " * indent + text)

    # --- meshes and shardings ---------------------------------------------------------------
    def declare_meshes(self):
        kinds = self.draw(st.lists(st.sampled_from(sorted(_MESHES)), max_size=4))
        if self.draw(st.booleans()):
            kinds.insert(0, "main")
        used = set()
        for i, kind in enumerate(kinds):
            name = {"main": "mesh", "empty": "empty_mesh", "maximal": "maximal_mesh_3"}.get(kind, kind)
            if name in used:
                name = f"copy_{i}_of_{name}"
            used.add(name)
            self.mesh_names.setdefault(kind, []).append(name)
            axes, ids = _MESHES[kind]
            self.emit(1, f'"sdy.mesh"() <{{mesh = #sdy.mesh{mesh_body(axes, ids)}, sym_name = "{name}"}}> : () -> ()')

    def mesh_choice(self, kinds=tuple(_MESHES)):
        """A mesh for a sharding: ('@name' or 'mesh<...>', axes, device_ids)."""
        kind = self.draw(st.sampled_from(sorted(kinds)))
        axes, ids = _MESHES[kind]
        names = self.mesh_names.get(kind, [])
        if names and (not self.inline_meshes or self.draw(st.integers(0, 3)) > 0):
            return ("@" + self.draw(st.sampled_from(names)), axes, ids)
        if not self.inline_meshes:
            if not self.mesh_names:
                return None
            kind = self.draw(st.sampled_from(sorted(self.mesh_names)))
            axes, ids = _MESHES[kind]
            return ("@" + self.draw(st.sampled_from(self.mesh_names[kind])), axes, ids)
        return ("mesh" + mesh_body(axes, ids), axes, ids)

    def pieces(self, axes, exclude=()):
        """Axis refs to distribute: full axes, or size-4 axes split in two sub-axes."""
        out = []
        for name, size in axes:
            if name in exclude:
                continue
            if size == 4 and self.draw(st.booleans()):
                out.append((name, 1, 2))
                out.append((name, 2, 2))
            else:
                out.append((name, None, None))
        return out

    @staticmethod
    def ref_text(ref):
        name, pre, size = ref
        return f'"{name}"' if pre is None else f'"{name}":({pre}){size}'

    @staticmethod
    def sort_merge(refs, axes):
        order = {n: i for i, (n, _) in enumerate(axes)}
        sizes = dict(axes)

        def key(ref):
            name, pre, size = ref
            # "x":(1)k < "x" < "x":(m)k for m > 1 (spec/sharding.md §4.1)
            rank = 1 if pre is None else (0 if pre == 1 else 2)
            return (order[name], rank, pre or 0, size or 0)

        out = []
        for ref in sorted(refs, key=key):
            if out and out[-1][0] == ref[0] and out[-1][1] is not None and ref[1] is not None \
                    and out[-1][1] * out[-1][2] == ref[1]:
                name, pre, size = out.pop()
                size *= ref[2]
                out.append((name, None, None) if size == sizes[name] else (name, pre, size))
            else:
                out.append(ref)
        return out

    def dims_text(self, dims, closed, priorities):
        parts = []
        for refs, is_closed, prio in zip(dims, closed, priorities):
            body = ", ".join(self.ref_text(r) for r in refs)
            if not is_closed:
                body = body + ", ?" if body else "?"
            parts.append("{%s}%s" % (body, "" if prio is None else f"p{prio}"))
        return "[%s]" % ", ".join(parts)

    def sharding_body(self, choice, rank, *, exclude=(), manual=(), shape=None, closed_only=False):
        """`<mesh, [dims], replicated=..., unreduced=...>` (without `#sdy.sharding`).

        `manual`: manual axes put first in dims (or in replicated), keeping `shape` divisible.
        Returns (text, per-dim manual factor).
        """
        mesh_or_ref, axes, ids = choice
        if not axes and ids:  # maximal: rank 0, nothing else
            assert rank == 0
            return f"<{mesh_or_ref}, []>", ()
        dims = [[] for _ in range(rank)]
        factors = [1] * rank
        replicated, unreduced = [], []
        sizes = dict(axes)
        for name in manual:
            where = self.draw(st.integers(-2, rank - 1))
            if where >= 0 and shape[where] % (factors[where] * sizes[name]) == 0:
                dims[where].append((name, None, None))
                factors[where] *= sizes[name]
            elif where == -1:
                replicated.append((name, None, None))
        for ref in self.pieces(axes, exclude=(*exclude, *manual)):
            where = self.draw(st.integers(-3, rank - 1))
            if where >= 0:
                dims[where].append(ref)
            elif where == -1:
                replicated.append(ref)
            elif where == -2 and not manual:
                unreduced.append(ref)
        for i, refs in enumerate(dims):
            head, tail = refs[:len([r for r in refs if r[0] in manual])], refs[len([r for r in refs if r[0] in manual]):]
            tail = self.draw(st.permutations(tail)) if tail else []
            merged = []
            for ref in [*head, *tail]:
                if merged and merged[-1][0] == ref[0] and merged[-1][1] is not None and ref[1] is not None \
                        and merged[-1][1] * merged[-1][2] == ref[1]:
                    merged[-1] = (ref[0], None, None)  # adjacent mergeable sub-axes: use the full axis
                else:
                    merged.append(ref)
            dims[i] = merged
        closed = [closed_only or self.draw(st.booleans()) for _ in range(rank)]
        priorities = []
        for refs, is_closed in zip(dims, closed):
            prio = self.draw(st.one_of(st.none(), st.integers(0, 3)))
            priorities.append(None if (is_closed and not refs) else prio)
        text = f"<{mesh_or_ref}, {self.dims_text(dims, closed, priorities)}"
        if replicated:
            text += ", replicated={%s}" % ", ".join(map(self.ref_text, self.sort_merge(replicated, axes)))
        if unreduced:
            text += ", unreduced={%s}" % ", ".join(map(self.ref_text, self.sort_merge(unreduced, axes)))
        return text + ">", tuple(factors)

    def value_sharding(self, value, scope, *, closed_only=False):
        """A sharding body valid for `value` in `scope`, or None when none can be made."""
        rank = 0 if value.shape is None else len(value.shape)
        if scope.manual_mesh is not None:
            choice = scope.manual_mesh
        else:
            kinds = [k for k in _MESHES if k != "maximal" or rank == 0]
            choice = self.mesh_choice(kinds)
            if choice is None:
                return None
        if not choice[1] and choice[2] and rank:
            return None
        if value.shape is None:
            return f"<{choice[0]}, []>"
        return self.sharding_body(choice, rank, exclude=scope.bound_axes, closed_only=closed_only)[0]

    def per_value(self, values, scope):
        bodies = [self.value_sharding(v, scope) for v in values]
        if any(b is None for b in bodies):
            return ""
        return " {sdy.sharding = #sdy.sharding_per_value<[%s]>}" % ", ".join(bodies)

    # --- ops --------------------------------------------------------------------------------
    def pick(self, scope, pred=lambda v: True):
        vals = [v for v in scope.visible() if pred(v)]
        return self.draw(st.sampled_from(vals)) if vals else None

    def op_line(self, indent, results, name, operands, props="", attrs="", regions=None, in_types=None):
        res = ""
        if len(results) == 1:
            res = f"{results[0].name} = "
        elif results:
            base = results[0].name.split("#")[0]
            res = f"{base}:{len(results)} = "
        ins = ", ".join(o.name for o in operands)
        in_types = ", ".join(o.type for o in operands) if in_types is None else in_types
        outs = [r.type for r in results]
        out_t = outs[0] if len(outs) == 1 else "(%s)" % ", ".join(outs)
        head = f'{res}"{name}"({ins}){props}'
        if regions is None:
            self.emit(indent, f"{head}{attrs} : ({in_types}) -> {out_t}")
            return
        self.emit(indent, f"{head} (" + ("{" if regions else ""))
        for i, region in enumerate(regions):
            if i:
                self.emit(indent, "}, {")
            region()
        self.emit(indent, f"}}){attrs} : ({in_types}) -> {out_t}" if regions else f"){attrs} : ({in_types}) -> {out_t}")

    def results(self, shapes, elements=None):
        if len(shapes) == 1:
            return [_Value(self.fresh(), shapes[0], (elements or [F32])[0])]
        base = self.fresh()
        return [_Value(f"{base}#{i}", s, (elements or [F32] * len(shapes))[i]) for i, s in enumerate(shapes)]

    def maybe_sharding_attr(self, results, scope):
        if results and self.draw(st.integers(0, 3)) == 0:
            return self.per_value(results, scope)
        return ""

    def constant(self, indent, scope, shape, element=F32, sdy=False):
        (res,) = self.results([shape], [element])
        value = "dense<1.000000e+00>" if element == F32 else "dense<1>"
        name = "sdy.constant" if sdy else "stablehlo.constant"
        attrs = self.maybe_sharding_attr([res], scope)
        self.op_line(indent, [res], name, [], f" <{{value = {value} : {res.type}}}>", attrs)
        scope.values.append(res)
        return res

    def value_of(self, indent, scope, shape):
        v = self.pick(scope, lambda v: v.shape == shape and v.element == F32)
        if v is None or self.draw(st.integers(0, 4)) == 0:
            v = self.constant(indent, scope, shape)
        return v

    def gen_ops(self, indent, scope, count):
        for _ in range(count):
            self.gen_op(indent, scope)

    def gen_op(self, indent, scope):
        kinds = ["const", "const", "iota", "unary", "binary", "binary", "bcast", "slice", "reshape",
                 "transpose", "dot", "constraint", "constraint", "chain", "group", "group", "reshard",
                 "barrier", "all_reduce", "sdy_const"]
        if scope.depth < 2:
            kinds += ["nc", "while", "case", "call"]
            if scope.manual_mesh is None:
                kinds += ["mc", "mc"]
        getattr(self, "op_" + self.draw(st.sampled_from(kinds)))(indent, scope)

    def op_const(self, indent, scope):
        self.constant(indent, scope, self.draw(st.sampled_from(SHAPES)))

    def op_sdy_const(self, indent, scope):
        self.constant(indent, scope, self.draw(st.sampled_from(SHAPES)), sdy=True)

    def op_iota(self, indent, scope):
        shape = self.draw(st.sampled_from([s for s in SHAPES if s]))
        (res,) = self.results([shape])
        self.op_line(indent, [res], "stablehlo.iota", [], " <{iota_dimension = 0 : i64}>",
                     self.maybe_sharding_attr([res], scope))
        scope.values.append(res)

    def op_unary(self, indent, scope):
        x = self.value_of(indent, scope, self.draw(st.sampled_from(SHAPES)))
        (res,) = self.results([x.shape])
        self.op_line(indent, [res], "stablehlo." + self.draw(st.sampled_from(_UNARY)), [x], "",
                     self.maybe_sharding_attr([res], scope))
        scope.values.append(res)

    def op_binary(self, indent, scope):
        shape = self.draw(st.sampled_from(SHAPES))
        x, y = self.value_of(indent, scope, shape), self.value_of(indent, scope, shape)
        (res,) = self.results([shape])
        self.op_line(indent, [res], "stablehlo." + self.draw(st.sampled_from(_BINARY)), [x, y], "",
                     self.maybe_sharding_attr([res], scope))
        scope.values.append(res)

    def op_bcast(self, indent, scope):
        if self.draw(st.booleans()):
            x, dims, shape = self.value_of(indent, scope, ()), "", self.draw(st.sampled_from(SHAPES[:3]))
        else:
            x, dims, shape = self.value_of(indent, scope, (8,)), ": 1", (8, 8)
        (res,) = self.results([shape])
        self.op_line(indent, [res], "stablehlo.broadcast_in_dim", [x],
                     f" <{{broadcast_dimensions = array<i64{dims}>}}>", self.maybe_sharding_attr([res], scope))
        scope.values.append(res)

    def op_slice(self, indent, scope):
        x = self.value_of(indent, scope, (8, 8))
        (res,) = self.results([(4, 8)])
        props = " <{limit_indices = array<i64: 4, 8>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}>"
        self.op_line(indent, [res], "stablehlo.slice", [x], props, self.maybe_sharding_attr([res], scope))
        scope.values.append(res)

    def op_reshape(self, indent, scope):
        shape = self.draw(st.sampled_from(SHAPES))
        x = self.value_of(indent, scope, shape)
        (res,) = self.results([shape])
        self.op_line(indent, [res], "stablehlo.reshape", [x], "", self.maybe_sharding_attr([res], scope))
        scope.values.append(res)

    def op_transpose(self, indent, scope):
        x = self.value_of(indent, scope, (8, 8))
        (res,) = self.results([(8, 8)])
        self.op_line(indent, [res], "stablehlo.transpose", [x], " <{permutation = array<i64: 1, 0>}>",
                     self.maybe_sharding_attr([res], scope))
        scope.values.append(res)

    def op_dot(self, indent, scope):
        x, y = self.value_of(indent, scope, (8, 8)), self.value_of(indent, scope, (8, 8))
        (res,) = self.results([(8, 8)])
        self.op_line(indent, [res], "stablehlo.dot", [x, y], "", self.maybe_sharding_attr([res], scope))
        scope.values.append(res)

    def op_constraint(self, indent, scope, name="sdy.sharding_constraint", last=False):
        x = self.pick(scope, lambda v: v.shape is not None and v.element == F32)
        if last and scope.values and scope.values[-1].shape is not None and scope.values[-1].element == F32:
            x = scope.values[-1]
        if x is None:
            return
        body = self.value_sharding(x, scope, closed_only=self.draw(st.booleans()))
        if body is None:
            return
        (res,) = self.results([x.shape])
        self.op_line(indent, [res], name, [x], f" <{{sharding = #sdy.sharding{body}}}>")
        scope.values.append(res)

    def op_chain(self, indent, scope):
        """Two or three constraints in a row on one value (the chain rule of apply)."""
        for _ in range(self.draw(st.integers(2, 3))):
            before = len(scope.values)
            self.op_constraint(indent, scope, last=True)
            if len(scope.values) == before:
                return

    def op_reshard(self, indent, scope):
        self.op_constraint(indent, scope, "sdy.reshard")

    def op_group(self, indent, scope):
        x = self.pick(scope, lambda v: v.shape is not None and v.element == F32)
        if x is None:
            return
        # Mostly one id per shape (valid); sometimes any id (a shape or boundary error).
        group = (SHAPES.index(x.shape) if x.shape in SHAPES else 4 + len(x.shape)) * 10 + self.draw(st.integers(0, 1))
        if scope.bound_axes:
            group += 100
        if self.group_ids and self.draw(st.integers(0, 4)) == 0:
            group = self.draw(st.sampled_from(sorted(self.group_ids)))  # maybe another shape/scope
        self.group_ids.add(group)
        self.emit(indent, f'"sdy.sharding_group"({x.name}) <{{group_id = {group} : i64}}> : ({x.type}) -> ()')

    def op_barrier(self, indent, scope):
        xs = [v for v in (self.pick(scope, lambda v: v.element == F32) for _ in range(self.draw(st.integers(1, 2))))
              if v is not None]
        if not xs:
            return
        res = self.results([x.shape for x in xs])
        self.op_line(indent, res, "stablehlo.optimization_barrier", xs, "", self.maybe_sharding_attr(res, scope))
        scope.values.extend(res)

    def op_all_reduce(self, indent, scope):
        x = self.value_of(indent, scope, self.draw(st.sampled_from(SHAPES[:3])))
        names = self.mesh_names.get("main", [])
        if names and (not self.inline_meshes or self.draw(st.booleans())):
            mesh = "@" + self.draw(st.sampled_from(names))
        elif self.inline_meshes:
            mesh = "#stablehlo.mesh<axes = [#stablehlo.mesh_axis<name = \"a\", size = 2>, " \
                   "#stablehlo.mesh_axis<name = \"b\", size = 2>]>"
        else:
            return
        axis = self.draw(st.sampled_from(["a", "b"]))
        groups = f"#stablehlo.replica_group_mesh_axes<mesh = {mesh}, axes = [#stablehlo.axis_ref<name = \"{axis}\">]>"
        (res,) = self.results([x.shape])
        a, b, s = self.fresh("arg"), self.fresh("arg"), self.fresh()
        scalar = tensor_type(())

        def body():
            self.emit(indent, f"^bb0({a}: {scalar}, {b}: {scalar}):")
            self.emit(indent + 1, f'{s} = "stablehlo.add"({a}, {b}) : ({scalar}, {scalar}) -> {scalar}')
            self.emit(indent + 1, f'"stablehlo.return"({s}) : ({scalar}) -> ()')

        self.op_line(indent, [res], "stablehlo.all_reduce", [x], f" <{{replica_groups = {groups}}}>",
                     self.maybe_sharding_attr([res], scope), regions=[body])
        scope.values.append(res)

    def region_returns(self, indent, scope, shapes, terminator):
        rets = [self.value_of(indent, scope, s) for s in shapes]
        types = ", ".join(r.type for r in rets)
        self.emit(indent, f'"{terminator}"({", ".join(r.name for r in rets)}) : ({types}) -> ()')

    def op_nc(self, indent, scope):
        operands = [v for v in (self.pick(scope, lambda v: v.element == F32) for _ in range(self.draw(st.integers(0, 2))))
                    if v is not None]
        out_shapes = self.draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=2))
        res = self.results(out_shapes)
        args = [_Value(self.fresh("arg"), o.shape) for o in operands]
        inner = scope.child(args, isolated=True)
        props = []
        if operands and self.draw(st.booleans()):
            ins = [self.value_sharding(o, scope) for o in operands]
            if None not in ins:
                props.append("in_shardings = #sdy.sharding_per_value<[%s]>" % ", ".join(ins))
        self.nc_counter += 1
        props.append(f'name = "nc{self.draw(st.integers(0, self.nc_counter))}"')
        if self.draw(st.booleans()):
            outs = [self.value_sharding(r, scope) for r in res]
            if None not in outs:
                props.append("out_shardings = #sdy.sharding_per_value<[%s]>" % ", ".join(outs))

        def body():
            self.emit(indent, "^bb0(%s):" % ", ".join(f"{a.name}: {a.type}" for a in args))
            self.gen_ops(indent + 1, inner, self.draw(st.integers(0, 3)))
            self.region_returns(indent + 1, inner, out_shapes, "sdy.return")

        self.op_line(indent, res, "sdy.named_computation", operands, " <{%s}>" % ", ".join(props), "",
                     regions=[body])
        scope.values.extend(res)

    def op_mc(self, indent, scope):
        if "main" not in self.mesh_names and not self.inline_meshes:
            return
        choice = self.mesh_choice(["main"])
        manual = self.draw(st.lists(st.sampled_from([n for n, _ in MAIN_AXES]), unique=True, max_size=2))
        operands = [v for v in (self.pick(scope, lambda v: v.element == F32 and v.shape is not None)
                                for _ in range(self.draw(st.integers(0, 2)))) if v is not None]
        out_shapes = self.draw(st.lists(st.sampled_from(SHAPES[:3]), max_size=2))
        empty = ("@" + self.mesh_names["empty"][0], (), ()) if self.mesh_names.get("empty") else ("mesh<[]>", (), ())

        def sharding(shape, first):
            # Only later shardings may use the empty mesh: the first one names the manual axes.
            if not first and self.draw(st.integers(0, 5)) == 0 and (self.inline_meshes or self.mesh_names.get("empty")):
                body, factors = self.sharding_body(empty, len(shape), shape=shape)
            else:
                body, factors = self.sharding_body(choice, len(shape), manual=manual, shape=shape,
                                                   exclude=scope.bound_axes)
            return body, tuple(d // f for d, f in zip(shape, factors))

        ins = [sharding(o.shape, i == 0) for i, o in enumerate(operands)]
        outs = [sharding(s, not ins and i == 0) for i, s in enumerate(out_shapes)]
        res = self.results(out_shapes) if out_shapes else []
        args = [_Value(self.fresh("arg"), local) for _, local in ins]
        inner_mesh = (choice[0], tuple((n, s) for n, s in choice[1] if n not in manual), choice[2])
        inner = scope.child(args, isolated=True, bound_axes=(*scope.bound_axes, *manual), manual_mesh=inner_mesh)
        props = ("in_shardings = #sdy.sharding_per_value<[%s]>, manual_axes = #sdy<manual_axes{%s}>, "
                 "out_shardings = #sdy.sharding_per_value<[%s]>") % (
            ", ".join(b for b, _ in ins), ", ".join(f'"{m}"' for m in manual), ", ".join(b for b, _ in outs))

        def body():
            if args:
                self.emit(indent, "^bb0(%s):" % ", ".join(f"{a.name}: {a.type}" for a in args))
            self.gen_ops(indent + 1, inner, self.draw(st.integers(0, 3)))
            self.region_returns(indent + 1, inner, [local for _, local in outs], "sdy.return")

        self.op_line(indent, res, "sdy.manual_computation", operands, " <{%s}>" % props, "", regions=[body])
        scope.values.extend(res)

    def op_while(self, indent, scope):
        x = self.pick(scope, lambda v: v.element == F32 and v.shape is not None)
        if x is None:
            return
        zero = self.constant(indent, scope, (), "i32")
        limit = self.constant(indent, scope, (), "i32")
        res = self.results([x.shape, ()], [F32, "i32"])
        i32 = tensor_type((), "i32")
        c0, c1 = _Value(self.fresh("arg"), x.shape), _Value(self.fresh("arg"), (), "i32")
        b0, b1 = _Value(self.fresh("arg"), x.shape), _Value(self.fresh("arg"), (), "i32")
        cmp_, inc = self.fresh(), self.fresh()

        def cond():
            self.emit(indent, f"^bb0({c0.name}: {c0.type}, {c1.name}: {i32}):")
            self.emit(indent + 1, f'{cmp_} = "stablehlo.compare"({c1.name}, {limit.name}) <{{comparison_direction = '
                                  f'#stablehlo<comparison_direction LT>}}> : ({i32}, {i32}) -> tensor<i1>')
            self.emit(indent + 1, f'"stablehlo.return"({cmp_}) : (tensor<i1>) -> ()')

        def body():
            self.emit(indent, f"^bb0({b0.name}: {b0.type}, {b1.name}: {i32}):")
            inner = scope.child([b0])
            self.gen_ops(indent + 1, inner, self.draw(st.integers(0, 3)))
            out = self.pick(inner, lambda v: v.shape == x.shape and v.element == F32)
            self.emit(indent + 1, f'{inc} = "stablehlo.add"({b1.name}, {zero.name}) : ({i32}, {i32}) -> {i32}')
            self.emit(indent + 1, f'"stablehlo.return"({out.name}, {inc}) : ({out.type}, {i32}) -> ()')

        self.op_line(indent, res, "stablehlo.while", [x, zero], "", self.maybe_sharding_attr(res, scope),
                     regions=[cond, body])
        scope.values.extend(res)

    def op_case(self, indent, scope):
        index = self.constant(indent, scope, (), "i32")
        shapes = self.draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=2))
        if self.draw(st.integers(0, 4)) == 0:
            shapes.append(None)  # a token result: never gets an edge
        res = [r if s is not None else _Value(r.name, None) for r, s in zip(self.results([s or () for s in shapes]), shapes)]

        def branch():
            inner = scope.child([])
            self.gen_ops(indent + 1, inner, self.draw(st.integers(0, 2)))
            rets = []
            for s in shapes:
                if s is None:
                    tok = _Value(self.fresh(), None)
                    self.emit(indent + 1, f'{tok.name} = "stablehlo.create_token"() : () -> !stablehlo.token')
                    rets.append(tok)
                else:
                    rets.append(self.value_of(indent + 1, inner, s))
            self.emit(indent + 1, '"stablehlo.return"(%s) : (%s) -> ()' % (
                ", ".join(r.name for r in rets), ", ".join(r.type for r in rets)))

        attrs = "" if None in shapes else self.maybe_sharding_attr(res, scope)
        self.op_line(indent, res, "stablehlo.case", [index], "", attrs, regions=[branch, branch])
        scope.values.extend(v for v in res if v.shape is not None)

    def op_call(self, indent, scope):
        if not self.funcs:
            return
        name, arg_shapes, res_shapes = self.draw(st.sampled_from(self.funcs))
        operands = [self.value_of(indent, scope, s) for s in arg_shapes]
        res = self.results(res_shapes)
        self.op_line(indent, res, "func.call", operands, f" <{{callee = @{name}}}>",
                     self.maybe_sharding_attr(res, scope))
        scope.values.extend(res)

    # --- funcs and module -------------------------------------------------------------------
    def func(self, name, private):
        arg_shapes = self.draw(st.lists(st.sampled_from(SHAPES), max_size=3))
        args = [_Value(self.fresh("arg"), s) for s in arg_shapes]
        scope = _Scope(args)
        start = len(self.lines)
        self.emit(2, "^bb0(%s):" % ", ".join(f"{a.name}: {a.type}" for a in args) if args else "^bb0:")
        self.gen_ops(2, scope, self.draw(st.integers(1, self.max_ops)))
        rets = [v for v in (self.pick(scope, lambda v: v.element == F32) for _ in range(self.draw(st.integers(1, 2))))
                if v is not None]
        self.emit(2, '"func.return"(%s) : (%s) -> ()' % (", ".join(r.name for r in rets),
                                                         ", ".join(r.type for r in rets)))
        body = self.lines[start:]
        del self.lines[start:]
        props = []
        if args and self.draw(st.booleans()):
            attrs = []
            for a in args:
                s = self.value_sharding(a, _Scope([])) if self.draw(st.booleans()) else None
                attrs.append("{sdy.sharding = #sdy.sharding%s}" % s if s else "{}")
            props.append("arg_attrs = [%s]" % ", ".join(attrs))
        in_t = ", ".join(a.type for a in args)
        out_t = ", ".join(r.type for r in rets)
        props.append(f"function_type = ({in_t}) -> ({out_t})")
        if rets and self.draw(st.booleans()):
            attrs = []
            for r in rets:
                s = self.value_sharding(r, _Scope([])) if self.draw(st.booleans()) else None
                attrs.append("{sdy.sharding = #sdy.sharding%s}" % s if s else "{}")
            props.append("res_attrs = [%s]" % ", ".join(attrs))
        props.append(f'sym_name = "{name}"')
        if private:
            props.append('sym_visibility = "private"')
        self.emit(1, '"func.func"() <{%s}> ({' % ", ".join(props))
        self.lines.extend(body)
        self.emit(1, "}) : () -> ()")
        self.funcs.append((name, [a.shape for a in args], [r.shape for r in rets]))

    def module(self):
        self.emit(0, '"builtin.module"() ({')
        self.declare_meshes()
        for i in range(self.draw(st.integers(0, 2))):
            self.func(f"f{i}", private=True)
        self.func("main", private=False)
        self.emit(0, "}) : () -> ()")
        return "\n".join(self.lines) + "\n"


@st.composite
def modules(draw, *, inline_meshes=True, max_ops=12):
    """A small valid module in generic form.

    `inline_meshes=False` keeps every sharding on a named mesh (jaxlib's
    `sdy-apply-sharding-constraints` crashes or writes a garbage symbol on some inlined meshes,
    spec/sdy_passes.md §11.2-3).
    """
    return _Gen(draw, inline_meshes=inline_meshes, max_ops=max_ops).module()
