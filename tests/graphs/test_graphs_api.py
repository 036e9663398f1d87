"""`/api/v1/{releases|plugins|clusters}/<id>/deployment_graphs/[<type>]` and `/graphs/`:
Nailgun's graph API cases (creation, 409/404, duplicates, patch, aliases)."""

from __future__ import annotations

import pytest

from .conftest import API, CLUSTER, RELEASE, assert_error, ids, task

OWNERS = {"release": RELEASE, "plugin": f"{API}/plugins/1", "cluster": CLUSTER}


@pytest.fixture
def plugin(api):
    created = api.post(f"{API}/plugins", json={"name": "contrail", "version": "5.0.0"})
    assert created.status_code == 201
    return created.get_json()


@pytest.mark.parametrize("owner", sorted(OWNERS))
def test_create_read_and_409(api, plugin, owner):
    url = f"{OWNERS[owner]}/deployment_graphs/custom-graph"
    body = {"name": "custom-graph-name", "tasks": [task("test-task", parameters={"cmd": "ls"})]}
    created = api.post(url, json=body)
    assert created.status_code == 201, created.get_json()
    graph = created.get_json()
    assert graph["type"] == "custom-graph" and graph["name"] == "custom-graph-name"
    assert graph["relations"] == [{"type": "custom-graph", "model": owner, "model_id": 1}]
    assert graph["tasks"][0]["task_name"] == "test-task"
    assert created.headers["X-Gitstore-Commit"] and created.headers["X-Gitstore-Catalog-Commit"]
    read = api.get(url)
    assert read.status_code == 200 and read.get_json() == graph
    assert_error(api.post(url, json=body), 409, "custom-graph")
    listed = api.get(f"{OWNERS[owner]}/deployment_graphs").get_json()
    assert "custom-graph" in [g["type"] for g in listed]


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete"])
def test_missing_type_is_404(api, method):
    call = getattr(api, method)
    kwargs = {} if method in ("get", "delete") else {"json": {"tasks": []}}
    assert_error(call(f"{RELEASE}/deployment_graphs/nothing", **kwargs), 404, "nothing")
    assert_error(call(f"{API}/releases/9/deployment_graphs/default", **kwargs), 404, "9")


def test_bad_type_and_bad_bodies_are_400(api):
    assert_error(api.post(f"{RELEASE}/deployment_graphs/bad.type", json={}), 400, "[a-zA-Z0-9_-]+")
    assert_error(api.post(f"{RELEASE}/deployment_graphs/x", json=[]), 400, "JSON object")
    assert_error(api.post(f"{RELEASE}/deployment_graphs/x", json={"tasks": {}}), 400, "tasks")
    body = assert_error(
        api.post(f"{RELEASE}/deployment_graphs/x", json={"tasks": [{"id": "a", "type": "warp"}]}),
        400,
        "task 'a'",
    )
    assert body["errors"][0]["task"] == "a"
    assert_error(
        api.post(f"{RELEASE}/deployment_graphs/x", json={"colour": "red"}),
        400,
        "unknown graph field 'colour'",
    )


def test_duplicated_tasks_are_refused(api):
    tasks = [task("a"), task("b"), task("a"), task("c"), task("b")]
    assert_error(
        api.post(f"{RELEASE}/deployment_graphs/dup", json={"tasks": tasks}),
        400,
        "Tasks duplication found: a, b",
    )
    assert_error(
        api.put(f"{CLUSTER}/deployment_graphs/default", json={"tasks": tasks}),
        400,
        "Tasks duplication found: a, b",
    )


def test_patch_changes_only_the_fields_given_and_put_resets(api):
    url = f"{RELEASE}/deployment_graphs/custom"
    api.post(
        url,
        json={
            "name": "first",
            "node_filter": "$.pending_deletion",
            "tasks": [task("a"), task("b")],
        },
    )
    patched = api.patch(url, json={"name": "second"})
    assert patched.status_code == 200
    graph = patched.get_json()
    assert graph["name"] == "second" and graph["node_filter"] == "$.pending_deletion"
    assert ids(graph["tasks"]) == ["a", "b"]
    graph = api.patch(url, json={"tasks": [task("c")]}).get_json()
    assert ids(graph["tasks"]) == ["c"] and graph["name"] == "second"
    replaced = api.put(url, json={"tasks": [task("d")]}).get_json()
    assert replaced["name"] is None and replaced["node_filter"] is None
    assert ids(replaced["tasks"]) == ["d"]
    echoed = api.put(url, json=replaced)  # a GET answer can be sent back as it is
    assert echoed.status_code == 200 and echoed.get_json() == replaced
    assert api.delete(url).status_code == 204
    assert_error(api.get(url), 404, "custom")


def test_aliases_in_and_out(api, graph_store):
    tasks = [
        {
            "task_name": "a",
            "type": "puppet",
            "version": "2.0.0",
            "role": "controller",
            "cross-depends": [{"name": "b", "role": "self"}],
            "custom_key": 1,
        },
        {"id": "b", "type": "shell", "version": "2.0.0", "roles": "*"},
    ]
    graph = api.post(f"{RELEASE}/deployment_graphs/alias", json={"tasks": tasks}).get_json()
    first, second = graph["tasks"]
    assert first["id"] == first["task_name"] == "a"
    assert first["roles"] == first["role"] == ["controller"]
    assert first["cross_depends"] == first["cross-depends"] == [{"name": "b", "role": "self"}]
    assert first["custom_key"] == 1
    assert second["roles"] == second["role"] == "*"
    stored = (
        graph_store.catalog()
        .snapshot()
        .read_yaml("releases/Newton on Ubuntu 16.04/graphs/alias.yaml")
    )
    assert stored["tasks"][0]["roles"] == ["controller"] and "role" not in stored["tasks"][0]
    assert stored["tasks"][0]["cross_depends"] == [{"name": "b", "role": "self"}]


def test_release_graph_alone_must_be_whole_and_plugin_graph_acyclic(api, plugin):
    missing = {"tasks": [task("a", requires=["ghost", "/^pattern-may-match-nothing$/"])]}
    assert_error(
        api.post(f"{RELEASE}/deployment_graphs/x", json=missing), 400, "task 'a' depends on 'ghost'"
    )
    plugin_url = f"{API}/plugins/1/deployment_graphs/default"
    assert api.post(plugin_url, json=missing).status_code == 201  # it may name release tasks
    cycle = {"tasks": [task("a", requires=["b"]), task("b", requires=["a"])]}
    assert_error(api.put(plugin_url, json=cycle), 400, "dependency cycle", "a -> b")
    assert_error(api.post(f"{RELEASE}/deployment_graphs/y", json=cycle), 400, "dependency cycle")


def test_a_new_cluster_has_an_empty_default_graph(api):
    listed = api.get(f"{CLUSTER}/deployment_graphs").get_json()
    assert listed == [
        {
            "type": "default",
            "name": None,
            "node_filter": None,
            "on_success": None,
            "on_error": None,
            "on_stop": None,
            "tasks": [],
            "relations": [{"type": "default", "model": "cluster", "model_id": 1}],
        }
    ]
    assert api.get(f"{CLUSTER}/deployment_graphs/default").get_json()["tasks"] == []
    assert_error(
        api.post(f"{CLUSTER}/deployment_graphs/default", json={"tasks": []}), 409, "default"
    )
    assert (
        api.patch(
            f"{CLUSTER}/deployment_graphs/default", json={"tasks": [task("mine")]}
        ).status_code
        == 200
    )
    assert api.delete(f"{CLUSTER}/deployment_graphs/default").status_code == 204
    assert api.get(f"{CLUSTER}/deployment_graphs/default").get_json()["tasks"] == []
    assert_error(api.get(f"{API}/clusters/7/deployment_graphs"), 404, "7")


def test_graphs_listing_with_relations_and_filters(api, plugin, graph_store):
    api.post(f"{RELEASE}/deployment_graphs/default", json={"tasks": [task("r")]})
    api.post(f"{API}/plugins/1/deployment_graphs/custom", json={"tasks": [task("p")]})
    api.put(f"{CLUSTER}/deployment_graphs/default", json={"tasks": [task("c", requires=["r"])]})
    graph_store.environments.update(1, {"plugins": ["contrail"]})

    def relations(query: str = "") -> list[tuple]:
        answer = api.get(f"{API}/graphs{query}")
        assert answer.status_code == 200, answer.get_json()
        return sorted(
            (g["relations"][0]["model"], g["relations"][0]["model_id"], g["type"])
            for g in answer.get_json()
        )

    everything = [("cluster", 1, "default"), ("plugin", 1, "custom"), ("release", 1, "default")]
    assert relations() == everything
    assert relations("?clusters_ids=1") == [("cluster", 1, "default")]
    assert relations("?clusters_ids=1&fetch_related=1") == everything
    assert relations("?clusters_ids=1&fetch_related=1&graph_types=custom") == [
        ("plugin", 1, "custom")
    ]
    assert relations("?releases_ids=1&plugins_ids=1") == everything[1:]
    assert_error(api.get(f"{API}/graphs?clusters_ids=x"), 400, "clusters_ids")
    assert_error(api.get(f"{API}/graphs?releases_ids=5"), 404, "5")


def test_reads_name_both_commits_and_take_both_versions(api, graph_store):
    api.post(f"{RELEASE}/deployment_graphs/default", json={"tasks": [task("r")]})
    catalog_head = graph_store.catalog().head()
    env_head = graph_store.environment_repo(1).head()
    read = api.get(f"{CLUSTER}/deployment_graphs/default")
    assert read.headers["X-Gitstore-Commit"] == env_head
    assert read.headers["X-Gitstore-Catalog-Commit"] == catalog_head
    assert read.headers["Cache-Control"] != "public, max-age=31536000, immutable"
    pinned = api.get(
        f"{CLUSTER}/deployment_tasks?version={env_head}&catalog_version={catalog_head}"
    )
    assert pinned.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert_error(
        api.get(f"{RELEASE}/deployment_graphs/default?version=1"), 404, "release 1 does not exist"
    )  # the catalog's first commit
    before_graph = api.get(f"{RELEASE}/deployment_graphs/default?version={catalog_head}~1")
    assert_error(before_graph, 404, "no graph of type 'default'")
    assert_error(api.get(f"{CLUSTER}/deployment_tasks?catalog_version=nope"), 404, "nope")


@pytest.mark.parametrize("field", ["requires", "required_for"])
@pytest.mark.parametrize("owner", sorted(OWNERS))
def test_a_task_that_depends_on_itself_is_a_cycle(api, plugin, owner, field):
    body = {"tasks": [task("a", **{field: ["a"]})]}
    url = f"{OWNERS[owner]}/deployment_graphs/selfloop"
    assert_error(api.post(url, json=body), 400, "dependency cycle: a -> a")
    assert api.get(url).status_code == 404
