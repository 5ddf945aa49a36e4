"""asv_bench (issue 36 item 3): the environment variables the benchmarks read are in a README
table, and every row a class's `setup_cache` feeds takes its value (asv passes it before the
parameters to `setup` and to each row; a row that does not take it fails in `asv run` only)."""

import importlib
import inspect
import pathlib
import re
import sys

from tests.test_readme import environment_read, environment_tables

BENCH = pathlib.Path(__file__).resolve().parents[1] / "asv_bench"
MODULES = sorted(p.stem for p in (BENCH / "benchmarks").glob("*.py") if not p.stem.startswith("__"))
ROW = re.compile(r"^(time|track|peakmem|mem|timeraw)_")


def test_every_environment_variable_the_benchmarks_read_is_in_a_table():
    read, table = environment_read(BENCH / "benchmarks"), environment_tables()
    assert {"BENCH_LONG", "SDY_BENCH_NO_JAXLIB"} <= read
    assert read - {"XLA_FLAGS"} <= table, sorted(read - table)  # (XLA_FLAGS: JAX's, extended)


def _takes(fn, n: int) -> bool:
    kinds = [p.kind for p in inspect.signature(fn).parameters.values()]
    return inspect.Parameter.VAR_POSITIONAL in kinds or len(kinds) == n


def test_rows_take_what_setup_cache_returns():
    sys.path.insert(0, str(BENCH))
    checked = 0
    try:
        for name in MODULES:
            module = importlib.import_module(f"benchmarks.{name}")
            for cls in vars(module).values():
                if not (inspect.isclass(cls) and cls.__module__ == module.__name__
                        and any(map(ROW.match, dir(cls)))):
                    continue
                instance = cls()
                params = getattr(cls, "params", [])
                n = len(params) if params and isinstance(params[0], list) else int(bool(params))
                n += hasattr(cls, "setup_cache")
                checked += hasattr(cls, "setup_cache")
                for attr in dir(cls):
                    if ROW.match(attr) or attr == "setup":
                        assert _takes(getattr(instance, attr), n), f"{name}.{cls.__name__}.{attr}"
    finally:
        sys.path.remove(str(BENCH))
    assert checked >= 8
