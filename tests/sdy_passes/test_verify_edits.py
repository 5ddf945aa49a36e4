"""The verifier re-checks only what edits can have changed (a pipeline verifies after every
pass): every way of editing the IR counts in `edit_count()`, a module no edit touched since it
passed is not walked again, and after any edit the verdict (message and location, in jaxlib's
order) is the one a fresh verification of the same IR gives."""

import random

import pytest

from sdy_passes import SdyError, parse_module, verify_module
from sdy_passes import verifier
from sdy_passes.ir import Block, OpResult, Region, edit_count
from tests.conftest import SHARED, needs_shared

CASES = SHARED / "sdy_cases_export_pipeline"

_TEXT = """sdy.mesh @mesh = <["a"=2, "b"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) -> tensor<8x8xf32> {
  %0 = stablehlo.add %arg0, %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"a"}, {"b"}]>]>} : tensor<8x8xf32>
  %1 = sdy.manual_computation(%0) in_shardings=[<@mesh, [{"a"}, {}]>] out_shardings=[<@mesh, [{"a"}, {}]>] manual_axes={"a"} (%arg1: tensor<4x8xf32>) {
    %2 = stablehlo.negate %arg1 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"b"}]>]>} : tensor<4x8xf32>
    sdy.return %2 : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
"""


def _ops(module):
    return {op.name: op for op in module.walk()}


# Each way to edit the IR through the API: (name, edit(module)).
EDITS = [
    ("set attribute", lambda m: _ops(m)["stablehlo.add"].attributes.__setitem__("x", m.ops[0].properties["sym_name"])),
    ("delete attribute", lambda m: _ops(m)["stablehlo.add"].attributes.__delitem__("sdy.sharding")),
    ("pop attribute", lambda m: _ops(m)["stablehlo.add"].attributes.pop("sdy.sharding")),
    ("update attributes", lambda m: _ops(m)["stablehlo.add"].attributes.update({})),
    ("setdefault attribute", lambda m: _ops(m)["stablehlo.add"].attributes.setdefault("y", m.ops[0].properties["sym_name"])),
    ("clear properties", lambda m: _ops(m)["sdy.manual_computation"].properties.clear()),
    ("replace attributes", lambda m: setattr(_ops(m)["stablehlo.add"], "attributes", {})),
    ("rename op", lambda m: setattr(_ops(m)["stablehlo.add"], "name", "stablehlo.subtract")),
    ("set operand", lambda m: _ops(m)["stablehlo.add"].set_operand(0, m.ops[1].regions[0].block.arguments[0])),
    ("value type", lambda m: setattr(_ops(m)["stablehlo.add"].result, "type", _ops(m)["stablehlo.negate"].result.type)),
    ("append result", lambda m: _ops(m)["stablehlo.negate"].results.append(
        OpResult(m.ops[1].regions[0].block.arguments[0].type, _ops(m)["stablehlo.negate"], 1))),
    ("clear regions", lambda m: _ops(m)["sdy.manual_computation"].regions.clear()),
    ("add region", lambda m: _ops(m)["stablehlo.add"].add_region(Region([Block()]))),
    ("move op", lambda m: _ops(m)["stablehlo.add"].move_after(_ops(m)["sdy.manual_computation"])),
    ("erase mesh", lambda m: m.ops[0].erase()),
    ("block ops", lambda m: m.ops[1].regions[0].block.ops.reverse()),
    ("block argument", lambda m: m.ops[1].regions[0].block.add_argument(m.ops[1].regions[0].block.arguments[0].type)),
    ("region blocks", lambda m: _ops(m)["sdy.manual_computation"].regions[0].blocks.clear()),
]


@pytest.mark.parametrize("name, edit", EDITS, ids=[e[0] for e in EDITS])
def test_every_edit_counts_and_the_verdict_is_a_fresh_one(name, edit):
    module = parse_module(_TEXT)
    before = edit_count()
    edit(module)
    assert edit_count() > before, name
    assert _verdict(module) == _fresh_verdict(module)


def test_storing_what_is_there_is_no_edit():
    module = parse_module(_TEXT)
    add = _ops(module)["stablehlo.add"]
    twin = _ops(parse_module(_TEXT))["stablehlo.add"]  # equal values, other objects
    text = str(module)
    before = edit_count()
    add.attributes["sdy.sharding"] = twin.attributes["sdy.sharding"]
    add.result.type = twin.result.type
    module.body.set_ops(list(module.ops))
    assert edit_count() == before
    assert str(module) == text


def test_a_module_no_edit_touched_is_not_walked_again(monkeypatch):
    module = parse_module(_TEXT)
    parse_module(_TEXT)  # other modules' creation is an edit too, but not of this one: still walked
    calls = []
    real = verifier._verify_tree
    monkeypatch.setattr(verifier, "_verify_tree", lambda root, *a: calls.append(root) or real(root, *a))
    verify_module(module)
    assert calls.count(module.op) == 1
    verify_module(module)
    assert calls.count(module.op) == 1
    _ops(module)["stablehlo.add"].attributes.pop("sdy.sharding")
    verify_module(module)
    assert calls.count(module.op) == 2


def test_an_attribute_check_is_redone_when_the_axes_around_it_change():
    module = parse_module(_TEXT)
    manual = _ops(module)["sdy.manual_computation"]
    # the negate's sharding names "b": fine while only "a" is manual, bound once "b" is too
    other = parse_module(_TEXT.replace('manual_axes={"a"}', 'manual_axes={"a", "b"}'), verify=False)
    manual.properties["manual_axes"] = _ops(other)["sdy.manual_computation"].properties["manual_axes"]
    assert _verdict(module) == _fresh_verdict(module)
    assert _verdict(module)[0] == "VerificationError"


def _verdict(module):
    try:
        verify_module(module)
    except SdyError as e:
        return type(e).__name__, str(e)
    return None


def _fresh_verdict(module):
    """The verdict with nothing remembered from earlier verifications."""
    verifier._PASSED.pop(module.op, None)
    return _verdict(module)


def _real_modules(rng, n):
    paths = sorted(CASES.glob("*/*.out.mlir"))
    out = []
    for path in rng.sample(paths, len(paths)):
        try:
            out.append(parse_module(path.read_text()))
        except SdyError:  # several modules in one file (split input)
            continue
        if len(out) == n:
            break
    return out


def _random_edit(module, rng):
    """One random edit of the kinds passes make, most of them leaving invalid IR."""
    ops = [op for op in module.walk()]
    op = rng.choice(ops)
    values = [v for o in ops for v in o.results] + [a for o in ops for r in o.regions for b in r.blocks for a in b.arguments]
    kind = rng.randrange(7)
    if kind == 0:  # an sdy attribute moved to another op
        donors = [o for o in ops if any(k.startswith("sdy.") for k in o.attributes)]
        if donors:
            donor = rng.choice(donors)
            key = rng.choice([k for k in donor.attributes if k.startswith("sdy.")])
            op.attributes[key] = donor.attributes[key]
    elif kind == 1 and op.results:  # a result retyped
        rng.choice(op.results).type = rng.choice(values).type
    elif kind == 2 and op.num_operands:  # an operand replaced by any value
        op.set_operand(rng.randrange(op.num_operands), rng.choice(values))
    elif kind == 3 and op.parent is not None and len(op.parent.ops) > 1:  # an op moved
        op.move_before(rng.choice([o for o in op.parent.ops if o is not op]))
    elif kind == 4 and op.properties:  # a property dropped or taken from another op
        key = rng.choice(list(op.properties))
        donors = [o.properties[key] for o in ops if key in o.properties and o is not op]
        if donors and rng.random() < 0.5:
            op.properties[key] = rng.choice(donors)
        else:
            del op.properties[key]
    elif kind == 5 and module.meshes():  # a mesh removed
        rng.choice(module.meshes()).detach()
    elif kind == 6:  # an op renamed to another op's name
        op.name = rng.choice(ops).name


@needs_shared(CASES)
def test_random_edits_of_real_modules_get_a_fresh_verdict():
    """Shardy's export cases (jaxlib's outputs), verified, then edited as a pass might (a few
    edits, verified after each): each verdict equals a fresh verification's."""
    rng = random.Random(20261202)
    failures = 0
    for module in _real_modules(rng, 60):
        verify_module(module)
        for _ in range(3):
            _random_edit(module, rng)
            verdict = _verdict(module)
            assert verdict == _fresh_verdict(module)
            failures += verdict is not None
    assert failures >= 30  # the edits do break modules: the comparison is not vacuous
