"""`gitstore tag ...` and `gitstore node ...`, local and over HTTP."""

from __future__ import annotations

import json

import pytest
from cli_helpers import assert_failure, assert_usage_error
from fuel_data import newton_release


@pytest.fixture
def fuel(gs):
    """`gs` whose environment 1 uses Fuel's Newton release (release 1)."""
    gs.store.releases.create(newton_release())
    gs.store.environments.update(1, {"release": 1})
    return gs


def as_json(result) -> object:
    return json.loads(result.stdout)


def test_node_create_list_show_update_delete(fuel):
    created = as_json(
        fuel.ok(
            "node",
            "create",
            "--env",
            "1",
            "--fqdn",
            "node-1.domain.tld",
            "--roles",
            "controller",
            "--status",
            "ready",
            "--ip",
            "mgmt=10.20.0.3",
            "-f",
            "json",
        )
    )
    assert created["id"] == 1 and "primary-controller" in created["tags"]
    assert created["ip_addresses"] == {"mgmt": "10.20.0.3"}
    fuel.ok("node", "create", "--env", "1", "--fqdn", "node-2", "--roles", "compute")
    table = fuel.ok("node", "list", "--env", "1").stdout.splitlines()
    assert table[0].split()[:3] == ["id", "fqdn", "roles"] and len(table) == 4
    shown = as_json(fuel.ok("node", "show", "node-2", "--env", "1", "-f", "json"))
    assert shown["roles"] == ["compute"] and shown["tags"] == ["compute"]
    updated = as_json(
        fuel.ok("node", "update", "2", "--env", "1", "--pending-deletion", "-f", "json")
    )
    assert updated["pending_deletion"] is True
    assert "removed" in fuel.ok("node", "delete", "node-2", "--env", "1").stdout
    assert_failure(fuel("node", "show", "2", "--env", "1"), "node '2' is not in environment 1")
    assert_failure(
        fuel("node", "create", "--env", "1", "--fqdn", "x", "--roles", "controller,compute"),
        "conflicts",
    )
    assert_usage_error(fuel("node", "update", "1", "--env", "1"), "nothing to change")


def test_tag_list_create_update_delete(fuel):
    listed = fuel.ok("tag", "list", "--release", "1").stdout.splitlines()
    assert listed[0].split() == ["name", "has_primary", "owner_type", "owner_id"]
    assert listed[2].split() == ["controller", "true", "release", "1"]
    created = as_json(
        fuel.ok("tag", "create", "swift", "--env", "1", "--has-primary", "-f", "json")
    )
    assert created == {
        "name": "swift",
        "meta": {"has_primary": True},
        "owner_type": "cluster",
        "owner_id": 1,
    }
    merged = as_json(fuel.ok("tag", "list", "--env", "1", "-f", "json"))
    assert {t["name"] for t in merged} >= {"controller", "swift"}
    updated = as_json(
        fuel.ok(
            "tag",
            "update",
            "swift",
            "--env",
            "1",
            "--meta",
            '{"has_primary": false, "label": "Swift"}',
            "-f",
            "json",
        )
    )
    assert updated["meta"] == {"has_primary": False, "label": "Swift"}
    assert_failure(fuel("tag", "create", "swift", "--env", "1", "--has-primary"), "already exists")
    assert "deleted" in fuel.ok("tag", "delete", "swift", "--env", "1").stdout
    assert_failure(
        fuel("tag", "delete", "swift", "--env", "1"), "Tag 'swift' is not found for the cluster 1"
    )
    assert_usage_error(fuel("tag", "list", "--env", "1", "--release", "1"), "exactly one")
    assert_usage_error(fuel("tag", "list"), "exactly one")


def test_tag_assign_unassign_and_check(fuel):
    fuel.ok("node", "create", "--env", "1", "--fqdn", "node-1", "--roles", "controller")
    warned = fuel.ok("tag", "check", "--env", "1").stdout  # Newton's mongo has a primary
    assert warned.splitlines() == [
        "warning: tag 'mongo' has a primary (has_primary) but no node carries it; add a node with "
        "role 'mongo': gitstore node create --env 1 --fqdn FQDN --roles mongo"
    ]
    fuel.ok(
        "tag",
        "unassign",
        "--env",
        "1",
        "--node",
        "node-1",
        "database",
        "keystone",
        "neutron",
        "controller",
    )
    node = as_json(fuel.ok("node", "show", "1", "--env", "1", "-f", "json"))
    assert node["tags"] == ["controller", "rabbitmq", "primary-controller", "primary-rabbitmq"]
    check = fuel.ok("tag", "check", "--env", "1")
    assert check.exit_code == 0 and "warning: tag 'database' of role 'controller'" in check.stdout
    assigned = as_json(
        fuel.ok(
            "tag",
            "assign",
            "--env",
            "1",
            "--node",
            "node-1",
            "database",
            "database:1",
            "-f",
            "json",
        )
    )
    assert "database:1" in assigned["tags"] and "database" in assigned["tags"]
    assert_failure(
        fuel("tag", "assign", "--env", "1", "--node", "1", "nope"),
        "Tag 'nope' is not found for the cluster 1",
    )


def test_tag_create_without_flags_and_update_of_other_meta_as_the_docs_show(fuel):
    created = as_json(fuel.ok("tag", "create", "swift", "-e", "1", "-f", "json"))
    assert created["meta"] == {"has_primary": False}
    fuel.ok("tag", "create", "ceph", "-e", "1", "--has-primary")
    updated = as_json(
        fuel.ok("tag", "update", "ceph", "-e", "1", "--meta", '{"label": "Ceph"}', "-f", "json")
    )
    assert updated["meta"] == {"has_primary": True, "label": "Ceph"}  # kept what was not given


def test_node_create_many_adds_a_files_nodes_in_one_commit(fuel, tmp_path):
    repo = fuel.store.environment_repo(1)
    before = repo.head()
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        "- {fqdn: node-1, roles: [controller], status: ready}\n- {fqdn: node-2, roles: [compute]}\n"
    )
    created = as_json(
        fuel.ok("node", "create-many", "--env", "1", "--file", str(nodes), "-f", "json")
    )
    assert [(n["id"], n["fqdn"]) for n in created] == [(1, "node-1"), (2, "node-2")]
    assert repo.commit_info(repo.head()).parents == (before,)
    nodes.write_text("- {fqdn: node-3}\n- {fqdn: node-4, status: nope}\n")
    assert_failure(
        fuel("node", "create-many", "--env", "1", "--file", str(nodes)), "node 2 of the list"
    )
    nodes.write_text("{fqdn: node-5}\n")
    assert_usage_error(
        fuel("node", "create-many", "--env", "1", "--file", str(nodes)), "a list of node bodies"
    )
