"""A cluster's merged graph: merge order, plugin overlap, own/plugins/release views, writes
validated against the merge, versions, checks, DOT and legacy filters over REST."""

from __future__ import annotations

import pytest
import yaml

from gitstore.backend.changes import ChangeSet
from gitstore.deployment.graphs import merged_graph

from .conftest import API, CLUSTER, RELEASE, assert_error, ids, task

TASKS = f"{CLUSTER}/deployment_tasks"


@pytest.fixture
def layered(api, graph_store):
    """Release tasks a, b, c; plugins p1 (replaces b, adds p) and p2 (adds q), enabled in that
    order; the cluster replaces a and adds own."""
    api.post(
        f"{RELEASE}/deployment_graphs/default",
        json={
            "name": "release",
            "tasks": [
                task("a", parameters={"cmd": "release a"}),
                task("b", requires=["a"]),
                task("c", requires=["b"]),
            ],
        },
    )
    for name, tasks in (
        ("p1", [task("b", requires=["a"], parameters={"cmd": "p1 b"}), task("p", requires=["c"])]),
        ("p2", [task("q", requires=["p"])]),
    ):
        api.post(f"{API}/plugins", json={"name": name, "version": "1.0.0"})
        plugin_id = graph_store.plugins.get(name).data["id"]
        created = api.post(
            f"{API}/plugins/{plugin_id}/deployment_graphs/default", json={"tasks": tasks}
        )
        assert created.status_code == 201, created.get_json()
    graph_store.environments.update(1, {"plugins": ["p1", "p2"]})
    own = api.put(
        f"{CLUSTER}/deployment_graphs/default",
        json={"tasks": [task("a", parameters={"cmd": "cluster a"}), task("own", requires=["q"])]},
    )
    assert own.status_code == 200, own.get_json()
    return api


def test_merge_order_cluster_over_plugins_over_release(layered):
    merged = layered.get(TASKS).get_json()
    assert ids(merged) == ["a", "b", "c", "p", "q", "own"]
    by_id = {t["id"]: t for t in merged}
    assert by_id["a"]["parameters"]["cmd"] == "cluster a"
    assert by_id["b"]["parameters"]["cmd"] == "p1 b"
    assert by_id["c"]["task_name"] == "c" and by_id["c"]["version"] == "2.1.0"


def test_own_plugins_and_release_views(layered):
    assert ids(layered.get(f"{TASKS}/own").get_json()) == ["a", "own"]
    assert ids(layered.get(f"{TASKS}/plugins").get_json()) == ["b", "p", "q"]
    assert ids(layered.get(f"{TASKS}/release").get_json()) == ["a", "b", "c"]
    assert ids(layered.get(f"{RELEASE}/deployment_tasks").get_json()) == ["a", "b", "c"]
    assert_error(layered.get(f"{TASKS}?graph_type=nothing"), 404, "nothing")
    assert layered.get(f"{TASKS}/mine").status_code == 404


def test_two_plugins_defining_one_task_is_400_at_read_and_at_enable(layered, graph_store):
    plugin_id = graph_store.plugins.get("p2").data["id"]
    changed = layered.patch(
        f"{API}/plugins/{plugin_id}/deployment_graphs/default",
        json={"tasks": [task("q", requires=["p"]), task("p")]},
    )
    assert changed.status_code == 200  # a plugin graph alone cannot know who enables it
    assert_error(layered.get(TASKS), 400, "plugins 'p1' and 'p2' both define task 'p'")
    check = layered.get(f"{CLUSTER}/deployment_graphs/default/check").get_json()
    assert check["valid"] is False and "both define task 'p'" in check["errors"][0]["message"]
    assert_error(
        layered.patch(f"{API}/config/environments/1", json={"plugins": ["p2", "p1"]}),
        400,
        "'p2'",
        "'p1'",
        "task 'p'",
    )


def test_cluster_graph_cycle_over_release_tasks_is_refused(layered, graph_store):
    before = graph_store.environment_repo(1).head()
    body = assert_error(
        layered.put(
            f"{CLUSTER}/deployment_graphs/default", json={"tasks": [task("a", requires=["c"])]}
        ),
        400,
        "dependency cycle",
    )
    assert {"a", "b", "c"} <= set(body["message"].split(": ")[-1].split(" -> "))
    assert_error(
        layered.put(
            f"{CLUSTER}/deployment_graphs/default", json={"tasks": [task("x", requires=["ghost"])]}
        ),
        400,
        "task 'x' depends on 'ghost'",
    )
    assert_error(
        layered.put(TASKS, json=[task("a", requires=["own"]), task("own", requires=["q"])]),
        400,
        "dependency cycle",
    )
    assert graph_store.environment_repo(1).head() == before  # nothing was written


def test_put_deployment_tasks_upserts_the_cluster_graph(layered):
    answer = layered.put(f"{TASKS}?graph_type=upgrade", json=[task("u", requires=["/^a$/"])])
    assert answer.status_code == 200 and ids(answer.get_json()) == ["u"]
    assert answer.get_json()[0]["requires"] == ["/^a$/"]
    assert ids(layered.get(f"{TASKS}?graph_type=upgrade").get_json()) == ["u"]
    kept = layered.patch(f"{CLUSTER}/deployment_graphs/upgrade", json={"name": "up"})
    assert kept.get_json()["name"] == "up"
    layered.put(f"{TASKS}?graph_type=upgrade", json=[task("v")])
    graph = layered.get(f"{CLUSTER}/deployment_graphs/upgrade").get_json()
    assert graph["name"] == "up" and ids(graph["tasks"]) == ["v"]
    assert_error(layered.put(TASKS, json={"not": "a list"}), 400, "list of tasks")


def test_merged_graph_at_an_older_version(layered, graph_store):
    old_env = graph_store.environment_repo(1).head()
    old_catalog = graph_store.catalog().head()
    layered.put(f"{CLUSTER}/deployment_graphs/default", json={"tasks": [task("newer")]})
    layered.patch(
        f"{RELEASE}/deployment_graphs/default",
        json={
            "tasks": [task("a"), task("b", requires=["a"]), task("c", requires=["b"]), task("d")]
        },
    )
    assert ids(layered.get(TASKS).get_json()) == ["a", "b", "c", "d", "p", "q", "newer"]
    at_old_env = layered.get(f"{TASKS}?version={old_env}")
    assert ids(at_old_env.get_json()) == ["a", "b", "c", "d", "p", "q", "own"]
    assert at_old_env.headers["X-Gitstore-Commit"] == old_env
    both_old = layered.get(f"{TASKS}?version={old_env}&catalog_version={old_catalog}")
    assert ids(both_old.get_json()) == ["a", "b", "c", "p", "q", "own"]
    assert both_old.headers["X-Gitstore-Catalog-Commit"] == old_catalog
    assert ids(layered.get(f"{TASKS}/own?version=1").get_json()) == []  # before any graph


def test_check_reports_what_a_release_change_broke(layered, graph_store):
    assert layered.get(f"{CLUSTER}/deployment_graphs/default/check").get_json() == {
        "cluster": 1,
        "graph_type": "default",
        "valid": True,
        "errors": [],
    }
    layered.patch(
        f"{RELEASE}/deployment_graphs/default",
        json={"tasks": [task("a"), task("b", requires=["a"])]},
    )  # p requires c, which is gone
    check = layered.get(f"{CLUSTER}/deployment_graphs/default/check").get_json()
    assert check["valid"] is False
    assert check["errors"] == [
        {"message": "task 'p' depends on 'c' (requires), which is not in the graph", "task": "p"}
    ]
    # the next cluster write is not blamed for it, but cannot add problems of its own
    ok = layered.put(f"{CLUSTER}/deployment_graphs/default", json={"tasks": [task("z")]})
    assert ok.status_code == 200, ok.get_json()


def test_metadata_merges_recursively(layered, graph_store):
    layered.patch(
        f"{RELEASE}/deployment_graphs/default",
        json={
            "node_filter": "$.status = ready",
            "on_success": {"node_attributes": {"status": "ready", "progress": 100}},
        },
    )
    layered.patch(
        f"{CLUSTER}/deployment_graphs/default",
        json={"on_success": {"node_attributes": {"progress": 99}}},
    )
    cluster = graph_store.nodes.cluster(1)
    merged = merged_graph(cluster, "default")
    assert merged["name"] == "release" and merged["node_filter"] == "$.status = ready"
    assert merged["on_success"] == {"node_attributes": {"status": "ready", "progress": 99}}


def test_resolved_tasks_use_the_merged_graph(layered, add_node):
    add_node("node-1.example", ["controller"])
    add_node("node-2.example", ["compute"])
    resolved = layered.get(f"{CLUSTER}/resolved_tasks").get_json()
    assert resolved["nodes"]["1"] == ["a", "b", "c", "p", "q", "own"]
    assert resolved["nodes"]["2"] == ["a", "b", "c", "p", "q", "own"]


def test_dot_over_rest(layered):
    dot = layered.get(f"{CLUSTER}/deploy_tasks/graph.gv")
    assert dot.status_code == 200 and dot.mimetype == "text/vnd.graphviz"
    text = dot.get_data(as_text=True)
    assert text.startswith('digraph "default" {') and '"a" -> "b";' in text
    assert '"q" -> "own";' in text
    assert dot.headers["X-Gitstore-Catalog-Commit"]
    parents = layered.get(f"{CLUSTER}/deploy_tasks/graph.gv?parents_for=c").get_data(as_text=True)
    assert '"b" -> "c";' in parents and '"own"' not in parents
    only = layered.get(f"{CLUSTER}/deploy_tasks/graph.gv?tasks=a,b").get_data(as_text=True)
    assert '"a" -> "b";' in only and '"c"' not in only
    assert_error(layered.get(f"{CLUSTER}/deploy_tasks/graph.gv?tasks=a,ghost"), 400, "ghost")
    assert_error(layered.get(f"{CLUSTER}/deploy_tasks/graph.gv?parents_for=ghost"), 400, "ghost")
    assert_error(layered.get(f"{CLUSTER}/deploy_tasks/graph.gv?remove=warp"), 400, "warp")
    again = layered.get(
        f"{CLUSTER}/deploy_tasks/graph.gv", headers={"If-None-Match": dot.headers["ETag"]}
    )
    assert again.status_code == 304


def test_legacy_start_end_over_rest(api, newton_tasks):
    legacy = [
        t for t in newton_tasks if t.get("version", "1.0.0") < "2.0.0" and t["id"] != "base-os"
    ]  # its members are task-based tasks
    created = api.post(f"{RELEASE}/deployment_graphs/legacy", json={"tasks": legacy})
    assert created.status_code == 201, created.get_json()
    url = f"{TASKS}?graph_type=legacy"
    chosen = api.get(f"{url}&start=deploy_start&end=deploy_end&include=virt").get_json()
    names = ids(chosen)
    assert names[0] == "deploy_start" and "deploy_end" in names and "virt" in names
    assert "pre_deployment_start" not in names and "post_deployment_end" not in names
    assert ids(
        api.get(f"{RELEASE}/deployment_tasks?graph_type=legacy&end=deploy_start").get_json()
    ) == ["pre_deployment_start", "pre_deployment_end", "deploy_start"]
    assert_error(api.get(f"{url}&start=nowhere"), 400, "Cannot find task nowhere by its name")
    api.post(f"{RELEASE}/deployment_graphs/default", json={"tasks": newton_tasks})
    assert_error(api.get(f"{TASKS}?start=deploy_start"), 400, "task-based")
    assert len(api.get(TASKS).get_json()) == 204


def test_check_and_execute_report_a_stored_self_dependency(layered, graph_store):
    """A graph written before self-dependencies were refused (or by any other way into git)."""
    path = "graphs/selfloop.yaml"
    doc = {"tasks": [task("x", requires=["x"])]}

    def operation(snapshot):
        changes = ChangeSet("a self-dependency from before the check")
        changes.put(path, yaml.safe_dump(doc).encode())
        return changes

    graph_store.environment_repo(1).update(operation, graph_store.default_author)
    check = layered.get(f"{CLUSTER}/deployment_graphs/selfloop/check").get_json()
    assert check["valid"] is False
    assert check["errors"] == [{"message": "dependency cycle: x -> x", "task": "x"}]
    body = {"cluster": 1, "graphs": [{"type": "selfloop"}], "dry_run": True}
    assert_error(layered.post(f"{API}/graphs/execute", json=body), 400, "dependency cycle: x -> x")
