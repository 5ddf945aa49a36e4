"""`OpDef`, one op's definition, and the small helpers the dialect modules share.

An `OpDef` says what an op is (its inherent attributes, operand/result/region counts, traits),
how its pretty form reads and prints, and what its verifier checks. The parser, printer and
verifier are generic drivers over the table in `sdy_passes.dialects` (xDSL's op classes and
MLIR's ODS are the models; here each op is one plain value). `op(...)` declares one from its
ODS in one line; its facets (sharding rule, evaluator, canonicalization patterns) are
`"module:function"` names resolved on first use by `facet`, so the table imports none of them.

Hook signatures:

* `parse(p: Parser, op: Operation, num_results: int) -> None` fills the detached `op` from the
  text after the op name;
* `print(pr: Printer, op: Operation, indent: int) -> bool` writes the text after `%r = `, or
  returns False (writing nothing) to fall back to the generic form;
* `verify(op: Operation, ctx: VerifyContext) -> None` raises `VerificationError` via `fail`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from sdy_passes.attributes import (
    F32, I1, I32, I64, ArrayAttr, Attribute, BoolAttr, ComplexType, DenseArrayAttr, DenseElementsAttr, DictionaryAttr,
    FloatAttr, FloatType, FunctionType, IndexType, IntegerAttr, IntegerType, OpaqueAttr, RankedTensorType, StringAttr,
    SymbolRefAttr, TypeAttr, Type, UnitAttr, print_attr_dict, print_function_type,
)
from sdy_passes.dialects.stablehlo_attributes import (
    ConvDimensionNumbers, DotDimensionNumbers, EnumAttr, GatherDimensionNumbers, ScatterDimensionNumbers,
)
from sdy_passes.errors import SdyError, VerificationError, shown
from sdy_passes.ir import Operation, OpResult

if TYPE_CHECKING:
    from sharding import MeshTable

    from sdy_passes.ir import Module

__all__ = ["OpDef", "op", "SEGMENT_SIZES", "segment_sizes", "OPS", "EVAL", "RULES", "NO_RULE", "facet", "AttributeKind", "ATTRIBUTE_KINDS", "lookup", "has_trait", "VerifyContext", "fail", "add_operands", "set_results", "attr_dict_for",
           "opt_dict", "no_sharding_rule", "parse_attrs_and_signature", "print_type_signature", "short_name", "parse_return", "print_return",
           "parse_constant", "print_constant", "verify_constant", "constant_names"]

VARIADIC = None
"""An operand or result count that is not fixed."""

EVAL = "sdy_passes.interpreter."
"""Prefix of `OpDef.evaluator` names: `EVAL + "elementwise:add"`."""

RULES = "sdy_passes.op_sharding_rules."
"""Prefix of `OpDef.sharding_rule` names: `RULES + "elementwise:pointwise"`."""

NO_RULE = "sdy_passes.dialects._base:no_sharding_rule"
"""The `sharding_rule` of ops Shardy's registry gives no rule on purpose."""


@dataclass(frozen=True, slots=True)
class OpDef:
    """One op: name, inherent attributes, shape, syntax hooks, verifier, traits."""

    name: str
    """Full name with dialect, e.g. `"stablehlo.add"`."""
    properties: tuple[str, ...] = ()
    """Inherent attribute names (generic `<{...}>`); the parser routes these to `properties`."""
    required: tuple[str, ...] = ()
    """Inherent attributes the op cannot do without (`requires attribute 'x'`), in name order
    (MLIR's properties struct, the order its verifier checks them)."""
    num_operands: int | None = VARIADIC
    num_results: int | None = VARIADIC
    num_regions: int | None = VARIADIC
    min_operands: int = 0
    """With a variadic operand count: at least this many (ODS `AtLeastNOperands`)."""
    min_results: int = 0
    """With a variadic result count: at least this many (ODS `AtLeastNResults`)."""
    operand_groups: int = 1
    """Equally sized variadic operand groups (ODS `SameVariadicOperandSize`: `reduce`'s inputs
    and init values); jaxlib's verifier crashes on operands that do not split evenly, or on
    empty groups, which we refuse."""
    parse: Callable | None = None
    """Pretty-form parser; None: generic form only."""
    print: Callable | None = None
    """Pretty-form printer; None: generic form only."""
    verify: Callable | None = None
    """Op-specific checks after counts and required attributes."""
    traits: frozenset[str] = frozenset()
    """MLIR trait / interface names the passes ask about, as the op's ODS declares them
    (`IsolatedFromAbove`, `Elementwise`, StableHLO's `BroadcastingElementwise`; `NoMemoryEffect`
    for `Pure` / `NoMemoryEffect` ops, `RecursiveMemoryEffects`; `KeepsEdgeOwnerShardingsDivisible`
    for data-flow ops whose `shouldKeepEdgeOwnerShardingsDivisible` is true)."""
    sharding_rule: str | None = None
    """`"sdy_passes.op_sharding_rules.<family>:<function>"` (or `NO_RULE`), resolved by `facet`:
    `rule(op, conservative) -> OpShardingRule | None`, the rule Shardy's registry builds; None:
    the op is unknown to the registry (no rule, and Shardy's once-per-process warning)."""
    result_names: Callable | None = None
    """`result_names(op)` -> names MLIR's printer gives the results (`("cst",)`, or one per
    result: `("values", "indices")`), or None (`getAsmResultNames`)."""
    block_arg_name: str | None = None
    """Name of the entry block arguments of the op's regions (`iterArg`)."""
    attribute_kinds: tuple[tuple[str, str], ...] = ()
    """(inherent attribute, key of `ATTRIBUTE_KINDS`) pairs, e.g. `("sym_name", "StrAttr")`: the
    parser refuses an attribute its property cannot store, the verifier one its ODS constraint
    refuses."""
    canonicalization: str | None = None
    """`"module:NAME"` of the tuple of `common.rewrite.Pattern`s the op registers (MLIR's
    `getCanonicalizationPatterns`; a pattern's root may be another op), resolved by `facet`."""
    evaluator: str | None = None
    """`"sdy_passes.interpreter.<family>:<function>"`: the op's evaluator for `interpret`
    (`evaluate(op, args, ctx) -> results`), imported on first use (the `PASSES` idiom, so the
    table does not import the interpreter); None: the interpreter refuses the op."""
    parent: str | None = None
    """The op its parent must be (ODS `HasParent`: `sdy.mesh` in `builtin.module`)."""
    terminator: str | None = None
    """The op its regions end with (ODS `SingleBlockImplicitTerminator`: `stablehlo.return`);
    their blocks may not be empty (`SingleBlock`)."""
    single_block_regions: tuple[str, ...] = ()
    """The ODS names of the regions that must hold one block (`SizedRegion<1>`), the last one
    naming every further region (`case`'s variadic `branches`)."""
    segments: tuple[int, int] = (0, 0)
    """How many variadic operand and result groups `operandSegmentSizes` / `resultSegmentSizes`
    size (ODS `AttrSizedOperandSegments` / `AttrSizedResultSegments`; 0: no such attribute)."""
    operand_type: str | None = None
    """The ODS type constraint every operand meets (a key of `OPERAND_TYPES`), or None."""


@dataclass(frozen=True, slots=True)
class AttributeKind:
    """An ODS attribute constraint: MLIR's description of it (`... failed to satisfy
    constraint: <description>`), what the op's property can store (another attribute in `<{...}>`
    is a parse error), and what the constraint accepts."""

    description: str
    stores: Callable[[Attribute], bool]
    satisfies: Callable[[Attribute], bool]


def _kind(description: str, stores: Callable, check: Callable | None = None) -> AttributeKind:
    return AttributeKind(description, stores, lambda a: stores(a) and (check is None or check(a)))


def _integer(width_type: Type, check: Callable | None = None) -> Callable:
    return lambda a: a.type == width_type and (check is None or check(a.value))


def _integer_kind(description: str, width_type: Type, check: Callable | None = None) -> AttributeKind:
    return _kind(description, lambda a: isinstance(a, IntegerAttr), _integer(width_type, check))


def _dense_array(element_type: Type) -> Callable:
    return lambda a: isinstance(a, DenseArrayAttr) and a.element_type == element_type


def _enum(kind: str) -> Callable:
    return lambda a: isinstance(a, EnumAttr) and a.kind == kind


def _instance(cls: type) -> Callable:
    return lambda a: isinstance(a, cls)


def _opaque(prefix: str) -> Callable:
    """A dialect attribute the parser keeps as text (`#stablehlo.channel_handle<...>`)."""
    return lambda a: isinstance(a, OpaqueAttr) and a.text.startswith(prefix)


def _array_of(check: Callable) -> Callable:
    return lambda a: isinstance(a, ArrayAttr) and all(check(e) for e in a)


def _int_elements(a: Attribute) -> bool:
    """What a `DenseIntElementsAttr` property stores (integer or index elements)."""
    return isinstance(a, DenseElementsAttr) and isinstance(a.type.element_type, (IntegerType, IndexType))


def _layout(a: Attribute) -> bool:
    """A 1-D tensor of `index` (`dense<[1, 0]> : tensor<2xindex>`)."""
    return (isinstance(a, DenseElementsAttr) and isinstance(a.type, RankedTensorType) and len(a.type.shape) == 1
            and isinstance(a.type.element_type, IndexType))


def _any(a: Attribute) -> bool:
    return True


_API_VERSIONS = range(5)
"""`CustomCallApiVersion`'s cases: UNSPECIFIED, ORIGINAL, STATUS_RETURNING, STATUS_RETURNING_UNIFIED,
TYPED_FFI."""


def _non_negative(v: int) -> bool:
    return v >= 0


def _positive(v: int) -> bool:
    return v > 0


def _ranked_int(widths: frozenset[int], bool_too: bool) -> Callable[[Type], bool]:
    def ok(t: Type) -> bool:
        el = t.element_type if isinstance(t, RankedTensorType) else None
        return isinstance(el, IntegerType) and (
            el.width in widths and el.signedness != "s" or bool_too and el == I1)
    return ok


_HLO_INT_WIDTHS = frozenset((2, 4, 8, 16, 32, 64))
OPERAND_TYPES: dict[str, tuple[str, Callable[[Type], bool]]] = {
    "PredOrIntTensor": ("ranked tensor of bool or 2/4/8/16/32/64-bit integer values", _ranked_int(_HLO_INT_WIDTHS, True)),
    "IntTensor": ("ranked tensor of 2/4/8/16/32/64-bit integer values", _ranked_int(_HLO_INT_WIDTHS, False)),
}
"""StableHLO's operand type constraints by ODS name: MLIR's description (`operand #0 must be
<description>, but got '<type>'`) and the test (signless or unsigned integers; bool is i1)."""


ATTRIBUTE_KINDS: dict[str, AttributeKind] = {
    "StrAttr": _kind("string attribute", _instance(StringAttr)),
    "BoolAttr": _kind("bool attribute", _instance(BoolAttr)),
    "I64Attr": _integer_kind("64-bit signless integer attribute", I64),
    "NonNegativeI64Attr": _integer_kind("64-bit signless integer attribute whose value is non-negative", I64,
                                        _non_negative),
    "PositiveI64Attr": _integer_kind("64-bit signless integer attribute whose value is positive", I64, _positive),
    "I32Attr": _integer_kind("32-bit signless integer attribute", I32),
    "NonNegativeI32Attr": _integer_kind("32-bit signless integer attribute whose value is non-negative", I32,
                                        _non_negative),
    "PositiveI32Attr": _integer_kind("32-bit signless integer attribute whose value is positive", I32, _positive),
    "F32Attr": _kind("32-bit float attribute", _instance(FloatAttr), lambda a: a.type == F32),
    "DenseI64ArrayAttr": _kind("i64 dense array attribute", _dense_array(I64)),
    "DenseBoolArrayAttr": _kind("i1 dense array attribute", _dense_array(I1)),
    "ArrayAttr": _kind("array attribute", _instance(ArrayAttr)),
    "DictionaryAttr": _kind("dictionary of named attribute values", _instance(DictionaryAttr)),
    "FlatSymbolRefAttr": _kind("flat symbol reference attribute", _instance(SymbolRefAttr), lambda a: not a.nested),
    "FunctionTypeAttr": _kind("type attribute of function type", _instance(TypeAttr),
                              lambda a: isinstance(a.type, FunctionType)),
    "ComparisonDirection": _kind("Which comparison operation to perform.", _enum("comparison_direction")),
    "ComparisonType": _kind("Which comparison type to use.", _enum("comparison_type")),
    "FftType": _kind("XLA fast fourier transform type.", _enum("fft_type")),
    "RngAlgorithm": _kind("XLA PRNG algorithm to be used.", _enum("rng_algorithm")),
    "RngDistribution": _kind("XLA PRNG distribution to be used.", _enum("rng_distribution")),
    "Transpose": _kind("Transpose options", _enum("transpose")),
    "PrecisionConfig": _kind("Precision Config attribute", _instance(ArrayAttr),
                             lambda a: all(_enum("precision")(e) for e in a)),
    "DotDimensionNumbers": _kind("Attribute that models the dimension information for dot.",
                                 _instance(DotDimensionNumbers)),
    "GatherDimensionNumbers": _kind("Attribute that models the dimension information for gather",
                                    _instance(GatherDimensionNumbers)),
    "ScatterDimensionNumbers": _kind("Attribute that models the dimension information for scatter",
                                     _instance(ScatterDimensionNumbers)),
    "ConvDimensionNumbers": _kind("Structure of dimension information for conv op", _instance(ConvDimensionNumbers)),
    "UnitAttr": _kind("unit attribute", _instance(UnitAttr)),
    "I64ElementsAttr": _kind("64-bit signless integer elements attribute", _int_elements,
                             lambda a: a.type.element_type == I64),
    "ReplicaGroups": _kind("64-bit signless integer elements attribute or mesh and axes based replica groups "
                           "representation.", _any,
                           lambda a: (_int_elements(a) and a.type.element_type == I64)
                           or _opaque("#stablehlo.replica_group_mesh_axes<")(a)),
    "ChannelHandle": _kind("two 64-bit integers 'handle' and 'type'", _opaque("#stablehlo.channel_handle<")),
    "ResultAccuracy": _kind("The requested accuracy for transcendental unary ops.",
                            _opaque("#stablehlo.result_accuracy<")),
    "DotAlgorithm": _kind("Attribute that models the algorithm constraints to use for computing dot.",
                          _opaque("#stablehlo.dot_algorithm<")),
    "ElementsAttr": _kind("constant vector/tensor attribute",
                          lambda a: isinstance(a, DenseElementsAttr) or _opaque("dense_resource<")(a)),
    "BackendConfig": _kind("string attribute or dictionary of named attribute values", _any,
                           _instance((StringAttr, DictionaryAttr))),
    "CustomCallApiVersion": _kind("Custom call API version",
                                  lambda a: isinstance(a, IntegerAttr) and a.value in _API_VERSIONS,
                                  lambda a: a.type == I32),
    "FlatSymbolRefArrayAttr": _kind("flat symbol ref array attribute", _instance(ArrayAttr),
                                    _array_of(lambda e: isinstance(e, SymbolRefAttr) and not e.nested)),
    "LayoutArray": _kind("Array of layout (1D tensor of index type) attributes", _instance(ArrayAttr),
                         _array_of(_layout)),
    "OutputOperandAliasArray": _kind("Aliasing attribute for outputs and operands of CustomCall",
                                     _instance(ArrayAttr), _array_of(_opaque("#stablehlo.output_operand_alias<"))),
    "DictArrayAttr": _kind("Array of dictionary attributes", _instance(ArrayAttr), _array_of(_instance(DictionaryAttr))),
    "ChloComparisonDirection": _kind("Which comparison operation to perform.", _opaque("#chlo<comparison_direction ")),
    "ChloComparisonType": _kind("Which comparison type to use.", _opaque("#chlo<comparison_type ")),
}
"""ODS constraint name -> its kind (jaxlib 0.10.2's descriptions, found by probing its verifier)."""


_FACETS: dict[str, Callable] = {}


def facet(name: str) -> Callable:
    """The function a facet names (`"package.module:function"`), imported on first use (the
    `pass_manager.PASSES` idiom: the op table does not import the modules that use it)."""
    fn = _FACETS.get(name)
    if fn is None:
        module, _, attr = name.partition(":")
        fn = _FACETS[name] = getattr(importlib.import_module(module), attr)
    return fn


def _count(text: str) -> tuple[int | None, int]:
    """`2` -> exactly 2; `1+` -> at least 1; `*` -> any."""
    if text == "*":
        return VARIADIC, 0
    if text.endswith("+"):
        return VARIADIC, int(text[:-1])
    return int(text), 0


SEGMENT_SIZES = ("operandSegmentSizes", "resultSegmentSizes")
"""The properties that size an op's variadic operand and result groups (`OpDef.segments`)."""


def op(name: str, counts: str, attrs: str = "", *, syntax: tuple[Callable | None, Callable | None] = (None, None),
       traits: str = "", rule: str | None = None, evaluator: str | None = None, **rest) -> OpDef:
    """One op's entry, as its ODS declares it: `counts` is "operands results regions" (each `N`,
    `N+` or `*`); `attrs` the inherent attributes in order, each `name`, `name!` when required,
    then `:Kind` (an `ATTRIBUTE_KINDS` key) when the verifier checks it; `syntax` the pretty
    (parse, print) hooks; `traits` space-separated; `rule` and `evaluator` "family:function" in
    `op_sharding_rules` / `interpreter` (or a full "module:function"); `segments` adds the
    segment-size properties; `regions` names the regions that hold one block, space-separated."""
    segments = rest.get("segments", (0, 0))
    rest["single_block_regions"] = tuple(rest.pop("regions", "").split())
    attrs = " ".join([attrs, *(a for a, n in zip(SEGMENT_SIZES, segments) if n)])
    operands, results, regions = counts.split()
    num_operands, min_operands = _count(operands)
    num_results, min_results = _count(results)
    names, required, kinds = [], [], []
    for spec in attrs.split():
        attr, _, kind = spec.partition(":")
        if attr.endswith("!"):
            attr = attr[:-1]
            required.append(attr)
        names.append(attr)
        if kind:
            assert kind in ATTRIBUTE_KINDS, kind
            kinds.append((attr, kind))
    return OpDef(name, tuple(names), tuple(sorted(required)), num_operands, num_results, _count(regions)[0],
                 parse=syntax[0], print=syntax[1], min_operands=min_operands, min_results=min_results,
                 traits=frozenset(traits.split()),
                 sharding_rule=_facet_name(RULES, rule), evaluator=_facet_name(EVAL, evaluator),
                 attribute_kinds=tuple(sorted(kinds)), **rest)


def segment_sizes(value: Attribute | None, n: int) -> tuple[int, ...]:
    """The sizes a segment-size property gives `n` groups; () when it cannot (missing, not an
    `array<i32>` of `n`: MLIR's properties then hold none, which sum to 0)."""
    if isinstance(value, DenseArrayAttr) and value.element_type == I32 and len(value.values) == n:
        return value.values
    return ()


def _facet_name(prefix: str, name: str | None) -> str | None:
    return name if name is None or name.startswith("sdy_passes.") else prefix + name


@dataclass(slots=True)
class VerifyContext:
    """What op verifiers need beyond the op: the module, its meshes and its symbols (name ->
    top-level op, looked up once per verification rather than once per call op)."""

    module: Module
    meshes: MeshTable
    symbols: dict = field(default_factory=dict)


OPS: dict[str, OpDef] = {}
"""Op name -> definition: the one table (filled by `sdy_passes.dialects` from its modules)."""


def lookup(name: str) -> OpDef | None:
    try:
        return OPS.get(name)
    except TypeError:  # (unhashable: checked here, off the hot path)
        raise SdyError(f"lookup: expected an op name (str), found {type(name).__name__} {shown(name)}") from None


def has_trait(op: Operation, trait: str) -> bool:
    """Whether the op's `OpDef` declares the MLIR trait (`Terminator`, `Elementwise`, ...)."""
    opdef = OPS.get(op.name)
    return opdef is not None and trait in opdef.traits


def no_sharding_rule(op: Operation, conservative: bool = False) -> None:
    """The `sharding_rule` of ops Shardy's registry gives no rule on purpose (module, funcs,
    calls, constants, tokens, edges: they need no propagation or propagate through edges)."""
    return None


def fail(op: Operation, message: str):
    raise VerificationError(f"'{op.name}' op {message}", op.location)


# -- helpers for pretty parse hooks --------------------------------------------------------------

def add_operands(op: Operation, values) -> None:
    for v in values:
        op._add_operand(v)


def set_results(op: Operation, types) -> None:
    op.results = [OpResult(t, op, i) for i, t in enumerate(types)]


# -- helpers for pretty print hooks --------------------------------------------------------------

def parse_attrs_and_signature(p, op: Operation, refs) -> None:
    """`{attrs} : (A, B) -> (R)` after the operands `refs`: the function type gives the operand
    and result types."""
    p.set_attrs(op, p.parse_optional_attr_dict())
    p.expect(":")
    pos = p.skip()
    ft = p.parse_function_type()
    add_operands(op, p.resolve_all(refs, ft.inputs, pos))
    set_results(op, ft.results)


def attr_dict_for(op: Operation, consumed: tuple[str, ...] = ()) -> dict[str, Attribute] | None:
    """Discardable attributes plus unconsumed *inherent* properties (the pretty form's trailing
    `{...}`); None if a property could not be read back as one (then the op prints generic)."""
    opdef = OPS.get(op.name)
    inherent = opdef.properties if opdef is not None else ()
    extra = {}
    for k, v in op.properties.items():
        if k in consumed:
            continue
        if k not in inherent:
            return None
        extra[k] = v
    if extra.keys() & op.attributes.keys():
        return None
    extra.update(op.attributes)
    return extra


def opt_dict(d: dict) -> str:
    return " " + print_attr_dict(d) if d else ""


def print_type_signature(pr, op: Operation, *, functional: bool = False) -> None:
    """` : T` when every operand and result has type T (and not `functional`), else
    ` : (A, B) -> R`."""
    ts = set(op.operand_types) | set(op.result_types)
    if not functional and len(ts) == 1 and len(op.results) == 1 and op.operands:
        pr.out.append(f" : {op.result.type}")
    else:
        pr.out.append(" : " + print_function_type(op.operand_types, op.result_types))


def short_name(op: Operation) -> str:
    """MLIR drops the `func.` prefix only where `func` is the default dialect: directly in a
    `func.func` body (other region ops reset the default dialect)."""
    parent = op.parent_op
    if op.name.startswith("func.") and parent is not None and parent.name == "func.func":
        return op.name[len("func."):]
    return op.name


# -- syntax shared by several dialects -----------------------------------------------------------

def parse_return(p, op, n):
    p.set_attrs(op, p.parse_optional_attr_dict())
    refs = p.parse_optional_value_ref_list()
    if refs:
        pos = p.pos
        p.expect(":", "':' and the operand types")
        add_operands(op, p.resolve_all(refs, p.parse_type_list(), pos))


def print_return(pr, op, indent):
    attrs = attr_dict_for(op)
    if attrs is None or op.results or op.regions:
        return False
    pr.out.append(short_name(op) + opt_dict(attrs))
    if op.operands:
        pr.out.append(f" {pr.operands(op.operands)} : {', '.join(str(t) for t in op.operand_types)}")
    return True


def _typed_value_type(value) -> Type | None:
    """The type of a constant's value (`true` is an `i1`)."""
    return I1 if isinstance(value, BoolAttr) else getattr(value, "type", None)


def parse_constant(p, op, n):
    """`{attrs} dense<...> : T`, or the form StableHLO's `parseConstantOp` reads first (what it
    prints when the value's type is not the result's): `() <{value = ...}> {attrs} : () -> T`."""
    if p.parse_optional("("):
        p.expect(")")
        if p.parse_optional("<"):  # as in the generic form
            if not p.peek("{"):
                p.fail_expected("'{' of properties")
            op.properties.update(p.parse_attr_dict())
            p.expect(">", "'>' after properties")
        p.set_attrs(op, p.parse_optional_attr_dict())
        for token in (":", "(", ")", "->"):
            p.expect(token)
        set_results(op, [p.parse_type()])
        return
    p.set_attrs(op, p.parse_optional_attr_dict())
    pos = p.skip()
    value = p.parse_attribute()
    typ = _typed_value_type(value)
    if typ is None:
        raise p.error("expected a typed constant value such as dense<1.0> : tensor<f32>", pos)
    op.properties["value"] = value
    set_results(op, [typ])


_HLO_FLOATS = frozenset(("f4E2M1FN f6E2M3FN f6E3M2FN f8E3M4 f8E4M3 f8E4M3FN f8E4M3FNUZ f8E4M3B11FNUZ "
                         "f8E5M2 f8E5M2FNUZ f8E8M0FNU f16 f32 f64 bf16").split())


def _hlo_element(t: Type) -> bool:
    """StableHLO's `HLO_Float`, `HLO_Pred`, `HLO_Int` or `HLO_Complex` (quantized types are not
    registered in jaxlib's context: they stay opaque and fail, as there)."""
    if isinstance(t, FloatType):
        return t.name in _HLO_FLOATS
    if isinstance(t, IntegerType):
        return (t.width == 1 and not t.signedness) or (t.signedness != "s" and t.width in (2, 4, 8, 16, 32, 64))
    return isinstance(t, ComplexType) and isinstance(t.element_type, FloatType) and t.element_type.name in ("f32", "f64")


def verify_constant(op: Operation, ctx: VerifyContext) -> None:
    """`stablehlo.constant`'s result constraint (`HLO_StaticShapeTensorOrPerAxisQuantizedTensor`),
    then both constants' inferred type: the value's."""
    if op.name == "stablehlo.constant" and op.results:
        t = op.result.type
        if not (isinstance(t, RankedTensorType) and t.has_static_shape and _hlo_element(t.element_type)):
            fail(op, "result #0 must be statically shaped tensor of 4/6/8/16/32/64-bit float or bool or "
                     "2/4/8/16/32/64-bit integer or complex type with 32/64-bit float elements or per-tensor "
                     "integer quantized or per-axis integer quantized values, but got "
                     f"'{t}'")
    value = op.properties.get("value")
    inferred = _typed_value_type(value)
    if inferred is not None and op.result_types != (inferred,):
        fail(op, f"inferred type(s) '{inferred}' are incompatible with return type(s) of operation "
                 + ", ".join(f"'{t}'" for t in op.result_types))


def constant_names(op: Operation) -> tuple[str, ...] | None:
    """`%c` for integer constants, `%cst` for the others (MLIR's constant naming)."""
    if len(op.results) != 1:
        return None
    return ("c",) if isinstance(getattr(op.result.type, "element_type", None), IntegerType) else ("cst",)


def print_constant(pr, op, indent):
    attrs = attr_dict_for(op, ("value",))
    value = op.properties.get("value")
    if (attrs is None or value is None or op.operands or len(op.results) != 1
            or _typed_value_type(value) != op.result.type):
        return False
    pr.out.append(f"{op.name}{opt_dict(attrs)} {value}")
    return True
