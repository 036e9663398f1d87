"""A node create costs the same in a cluster of 400 nodes as in one of 20 (issue 40, point 4):
counted in Python calls, which a loop over every node multiplies and a clock on a shared
machine cannot tell apart from noise (bench/scale_transactions.py measures the time)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

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
