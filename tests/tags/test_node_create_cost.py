"""A node create costs the same in a cluster of 400 nodes as in one of 20 (issue 40, point 4):
counted in Python calls, which a loop over every node multiplies and a clock on a shared
machine cannot tell apart from noise (bench/scale_transactions.py measures the time)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

import pytest

from gitstore.api import create_app
from gitstore.deployment.electorate import Electorate
from gitstore.deployment.inventory import _read_nodes as read_nodes
from gitstore.store import Store

from .conftest import CLUSTER


def python_calls(action: Callable[[], object]) -> Counter:
    """The Python functions `action` calls (generators counted at each resume), by name."""
    calls: Counter = Counter()

    def profile(frame, event, _arg):
        if event == "call":
            calls[f"{frame.f_code.co_filename.rsplit('/', 2)[-1]}:{frame.f_code.co_name}"] += 1

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return calls


def node(number: int, roles: list[str]) -> dict:
    return {"fqdn": f"node-{number}.example", "roles": roles, "status": "ready"}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_node_create_does_not_grow_with_the_cluster(api, tag_store, workers):
    """With two workers (two stores on one root), each create follows one by the other."""
    apps = [api] + [
        create_app({"TESTING": True}, store=Store(tag_store.root)).test_client()
        for _ in range(workers - 1)
    ]
    for number in (1, 2, 3):
        assert api.post(f"{CLUSTER}/nodes", json=node(number, ["controller"])).status_code == 201
    created = iter(range(4, 10_000))

    def create(roles: list[str], app) -> Callable[[], object]:
        def post():
            response = app.post(f"{CLUSTER}/nodes", json=node(next(created), roles))
            assert response.status_code == 201, response.get_json()

        return post

    def round_of_creates() -> Counter:
        for app in apps:  # each worker's caches hold the cluster, as a serving worker's do
            create(["compute"], app)()
        calls = Counter()
        for app in apps:
            calls += python_calls(create(["compute"], app))
            calls += python_calls(create(["controller"], app))
        return calls

    tag_store.nodes.create_many(1, [node(next(created), ["compute"]) for _ in range(17)])
    small = round_of_creates()
    tag_store.nodes.create_many(1, [node(next(created), ["compute"]) for _ in range(400)])
    large = round_of_creates()
    grown = (large - small).most_common(5)
    assert large.total() <= small.total() * 1.05, (small.total(), large.total(), grown)


def test_the_electorate_a_write_keeps_is_the_one_of_its_nodes(api, tag_store):
    """Writes update the electorate of the nodes they change (`deployment/electorate.py`): after
    creates, an update that changes roles, added tags, a deletion and a pushed-like edit of a
    node's primary tags, the electorate kept for the head is the one made from its nodes afresh."""
    nodes = tag_store.nodes
    for number, roles in enumerate((["controller"], ["compute"], ["compute"], ["cinder"]), 1):
        assert api.post(f"{CLUSTER}/nodes", json=node(number, roles)).status_code == 201
    assert api.put(f"{CLUSTER}/nodes/2", json={"roles": ["controller"]}).status_code == 200
    assert api.put(f"{CLUSTER}/nodes/3", json={"tags_added": ["mongo"]}).status_code == 200
    assert api.delete(f"{CLUSTER}/nodes/1").status_code in (200, 204)
    head = tag_store.environment_repo(1).snapshot()
    cluster = nodes.cluster(1)
    kept = nodes._index.electorate(head, cluster.nodes)
    assert kept == Electorate.of(read_nodes(head))
    assert 2 in kept.contenders(cluster.meta)  # the controller left is elected
    assert cluster.nodes[2]["primary_tags"]


def test_a_worker_reads_nodes_another_one_wrote_in_id_order(api, tag_store):
    """The other worker reads the new tree by what changed since the one it read: nodes
    written out of id order (99 before 7) come back in id order, a deleted one gone."""
    other = create_app({"TESTING": True}, store=Store(tag_store.root)).test_client()
    for number in (1, 2, 3):
        assert api.post(f"{CLUSTER}/nodes", json=node(number, ["compute"])).status_code == 201
    assert [n["id"] for n in other.get(f"{CLUSTER}/nodes").get_json()] == [1, 2, 3]
    bodies = [{**node(n, ["compute"]), "id": n} for n in (99, 10, 7)]
    assert api.post(f"{CLUSTER}/nodes", json=bodies).status_code == 201
    assert api.delete(f"{CLUSTER}/nodes/2").status_code in (200, 204)
    listed = other.get(f"{CLUSTER}/nodes").get_json()
    assert [n["id"] for n in listed] == [1, 3, 7, 10, 99]
    assert listed == api.get(f"{CLUSTER}/nodes").get_json()
