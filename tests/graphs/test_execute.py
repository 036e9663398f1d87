"""`POST /api/v1/graphs/execute` and `/api/v1/transactions`: plans, node selection, the
`dry-run` and `local` executors, failures, 409 while a transaction runs."""

from __future__ import annotations

import time

import pytest

from gitstore.api import create_app
from gitstore.deployment.records import summary_path

from .conftest import API, CLUSTER, RELEASE, assert_error, task

EXECUTE = f"{API}/graphs/execute"


def wait_for(api, transaction_id: int, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = api.get(f"{API}/transactions/{transaction_id}").get_json()
        if doc["status"] not in ("pending", "running"):
            return doc
        time.sleep(0.05)
    raise AssertionError(f"transaction {transaction_id} did not end: {doc['status']}")


def ran(doc: dict, graph: int = 0) -> list[tuple]:
    return [
        (h["task_name"], h["node_id"], h["status"])
        for h in doc["graphs"][graph]["history"]
        if h["status"] != "skipped"
    ]


@pytest.fixture
def cluster(api, add_node, tmp_path):
    """Nodes 1 (controller), 2 (compute), 3 (compute, pending deletion); a release graph whose
    shell tasks append `<task>@<node>` to a log file, in a known dependency order."""
    add_node("node-1.example", ["controller"])
    add_node("node-2.example", ["compute"])
    add_node("node-3.example", ["compute"], pending_deletion=True)
    log = tmp_path / "run.log"

    def shell(task_id: str, **fields) -> dict:
        command = f'echo "$GITSTORE_TASK@$GITSTORE_NODE" >> {log}'
        return task(task_id, parameters={"cmd": command, "timeout": 10}, **fields)

    tasks = [
        {"id": "deploy_start", "type": "stage"},
        shell("late", roles=["compute"], requires=["early"]),
        shell("early", roles="*", requires=["deploy_start"]),
        shell("db", tags=["controller"], requires=["early"]),
        shell(
            "agent",
            roles=["compute"],
            requires=["late"],
            cross_depends=[{"name": "db", "role": ["controller"]}],
        ),
        {
            "id": "manifest",
            "type": "puppet",
            "version": "2.1.0",
            "roles": "*",
            "requires": ["early"],
        },
    ]
    assert (
        api.post(f"{RELEASE}/deployment_graphs/default", json={"tasks": tasks}).status_code == 201
    )
    api.log = log
    return api


def test_dry_run_records_the_plan_in_one_commit(cluster, graph_store):
    before = graph_store.environment_repo(1).head()
    answer = cluster.post(
        EXECUTE,
        json={"cluster": 1, "graphs": [{"type": "default"}], "dry_run": True, "executor": "local"},
    )
    assert answer.status_code == 202
    doc = answer.get_json()
    assert doc["status"] == "ready" and doc["dry_run"] is True and doc["executor"] == "dry-run"
    assert doc["source"] == {"commit": before, "catalog_commit": graph_store.catalog().head()}
    assert answer.headers["X-Gitstore-Catalog-Commit"] == graph_store.catalog().head()
    assert answer.headers["X-Gitstore-Commit"] == graph_store.environment_repo(1).head()
    graph = doc["graphs"][0]
    assert graph["nodes"] == [1, 2]  # node 3 is pending deletion: not in the default filter
    assert list(graph["tasks_graph"]) == ["null", "1", "2"]
    assert [e["id"] for e in graph["tasks_graph"]["2"]] == ["early", "late", "agent", "manifest"]
    assert graph["tasks_directory"]["db"]["parameters"]["timeout"] == 10
    assert {h["status"] for h in graph["history"]} == {"skipped"}
    assert not cluster.log.exists()
    repo = graph_store.environment_repo(1)
    assert repo.snapshot().read_mapping(summary_path(doc["id"]))["status"] == "ready"
    assert repo.commit_info(repo.head()).parents == (before,)
    listed = cluster.get(f"{API}/transactions?cluster_id=1").get_json()
    assert [(t["id"], t["status"], t["graphs"]) for t in listed] == [
        (doc["id"], "ready", [{"type": "default", "status": "ready"}])
    ]


def test_local_runs_shell_tasks_in_dependency_order(cluster):
    answer = cluster.post(
        EXECUTE, json={"cluster": 1, "graphs": [{"type": "default"}], "executor": "local"}
    )
    assert answer.status_code == 202 and answer.get_json()["status"] == "pending"
    doc = wait_for(cluster, answer.get_json()["id"])
    assert doc["status"] == "ready", doc.get("message")
    lines = cluster.log.read_text().split()
    assert sorted(lines) == sorted(["early@1", "early@2", "late@2", "db@1", "agent@2"])
    for before, after in (
        ("early@2", "late@2"),
        ("late@2", "agent@2"),
        ("db@1", "agent@2"),
        ("early@1", "db@1"),
    ):
        assert lines.index(before) < lines.index(after), lines
    states = {(h["task_name"], h["node_id"]): h for h in doc["graphs"][0]["history"]}
    assert states[("deploy_start", None)]["status"] == "ready"
    assert states[("manifest", "1")]["status"] == "skipped"
    assert "does not run puppet" in states[("manifest", "1")]["message"]
    assert states[("db", "1")]["exit_code"] == 0


def test_a_failure_is_recorded_and_aborts_the_rest(cluster, graph_store):
    assert (
        cluster.put(
            f"{CLUSTER}/deployment_graphs/default",
            json={
                "tasks": [
                    task(
                        "late",
                        roles=["compute"],
                        requires=["early"],
                        parameters={"cmd": "echo broken >&2; exit 3"},
                    )
                ]
            },
        ).status_code
        == 200
    )
    assert (
        cluster.post(
            f"{CLUSTER}/deployment_graphs/second",
            json={"tasks": [task("never", parameters={"cmd": f"touch {cluster.log}.never"})]},
        ).status_code
        == 201
    )
    answer = cluster.post(
        EXECUTE,
        json={
            "cluster": 1,
            "executor": "local",
            "graphs": [{"type": "default"}, {"type": "second"}],
        },
    )
    doc = wait_for(cluster, answer.get_json()["id"])
    assert doc["status"] == "error" and "graph 'default' failed" in doc["message"]
    failed = [h for h in doc["graphs"][0]["history"] if h["status"] == "error"]
    assert [(h["task_name"], h["node_id"], h["exit_code"]) for h in failed] == [("late", "2", 3)]
    assert "broken" in failed[0]["output"]
    agent = next(h for h in doc["graphs"][0]["history"] if h["task_name"] == "agent")
    assert agent["status"] == "skipped" and "late on node 2 failed" in agent["message"]
    assert "agent@2" not in cluster.log.read_text()
    assert doc["graphs"][0]["status"] == "error" and doc["graphs"][1]["status"] == "skipped"
    assert not (cluster.log.parent / "run.log.never").exists()


def test_request_nodes_tasks_and_node_filter(cluster):
    answer = cluster.post(
        EXECUTE,
        json={
            "cluster": 1,
            "executor": "local",
            "graphs": [{"type": "default", "nodes": [3], "tasks": ["late"]}],
        },
    )
    doc = wait_for(cluster, answer.get_json()["id"])
    assert doc["graphs"][0]["nodes"] == [3]
    assert ran(doc) == [("late", "3", "ready")]  # the stage was not chosen either
    assert cluster.log.read_text().split() == ["late@3"]
    cluster.patch(
        f"{RELEASE}/deployment_graphs/default", json={"node_filter": "$.pending_deletion"}
    )
    dry = cluster.post(EXECUTE, json={"cluster": 1, "graphs": [{"type": "default"}]})
    assert dry.get_json()["graphs"][0]["nodes"] == [3]
    cluster.patch(f"{RELEASE}/deployment_graphs/default", json={"node_filter": "$.nope("})
    assert_error(
        cluster.post(EXECUTE, json={"cluster": 1, "graphs": [{"type": "default"}]}),
        400,
        "node_filter",
    )


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"graphs": [{"type": "default"}]}, ["cluster"]),
        ({"cluster": 1, "graphs": []}, ["graphs"]),
        ({"cluster": 1, "graphs": [{"type": "bad.type"}]}, ["bad.type"]),
        ({"cluster": 1, "graphs": [{"type": "default", "nodes": ["x"]}]}, ["nodes"]),
        ({"cluster": 1, "graphs": [{"type": "default", "nodes": [9]}]}, ["nodes 9", "cluster 1"]),
        ({"cluster": 1, "graphs": [{"type": "default", "tasks": ["ghost"]}]}, ["ghost"]),
        ({"cluster": 1, "graphs": [{"type": "default"}], "dry_run": "yes"}, ["dry_run"]),
        ({"cluster": 1, "graphs": [{"type": "default"}], "executor": "ssh"}, ["ssh", "local"]),
        ({"cluster": 1, "graphs": [{"type": "default"}], "colour": 1}, ["colour"]),
        # issue 22: a graph's type is required, and null is no list
        ({"cluster": 1, "graphs": [{"nodes": [1]}]}, ["'type'"]),
        ({"cluster": 1, "graphs": [{"type": "default", "tasks": None}]}, ["'tasks'"]),
        ({"cluster": 1, "graphs": [{"type": "default", "nodes": None}]}, ["'nodes'"]),
    ],
)
def test_bad_requests_are_400(cluster, body, words):
    assert_error(cluster.post(EXECUTE, json=body), 400, *words)


def test_unknown_cluster_or_graph_is_404(cluster):
    assert_error(
        cluster.post(EXECUTE, json={"cluster": 5, "graphs": [{"type": "default"}]}), 404, "5"
    )
    assert_error(
        cluster.post(EXECUTE, json={"cluster": 1, "graphs": [{"type": "other"}]}), 404, "other"
    )
    assert_error(cluster.get(f"{API}/transactions/99"), 404, "99")


def test_an_invalid_merged_graph_is_refused(cluster):
    assert (
        cluster.put(
            f"{CLUSTER}/deployment_graphs/default", json={"tasks": [task("own", requires=["db"])]}
        ).status_code
        == 200
    )
    changed = cluster.patch(
        f"{RELEASE}/deployment_graphs/default",
        json={
            "tasks": [
                {"id": "deploy_start", "type": "stage"},
                task("early", requires=["deploy_start"]),
            ]
        },
    )
    assert changed.status_code == 200  # valid alone; the cluster's task now names a gone one
    assert_error(
        cluster.post(EXECUTE, json={"cluster": 1, "graphs": [{"type": "default"}]}),
        400,
        "task 'own' depends on 'db'",
    )


def test_409_while_a_transaction_of_the_cluster_runs(cluster):
    cluster.put(
        f"{CLUSTER}/deployment_graphs/default",
        json={"tasks": [task("early", roles="*", parameters={"cmd": "sleep 1"})]},
    )
    first = cluster.post(
        EXECUTE,
        json={"cluster": 1, "executor": "local", "graphs": [{"type": "default", "nodes": [1]}]},
    )
    assert first.status_code == 202
    assert_error(
        cluster.post(EXECUTE, json={"cluster": 1, "graphs": [{"type": "default"}]}),
        409,
        f"transaction {first.get_json()['id']}",
    )
    assert wait_for(cluster, first.get_json()["id"])["status"] == "ready"
    again = cluster.post(EXECUTE, json={"cluster": 1, "graphs": [{"type": "default"}]})
    assert again.status_code == 202 and again.get_json()["id"] == first.get_json()["id"] + 1


def test_the_local_executor_is_off_unless_the_server_enables_it(graph_store, tmp_path):
    graph_store.local_executor = False  # a server started without --enable-local-executor
    marker = tmp_path / "ran"
    api = create_app({"TESTING": True}, store=graph_store).test_client()
    api.put(
        "/api/v1/clusters/1/deployment_graphs/default",
        json={
            "tasks": [
                {
                    "id": "touch",
                    "type": "shell",
                    "version": "2.0.0",
                    "roles": ["*"],
                    "parameters": {"cmd": f"touch {marker}"},
                }
            ]
        },
    )
    refused = api.post(
        EXECUTE, json={"cluster": 1, "executor": "local", "graphs": [{"type": "default"}]}
    )
    assert refused.status_code == 403
    assert "--enable-local-executor" in refused.get_json()["message"]
    assert not marker.exists()
    dry = api.post(
        EXECUTE,
        json={"cluster": 1, "executor": "local", "dry_run": True, "graphs": [{"type": "default"}]},
    )
    assert dry.status_code == 202


def test_a_dry_run_past_its_deadline_is_a_503_and_records_nothing(cluster, graph_store):
    before = graph_store.environment_repo(1).head()
    hurried = create_app(
        {"TESTING": True, "GITSTORE_LIMITS": {"graph_execute_seconds": 0.001}}, store=graph_store
    ).test_client()
    answer = hurried.post(
        EXECUTE, json={"cluster": 1, "graphs": [{"type": "default"}], "dry_run": True}
    )
    assert_error(answer, 503, "graph_execute_seconds", "nothing was written")
    assert answer.headers["Retry-After"] == "1"
    assert graph_store.environment_repo(1).head() == before
    assert cluster.get(f"{API}/transactions?cluster_id=1").get_json() == []
