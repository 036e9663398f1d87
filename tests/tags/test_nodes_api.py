"""The node inventory: `/api/v1/clusters/<id>/nodes/`, `/api/v1/nodes`, store-wide ids."""

from __future__ import annotations

import threading

import pytest

from gitstore import Store

from .conftest import API, CLUSTER, assert_error


def test_create_stores_the_node_file_and_answers_201(api, tag_store, add_node):
    node = add_node("node-1.domain.tld", ["controller"], ip_addresses={"mgmt": "10.0.0.3"})
    assert node["id"] == 1 and node["cluster"] == 1
    assert node["pending_roles"] == [] and node["online"] is True
    stored = tag_store.environment_repo(1).snapshot().read_yaml("inventory/nodes/1.yaml")
    assert list(stored) == [
        "id",
        "fqdn",
        "roles",
        "pending_roles",
        "tags_added",
        "tags_removed",
        "primary_tags",
        "status",
        "error_type",
        "online",
        "pending_addition",
        "pending_deletion",
        "ip_addresses",
    ]
    # the only controller is elected for every has_primary tag its role produces
    assert (
        stored["primary_tags"]
        == ["controller", "database", "keystone", "neutron", "rabbitmq"]
        == node["primary_tags"]
    )


def test_node_by_id_or_fqdn_and_the_store_wide_lookup(api, tag_store, add_node):
    add_node("node-1.domain.tld", ["controller"])
    add_node("node-2.domain.tld", ["compute"])
    assert api.get(f"{CLUSTER}/nodes/node-2.domain.tld").get_json()["id"] == 2
    assert api.get(f"{CLUSTER}/nodes/2").get_json()["fqdn"] == "node-2.domain.tld"
    assert [n["fqdn"] for n in api.get(f"{CLUSTER}/nodes").get_json()] == [
        "node-1.domain.tld",
        "node-2.domain.tld",
    ]
    found = api.get(f"{API}/nodes?fqdn=node-2.domain.tld").get_json()
    assert [(n["id"], n["cluster"]) for n in found] == [(2, 1)]
    assert api.get(f"{API}/nodes?fqdn=nowhere").get_json() == []
    assert_error(api.get(f"{CLUSTER}/nodes/node-9"), 404, "node-9", "environment 1")
    assert_error(api.get(f"{API}/clusters/7/nodes"), 404, "environment 7")


def test_ids_are_unique_across_the_store_lowest_unused_first(api, tag_store, add_node):
    tag_store.environments.create({"id": 2, "release": 1})
    add_node("a", ["compute"], id=3)
    second = api.post(f"{API}/clusters/2/nodes", json={"fqdn": "b", "roles": ["compute"]})
    assert second.status_code == 201 and second.get_json()["id"] == 1
    assert_error(
        api.post(f"{API}/clusters/2/nodes", json={"fqdn": "c", "id": 3}), 409, "environment 1"
    )
    assert add_node("d", [])["id"] == 2
    assert add_node("e", [])["id"] == 4
    assert_error(api.post(f"{CLUSTER}/nodes", json={"fqdn": "e"}), 409, "fqdn")


def test_concurrent_creators_in_different_environments_get_distinct_ids(tag_store):
    tag_store.environments.create({"id": 2, "release": 1})
    ids: list[int] = []
    errors: list[Exception] = []

    def create(env_id: int, index: int) -> None:
        try:
            store = Store(tag_store.root)  # as another worker would
            node = store.nodes.create(env_id, {"fqdn": f"env{env_id}-{index}"})
            ids.append(node.data["id"])
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(1 + i % 2, i)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(ids) == list(range(1, 13))


def test_roles_must_exist_and_must_not_conflict(api, add_node):
    assert_error(
        api.post(f"{CLUSTER}/nodes", json={"fqdn": "x", "roles": ["swift"]}),
        400,
        "role 'swift' does not exist",
    )
    assert_error(
        api.post(f"{CLUSTER}/nodes", json={"fqdn": "x", "roles": ["controller", "compute"]}),
        400,
        "conflicts",
    )
    node = add_node("x", ["compute"])
    assert_error(
        api.patch(f"{CLUSTER}/nodes/x", json={"pending_roles": ["controller"]}),
        400,
        "'controller' conflicts with role 'compute'",
    )
    assert_error(api.patch(f"{CLUSTER}/nodes/x", json={"status": "great"}), 400, "status")
    assert_error(
        api.patch(f"{CLUSTER}/nodes/x", json={"ip_addresses": {"a": "no"}}), 400, "ip_addresses.a"
    )
    assert_error(api.patch(f"{CLUSTER}/nodes/x", json={"colour": "red"}), 400, "colour")
    assert_error(api.patch(f"{CLUSTER}/nodes/x", json={"id": 99}), 400, "id")
    assert api.get(f"{CLUSTER}/nodes/x").get_json()["roles"] == node["roles"]


def test_put_and_patch_change_only_the_fields_given(api, add_node):
    add_node("x", ["compute"], name="first")
    put = api.put(
        f"{CLUSTER}/nodes/x",
        json={
            "status": "error",
            "error_type": "deploy",
            "primary_tags": ["ignored"],
            "tags": ["too"],
        },
    )
    assert put.status_code == 200
    body = put.get_json()
    assert (body["status"], body["error_type"], body["name"]) == ("error", "deploy", "first")
    assert body["primary_tags"] == []


def test_primary_election_is_committed_and_reelected(api, tag_store, add_node):
    add_node("node-1", ["controller"], status="discover")
    add_node("node-2", ["controller"])
    add_node("node-3", ["controller"])
    primaries = {n["fqdn"]: n["primary_tags"] for n in api.get(f"{CLUSTER}/nodes").get_json()}
    # node-1 was the only candidate when it was added: the existing primary is kept
    assert "controller" in primaries["node-1"] and primaries["node-2"] == []
    leaving = api.patch(f"{CLUSTER}/nodes/node-1", json={"pending_deletion": True})
    assert leaving.get_json()["primary_tags"] == []
    node_2 = api.get(f"{CLUSTER}/nodes/node-2").get_json()
    assert "controller" in node_2["primary_tags"]
    assert "primary-controller" in node_2["tags"] and "controller" in node_2["tags"]
    deleted = api.delete(f"{CLUSTER}/nodes/node-2")
    assert deleted.status_code == 204
    node_3 = api.get(f"{CLUSTER}/nodes/node-3").get_json()
    assert "controller" in node_3["primary_tags"]
    message = tag_store.environment_repo(1).commit_info(deleted.headers["X-Gitstore-Commit"])
    assert message.message.startswith("environment 1: remove node 2")
    older = api.get(f"{CLUSTER}/nodes/node-3?version={leaving.headers['X-Gitstore-Commit']}")
    assert older.get_json()["primary_tags"] == []  # versioned: the old commit says otherwise


def test_a_list_of_nodes_is_added_in_one_commit(api, tag_store):
    store = tag_store
    repo = store.environment_repo(1)
    before = repo.head()
    body = [
        {"fqdn": f"bulk-{n}.example", "roles": ["compute"], "status": "ready"} for n in range(5)
    ]
    body.append({"fqdn": "chosen.example", "id": 40, "roles": ["controller"]})
    answer = api.post(f"{CLUSTER}/nodes", json=body)
    assert answer.status_code == 201, answer.get_json()
    created = answer.get_json()
    assert [n["fqdn"] for n in created] == [b["fqdn"] for b in body]
    assert created[-1]["id"] == 40 and len({n["id"] for n in created}) == 6
    assert repo.commit_info(repo.head()).parents == (before,)  # one commit
    assert "add 6 nodes" in repo.commit_info(repo.head()).message
    listed = {n["fqdn"] for n in api.get(f"{CLUSTER}/nodes").get_json()}
    assert {b["fqdn"] for b in body} <= listed


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ([{"fqdn": "ok.example"}, {"fqdn": "bad", "status": "nope"}], 400, ["node 2 of the list"]),
        ([{"fqdn": "a.example"}, {"fqdn": "a.example"}], 400, ["node 2", "repeats fqdn"]),
        ([{"fqdn": "a.example", "id": 7}, {"fqdn": "b.example", "id": 7}], 400, ["repeats id 7"]),
        ([], 400, ["must not be empty"]),
        ([{"fqdn": "new.example"}, {"fqdn": "taken.example"}], 409, ["taken.example"]),
        ([{"fqdn": "c.example", "roles": ["nope"]}], 400, ["role 'nope'"]),
    ],
)
def test_a_bad_list_adds_nothing(api, tag_store, body, status, words):
    store = tag_store
    assert api.post(f"{CLUSTER}/nodes", json={"fqdn": "taken.example"}).status_code == 201
    head = store.environment_repo(1).head()
    assert_error(api.post(f"{CLUSTER}/nodes", json=body), status, *words)
    assert store.environment_repo(1).head() == head
