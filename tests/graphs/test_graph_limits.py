"""The size of a deployment graph is bounded when it is written (`graph_tasks`, `graph_links` of
gitstore/limits.py), so an accepted graph can be executed; an execution one of whose node
records would exceed `document_keys`, or whose records together would exceed `transaction_keys`,
is 400 naming the graph (and the node), before its plan is built and anything is recorded."""

from __future__ import annotations

import time

import pytest

from gitstore import limits
from gitstore.api import create_app

from .conftest import API, CLUSTER, RELEASE, assert_error, task
from .test_push_gate import RELEASE_GRAPHS, clone, push

EXECUTE = f"{API}/graphs/execute"
#: The defaults of gitstore/limits.py, spelled out.
GRAPH_TASKS, GRAPH_LINKS = 500, 2500
TRANSACTION_KEYS = 5_000_000


def chain(count: int) -> list[dict]:
    """`count` tasks, each requiring the one before it."""
    return [task(f"t{i}", requires=[f"t{i - 1}"] if i else []) for i in range(count)]


def dense(count: int) -> list[dict]:
    """`count` tasks, each requiring every one before it: count * (count - 1) / 2 links."""
    return [task(f"t{i}", requires=[f"t{j}" for j in range(i)]) for i in range(count)]


def waiting_on_every_node(count: int) -> list[dict]:
    """`count` tasks on every node, each waiting for the one before it on every node: each
    node's record holds `count` times the nodes' links."""
    return [
        task(
            f"w{i}",
            **({"requires": [f"w{i - 1}"], "cross_depends": [{"name": f"w{i - 1}"}]} if i else {}),
        )
        for i in range(count)
    ]


@pytest.fixture
def low_document_keys(graph_store):
    limits.configure(graph_store.root, {"document_keys": 2_000})
    yield
    limits.configure(graph_store.root / "nowhere")  # the defaults again for later tests


def test_the_defaults_are_the_documented_ones():
    assert (limits.DEFAULT.graph_tasks, limits.DEFAULT.graph_links) == (GRAPH_TASKS, GRAPH_LINKS)
    assert limits.DEFAULT.transaction_keys == TRANSACTION_KEYS


@pytest.mark.parametrize("owner", [f"{CLUSTER}", RELEASE])
def test_a_graph_over_the_task_or_link_limit_is_refused_naming_it(api, owner):
    url = f"{owner}/deployment_graphs/chain"
    body = assert_error(
        api.post(url, json={"tasks": chain(GRAPH_TASKS + 1)}),
        400,
        "graph 'chain'",
        f"more than {GRAPH_TASKS} tasks",
        "graph_tasks",
    )
    assert "transactions/" not in body["message"]
    assert api.get(url).status_code == 404
    tasks = dense(72)  # 2,556 links
    assert_error(
        api.post(f"{owner}/deployment_graphs/dense", json={"tasks": tasks}),
        400,
        "graph 'dense'",
        f"more than {GRAPH_LINKS} dependency links",
        "graph_links",
    )
    assert api.post(url, json={"tasks": chain(GRAPH_TASKS)}).status_code == 201


def test_a_graph_at_the_limits_runs_dry_on_three_nodes(api, add_node):
    for number in (1, 2, 3):
        add_node(f"node-{number}.example", ["controller"])
    tasks = [  # every task on every node, five links each: the most the defaults accept
        task(f"t{i}", requires=[f"t{j}" for j in range(max(0, i - 5), i)])
        for i in range(GRAPH_TASKS)
    ]
    assert api.post(f"{CLUSTER}/deployment_graphs/big", json={"tasks": tasks}).status_code == 201
    body = {"cluster": 1, "graphs": [{"type": "big"}], "dry_run": True}
    answer = api.post(EXECUTE, json=body)
    assert answer.status_code == 202, answer.get_json()
    assert answer.get_json()["status"] == "ready"


def test_a_merged_graph_over_the_limit_is_reported_by_check_and_execute(api, graph_store):
    half = GRAPH_TASKS // 2 + 1
    release = [task(f"r{i}") for i in range(half)]
    assert api.post(f"{RELEASE}/deployment_graphs/x", json={"tasks": release}).status_code == 201
    own = [task(f"c{i}") for i in range(half)]
    assert_error(
        api.post(f"{CLUSTER}/deployment_graphs/x", json={"tasks": own}), 400, "graph_tasks"
    )
    graph_store.graphs.create("release", 1, "y", {"tasks": chain(GRAPH_TASKS)})
    limits.configure(graph_store.root, {"graph_tasks": 100})
    try:
        check = api.get(f"{CLUSTER}/deployment_graphs/y/check").get_json()
        assert check["valid"] is False and "graph_tasks" in check["errors"][0]["message"]
        body = {"cluster": 1, "graphs": [{"type": "y"}], "dry_run": True}
        assert_error(api.post(EXECUTE, json=body), 400, "graph 'y'", "graph_tasks")
    finally:
        limits.configure(graph_store.root / "nowhere")


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_plan_too_big_for_its_nodes_is_400_naming_the_graph(
    api, add_node, graph_store, low_document_keys, dry_run
):
    """The limit applies to each node's file: 150 tasks on a node are over 2,000 values (each
    task's entry, its link and its history entry), whatever the number of nodes."""
    for number in (1, 2, 3):
        add_node(f"node-{number}.example", ["controller"])
    assert api.post(f"{CLUSTER}/deployment_graphs/wide", json={"tasks": chain(150)}).status_code
    assert api.post(f"{CLUSTER}/deployment_graphs/narrow", json={"tasks": chain(100)}).status_code
    before = graph_store.environment_repo(1).head()
    body = {"cluster": 1, "graphs": [{"type": "wide"}], "dry_run": dry_run, "executor": "local"}
    error = assert_error(
        api.post(EXECUTE, json=body),
        400,
        "graph 'wide' on 3 nodes",
        "record of node 1",
        "more than 2000, the limit document_keys",
    )
    assert "transactions/" not in error["message"]  # a file the client never sent
    assert graph_store.environment_repo(1).head() == before  # nothing recorded, nothing running
    assert api.get(f"{API}/transactions?cluster_id=1").get_json() == []
    body["graphs"][0]["type"] = "narrow"  # 100 tasks on each of the three nodes fit
    assert api.post(EXECUTE, json={**body, "dry_run": True}).status_code == 202


@pytest.fixture
def wide_cluster(graph_store):
    """Cluster 1 with 200 compute nodes and a graph `wide` of 150 tasks, each waiting for the
    one before it on every node: ~32,000 values in each node's record (within
    `document_keys`), ~6.4 million in all. Building its plan takes many seconds."""
    bodies = [
        {"fqdn": f"node-{n}.example", "roles": ["compute"], "status": "ready"}
        for n in range(1, 201)
    ]
    graph_store.nodes.create_many(1, bodies)
    graph_store.graphs.create("cluster", 1, "wide", {"tasks": waiting_on_every_node(150)})
    return graph_store


def _client(store, **bounds):
    return create_app({"TESTING": True, "GITSTORE_LIMITS": bounds}, store=store).test_client()


WIDE = {"cluster": 1, "graphs": [{"type": "wide"}], "dry_run": True}


def test_a_transaction_too_big_in_all_is_refused_before_its_plan_is_built(wide_cluster):
    """The default `transaction_keys` refuses it from the estimate; a request that built the
    plan would pass the (lowered) deadline first."""
    client = _client(wide_cluster, graph_execute_seconds=3)
    before = wide_cluster.environment_repo(1).head()
    try:
        error = assert_error(
            client.post(EXECUTE, json=WIDE),
            400,
            "graph 'wide' on 200 nodes",
            "records of its 200 nodes together",
            f"more than {TRANSACTION_KEYS}, the limit transaction_keys",
        )
    finally:
        limits.configure(wide_cluster.root / "nowhere")
    assert "record of node" not in error["message"]  # no one node's record is too big
    assert wide_cluster.environment_repo(1).head() == before
    assert client.get(f"{API}/transactions?cluster_id=1").get_json() == []


def test_a_plan_past_its_deadline_is_cut_while_it_is_built(wide_cluster):
    """With `transaction_keys` raised the plan is built, and its building checks the deadline:
    a 503 soon after it, not a worker busy until the plan is done (and killed by gunicorn's
    timeout on a large one)."""
    client = _client(wide_cluster, transaction_keys=10**8, graph_execute_seconds=0.5)
    started = time.monotonic()
    try:
        response = client.post(EXECUTE, json=WIDE)
    finally:
        limits.configure(wide_cluster.root / "nowhere")
    took = time.monotonic() - started
    assert_error(response, 503, "deadline of 0.5 s", "graph_execute_seconds")
    assert took < 0.5 + 2
    assert client.get(f"{API}/transactions?cluster_id=1").get_json() == []


def test_a_pushed_graph_over_the_limit_is_refused(graph_store, tmp_path):
    work = clone(graph_store.root / "catalog.git", tmp_path / "catalog")
    done = push(work, {f"{RELEASE_GRAPHS}/chain.yaml": chain(GRAPH_TASKS + 1)})
    assert done.returncode != 0
    assert f"{RELEASE_GRAPHS}/chain.yaml: the graph holds more than {GRAPH_TASKS}" in done.stderr
