"""The pure resolver: selector forms, policy `any`, instance tags, task placement."""

from __future__ import annotations

import pytest

from gitstore.merge.tags import resolve, resolve_tasks, task_selector

#: Nailgun's resolver fixture: primary controller, two controllers, a compute, a cinder node.
NODES = {
    1: ["controller", "primary-controller"],
    2: ["controller"],
    3: ["controller"],
    4: ["compute"],
    5: ["cinder"],
}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("/.*controller/", [1, 2, 3]),
        ("controller", [1, 2, 3]),
        (["controller"], [1, 2, 3]),
        ("primary-controller", [1]),
        ("/c.+/", [1, 2, 3, 4, 5]),
        ("/cinder|compute/", [4, 5]),
        ("*", [1, 2, 3, 4, 5]),
        ("master", ["master"]),
        (["master", "/.*/"], ["master", 1, 2, 3, 4, 5]),
        (["compute", "cinder"], [4, 5]),
        (["primary-controller", "compute", "compute"], [1, 4]),
        ("/contr/", [1, 2, 3]),  # re.match: anchored at the start only
        ("/troller/", []),
        ("nope", []),
        ([], []),
        (None, []),
        (42, []),
        ({"tags": ["controller"]}, []),
        ("/[/", []),  # a broken regex matches nothing instead of failing
    ],
)
def test_selector_forms(selector, expected):
    assert resolve(selector, NODES) == expected


def test_policy_any_picks_one_node_deterministically():
    assert resolve("controller", NODES, policy="any") == [1]
    assert resolve(["master", "compute"], NODES, policy="any") == [4]
    assert resolve("master", NODES, policy="any") == ["master"]
    assert resolve("nope", NODES, policy="any") == []


def test_instance_tags_match_only_exact_names_and_explicit_patterns():
    nodes = {1: ["controller", "mysql", "mysql:1"], 2: ["controller", "mysql:2"]}
    assert resolve("mysql", nodes) == [1]
    assert resolve("/mysql/", nodes) == [1]
    assert resolve("/.*/", nodes) == [1, 2]  # via "controller", not via the instance tags
    assert resolve("/my.*/", nodes) == [1]
    assert resolve("mysql:2", nodes) == [2]
    assert resolve("/mysql:.*/", nodes) == [1, 2]
    assert resolve("/mysql:1/", nodes) == [1]


def test_task_selector_prefers_tags_then_roles_then_groups():
    assert task_selector({"tags": ["a"], "roles": ["b"], "groups": ["c"]}) == ["a"]
    assert task_selector({"roles": ["b"], "groups": ["c"]}) == ["b"]
    assert task_selector({"role": "b", "groups": ["c"]}) == "b"
    assert task_selector({"groups": ["c"]}) == ["c"]
    assert task_selector({"id": "x"}) is None


def test_seed_example_mysql_haproxy_globals():
    """The seed: node-1 keeps only the mysql tag of its controller role."""
    tasks = [
        {"id": "mysql", "type": "puppet", "role": ["controller"], "tags": ["mysql"]},
        {"id": "haproxy", "type": "puppet", "role": ["controller"], "tags": ["controller-common"]},
        {"id": "globals", "type": "puppet", "role": ["/.*/"]},
    ]
    node_1 = ["controller", "mysql"]  # role-name tag + the one tag left
    node_2 = ["controller", "controller-common", "mysql", "neutron", "keystone", "rabbitmq"]
    answer = resolve_tasks(tasks, {1: node_1, 2: node_2})
    assert answer == {
        "nodes": {"1": ["mysql", "globals"], "2": ["mysql", "haproxy", "globals"]},
        "master": [],
        "sync": [],
    }


def test_groups_stages_master_and_unselected_tasks():
    tasks = [
        {"id": "pre_deployment_start", "type": "stage"},
        {
            "id": "controller",
            "type": "group",
            "roles": ["controller"],
            "tasks": ["hiera", "netconfig"],
        },
        {"id": "hiera", "type": "puppet"},
        {"id": "netconfig", "type": "puppet", "groups": ["compute"]},
        {"id": "upload_nodes_info", "type": "shell", "role": "master"},
        {"id": "sync_time", "type": "sync", "roles": "*"},
    ]
    answer = resolve_tasks(tasks, {1: ["controller"], 4: ["compute"]})
    assert answer["sync"] == ["pre_deployment_start", "hiera"]
    assert answer["master"] == ["upload_nodes_info"]
    assert answer["nodes"] == {
        "1": ["hiera", "netconfig", "sync_time"],
        "4": ["netconfig", "sync_time"],
    }
