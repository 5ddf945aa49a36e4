"""What JAX writes, read and printed back as jaxlib prints it.

The programs of `jax_corpus.PROGRAMS` are lowered live by jax 0.10.2 in one child process; for
each, the project parses jaxlib's pretty text and must print it back byte for byte, and print
the generic form jaxlib prints for the same text (SSA names included), with and without debug
info (`loc(...)` and the `#loc` alias tables before and after the module).
"""

import pytest

from sdy_passes import parse_module, print_module
from tests.sdy_passes.jax_corpus import PROGRAMS, lower_all

pytestmark = pytest.mark.jaxlib


@pytest.fixture(scope="module")
def lowered():
    return lower_all()


def test_the_corpus_is_large_and_lowers(lowered):
    assert len(PROGRAMS) >= 100
    errors = {name: r["error"] for name, r in lowered.items() if "error" in r}
    assert not errors


def _first_difference(got: str, want: str) -> str:
    for i, (a, b) in enumerate(zip(got.splitlines(), want.splitlines())):
        if a != b:
            return f"line {i + 1}:\n  ours:   {a}\n  jaxlib: {b}"
    return "lengths differ"


def test_pretty_and_generic_print_like_jaxlib(lowered):
    failures = []
    for name, r in lowered.items():
        module = parse_module(r["pretty"])
        pretty = print_module(module)
        generic = print_module(module, generic=True)
        if pretty != r["pretty"]:
            failures.append(f"{name} (pretty) {_first_difference(pretty, r['pretty'])}")
        if generic != r["generic"]:
            failures.append(f"{name} (generic) {_first_difference(generic, r['generic'])}")
    assert not failures, "\n".join(failures[:10])


def test_generic_text_reads_back(lowered):
    for name, r in lowered.items():
        assert print_module(parse_module(r["generic"]), generic=True) == r["generic"], name


def test_debug_info_prints_like_jaxlib(lowered):
    failures = []
    for name, r in lowered.items():
        module = parse_module(r["pretty_debug"])
        assert print_module(module) == r["pretty"], name
        for kind, text in (("pretty", r["pretty_debug"]), ("generic", r["generic_debug"])):
            for source in ("pretty_debug", "generic_debug"):
                got = print_module(parse_module(r[source]), generic=kind == "generic",
                                   print_locations=True)
                if got != text:
                    failures.append(f"{name} ({kind} from {source}) {_first_difference(got, text)}")
            got = print_module(parse_module(r["pretty"]), generic=kind == "generic",
                               print_locations=True)
            if got != r[f"{kind}_positions"]:
                failures.append(f"{name} ({kind} with positions) "
                                f"{_first_difference(got, r[f'{kind}_positions'])}")
    assert not failures, f"{len(failures)} differ:\n" + "\n".join(failures[:10])


# Every location kind, aliases used both after ops (deferred to the end) and inside block
# arguments' locations (printed before the module), ops without a location (their position).
_LOCATION_MODULES = [
    """module @m {
  func.func @f(%arg0: tensor<4xf32> loc("x"), %arg1: tensor<4xf32> loc(fused<"meta">["a":1:2 to 3:4, "b"])) -> tensor<f32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32> loc(callsite("g"("a":1:2 to :9) at "n\\22"(fused["c":5:6, "d"])))
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32> loc("b")
    %2 = stablehlo.abs %1 : tensor<f32>
    return %2 : tensor<f32> loc(unknown)
  } loc(fused["a":1:2 to 3:4, "x", "a":1:2 to 1:4, "a":1:2 to :4, "a":1, "a":1:0])
} loc("top")
""",
    """module {
  "t.op"() ({
  ^bb0(%a: i32 loc(#loc2), %b: i32 loc(callsite("q"("f.py":7) at "f.py":7:0))):
    "t.end"() : () -> () loc(#loc3)
  }) : () -> () loc(#loc3)
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("f.py":7)
#loc2 = loc("q"(#loc1))
#loc3 = loc(fused<{k = 1 : i32}>[#loc1, #loc2, "z"])
""",
    # no locations: ops and arguments get their positions, the implicit module "-":0:0
    "func.func @f(%a: tensor<f32>) -> tensor<f32> {\n  return %a : tensor<f32>\n}\n",
]

_LOCATION_CHILD = """
from jax._src.interpreters import mlir
from jax._src.lib.mlir import ir
RESULT = []
for text in PAYLOAD:
    with mlir.make_ir_context() as ctx:
        ctx.allow_unregistered_dialects = True
        op = ir.Module.parse(text).operation
        RESULT.append([op.get_asm(enable_debug_info=True, print_generic_op_form=g)
                       for g in (False, True)])
"""


def test_location_kinds_print_like_jaxlib():
    from tests.jaxlib_child import run_child
    for text, (pretty, generic) in zip(_LOCATION_MODULES, run_child(_LOCATION_CHILD, _LOCATION_MODULES)):
        module = parse_module(text)
        assert print_module(module, print_locations=True) == pretty
        assert print_module(module, generic=True, print_locations=True) == generic
