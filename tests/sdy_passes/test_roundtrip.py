"""Round trips over the golden cases in ../shared/sdy_cases (skipped when absent)."""

import pytest

from sdy_passes import parse_module, print_module
from tests.conftest import SDY_CASES
from tests.sdy_passes.ssa import assert_same_ir

pytestmark = pytest.mark.skipif(not SDY_CASES.is_dir(), reason="../shared/sdy_cases is absent")

GENERIC = sorted(SDY_CASES.glob("*/*.in.generic.mlir")) + sorted(SDY_CASES.glob("*/*.out.mlir"))
PRETTY = sorted(SDY_CASES.glob("*/*.in.mlir"))


def _id(path):
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", GENERIC, ids=_id)
def test_generic_parse_print_gives_the_text_back(path):
    text = path.read_text()
    assert_same_ir(print_module(parse_module(text), generic=True), text)
