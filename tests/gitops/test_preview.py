"""Previews of edits and reverts: a dry run never moves main, and the report names the gate's
problems and every node whose effective values would change (through its whole chain)."""

from __future__ import annotations

import pytest

from gitstore import Store
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.errors import PreconditionFailed

ALICE = Author("alice", "alice@example.com")
SCHEMA = {"type": "object", "properties": {"mtu": {"type": "integer"}}}


@pytest.fixture
def roles(tmp_path) -> Store:
    """Hierarchy [role, nodes]: nodes 1 and 2 are computes, 3 a controller (by their
    inventory records); global mtu 1500, node 2 overrides it to 9000."""
    store = Store.init(tmp_path / "store")
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": "net", "schema": SCHEMA}]}
    )
    store.environments.create(
        {"id": 1, "components": ["fuel"], "hierarchy_levels": ["role", "nodes"]}
    )
    changes = ChangeSet("inventory")
    for node, role in (("1", "compute"), ("2", "compute"), ("3", "controller")):
        changes.put(f"inventory/nodes/{node}.yaml", f"id: {node}\nrole: {role}\n".encode())
    store.environment_repo(1).update(lambda _: changes, ALICE)
    store.config.put(1, [], "net", "values", {"mtu": 1500}, ALICE)
    store.config.put(
        1, [("role", "compute"), ("nodes", "2")], "net", "overrides", {"mtu": 9000}, ALICE
    )
    return store


def _nodes(report: dict) -> dict:
    return {item["node"]: item for item in report["nodes"]}


def test_a_role_edit_reaches_the_nodes_of_that_role_only(roles):
    head = roles.environment_repo(1).head()
    report = roles.previews.edit(
        1, [("role", "compute")], "net", "set", [["mtu", 1400]], ALICE
    ).data
    assert roles.environment_repo(1).head() == head  # nothing served
    assert report["valid"] and report["changed"]
    assert report["base"]["commit"] == head
    assert report["files"] == ["role/compute/overrides/net.yaml"]
    # node 2's own override still wins; node 3 is a controller
    assert list(_nodes(report)) == ["1"]
    assert _nodes(report)["1"]["scope"] == "/role/compute/nodes/1/"
    assert _nodes(report)["1"]["resources"]["net"]["changed"] == {"mtu": {"old": 1500, "new": 1400}}
    # the proposed commit is readable by id: what the save would serve
    proposed = report["proposed"]["commit"]
    assert roles.hiera.node_document(1, "1", proposed).data["resources"]["net"] == {"mtu": 1400}


def test_a_global_edit_reaches_every_node_it_is_not_overridden_at(roles):
    report = roles.previews.edit(1, [], "net", "set", [["mtu", 1400]], ALICE).data
    assert list(_nodes(report)) == ["1", "3"]


def test_the_gate_refusal_is_the_report_and_nothing_is_proposed(roles):
    head = roles.environment_repo(1).head()
    report = roles.previews.edit(1, [], "net", "set", [["mtu", "big"]], ALICE).data
    assert not report["valid"] and report["proposed"] is None and report["nodes"] == []
    assert any(
        "mtu" in problem["message"] or problem.get("key") == "mtu" for problem in report["errors"]
    ), report
    assert roles.environment_repo(1).head() == head


def test_an_edit_that_changes_nothing_proposes_nothing(roles):
    report = roles.previews.edit(
        1, [("role", "compute"), ("nodes", "2")], "net", "set", [["mtu", 9000]], ALICE
    ).data
    assert report["valid"] and not report["changed"] and report["nodes"] == []


def test_a_revert_preview_names_the_nodes_it_restores(roles):
    repo = roles.environment_repo(1)
    edit = roles.config.put(1, [], "net", "overrides", {"mtu": 1000}, ALICE).commit
    report = roles.previews.revert(1, edit, ALICE).data
    assert repo.head() == edit
    assert list(_nodes(report)) == ["1", "3"]
    assert _nodes(report)["3"]["resources"]["net"]["changed"]["mtu"] == {"old": 1000, "new": 1500}


def test_a_conditional_revert_refuses_when_its_files_moved(roles):
    repo = roles.environment_repo(1)
    document = {"a": 1, "b": 2, "c": 3, "d": 4, "mtu": 1000}
    roles.config.put(1, [], "net", "overrides", document, ALICE)
    edit = roles.config.update_keys(1, [], "net", "overrides", "set", [["mtu", 1001]], ALICE).commit
    roles.config.update_keys(1, [], "net", "overrides", "set", [["a", 9]], ALICE)
    after = repo.head()
    with pytest.raises(PreconditionFailed, match="global/overrides/net.yaml changed"):
        roles.versions.revert(1, {"commit": edit}, ALICE, expected=edit)
    assert repo.head() == after
    undone = roles.versions.revert(1, {"commit": edit}, ALICE, expected=after)  # reviewed anew
    assert undone.data["changed"]
    assert roles.config.read(1, [], "net", "overrides").data == {**document, "a": 9}
