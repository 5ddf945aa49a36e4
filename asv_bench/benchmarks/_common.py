"""Shared by the benchmark files: the switch for the long sizes, and asv's skip.

`asv run --python=same --quick` runs the short sizes (about 10 minutes on 2 cores); `BENCH_LONG=1`
adds the long ones (100k-op modules, 10k calls, the computed 64k x 64k dask reshard), which take
an hour or more.
"""

import os

try:
    from asv_runner.benchmarks.mark import SkipNotImplemented
except ImportError:  # imported outside asv
    SkipNotImplemented = NotImplementedError
"""Raised in a benchmark's body (not only its `setup`), asv records a skip instead of a failure with a traceback."""

LONG = os.environ.get("BENCH_LONG", "") not in ("", "0")


def sizes(short, long):
    """The parameter values: `short`, and `long` after them with `BENCH_LONG=1`."""
    return list(short) + (list(long) if LONG else [])
