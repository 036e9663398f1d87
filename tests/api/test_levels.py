"""`/environments/<id>/hierarchy_levels[/<name>]`: listing, reading and renaming levels."""

from __future__ import annotations

from .helpers import ENV, assert_error

LEVELS = f"{ENV}/hierarchy_levels"


def _two_levels(client):
    client.put(ENV, json={"hierarchy_levels": ["role", "nodes"]})
    client.put(f"{ENV}/role/compute/resources/astute/values", json={"r": 1})
    client.put(f"{ENV}/role/compute/nodes/2/resources/astute/values", json={"n": 2})
    client.put(f"{ENV}/role/storage/nodes/1/resources/globals/overrides", json={"n": 1})


def test_list_is_root_first_with_parents_and_values_that_hold_data(client):
    _two_levels(client)
    response = client.get(LEVELS)
    assert response.status_code == 200
    assert response.get_json() == [
        {"name": "role", "parent": None, "values": ["compute"]},
        {"name": "nodes", "parent": "role", "values": ["1", "2"]},
    ]
    assert response.headers["X-Gitstore-Commit"]


def test_list_of_an_environment_without_levels_is_empty(client):
    client.post(f"{ENV[:-2]}", json={"id": 2})
    assert client.get(f"{ENV[:-2]}/2/hierarchy_levels").get_json() == []


def test_get_one_level(client):
    _two_levels(client)
    response = client.get(f"{LEVELS}/nodes")
    assert response.status_code == 200
    assert response.get_json() == {"name": "nodes", "parent": "role", "values": ["1", "2"]}
    assert_error(client.get(f"{LEVELS}/rack"), 404, "rack")
    assert_error(client.get(f"{ENV[:-2]}/9/hierarchy_levels"), 404, "9")


def test_rename_moves_the_folder_in_one_commit(fuel_store, client, env_commits):
    _two_levels(client)
    before = env_commits()
    response = client.put(f"{LEVELS}/nodes", json={"name": "hosts"})
    assert response.status_code == 200
    assert response.get_json() == {"name": "hosts", "parent": "role", "values": ["1", "2"]}
    assert response.headers["X-Gitstore-Commit"]
    assert env_commits() == before + 1
    snapshot = fuel_store.environment_repo(1).snapshot()
    assert snapshot.exists("hosts/1/overrides/globals.yaml")
    assert snapshot.exists("hosts/2/values/astute.yaml")
    assert not snapshot.exists("nodes")
    assert client.get(ENV).get_json()["hierarchy_levels"] == ["role", "hosts"]
    moved = client.get(f"{ENV}/role/compute/hosts/2/resources/astute/values?effective")
    assert moved.get_json() == {"r": 1, "n": 2}
    assert_error(client.get(f"{ENV}/role/compute/nodes/2/resources/astute/values"), 404, "hosts")


def test_rename_of_a_level_without_data(client, env_commits):
    before = env_commits()
    response = client.put(f"{LEVELS}/nodes", json={"name": "hosts"})
    assert response.status_code == 200
    assert response.get_json() == {"name": "hosts", "parent": None, "values": []}
    assert env_commits() == before + 1


def test_rename_accepts_the_entity_back_with_its_derived_fields(client):
    _two_levels(client)
    entity = client.get(f"{LEVELS}/role").get_json()
    response = client.put(f"{LEVELS}/role", json={**entity, "name": "group"})
    assert response.status_code == 200 and response.get_json()["name"] == "group"


def test_rename_errors(client, env_commits):
    _two_levels(client)
    before = env_commits()
    assert_error(client.put(f"{LEVELS}/nodes", json={"name": "role"}), 409, "role")
    assert_error(client.put(f"{LEVELS}/rack", json={"name": "x"}), 404, "rack")
    assert_error(client.put(f"{LEVELS}/nodes", json={}), 400, "name")
    assert_error(client.put(f"{LEVELS}/nodes", json={"name": "global"}), 400, "global")
    assert_error(client.put(f"{LEVELS}/nodes", json={"name": "../x"}), 400, "hierarchy level")
    assert_error(client.put(f"{LEVELS}/nodes", json={"name": "x", "parent": None}), 400, "parent")
    assert_error(client.put(f"{LEVELS}/nodes", json={"name": "x", "extra": 1}), 400, "extra")
    assert_error(
        client.put(f"{LEVELS}/nodes", data="{", content_type="application/json"), 400, "JSON"
    )
    assert env_commits() == before


def test_levels_read_at_a_version(client):
    _two_levels(client)
    client.put(f"{LEVELS}/nodes", json={"name": "hosts"})
    old = client.get(f"{LEVELS}?version=main~1").get_json()
    assert [level["name"] for level in old] == ["role", "nodes"]
    assert client.get(f"{LEVELS}/nodes?version=main~1").status_code == 200
    assert_error(client.get(f"{LEVELS}/nodes"), 404, "nodes")


def test_a_level_value_with_an_invisible_character_is_refused_naming_it(client, env_commits):
    before = env_commits()
    for value, name in [
        ("node-1\u200b", "U+200B ZERO WIDTH SPACE"),
        ("node\u202e-1", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ("\u2066node-1", "U+2066 LEFT-TO-RIGHT ISOLATE"),
        ("node-1\ufeff", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    ]:
        response = client.put(f"{ENV}/nodes/{value}/resources/astute/values", json={"a": 1})
        assert_error(response, 400, name, "value of level 'nodes'")
    assert env_commits() == before
    # a printable non-ASCII value passes the name check; without an inventory it names no node
    response = client.put(f"{ENV}/nodes/n\u00f6de-1/resources/astute/values", json={"a": 1})
    assert_error(response, 404, "cannot find node")
