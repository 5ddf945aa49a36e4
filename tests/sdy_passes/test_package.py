"""The package as a whole: its public names, how its tests find shared data, imports."""

from __future__ import annotations

import pathlib
import re

import sdy_passes

TESTS = pathlib.Path(__file__).resolve().parents[1]


def test_dir_lists_every_public_name():
    assert set(sdy_passes.__all__) <= set(dir(sdy_passes))
    assert callable(sdy_passes.explain)


def test_absent_shared_data_has_one_skip_message():
    """Tests find ../shared through conftest (`SHARED`) and skip through `needs_shared`, which
    gives the one message naming the folder."""
    for path in TESTS.rglob("*.py"):
        if path.name in ("conftest.py", "test_package.py"):
            continue
        text = path.read_text()
        assert not re.search(r'parents\[\d\] / "shared"', text), path
        assert "not found at" not in text, path
        for reason in re.findall(r"skipif\([^\n]*reason=([^\n]*)", text):
            assert "shared" not in reason and "CASES" not in reason, (path, reason)
