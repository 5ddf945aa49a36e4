"""What JAX writes, read and printed back as jaxlib prints it.

The programs of `jax_corpus.PROGRAMS` are lowered live by jax 0.10.2 in one child process; for
each, the project parses jaxlib's pretty text and must print it back byte for byte, and print
the generic form jaxlib prints for the same text (SSA names included). With debug info
(`loc(...)` and `#loc` aliases) the texts must parse; printing them byte for byte is not done
yet (see `test_debug_info_parses`).
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


def test_debug_info_parses(lowered):
    for name, r in lowered.items():
        module = parse_module(r["pretty_debug"])
        assert print_module(module) == r["pretty"], name
