"""How a transaction is stored: a summary, the graphs' task data and one file per node
(gitstore/deployment/records.py). One node is read from its own file, a listing from the
summaries; a transaction recorded whole by an earlier gitstore is still read."""

from __future__ import annotations

import json

import yaml

from gitstore import limits
from gitstore.backend.changes import ChangeSet
from gitstore.deployment import records

from . import test_execute
from .conftest import API, assert_error
from .test_execute import EXECUTE

cluster = test_execute.cluster  # the fixture: nodes 1, 2 and 3 (pending deletion), a graph

DRY = {"cluster": 1, "graphs": [{"type": "default"}], "dry_run": True}


def commit(store, files: dict[str, bytes], message: str = "test: written past the API") -> None:
    def operation(snapshot):
        changes = ChangeSet(message)
        for path, data in files.items():
            changes.put(path, data)
        return changes

    store.environment_repo(1).update(operation, store.default_author)


def test_a_transaction_is_a_summary_its_plans_and_one_file_per_node(cluster, graph_store):
    answer = cluster.post(EXECUTE, json=DRY).get_json()
    snapshot = graph_store.environment_repo(1).snapshot()
    base = f"transactions/{answer['id']}"
    assert sorted(e.name for e in snapshot.list(base)) == ["nodes", "plans.yaml", "summary.yaml"]
    assert sorted(e.name for e in snapshot.list(f"{base}/nodes")) == [
        "1.json",
        "2.json",
        "null.json",
    ]
    summary = snapshot.read_mapping(f"{base}/summary.yaml")
    assert summary["graphs"] == [{"type": "default", "status": "ready"}]
    assert "tasks_graph" not in yaml.safe_dump(summary)
    node = json.loads(snapshot.read(f"{base}/nodes/2.json"))
    late = next(e for e in node["graphs"][0]["tasks"] if e["id"] == "late")
    assert late["requires"] == ["early@2"]  # a link is stored as "<task>@<node key>"
    whole = cluster.get(f"{API}/transactions/{answer['id']}").get_json()
    assert whole["graphs"][0]["tasks_graph"] == answer["graphs"][0]["tasks_graph"]
    assert sorted(map(str, whole["graphs"][0]["history"])) == sorted(
        map(str, answer["graphs"][0]["history"])
    )


def test_one_node_is_read_from_its_own_file(cluster, graph_store):
    transaction = cluster.post(EXECUTE, json=DRY).get_json()["id"]
    url = f"{API}/transactions/{transaction}/nodes"
    two = cluster.get(f"{url}/2")
    assert two.status_code == 200
    assert two.headers["X-Gitstore-Commit"] == graph_store.environment_repo(1).head()
    body = two.get_json()
    assert (body["id"], body["node"], body["status"]) == (transaction, "2", "ready")
    graph = body["graphs"][0]
    assert [e["id"] for e in graph["tasks"]] == ["early", "late", "agent", "manifest"]
    assert graph["tasks"][1]["requires"] == [{"name": "early", "node_id": "2"}]
    assert {h["node_id"] for h in graph["history"]} == {"2"}
    sync = cluster.get(f"{url}/null").get_json()["graphs"][0]
    assert [e["id"] for e in sync["tasks"]] == ["deploy_start"]
    # node 1's file broken past the API: node 2 and the listing do not read it
    commit(graph_store, {records.node_path(transaction, "1"): b"{not json"})
    assert cluster.get(f"{url}/2").status_code == 200
    assert_error(cluster.get(f"{url}/1"), 400, f"transactions/{transaction}/nodes/1.json")
    commit(graph_store, {f"transactions/{transaction}/plans.yaml": b"[not, a, mapping"})
    listed = cluster.get(f"{API}/transactions?cluster_id=1").get_json()
    assert [(t["id"], t["status"]) for t in listed] == [(transaction, "ready")]


def test_bad_node_names_and_unknown_ones(cluster):
    transaction = cluster.post(EXECUTE, json=DRY).get_json()["id"]
    url = f"{API}/transactions/{transaction}/nodes"
    assert_error(cluster.get(f"{url}/node-1"), 400, "'node-1'", "node id, 'master' or 'null'")
    assert_error(cluster.get(f"{url}/3"), 404, f"transaction {transaction}", "node '3'")
    assert_error(cluster.get(f"{API}/transactions/99/nodes/1"), 404, "transaction 99")


def test_a_large_record_is_given_without_its_nodes(cluster, graph_store):
    """Past document_bytes for all its node files together, GET leaves tasks_graph and
    history to the node route."""
    transaction = cluster.post(EXECUTE, json=DRY).get_json()["id"]
    snapshot = graph_store.environment_repo(1).snapshot()
    sizes = [snapshot.size(records.node_path(transaction, k)) for k in ("null", "1", "2")]
    plans = snapshot.size(f"transactions/{transaction}/plans.yaml")
    bound = max(*sizes, plans) + 100  # every file fits, not all node files together
    assert bound < sum(sizes)
    limits.configure(graph_store.root, {"document_bytes": bound})
    try:
        whole = cluster.get(f"{API}/transactions/{transaction}").get_json()
        assert "tasks_graph" not in whole["graphs"][0] and "history" not in whole["graphs"][0]
        assert whole["graphs"][0]["nodes"] == [1, 2]
        assert "db" in whole["graphs"][0]["tasks_directory"]
        again = cluster.post(EXECUTE, json=DRY)
        assert again.status_code == 202, again.get_json()
        assert "tasks_graph" not in again.get_json()["graphs"][0]
    finally:
        limits.configure(graph_store.root / "nowhere")


def test_a_transaction_recorded_whole_is_still_read(cluster, graph_store):
    """Stores written before records were split hold `transactions/<id>.yaml`."""
    old = {
        "id": 7,
        "cluster": 1,
        "status": "ready",
        "dry_run": True,
        "executor": "dry-run",
        "runner": {"host": "elsewhere", "pid": 1},
        "graphs": [
            {
                "type": "default",
                "status": "ready",
                "nodes": [1],
                "tasks_graph": {"1": [{"id": "early", "type": "shell", "requires": []}]},
                "tasks_directory": {"early": {"type": "shell"}},
                "history": [{"task_name": "early", "node_id": "1", "status": "skipped"}],
            }
        ],
    }
    commit(graph_store, {"transactions/7.yaml": yaml.safe_dump(old).encode()})
    listed = cluster.get(f"{API}/transactions?cluster_id=1").get_json()
    assert listed == [
        {
            "id": 7,
            "cluster": 1,
            "status": "ready",
            "dry_run": True,
            "executor": "dry-run",
            "graphs": [{"type": "default", "status": "ready"}],
        }
    ]
    assert cluster.get(f"{API}/transactions/7").get_json() == old
    node = cluster.get(f"{API}/transactions/7/nodes/1").get_json()
    assert node["graphs"][0]["tasks"] == old["graphs"][0]["tasks_graph"]["1"]
    assert node["graphs"][0]["history"] == old["graphs"][0]["history"]
    assert cluster.post(EXECUTE, json=DRY).get_json()["id"] == 8  # ids go on after it


def test_newtons_graph_on_40_nodes_is_recorded_and_read_node_by_node(
    api, graph_store, newton_tasks
):
    """One document per transaction held Newton's graph on at most ~15 nodes (issue 35)."""
    graph_store.graphs.create("release", 1, "default", {"tasks": newton_tasks})
    roles = [["controller"]] * 3 + [["ceph-osd"]] * 5 + [["compute"]] * 32
    body = [
        {"fqdn": f"node-{n}.example", "roles": r, "status": "ready"}
        for n, r in enumerate(roles, start=1)
    ]
    assert api.post(f"{API}/clusters/1/nodes", json=body).status_code == 201
    answer = api.post(EXECUTE, json=DRY)
    assert answer.status_code == 202, answer.get_json()
    transaction = answer.get_json()["id"]
    compute = api.get(f"{API}/transactions/{transaction}/nodes/40").get_json()["graphs"][0]
    assert "top-role-compute" in [e["id"] for e in compute["tasks"]]
    assert {h["status"] for h in compute["history"]} == {"skipped"}
    network = next(e for e in compute["tasks"] if e["id"] == "openstack-network-start")
    assert {"name": "top-role-compute", "node_id": "9"} in network["requires"]
