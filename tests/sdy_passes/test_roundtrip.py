"""Round trips: the golden cases in ../shared/sdy_cases (skipped when absent), random modules."""

import pytest
from hypothesis import given, settings

from sdy_passes import parse_module, print_module
from tests.conftest import SDY_CASES, needs_shared
from tests.sdy_passes.pass_oracle import jaxlib_parse
from tests.sdy_passes.ssa import assert_same_ir
from tests.sdy_passes.strategies import ir_examples, modules

needs_cases = needs_shared(SDY_CASES)

GENERIC = sorted(SDY_CASES.glob("*/*.in.generic.mlir")) + sorted(SDY_CASES.glob("*/*.out.mlir"))
PRETTY = sorted(SDY_CASES.glob("*/*.in.mlir"))


def _id(path):
    return f"{path.parent.name}/{path.name}"


@needs_cases
@pytest.mark.parametrize("path", GENERIC, ids=_id)
def test_generic_parse_print_gives_the_text_back(path):
    text = path.read_text()
    module = parse_module(text)
    assert_same_ir(print_module(module, generic=True), text)
    assert print_module(module, generic=True, mlir_names=True) == text  # byte for byte


@needs_cases
@pytest.mark.parametrize("path", PRETTY, ids=_id)
def test_pretty_input_parses_to_the_generic_module(path):
    module = parse_module(path.read_text())
    generic = path.with_name(path.name.replace(".in.mlir", ".in.generic.mlir")).read_text()
    assert_same_ir(print_module(module, generic=True), generic)


@needs_cases
@pytest.mark.parametrize("path", PRETTY, ids=_id)
def test_our_pretty_form_reads_back_to_the_same_module(path):
    module = parse_module(path.read_text())
    pretty = print_module(module)
    again = parse_module(pretty)
    assert_same_ir(print_module(again, generic=True), print_module(module, generic=True))
    assert_same_ir(print_module(again), pretty)


@settings(max_examples=ir_examples(20))
@given(modules())
def test_random_modules_print_reparse_and_print_identically(module):
    generic = print_module(module, generic=True)
    pretty = print_module(module)
    assert print_module(parse_module(generic, verify=False), generic=True) == generic
    again = parse_module(pretty, verify=False)
    assert print_module(again) == pretty
    assert print_module(again, generic=True) == generic
    assert print_module(module.clone(), generic=True) == generic


@needs_cases
@pytest.mark.jaxlib
def test_pretty_form_is_jaxlibs_byte_for_byte_and_reads_jaxlibs():
    texts = [p.read_text() for p in GENERIC]
    for path, text, r in zip(GENERIC, texts, jaxlib_parse(texts)):
        theirs = r["pretty"]
        assert print_module(parse_module(text), mlir_names=True) == theirs, path  # byte for byte
        assert_same_ir(print_module(parse_module(theirs), generic=True), text)


@settings(max_examples=ir_examples(12))
@given(modules())
def test_mlir_names_read_back(module):
    pretty = print_module(module, mlir_names=True)
    again = parse_module(pretty, verify=False)
    assert print_module(again, mlir_names=True) == pretty
    assert print_module(again, generic=True) == print_module(module, generic=True)
