"""Cost models of a reshard plan: alpha-beta (ring, bidirectional ring) and DTensor's formulas."""

from __future__ import annotations

import math

import pytest

import sharding
from sharding import ShardingError
from sharding.cost import INTER_HOST, INTRA_HOST, alpha_beta, default_links, dtensor_redistribute_cost


def test_default_links_follow_dtensor():
    mesh = sharding.Mesh.parse('<["a"=4, "b"=4, "c"=2]>')
    # From the minor-most axis: c (2), b (8): within a host; a (32): across hosts.
    assert default_links(mesh) == {"c": INTRA_HOST, "b": INTRA_HOST, "a": INTER_HOST}


def test_ring_formulas():
    mesh = sharding.Mesh.parse('<["x"=4]>')
    plan = sharding.reshard_plan('<@m, [{"x"}, {}]>', '<@m, [{}, {}]>', mesh, (1024, 1024))
    b = 1024 * 1024 * 4 / 4
    alpha, beta = 1e-6, 1e9
    ring = alpha_beta(plan, {"x": (alpha, beta)})
    assert ring.steps == pytest.approx([3 * alpha + 3 * b / beta])
    bidi = alpha_beta(plan, {"x": (alpha, beta)}, algorithm="bidirectional_ring")
    assert bidi.steps == pytest.approx([2 * alpha + 3 * b / (2 * beta)])
    plan = sharding.reshard_plan('<@m, [{"x"}, {}]>', '<@m, [{}, {"x"}]>', mesh, (1024, 1024))
    assert [s.kind for s in plan.steps] == ["all_to_all"]
    assert alpha_beta(plan, {"x": (alpha, beta)}).total == pytest.approx(3 * alpha + 3 * b / (2 * beta))
    assert alpha_beta(plan, {"x": (alpha, beta)}, algorithm="bidirectional_ring").total == \
        pytest.approx(2 * alpha + b * 4 / 8 / beta)


def test_permute_is_its_slowest_message():
    mesh = sharding.Mesh.parse('<["x"=4, "y"=2]>')
    plan = sharding.reshard_plan('<@m, [{"x"}]>', '<@m, [{"x":(1)2, "y"}]>', mesh, (64,))
    assert [s.kind for s in plan.steps] == ["collective_permute"]
    links = {"x": (1e-6, 1e9), "y": (5e-6, 1e8)}
    t = alpha_beta(plan, links).total
    # A tile moves one step along x ((x=1) -> (x=2, y=0)... ) and across y: the y link is slowest.
    assert t > 16 * 4 / 1e9 and math.isfinite(t)


def test_bad_links():
    plan = sharding.reshard_plan('<@m, [{"x"}]>', '<@m, [{}]>', '<["x"=2]>', (8,))
    with pytest.raises(ShardingError, match="unknown mesh axis"):
        plan.cost(links={"q": (1e-6, 1e9)})
    with pytest.raises(ShardingError, match="algorithm"):
        plan.cost(algorithm="tree")


def test_dtensor_formulas():
    mesh = sharding.Mesh.parse('<["x"=4]>')
    plan = sharding.reshard_plan('<@m, [{"x"}, {}]>', '<@m, [{}, {}]>', mesh, (1024, 1024))
    gib = 1024 * 1024 * 4 / 4 / 1024**3
    assert dtensor_redistribute_cost(plan) == pytest.approx(6.6 + 3 * 0.6 + gib * 4 * 3 / 4 / 87.7 * 1e6)
    plan = sharding.reshard_plan('<@m, [{}, {}]>', '<@m, [{"x"}, {}]>', mesh, (1024, 1024))
    assert dtensor_redistribute_cost(plan) == 0.0
    plan = sharding.reshard_plan('<@m, [{"x"}, {}]>', '<@m, [{}, {"x"}]>', mesh, (1024, 1024))
    assert dtensor_redistribute_cost(plan) == pytest.approx(6.6 + 3 * 0.6 + gib * 3 / 4 / 87.7 * 1e6 + 1.0)
    mesh8 = sharding.Mesh.parse('<["x"=8]>')
    plan = sharding.reshard_plan('<@m, [{"x":(1)2}, {}]>', '<@m, [{}, {}]>', mesh8, (16, 16))
    assert dtensor_redistribute_cost(plan) == math.inf  # sub-axes have no DTensor placement
