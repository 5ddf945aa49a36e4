"""Dense literals (`dense<...> : tensor<...>`) read, refused and printed as jaxlib 0.10.2 reads,
refuses and prints them: shape and nesting checks, element kinds per element type, hex blobs of
the wrong size, out-of-range decimals per float type, complex literals; then random literals of
every element type (and random mutations of them) against jaxlib's parser in a child process.
`SDY_DENSE_LITERAL_EXAMPLES` sets the number of random literals (default 240)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from sdy_passes import IRParseError, parse_module
from tests.sdy_passes.shardy_dialect_tests import jaxlib_verdicts, project_verdict

EXAMPLES = int(os.environ.get("SDY_DENSE_LITERAL_EXAMPLES", "240"))


def _constant(body: str, typ: str) -> str:
    return f"func.func @f() -> {typ} {{\n  %0 = stablehlo.constant dense<{body}> : {typ}\n  return %0 : {typ}\n}}\n"


def _attribute(body: str, typ: str) -> str:
    """The literal on an unregistered op: element types `stablehlo.constant` refuses too."""
    return f'"t.a"() {{x = dense<{body}> : {typ}}} : () -> ()\n'


# (body, type): each was accepted or misread by the project before (issue 37 item 9).
KNOWN = [
    ("[1.0, 2.0, 3.0]", "tensor<4xf32>"), ("[[1,2],[3]]", "tensor<2x2xi32>"), ("[[1,2],3]", "tensor<2x2xi32>"),
    ("[[1,2],[3,4]]", "tensor<2x3xi32>"), ("[1,2,]", "tensor<3xi32>"), ("[1]", "tensor<i32>"), ("[1]", "tensor<2xi32>"),
    ("[]", "tensor<2xi32>"), ("", "tensor<2xi32>"), ("[]", "tensor<0xi32>"), ("[[], []]", "tensor<2x0xi32>"),
    ("[1 2]", "tensor<2xi32>"), ("1 2", "tensor<2xi32>"), ("[1, -]", "tensor<2xi32>"), ("[1, 0xg]", "tensor<2xi32>"),
    ("[1, truex]", "tensor<2xi32>"), ("[1.5, 2]", "tensor<2xi32>"), ('["a", "b"]', "tensor<2xi32>"), ("[-0, 1]", "tensor<2xi32>"),
    ("[1.0, inf]", "tensor<2xf32>"), ("[1.0, nan]", "tensor<2xf32>"), ("[1.0, -0x3F80]", "tensor<2xf32>"),
    ("[1.0, 0x7FC00001]", "tensor<2xf32>"), ("[1.0, 0x3C]", "tensor<2xf8E4M3FN>"), ('["a", 1.0]', "tensor<2xf32>"),
    ('"0x0000803F0000"', "tensor<2xf32>"), ('"0x010203"', "tensor<2xi1>"), ('"0x0102"', "tensor<2xi1>"),
    ('"0x012"', "tensor<2xi8>"), ('"abc"', "tensor<2xi8>"), ('"0x"', "tensor<0xi32>"), ('"0x00000000"', "tensor<0xi32>"),
    ('"0x0000803F"', "tensor<1xcomplex<f32>>"), ('"0x0000803F00000040"', "tensor<1xcomplex<f32>>"),
    ("1.0", "tensor<2xcomplex<f32>>"), ("[1.0, 2.0]", "tensor<2xcomplex<f32>>"), ("[(1.0, 2.0)]", "tensor<2xcomplex<f32>>"),
    ("[(1.0 2.0)]", "tensor<1xcomplex<f32>>"), ("[(1.0, 2.0]", "tensor<1xcomplex<f32>>"), ("(true, false)", "tensor<1xcomplex<f32>>"),
    ("[(0x3F800000, -1.0), (2.5, 1.0e400)]", "tensor<2xcomplex<f32>>"), ("(1,2)", "tensor<1xi32>"), ("[(1,2), 3]", "tensor<2xi32>"),
    ("[1, 2]", "tensor<2x!stablehlo.token>"), ('["a",  "b\\41"]', "tensor<2x!stablehlo.token>"), ('["a", "a"]', "tensor<2x!stablehlo.token>"),
    ('"0x0102"', "tensor<2x!stablehlo.token>"), ('[["a"], ["b"]]', "tensor<2x!stablehlo.token>"),
    ("[(1, 2), (3, -4)]", "tensor<2xcomplex<i32>>"), ("(1, 2)", "tensor<2xcomplex<i32>>"), ("[(1, 0x10), (3, -4)]", "tensor<2xcomplex<i8>>"),
    ("[(1.0, 2.0), (3.0, 1.0e9)]", "tensor<2xcomplex<bf16>>"), ("[1, 100]", "tensor<2xi7>"), ("[-1, 2]", "tensor<2xindex>"),
    ("[1.0, 0x7FFFF]", "tensor<2xtf32>"), ('"0x7F02"', "tensor<2xi7>"), ('"0xFF"', "tensor<2xui7>"),
    ('"0x' + "0102" * 60 + '"', "tensor<120xi7>"), ('"0x"', "tensor<0xi7>"), ('"0x"', "tensor<2x0xi7>"),
    ("[-0.5, -4.0, -1.0e-39, -3.0e-39, -0.75, -1.5, -3.0, -1.0e-50]", "tensor<8xf8E8M0FNU>"),
    ("[0.5, 4.0, 1.0e-39, 3.0e-39, 0.75, 1.5, 3.0, 1.0e-50]", "tensor<8xf8E8M0FNU>"),
    ('"0xD7"', "tensor<f4E2M1FN>"), ('"0xDEAC"', "tensor<2xi2>"), ('"0x87"', "tensor<3xui2>"), ("[-.5]", "tensor<1xf32>"),
    ("[1.0, // a comment\n 2.0]", "tensor<2xf32>"), ("[1.0,\n 2.0\n 3.0]", "tensor<3xf32>"), ("-", "tensor<ui16>"), ("[1, $]", "tensor<2xi32>"),
] + [("[1.0e400, -1.0e400, 1.0e39, -1.0e39, 1.0e-400, -1.0e-400, 1.0e5, 0x01]", f"tensor<8x{t}>")
     for t in ("f4E2M1FN", "f8E4M3FN", "f8E4M3FNUZ", "f8E4M3B11FNUZ", "f8E5M2FNUZ", "f8E5M2", "f8E4M3", "f8E3M4",
               "f8E8M0FNU", "bf16", "f16", "f32", "f64")] + [
    ("[" + ", ".join(f"({i}.5, -{i}.0)" for i in range(120)) + "]", "tensor<120xcomplex<f32>>"),
    ("[" + ", ".join(f"({i}.5, -{i}.0)" for i in range(101)) + "]", "tensor<101xcomplex<f64>>"),
    ("[" + ", ".join(["(1.5, 2.0)"] * 101) + "]", "tensor<101xcomplex<f64>>"),
    ("[" + ", ".join(f"{i}.5" for i in range(120)) + "]", "tensor<120xf32>"),
    ("[" + ", ".join(f"{i}.5" for i in range(120)) + "]", "tensor<2x60xf32>"),
    ("[[" + ", ".join(f"{i}.5" for i in range(60)) + "], [" + ", ".join(f"{i}.5" for i in range(60)) + "]]", "tensor<120xf32>"),
    ("[" + ", ".join(f"{i}.5" for i in range(119)) + ", inf]", "tensor<120xf32>"),
    ("[" + ", ".join(f"{i}.5" for i in range(120)) + ",]", "tensor<120xf32>"),
]


@pytest.mark.jaxlib
def test_known_literals_get_jaxlibs_verdict():
    """Each literal the project accepted, refused or printed otherwise than jaxlib: the same
    first error (line, column, message) or the same pretty and generic print."""
    texts = [_constant(b, t) for b, t in KNOWN] + [_attribute(b, t) for b, t in KNOWN]
    for text, theirs in zip(texts, jaxlib_verdicts(texts)):
        assert project_verdict(text) == tuple(theirs), text[:400]


def test_complex_pair_short_of_the_elements_is_refused():
    """`(1, 2) : tensor<3xi32>`: jaxlib reads past its two values (garbage in the third
    element); the project refuses it, located at `dense`."""
    with pytest.raises(IRParseError) as e:
        parse_module(_constant("(1,2)", "tensor<3xi32>"))
    assert (e.value.line, e.value.col) == (2, 27)
    assert e.value.message == "parsed 2 elements, but type ('tensor<3xi32>') expected 3 elements"


_INTS = ("i1", "i2", "i4", "i8", "i16", "i32", "i64", "ui2", "ui4", "ui8", "ui16", "ui32", "ui64", "si8", "si32",
         "i7", "ui12", "si24")  # (the last: no numpy dtype)
_FLOATS = ("f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2", "f8E4M3FNUZ", "f8E5M2FNUZ", "f8E4M3B11FNUZ",
           "f8E4M3", "f8E3M4", "f8E8M0FNU", "f4E2M1FN")
_COMPLEX = ("complex<f32>", "complex<f64>")
_WIDTH = {"bf16": 16, "f16": 16, "f32": 32, "f64": 64, "f4E2M1FN": 4}


def _bits(t: str) -> int:
    if t.startswith("complex<"):
        return 2 * _bits(t[8:-1])
    return _WIDTH.get(t, 8) if t.startswith(("f", "bf")) else int(t.lstrip("su")[1:])


def _int_element(rng, t: str) -> str:
    w = _bits(t)
    lo, hi = (0, 1 << w) if t.startswith("ui") else (-(1 << (w - 1)), 1 << (w - 1) if t.startswith("si") else 1 << w)
    kind = rng.integers(8)
    if kind == 0 and w == 1:
        return str(rng.choice(["true", "false"]))
    if kind == 1:
        return str(rng.choice([lo, hi - 1, lo - 1, hi, 0, -0 if rng.integers(2) else 1]))
    if kind == 2:
        return hex(int(rng.integers(0, 1 << min(w + 1, 63))))
    if kind == 3:
        return str(rng.choice(["-0", "-0x1", f"{rng.integers(0, 9)}.5", "true"]))
    return str(int(rng.integers(lo, hi, dtype=np.int64) if hi <= 1 << 63 else rng.integers(0, 1 << 63)))


def _float_element(rng, t: str) -> str:
    kind = rng.integers(10)
    if kind == 0:
        return f"0x{int(rng.integers(0, 1 << min(_bits(t) + rng.integers(0, 2), 63))):X}"
    if kind == 1:
        return str(rng.choice(["0.0", "-0.0", "1.0e400", "-1.0e400", "1.0e-400", "1.0e39", "65504.0", "3", "inf",
                                "-1.0e-50", "-3.0e-39", "-0.75"]))
    value = rng.standard_normal() * 10.0 ** rng.integers(-12, 12)
    text = f"{value:.{rng.integers(1, 9)}e}"
    return text if "." in text else text.replace("e", ".0e", 1)


def _element(rng, t: str) -> str:
    if t.startswith("complex<"):
        return f"({_float_element(rng, t[8:-1])}, {_float_element(rng, t[8:-1])})"
    return _int_element(rng, t) if t in _INTS else _float_element(rng, t)


def _literal(rng) -> tuple[str, str]:
    """A random literal and its tensor type: a nested list (a splat of equal elements at
    times), a splat, a hex blob (of the right size or not) or nothing; above 100 elements at
    times (printed as hex)."""
    t = str(rng.choice(_INTS + _FLOATS + _COMPLEX))
    shape = [int(d) for d in rng.choice([0, 1, 2, 3], rng.integers(0, 4), p=[0.1, 0.3, 0.3, 0.3])]
    if rng.integers(8) == 0:
        shape = [int(rng.integers(98, 130))]
    n = int(np.prod(shape, dtype=np.int64))
    form = rng.choice(["list", "list", "list", "splat", "hex", "empty"])
    if form == "splat":
        body = _element(rng, t)
    elif form == "hex":
        size = -(-_bits(t) // 8) * int(rng.choice([n, 1, n + 1, max(n - 1, 0)]))
        body = '"0x' + bytes(rng.integers(0, 256, size, dtype=np.uint8)).hex().upper() + '"'
    elif form == "empty":
        body = ""
    else:
        first = _element(rng, t)
        element = (lambda: first) if rng.integers(4) == 0 else (lambda: _element(rng, t))
        body = _nested(shape, element)
    return body, f"tensor<{'x'.join(map(str, shape + [t]))}>"


def _nested(shape: list[int], element) -> str:
    if not shape:
        return element()
    return "[" + ", ".join(_nested(shape[1:], element) for _ in range(shape[0])) + "]"


def _mutate(rng, body: str) -> str:
    """One random edit: a character deleted, inserted or replaced, or a list wrapped."""
    pool = list("[](),- 0x1.e\"a+") + ["inf", "true", "0x7F", "1.5", "[]"]
    i = int(rng.integers(0, len(body) + 1))
    kind = rng.integers(4)
    if kind == 0 and body:
        return body[:i] + body[i + 1:]
    if kind == 1:
        return body[:i] + str(rng.choice(pool)) + body[i:]
    if kind == 2 and body:
        return body[:i] + str(rng.choice(pool)) + body[i + 1:]
    return "[" + body + "]"


def random_literals(seed: int, count: int) -> list[str]:
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(count):
        body, typ = _literal(rng)
        if rng.integers(5) < 2:
            body = _mutate(rng, body)
        texts.append((_constant if rng.integers(3) else _attribute)(body, typ))
    return texts


@pytest.mark.jaxlib
@pytest.mark.parametrize("seed", [37])
def test_random_literals_get_jaxlibs_verdict(seed):
    """Random literals of every element type jaxlib's constants hold (ints i1..i64, ui*, si*,
    floats f64..f4, complex), tensors of rank 0..3 with zero-size dimensions, some mutated:
    the same accept or refuse as jaxlib, the same first error (line, column, message), and when
    accepted the same pretty and generic print."""
    texts = random_literals(seed, EXAMPLES)
    theirs = jaxlib_verdicts(texts)
    differ = [(text, tuple(v), project_verdict(text)) for text, v in zip(texts, theirs)
              if project_verdict(text) != tuple(v)]
    assert not differ, differ[:3]
    verdicts = {v[0] for v in theirs}
    assert verdicts == {"ok", "error"}


@pytest.mark.jaxlib
def test_literals_cut_at_the_end_of_the_text_get_jaxlibs_verdict():
    """A literal the text ends in: MLIR's errors at the end (its last character, or past the
    blank space before it for a missing token), for every place a literal can be cut."""
    literal = '[[(1, -2)], [(3, 4)]] : tensor<2x1xcomplex<i32>>'
    texts = ['"t.a"() {x = dense<' + literal[:i] for i in range(len(literal) - 30)]
    texts += ['"t.a"() {x = dense<"0x', '"t.a"() {x = dense<[1, 2 ', '"t.a"() {x = dense<[-']
    for text, theirs in zip(texts, jaxlib_verdicts(texts)):
        assert project_verdict(text) == tuple(theirs), text
