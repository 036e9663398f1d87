"""A node create costs the same in a cluster of 400 nodes as in one of 20 (issue 40, point 4):
counted in Python calls, which a loop over every node multiplies and a clock on a shared
machine cannot tell apart from noise (bench/scale_transactions.py measures the time)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

from gitstore.deployment.inventory import _read_nodes as read_nodes
from gitstore.deployment.roster import Roster

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


def test_a_node_create_does_not_grow_with_the_cluster(api, tag_store):
    for number in (1, 2, 3):
        assert api.post(f"{CLUSTER}/nodes", json=node(number, ["controller"])).status_code == 201
    created = iter(range(4, 10_000))

    def create(roles: list[str]) -> Callable[[], object]:
        def post():
            response = api.post(f"{CLUSTER}/nodes", json=node(next(created), roles))
            assert response.status_code == 201, response.get_json()

        return post

    tag_store.nodes.create_many(1, [node(next(created), ["compute"]) for _ in range(17)])
    create(["compute"])()  # the worker's caches hold the cluster, as a serving worker's do
    small = python_calls(create(["compute"])) + python_calls(create(["controller"]))
    tag_store.nodes.create_many(1, [node(next(created), ["compute"]) for _ in range(400)])
    create(["compute"])()
    large = python_calls(create(["compute"])) + python_calls(create(["controller"]))
    grown = (large - small).most_common(5)
    assert large.total() <= small.total() * 1.05, (small.total(), large.total(), grown)


def test_the_roster_a_write_keeps_is_the_one_of_its_nodes(api, tag_store):
    """Writes update the roster of the nodes they change (`deployment/roster.py`): after
    creates, an update that changes roles, added tags, a deletion and a pushed-like edit of a
    node's primary tags, the roster kept for the head is the one made from its nodes afresh."""
    nodes = tag_store.nodes
    for number, roles in enumerate((["controller"], ["compute"], ["compute"], ["cinder"]), 1):
        assert api.post(f"{CLUSTER}/nodes", json=node(number, roles)).status_code == 201
    assert api.put(f"{CLUSTER}/nodes/2", json={"roles": ["controller"]}).status_code == 200
    assert api.put(f"{CLUSTER}/nodes/3", json={"tags_added": ["mongo"]}).status_code == 200
    assert api.delete(f"{CLUSTER}/nodes/1").status_code in (200, 204)
    head = tag_store.environment_repo(1).snapshot()
    cluster = nodes.cluster(1)
    kept = nodes._index.roster(head, cluster.nodes)
    assert kept == Roster.of(read_nodes(head))
    assert 2 in kept.contenders(cluster.meta)  # the controller left is elected
    assert cluster.nodes[2]["primary_tags"]
