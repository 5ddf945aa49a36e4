"""A reshard computed on a `dask.distributed` LocalCluster (2 worker processes, started and closed
here) gives the same bytes as the in-memory path: the graph's tasks are picklable and the
simulation needs nothing from the client process."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dask.array", reason="dask is not installed (pip install 'layout-toolkit[dask]')")
distributed = pytest.importorskip("distributed", reason="dask is not installed (pip install 'layout-toolkit[dask]')")

from sharding import DeviceMesh, TensorSharding  # noqa: E402
from tests.sharding.test_collectives import _same  # noqa: E402

T = TensorSharding.parse


def test_reshard_on_local_cluster():
    dm = DeviceMesh('<["x"=2, "y"=4]>')
    g = np.random.default_rng(0).standard_normal((60, 44)).astype(np.float32)  # uneven on y
    source, target = T('<@mesh, [{"x"}, {"y"}]>'), T('<@mesh, [{"y"}, {"x"}]>')
    eager, eager_plan = dm.reshard(dm.shard(g, source, fill=-1), target, fill=-1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  worker_dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster, timeout=60) as client:
        assert len(client.scheduler_info(n_workers=-1)["workers"]) == 2
        lazy, plan = dm.reshard(dm.shard(g, source, fill=-1, backend="dask"), target, fill=-1)
        buffers = client.compute(lazy.data.data).result(timeout=120)
        back = client.compute(dm.unshard(lazy)).result(timeout=120)
    assert [s.kind for s in plan.steps] == ["collective_permute", "all_to_all"]
    assert _same(buffers, eager.data.values) and _same(back, g)
    assert plan.transfers == eager_plan.transfers
