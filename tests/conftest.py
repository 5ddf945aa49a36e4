"""Shared test configuration: Hypothesis profiles, the jaxlib marker, the sdy_cases folder."""

import importlib.util
import os
import pathlib

import pytest
from hypothesis import HealthCheck, settings

# Examples per property test that sets no count of its own: modest by default (the suite's time);
# HYPOTHESIS_EXAMPLES=N for a longer run (the defaults were 50, and 100 in `ci`).
EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "30"))
# too_slow measures the machine's load, not the test: a loaded 2-core run failed on it.
settings.register_profile("dev", max_examples=EXAMPLES, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci", max_examples=EXAMPLES, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

HAS_JAXLIB = importlib.util.find_spec("jaxlib") is not None
requires_jaxlib = pytest.mark.skipif(not HAS_JAXLIB, reason="jaxlib 0.10.2 (the oracle) is not installed")

# Test data recorded from the real systems lives beside the project in ../shared, not in it.
SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared"
SDY_CASES = SHARED / "sdy_cases"
ORACLE_JSON = SHARED / "oracle" / "jax_device_maps.json"


def needs_shared(path):
    """Skip unless `path` (under ../shared) exists; one message for every such skip."""
    rel = path.relative_to(SHARED)
    return pytest.mark.skipif(
        not path.exists(), reason=f"shared test data ../shared/{rel} is absent (expected outside the workspace)")


# The tiling tests (and tiling's doctests) run first: their first calls compile numba kernels
# under a lock that every process on the cache shares. xdist's worksteal hands each worker a
# contiguous half of the list and steals from the end, so they run in the first worker while the
# other runs the rest, instead of both workers meeting in them at the end, one waiting.
TESTS = pathlib.Path(__file__).resolve().parent
TILING_FIRST = (TESTS / "tiling", TESTS.parent / "tiling")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not any(item.path.is_relative_to(d) for d in TILING_FIRST))
    for item in items:
        if "jaxlib" in item.keywords and not HAS_JAXLIB:
            item.add_marker(pytest.mark.skip(reason="jaxlib 0.10.2 (the oracle) is not installed"))
