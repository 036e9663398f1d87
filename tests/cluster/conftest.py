"""One real cluster for the tests of this folder: etcd, three `gitstore serve` nodes and HAProxy
on loopback (tests/cluster_harness.py), started once per module: it takes seconds to start."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cluster_harness import ETCD, HAPROXY, Cluster

from gitstore import Store

RESOURCES = ["astute", "globals"]


def seed_store(root: Path) -> Path:
    """Component `fuel` and environment 1 (hierarchy [nodes]): the store every node starts from."""
    store = Store.init(root)
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": n} for n in RESOURCES]}
    )
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    return root


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    for program in (ETCD, HAPROXY):
        assert Path(program).exists(), f"{program} is missing: .ci/run installs it"
    workdir = tmp_path_factory.mktemp("cluster")
    seed = seed_store(workdir / "seed")
    with Cluster(workdir, seed) as running:
        yield running
    shutil.rmtree(workdir, ignore_errors=True)
