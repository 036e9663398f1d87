"""Per-node tags, instance tags, `resolved_tasks`, `tags_check` and `instances`."""

from __future__ import annotations

import yaml
from fuel_data import RELEASE_GRAPH

from gitstore.backend.changes import ChangeSet

from .conftest import CLUSTER, assert_error

FUEL_GRAPH = RELEASE_GRAPH
RELEASE_FOLDER = "releases/Newton on Ubuntu 16.04"
#: The seed's controller role and tasks: mysql is detached, haproxy is "controller-common".
SEED_ROLE_TAGS = ["controller-common", "mysql", "neutron", "keystone", "rabbitmq"]
SEED_TASKS = [
    {"id": "mysql", "type": "puppet", "role": ["controller"], "tags": ["mysql"]},
    {"id": "haproxy", "type": "puppet", "role": ["controller"], "tags": ["controller-common"]},
    {"id": "globals", "type": "puppet", "role": ["/.*/"]},
    {"id": "upload_nodes_info", "type": "shell", "role": "master"},
    {"id": "deploy_start", "type": "stage"},
]


def put_graph(store, path: str, tasks: list, *, catalog: bool) -> None:
    def operation(snapshot):
        changes = ChangeSet(f"graph {path}")
        changes.put(path, yaml.safe_dump({"tasks": tasks}).encode())
        return changes

    repo = store.catalog() if catalog else store.environment_repo(1)
    repo.update(operation, store.default_author)


def test_removing_all_but_rabbitmq_keeps_the_role_name_tag(api, add_node):
    add_node("node-1", ["controller"])
    everything = api.get(f"{CLUSTER}/nodes/1").get_json()["tags"]
    removed = api.delete(
        f"{CLUSTER}/nodes/1/tags",
        json={"tags": [t for t in everything if t != "rabbitmq" and not t.startswith("primary-")]},
    )
    assert removed.status_code == 204 and removed.headers["X-Gitstore-Commit"]
    node = api.get(f"{CLUSTER}/nodes/1").get_json()
    assert node["tags"] == ["controller", "rabbitmq", "primary-controller", "primary-rabbitmq"]
    assert node["tags_removed"] == ["database", "keystone", "neutron"]
    assert node["primary_tags"] == ["controller", "rabbitmq"]
    # assigning a removed role tag gives it back; a tag beyond the roles' is added
    back = api.post(f"{CLUSTER}/nodes/node-1/tags", json={"tags": ["keystone", "mongo"]})
    assert back.status_code == 200
    assert back.get_json()["tags_removed"] == ["database", "neutron"]
    assert back.get_json()["tags_added"] == ["mongo"]
    assert "primary-mongo" in back.get_json()["tags"]
    api.delete(f"{CLUSTER}/nodes/1/tags?tags=mongo")
    assert api.get(f"{CLUSTER}/nodes/1").get_json()["tags_added"] == []


def test_assignment_errors(api, add_node):
    add_node("node-1", ["compute"])
    assert_error(
        api.post(f"{CLUSTER}/nodes/1/tags", json={"tags": ["swift"]}),
        404,
        "Tag 'swift' is not found for the cluster 1",
    )
    assert_error(api.post(f"{CLUSTER}/nodes/1/tags", json={"tags": ["primary-x"]}), 400, "elected")
    assert_error(api.post(f"{CLUSTER}/nodes/1/tags", json={"tags": []}), 400, "tags")
    assert_error(api.delete(f"{CLUSTER}/nodes/1/tags", json={"tags": ["nope"]}), 404, "nope")
    assert_error(api.post(f"{CLUSTER}/nodes/9/tags", json={"tags": ["mongo"]}), 404, "'9'")
    # issue 22: the body's tags are a list of strings, never a string taken as one tag
    assert_error(api.post(f"{CLUSTER}/nodes/1/tags", json={"tags": "mongo"}), 400, "'tags'")
    assert_error(api.delete(f"{CLUSTER}/nodes/1/tags", json={"tags": "mongo"}), 400, "list")
    assert_error(api.post(f"{CLUSTER}/nodes/1/tags", json={"tag": ["mongo"]}), 400, "'tag'")


def test_instance_tags_group_nodes(api, add_node, tag_store):
    for index in (1, 2, 3):
        add_node(f"node-{index}", ["controller"])
    api.post(f"{CLUSTER}/nodes/1/tags", json={"tags": ["database:1", "rabbitmq:2"]})
    api.post(f"{CLUSTER}/nodes/2/tags", json={"tags": ["database:2"]})
    api.post(f"{CLUSTER}/nodes/3/tags", json={"tags": ["database:1"]})
    assert api.get(f"{CLUSTER}/instances/database").get_json() == {"1": [1, 3], "2": [2]}
    assert api.get(f"{CLUSTER}/instances/mongo").get_json() == {}
    assert_error(api.get(f"{CLUSTER}/instances/swift"), 404, "swift")
    assert tag_store.tags.all_instances(1) == {
        "database": {"1": [1, 3], "2": [2]},
        "rabbitmq": {"2": [1]},
    }


def test_resolved_tasks_seed_example(api, tag_store):
    """The seed: node-1 is a controller that keeps only the mysql tag of its role."""
    tag_store.releases.create(
        {
            "name": "seed",
            "version": "1",
            "operating_system": "Ubuntu",
            "roles_metadata": {"controller": {"tags": SEED_ROLE_TAGS}, "compute": {}},
            "tags_metadata": {t: {"has_primary": True} for t in SEED_ROLE_TAGS},
        }
    )
    tag_store.environments.create({"id": 2, "release": "seed"})
    put_graph(tag_store, "releases/seed/graphs/default.yaml", SEED_TASKS, catalog=True)
    nodes = tag_store.nodes
    nodes.create(
        2,
        {
            "fqdn": "node-1",
            "roles": ["controller"],
            "status": "ready",
            "tags_removed": [t for t in SEED_ROLE_TAGS if t != "mysql"],
        },
    )
    nodes.create(2, {"fqdn": "node-2", "roles": ["controller"], "status": "ready"})
    nodes.create(2, {"fqdn": "node-3", "roles": ["compute"], "pending_addition": True})
    cluster = "/api/v1/clusters/2"
    assert api.get(f"{cluster}/nodes/1").get_json()["tags"] == [
        "controller",
        "mysql",
        "primary-mysql",
    ]
    answer = api.get(f"{cluster}/resolved_tasks?graph_type=default").get_json()
    assert answer == {
        "nodes": {"1": ["mysql", "globals"], "2": ["mysql", "haproxy", "globals"]},
        "master": ["upload_nodes_info"],
        "sync": ["deploy_start"],
    }
    everyone = api.get(f"{cluster}/resolved_tasks?all=1").get_json()
    assert everyone["nodes"]["3"] == ["globals"]
    one = api.get(f"{cluster}/resolved_tasks?node=node-3").get_json()
    assert one["nodes"] == {"3": ["globals"]}

    # the cluster's own graph replaces a release task with the same id
    def own_graph(snapshot):
        changes = ChangeSet("cluster graph")
        changes.put(
            "graphs/default.yaml",
            yaml.safe_dump(
                {"tasks": [{"id": "haproxy", "type": "puppet", "tags": ["mysql"]}]}
            ).encode(),
        )
        return changes

    tag_store.environment_repo(2).update(own_graph, tag_store.default_author)
    answer = api.get(f"{cluster}/resolved_tasks").get_json()
    assert answer["nodes"]["1"] == ["mysql", "haproxy", "globals"]
    assert_error(api.get(f"{cluster}/resolved_tasks?graph_type=provision"), 404, "provision")
    assert_error(api.get(f"{cluster}/resolved_tasks?graph_type=../x"), 400, "graph_type")


def test_resolved_tasks_over_the_real_fuel_graph(api, add_node, tag_store):
    tasks = yaml.safe_load(FUEL_GRAPH.read_text())
    put_graph(tag_store, f"{RELEASE_FOLDER}/graphs/default.yaml", tasks, catalog=True)
    add_node("node-1", ["controller"])
    add_node("node-2", ["controller"])
    add_node("node-3", ["compute"])
    answer = api.get(f"{CLUSTER}/resolved_tasks").get_json()
    nodes = answer["nodes"]
    assert "primary-keystone" in nodes["1"] and "primary-keystone" not in nodes["2"]
    assert "keystone" in nodes["2"] and "keystone" not in nodes["3"]
    assert "globals" in nodes["3"] and "hiera" in nodes["1"]
    assert "pre_deployment_start" in answer["sync"]
    assert answer["master"]


def test_tags_check_warns_but_never_blocks(api, add_node, tag_store):
    add_node("node-1", ["controller"], tags_removed=["keystone"])
    assert api.get(f"{CLUSTER}/tags_check").get_json() == {
        "warnings": [
            {
                "kind": "tag_unassigned",
                "tag": "keystone",
                "role": "controller",
                "message": "tag 'keystone' of role 'controller' is carried by no node; give it "
                "back: gitstore tag assign --env 1 --node NODE keystone",
            },
            {
                "kind": "tag_unassigned",
                "tag": "mongo",
                "message": "tag 'mongo' has a primary (has_primary) but no node carries it; add "
                "a node with role 'mongo': gitstore node create --env 1 --fqdn FQDN --roles mongo",
            },
        ]
    }
    add_node("node-2", ["compute"], tags_added=["mongo"])
    assert api.get(f"{CLUSTER}/nodes/2").get_json()["primary_tags"] == ["mongo"]

    def pushed(snapshot):  # as a `git push` editing the node file would
        node = dict(snapshot.read_yaml("inventory/nodes/2.yaml"), primary_tags=[])
        changes = ChangeSet("push: drop the primary")
        changes.put("inventory/nodes/2.yaml", yaml.safe_dump(node).encode())
        return changes

    tag_store.environment_repo(1).update(pushed, tag_store.default_author)
    warnings = api.get(f"{CLUSTER}/tags_check").get_json()["warnings"]
    assert {(w["kind"], w["tag"]) for w in warnings} == {
        ("tag_unassigned", "keystone"),
        ("no_primary", "mongo"),
    }
    api.patch(f"{CLUSTER}/nodes/1", json={"tags_removed": []})  # any write re-elects
    assert api.get(f"{CLUSTER}/tags_check").get_json() == {"warnings": []}


def _warned(api) -> set[tuple[str, str]]:
    return {
        (w["kind"], w.get("tag")) for w in api.get(f"{CLUSTER}/tags_check").get_json()["warnings"]
    }


def test_tags_check_warns_of_a_primary_tag_no_node_carries(api, add_node):
    """Newton's controller role produces `controller` (has_primary); with only a compute node,
    nobody carries it: the seed's "mandatory tags not assigned"."""
    add_node("node-1", ["compute"])
    warned = _warned(api)
    assert ("tag_unassigned", "controller") in warned
    assert ("tag_unassigned", "compute") not in warned  # no has_primary: optional
    message = next(
        w["message"]
        for w in api.get(f"{CLUSTER}/tags_check").get_json()["warnings"]
        if w.get("tag") == "controller"
    )
    assert "gitstore node create --env 1" in message
    add_node("node-2", ["controller"])
    assert ("tag_unassigned", "controller") not in _warned(api)


def test_tags_check_warns_of_no_primary_when_only_a_leaving_node_carries_the_tag(api, add_node):
    add_node("node-1", ["controller"])
    add_node("node-2", ["compute"], tags_added=["mongo"])
    assert ("no_primary", "mongo") not in _warned(api)
    api.patch(f"{CLUSTER}/nodes/2", json={"pending_deletion": True})
    warned = _warned(api)
    assert ("no_primary", "mongo") in warned
    assert ("tag_unassigned", "mongo") not in warned  # one warning per cause
