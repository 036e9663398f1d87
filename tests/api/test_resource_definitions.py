"""`/api/v1/config/resource_definitions`: list, create, update, delete, key operations."""

from __future__ import annotations

from .helpers import API, ENV, assert_error

DEFS = f"{API}/resource_definitions"


def test_list_all_and_by_component(client):
    client.post(DEFS, json={"name": "loose"})
    everything = client.get(DEFS)
    assert everything.status_code == 200
    assert [d["name"] for d in everything.get_json()] == [
        "astute",
        "globals",
        "override/plugins",
        "override/node",
        "loose",
    ]
    assert everything.headers["X-Gitstore-Commit"]
    of_fuel = client.get(f"{DEFS}?component_id=1").get_json()
    assert [d["id"] for d in of_fuel] == [1, 2, 3, 4]
    assert client.get(f"{DEFS}?component_id=9").get_json() == []


def test_empty_component_id_lists_orphans(client):
    assert client.get(f"{DEFS}?component_id=").get_json() == []
    client.post(DEFS, json={"name": "loose"})
    orphans = client.get(f"{DEFS}?component_id=").get_json()
    assert [(d["name"], d["component_id"]) for d in orphans] == [("loose", None)]


def test_bad_component_id_filter_is_400(client):
    assert_error(client.get(f"{DEFS}?component_id=abc"), 400, "component_id")


def test_post_creates_201_in_a_component(client, catalog_commits):
    before = catalog_commits()
    response = client.post(
        DEFS, json={"name": "nova_config", "component_id": 1, "content": {"x": 1}}
    )
    assert response.status_code == 201
    assert response.get_json() == {
        "id": 5,
        "name": "nova_config",
        "component_id": 1,
        "content": {"x": 1},
    }
    assert response.headers["X-Gitstore-Commit"]
    assert catalog_commits() == before + 1
    names = [
        d["name"] for d in client.get(f"{API}/components/1").get_json()["resource_definitions"]
    ]
    assert names[-1] == "nova_config"


def test_post_errors(client):
    assert_error(client.post(DEFS, json={}), 400, "name")
    assert_error(client.post(DEFS, json={"name": "astute"}), 409, "astute")
    assert_error(client.post(DEFS, json={"name": "x", "component_id": 42}), 404, "42")
    assert_error(client.post(DEFS, json={"name": "x", "component_id": [1]}), 400, "component_id")
    assert_error(client.post(DEFS, json={"name": "x", "bogus": 1}), 400, "bogus")
    assert_error(client.post(DEFS, json={"name": "x", "schema": "no"}), 400, "schema")
    assert_error(client.post(DEFS, json={"name": "x", "secret_keys": "a"}), 400, "secret_keys")
    for name in ("values", "a/overrides", "keys", "42", "a/b/", "x y/.z"):
        assert_error(client.post(DEFS, json={"name": name}), 400, "resource name")


def test_get_one_and_unknown(client):
    one = client.get(f"{DEFS}/2")
    assert one.status_code == 200
    assert one.get_json() == {"id": 2, "name": "globals", "component_id": 1, "content": {}}
    assert_error(client.get(f"{DEFS}/99"), 404, "99")


def test_put_and_patch_are_partial(client, catalog_commits):
    before = catalog_commits()
    put = client.put(f"{DEFS}/1", json={"content": {"a": 1}})
    assert put.status_code == 200
    assert put.get_json() == {"id": 1, "name": "astute", "component_id": 1, "content": {"a": 1}}
    patch = client.patch(f"{DEFS}/1", json={"name": "astute2"})
    assert patch.status_code == 200
    assert patch.get_json()["content"] == {"a": 1} and patch.get_json()["name"] == "astute2"
    assert patch.headers["X-Gitstore-Commit"]
    assert catalog_commits() == before + 2


def test_update_errors(client):
    assert_error(client.put(f"{DEFS}/1", json={"name": "globals"}), 409, "globals")
    assert_error(client.put(f"{DEFS}/1", json={"id": 2}), 400, "id")
    assert_error(client.put(f"{DEFS}/1", json=[]), 400, "object")
    assert_error(client.put(f"{DEFS}/99", json={"content": {}}), 404, "99")


def test_move_between_components_and_to_orphans(client):
    client.post(f"{API}/components", json={"name": "nova"})
    moved = client.put(f"{DEFS}/4", json={"component_id": 2})
    assert moved.status_code == 200 and moved.get_json()["component_id"] == 2
    assert [d["id"] for d in client.get(f"{DEFS}?component_id=2").get_json()] == [4]
    orphaned = client.put(f"{DEFS}/4", json={"component_id": None})
    assert orphaned.get_json()["component_id"] is None
    assert [d["id"] for d in client.get(f"{DEFS}?component_id=").get_json()] == [4]


def test_rename_while_an_environment_holds_data_is_409_naming_it(client, catalog_commits):
    client.put(f"{ENV}/nodes/1/resources/astute/overrides", json={"a": 1})
    before = catalog_commits()
    assert_error(
        client.put(f"{DEFS}/1", json={"name": "renamed"}), 409, "astute", "environments", "1"
    )
    assert catalog_commits() == before
    assert client.get(f"{ENV}/nodes/1/resources/astute/overrides").get_json() == {"a": 1}


def test_move_hiding_data_from_an_environment_is_409(client):
    client.post(f"{API}/components", json={"name": "nova"})
    client.put(f"{ENV}/resources/globals/values", json={"a": 1})
    assert_error(client.put(f"{DEFS}/2", json={"component_id": 2}), 409, "globals", "1")
    client.put(ENV, json={"components": ["fuel", "nova"]})
    assert client.put(f"{DEFS}/2", json={"component_id": 2}).status_code == 200
    assert client.get(f"{ENV}/resources/globals/values").get_json() == {"a": 1}


def test_delete(client, catalog_commits):
    before = catalog_commits()
    response = client.delete(f"{DEFS}/4")
    assert response.status_code == 204 and response.headers["X-Gitstore-Commit"]
    assert catalog_commits() == before + 1
    assert_error(client.get(f"{DEFS}/4"), 404, "4")
    assert_error(client.delete(f"{DEFS}/4"), 404, "4")


def test_delete_while_an_environment_holds_data_is_409(client):
    client.put(f"{ENV}/resources/override/node/values", json={"a": 1})
    assert_error(client.delete(f"{DEFS}/4"), 409, "override/node", "1")


def test_key_operations_on_content(client, catalog_commits):
    before = catalog_commits()
    response = client.put(f"{DEFS}/1/keys/set", json=[["a", "b", 1], ["c", [1, 2]]])
    assert response.status_code == 204 and response.headers["X-Gitstore-Commit"]
    assert client.get(f"{DEFS}/1").get_json()["content"] == {"a": {"b": 1}, "c": [1, 2]}
    assert client.patch(f"{DEFS}/1/keys/delete", json=[["a", "b"], ["c", "0"]]).status_code == 204
    assert client.get(f"{DEFS}/1").get_json()["content"] == {"a": {}, "c": [2]}
    assert catalog_commits() == before + 2


def test_key_operation_errors(client, catalog_commits):
    before = catalog_commits()
    assert_error(client.put(f"{DEFS}/1/keys/get", json=[["a"]]), 404, "get")
    assert_error(client.put(f"{DEFS}/1/keys/delete", json=[["nope"]]), 409, "nope")
    assert_error(client.put(f"{DEFS}/1/keys/set", json=[["a"]]), 400, "short")
    assert_error(client.put(f"{DEFS}/1/keys/set", json={"a": 1}), 400, "list")
    assert_error(client.put(f"{DEFS}/99/keys/set", json=[["a", 1]]), 404, "99")
    assert catalog_commits() == before
