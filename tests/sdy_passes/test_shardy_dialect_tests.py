"""Every chunk of Shardy's dialect tests gets jaxlib 0.10.2's verdict: accepted with the same
pretty and generic print, or refused with the same first message at the same line:col.

Needs a Shardy checkout or git mirror of openxla/shardy (`SHARDY_SRC`, or one of the default
places `shardy_dialect_tests.py` names). The collectives' files are the collectives work's.
"""

import pytest

from tests.sdy_passes.shardy_dialect_tests import MISSING, compare, shardy_source

pytestmark = pytest.mark.jaxlib

NOT_YET: dict[str, str] = {}
"""Chunks on which the project still differs from jaxlib, with the reason."""


def test_dialect_test_chunks_get_jaxlibs_verdict():
    src = shardy_source()
    if src is None:
        pytest.skip(MISSING)
    total, differ = compare(src)
    unexpected = {k: v for k, v in differ.items() if k not in NOT_YET}
    assert not unexpected, "\n".join(f"{k}:\n  jaxlib: {a}\n  ours:   {b}" for k, (a, b) in
                                     list(unexpected.items())[:5])
    fixed = sorted(set(NOT_YET) - set(differ))
    assert not fixed, f"now agree with jaxlib, take them off NOT_YET: {fixed}"
    assert total - len(differ) >= 195
