"""Mutated real XLA layout and shape text through `Shape.parse`, `Layout.parse`, `byte_size` and
`python -m tiling show` (issue 37: hostile text): a value, or a `LayoutError` (a
`LayoutParseError` with its position and caret, never chained onto an internal exception), and on
the CLI one `error:` line without a traceback. `MUTATION_EXAMPLES` / `MUTATION_SEED` (README)
scale and seed the mutants.
"""

from __future__ import annotations

import os

import tiling
from tiling import Layout, LayoutError, LayoutParseError, Shape
from tiling.__main__ import main
from tests.mutation import SEED, mutants

EXAMPLES = int(os.environ.get("MUTATION_EXAMPLES", "120"))

SHAPES = ["f32[8,128]{1,0:T(8,128)}", "bf16[4,8]{1,0:T(2,4)(2,1)}", "s8[4096,4096]{1,0:T(8,128)(4,1)}",
          "pred[3,5]{0,1:T(8,128)(4,1)E(8)}", "s4[16]{0:E(4)}", "f32[2,3,4]{2,1,0:T(2,2)S(1)}",
          "(f32[2], u8[3]{0})", "f32[?,<=4]{1,0}", "c64[2,2]{0,1:T(1,1)*}"]
LAYOUTS = ["{1,0:T(8,128)}", "{0,1:T(2,4)(2,1)E(16)S(1)}", "{1,0:T(8,128)(4,1)L(1024)}", "{}"]


def _value_or_own_error(fn, text):
    try:
        return fn(text)
    except LayoutParseError as e:
        assert 0 <= e.pos <= len(e.text) and str(e).endswith("^"), (SEED, text, str(e))
    except LayoutError as e:
        assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__), (SEED, text, repr(e))
    return None


def test_mutated_shapes_and_layouts_are_read_or_refused():
    for text in mutants(SHAPES, EXAMPLES * 4, SEED):
        shape = _value_or_own_error(Shape.parse, text)
        if shape is not None:
            _value_or_own_error(tiling.byte_size, shape)
    for text in mutants(LAYOUTS, EXAMPLES * 4, SEED):
        _value_or_own_error(Layout.parse, text)


def test_mutated_cli_shapes_give_one_error_line(capsys):
    for text in mutants(SHAPES[:5], EXAMPLES, SEED):
        code = main(["show", text, "--limit", "16"])
        err = capsys.readouterr().err
        assert "Traceback" not in err and code in (0, 1), (SEED, text, err)
        assert code == 0 or sum("error:" in line for line in err.splitlines()) == 1, (SEED, text, err)
