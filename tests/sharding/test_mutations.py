"""Mutated real sharding text (XLA's HloSharding cases, Shardy shardings and meshes) through
the parsers and `python -m sharding` (issue 37: hostile text): a value, or the package's error
(a `ShardingParseError` with its position, never chained onto an internal exception), and on the
CLI one `error:` line without a traceback. A parsed HloSharding prints text that reads back to
itself. `MUTATION_EXAMPLES` / `MUTATION_SEED` (README) scale and seed the mutants.
"""

from __future__ import annotations

import os

from sharding import HloSharding, Mesh, MeshTable, ShardingError, ShardingParseError, TensorSharding, from_hlo_sharding
from sharding.__main__ import main
from tests.mutation import SEED, mutants
from tests.sharding.test_hlo_xla import CASES, V3_CASES

EXAMPLES = int(os.environ.get("MUTATION_EXAMPLES", "120"))

SHARDINGS = ['<@mesh, [{"x"}, {"y", ?}]>', '#sdy.sharding<@m, [{"a":(1)2}, {}], replicated={"b"}, unreduced={"c"}>',
             '#sdy.sharding_per_value<[<@m, [{"x"}]>, <@m, []>]>', '<@m, [{}, {}]>']
MESHES = ['<["x"=2, "y"=4]>', '#sdy.mesh<["a"=4, "b"=2], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>',
          'sdy.mesh @m = <["x"=2]>\nsdy.mesh @n = <["y"=4]>', '<[]>', "<device_ids=[3]>"]


def _value_or_own_error(fn, text):
    try:
        return fn(text)
    except ShardingParseError as e:
        assert 0 <= e.pos <= len(e.text) and str(e).endswith("^"), (text, str(e))
    except ShardingError as e:
        assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__), (text, repr(e))
    return None


def test_mutated_hlo_shardings_parse_print_and_convert_or_are_refused():
    for text in mutants(CASES + V3_CASES, EXAMPLES * 4, SEED):
        hlo = _value_or_own_error(HloSharding.parse, text)
        if hlo is None:
            continue
        assert str(HloSharding.parse(str(hlo))) == str(hlo), (SEED, text)
        for rank in (0, 2):
            _value_or_own_error(lambda t: from_hlo_sharding(t, rank=rank, num_devices=8), text)


def test_mutated_shardings_and_meshes_are_read_or_refused():
    for text in mutants(SHARDINGS, EXAMPLES * 4, SEED):
        _value_or_own_error(TensorSharding.parse, text)
    for text in mutants(MESHES, EXAMPLES * 4, SEED):
        _value_or_own_error(Mesh.parse, text)
        _value_or_own_error(MeshTable.parse, text)


def test_mutated_cli_arguments_give_one_error_line(capsys):
    meshes = mutants(['<["x"=2, "y"=4]>', 'sdy.mesh @m = <["x"=2, "y"=4]>'], EXAMPLES // 2, SEED)
    shardings = mutants(['<@m, [{"x"}, {"y"}]>', '#sdy.sharding<@m, [{"y", "x"}, {}]>'], EXAMPLES // 2, SEED + 1)
    shapes = mutants(["8x8", "[8, 8]", "tensor<8x8xf32>"], EXAMPLES // 2, SEED + 2)
    for mesh, sharding, shape in zip(meshes, shardings, shapes):
        for argv in (["show", mesh, sharding, shape], ["hlo", mesh, sharding],
                     ["reshard", mesh, sharding, '<@m, [{}, {"x"}]>', shape]):
            code = main(argv)
            err = capsys.readouterr().err
            assert "Traceback" not in err and code in (0, 1), (SEED, argv, err)
            assert code == 0 or sum("error:" in line for line in err.splitlines()) == 1, (SEED, argv, err)
