"""The graph page: the merged deployment graph drawn as SVG by Graphviz `dot`, each task linked
to its row; sources (release, plugin, cluster) as REST's views say; nodes with their roles,
tags and primary tags as REST's node list says."""

from __future__ import annotations

import re
import shutil

import pytest
from fuel_data import newton_release

from gitstore.api.console import graphs as console_graphs

from .pages import rows

API = "/api/v1"
GRAPH = "/ui/environments/1/graph"


def _task(task_id: str, **fields) -> dict:
    return {"id": task_id, "type": "shell", "version": "2.1.0", "roles": "*", **fields}


@pytest.fixture
def layered(client, fuel_store):
    """Release tasks a, b, c; plugin p1 replaces b and adds p; the cluster replaces a and adds
    own; two nodes, a controller (primary) and a compute."""
    fuel_store.releases.create(newton_release())
    fuel_store.environments.update(1, {"release": 1})
    release = [_task("a"), _task("b", requires=["a"]), _task("c", requires=["b"])]
    created = client.post(f"{API}/releases/1/deployment_graphs/default", json={"tasks": release})
    assert created.status_code == 201, created.get_json()
    client.post(f"{API}/plugins", json={"name": "p1", "version": "1.0.0"})
    plugin_id = fuel_store.plugins.get("p1").data["id"]
    plugin = [_task("b", requires=["a"]), _task("p", requires=["c"])]
    created = client.post(
        f"{API}/plugins/{plugin_id}/deployment_graphs/default", json={"tasks": plugin}
    )
    assert created.status_code == 201, created.get_json()
    fuel_store.environments.update(1, {"plugins": ["p1"]})
    own = [_task("a", requires=[]), _task("own", requires=["p"])]
    assert (
        client.put(f"{API}/clusters/1/deployment_graphs/default", json={"tasks": own}).status_code
        == 200
    )
    for fqdn, roles in (("node-1.example", ["controller"]), ("node-2.example", ["compute"])):
        body = {"fqdn": fqdn, "roles": roles, "status": "ready"}
        assert client.post(f"{API}/clusters/1/nodes", json=body).status_code == 201
    return client


def test_the_graph_is_an_svg_whose_tasks_link_to_their_rows(layered):
    assert shutil.which("dot"), ".ci/run installs Debian's graphviz"
    page = layered.get(GRAPH).get_data(as_text=True)
    svg = re.search(r"<svg\b.*?</svg>", page, re.S)
    assert svg is not None
    links = set(re.findall(r'<a xlink:href="#(task-\d+)"', svg.group(0)))
    rows_by_anchor = dict(re.findall(r'<tr id="(task-\d+)" data-task="([^"]+)"', page))
    assert links == set(rows_by_anchor) and len(links) == 5
    assert sorted(rows_by_anchor.values()) == ["a", "b", "c", "own", "p"]


def test_task_sources_are_those_of_the_rest_views(layered):
    views = {
        view: {t["id"] for t in layered.get(f"{API}/clusters/1/deployment_tasks/{view}").get_json()}
        for view in ("own", "plugins", "release")
    }
    shown = {row["task"]: row["source"] for row in rows(layered, GRAPH, "task").rows}
    for task_id, source in shown.items():
        if task_id in views["own"]:
            assert source == "cluster 1", task_id
        elif task_id in views["plugins"]:
            assert source == "plugin p1", task_id
        else:
            assert task_id in views["release"] and source.startswith("release "), task_id
    assert (
        shown["a"] == "cluster 1" and shown["b"] == "plugin p1" and shown["c"].startswith("release")
    )


def test_nodes_show_roles_tags_and_primaries_as_rest_does(layered):
    nodes = layered.get(f"{API}/clusters/1/nodes").get_json()
    shown = {row["node"]: row for row in rows(layered, GRAPH, "node").rows}
    assert set(shown) == {str(node["id"]) for node in nodes}
    for node in nodes:
        row = shown[str(node["id"])]
        assert row.get("roles", "") == ", ".join(node["roles"])
        assert row.get("tags", "") == ", ".join(node["tags"])
        assert row.get("primary", "") == ", ".join(node.get("primary_tags") or [])
    assert any(row.get("primary") for row in shown.values())  # the controller's primaries


def test_the_graph_travels_in_time(layered, fuel_store):
    then = fuel_store.versions.history(1, limit=1).data["entries"][0]["version"]
    own = [_task("a", requires=[]), _task("own", requires=["p"]), _task("later")]
    assert (
        layered.put(f"{API}/clusters/1/deployment_graphs/default", json={"tasks": own}).status_code
        == 200
    )
    assert "later" in {row["task"] for row in rows(layered, GRAPH, "task").rows}
    pinned = {row["task"] for row in rows(layered, f"{GRAPH}?version={then}", "task").rows}
    assert "later" not in pinned and "own" in pinned


def test_a_graph_too_large_to_draw_is_listed_not_drawn(layered, monkeypatch):
    monkeypatch.setattr(console_graphs, "MAX_TASKS", 3)
    response = layered.get(GRAPH)
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and "<svg" not in page
    assert "The graph is not drawn: 5 tasks are more than 3 to draw" in page
    assert len(rows(layered, GRAPH, "task").rows) == 5


def test_an_unknown_graph_type_is_a_json_404(layered):
    response = layered.get(f"{GRAPH}?graph_type=nosuch")
    assert response.status_code == 404 and response.get_json()["status"] == 404


def test_a_dot_run_past_its_time_limit_is_stopped_and_said(layered, monkeypatch):
    monkeypatch.setattr(console_graphs, "DOT_SECONDS", 0.000001)
    page = layered.get(GRAPH).get_data(as_text=True)
    assert "<svg" not in page and "took longer than" in page


def test_a_server_without_graphviz_lists_the_tasks_and_says_why(layered, monkeypatch):
    monkeypatch.setattr(console_graphs, "DOT", "no-such-graphviz-dot")
    response = layered.get(GRAPH)
    page = response.get_data(as_text=True)
    assert response.status_code == 200 and "<svg" not in page
    assert "Graphviz (dot) is not installed on the server" in page
    assert len(rows(layered, GRAPH, "task").rows) == 5
