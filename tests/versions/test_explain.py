"""Explain: the layers behind every key path, the winner and the commit that set it."""

from __future__ import annotations

from .helpers import ALICE, BOB, ENV, assert_error, put

NODE = f"{ENV}/nodes/1/resources/astute/values"


def _by_path(response) -> dict:
    assert response.status_code == 200, response.get_json()
    return {item["path"]: item for item in response.get_json()["keys"]}


def test_layers_winner_lines_and_last_change(fuel_store, client):
    first = put(fuel_store, "", {"net": {"mtu": 1500, "vlan": 10}, "ntp": ["a", "b"]}, author=ALICE)
    override = put(fuel_store, "nodes/1", {"net": {"mtu": 9000}}, kind="overrides", author=BOB)
    put(fuel_store, "nodes/2", {"net": {"mtu": 1}})  # unrelated
    keys = _by_path(client.get(f"{NODE}?effective&explain"))
    assert list(keys) == ["net.mtu", "net.vlan", "ntp"]
    mtu = keys["net.mtu"]
    assert mtu["value"] == 9000
    assert mtu["layers"] == [
        {
            "scope": "/",
            "kind": "values",
            "file": "global/values/astute.yaml",
            "line": 2,
            "value": 1500,
        },
        {
            "scope": "/nodes/1/",
            "kind": "overrides",
            "file": "nodes/1/overrides/astute.yaml",
            "line": 2,
            "value": 9000,
        },
    ]
    assert mtu["winner"] == 1
    assert (mtu["commit"], mtu["author"]) == (override.commit, "bob")
    assert keys["net.vlan"]["winner"] == 0 and keys["net.vlan"]["layers"][0]["line"] == 3
    assert (keys["ntp"]["commit"], keys["ntp"]["author"]) == (first.commit, "alice")
    assert keys["ntp"]["value"] == ["a", "b"] and keys["ntp"]["date"].endswith("Z")


def test_last_change_follows_the_winning_value_not_the_file(fuel_store, client):
    first = put(fuel_store, "", {"a": 1, "b": 1})
    second = put(fuel_store, "", {"a": 1, "b": 2})
    put(fuel_store, "", {"a": 2, "b": 2})
    back = put(fuel_store, "", {"a": 1, "b": 2})  # `a` back to its first value
    keys = _by_path(client.get(f"{ENV}/resources/astute/values?effective&explain"))
    assert keys["a"]["commit"] == back.commit
    assert keys["b"]["commit"] == second.commit
    old = _by_path(client.get(f"{ENV}/resources/astute/values?effective&explain&version=2"))
    assert old["a"]["commit"] == first.commit


def test_key_limits_the_explanation(fuel_store, client):
    put(fuel_store, "nodes/1", {"known": True}, resource="globals")  # node 1 exists
    put(fuel_store, "", {"net": {"mtu": 1500, "vlan": 10}, "ntp": ["a"]})
    keys = _by_path(client.get(f"{NODE}?effective&explain&key=net"))
    assert list(keys) == ["net.mtu", "net.vlan"]
    leaf = _by_path(client.get(f"{NODE}?effective&explain&key=ntp"))
    assert list(leaf) == ["ntp"]
    assert_error(client.get(f"{NODE}?effective&explain&key=nope"), 409, "nope")
    assert_error(client.get(f"{NODE}?explain"), 409, "effective")


def test_explain_etag_survives_unrelated_commits(fuel_store, client):
    put(fuel_store, "nodes/1", {"known": True}, resource="globals")  # node 1 exists
    put(fuel_store, "", {"a": 1})
    first = client.get(f"{NODE}?effective&explain")
    put(fuel_store, "nodes/2", {"a": 2})
    assert client.get(f"{NODE}?effective&explain").headers["ETag"] == first.headers["ETag"]
    put(fuel_store, "nodes/1", {"a": 3})
    assert client.get(f"{NODE}?effective&explain").headers["ETag"] != first.headers["ETag"]
