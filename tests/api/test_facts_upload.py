"""`PUT /environments/<id>/facts`: machine-written facts, many nodes in one commit (issue 35).

A YAML text is read as its producer reads it (a repeated key keeps its last value, with a
warning); JSON written by people stays strict: a repeated key is a 400 naming it.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from gitstore.configdb.values import Query

from .helpers import ENV, assert_error

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURE = (DATA / "facts" / "repeated-roles.yaml").read_text()
COMPUTE = (DATA / "fuel" / "astute" / "compute.yaml").read_text()
FACTS = f"{ENV}/facts"


def stored(store, node: str | None, effective: bool = False) -> dict:
    pairs = [("nodes", node)] if node else []
    query = Query(effective=effective, reveal=True)
    return store.config.read(1, pairs, "astute", "values", query).data


def test_a_yaml_text_with_repeated_keys_uploads_with_a_warning_each(client, fuel_store):
    body = {"nodes": {"1": {"astute": FIXTURE}, "127": {"astute": COMPUTE}}}
    response = client.put(FACTS, json=body)
    assert response.status_code == 200, response.json
    answer = response.json
    assert answer["nodes"] == 2 and answer["commit"] == response.headers["X-Gitstore-Commit"]
    assert answer["warnings"][0] == (
        "1/astute.yaml: key network_scheme.roles.storage is repeated (lines 9 and 13); "
        "the value of line 13 is kept"
    )
    assert len(answer["warnings"]) == 5
    assert stored(fuel_store, "1") == yaml.safe_load(FIXTURE)
    assert stored(fuel_store, "127", effective=True) == yaml.safe_load(COMPUTE)


def test_a_repeated_key_in_a_json_body_is_refused_naming_it(client, env_commits):
    before = env_commits()
    body = b'{"a": 1, "nested": {"storage": "x", "storage": "y"}}'
    response = client.put(
        f"{ENV}/nodes/1/resources/astute/values",
        data=body,
        content_type="application/json",
    )
    assert_error(response, 400, "'storage' is repeated")
    assert env_commits() == before


def test_shared_entries_are_given_to_every_node_and_the_cluster_lists_stored_once(
    client, fuel_store, env_commits
):
    before = env_commits()
    listing = [{"uid": "1"}, {"uid": "2"}]
    body = {
        "message": "facts: two nodes",
        "shared": {"astute": {"nodes": listing, "deployment_id": 37}},
        "nodes": {"1": {"astute": {"uid": "1"}}, "2": {"astute": {"uid": "2"}}},
    }
    response = client.put(FACTS, json=body)
    assert response.status_code == 200, response.json
    assert response.json["stored_once"] == {"astute": ["nodes"]}
    assert env_commits() == before + 1
    assert stored(fuel_store, None) == {"nodes": listing}
    assert stored(fuel_store, "2") == {"deployment_id": 37, "uid": "2"}
    assert stored(fuel_store, "2", effective=True) == {
        "nodes": listing,
        "deployment_id": 37,
        "uid": "2",
    }


def test_one_broken_file_refuses_the_upload_naming_node_and_resource(client, env_commits):
    before = env_commits()
    body = {"nodes": {"1": {"astute": FIXTURE}, "2": {"globals": "a: [1\n"}}}
    assert_error(client.put(FACTS, json=body), 400, "2/globals.yaml")
    assert env_commits() == before


def test_an_unknown_node_is_refused_with_an_inventory(client, inventory, env_commits):
    before = env_commits()
    body = {"nodes": {"node-1.domain.tld": {"astute": "a: 1\n"}, "9": {"astute": "a: 1\n"}}}
    assert_error(client.put(FACTS, json=body), 404, "'9'")
    assert env_commits() == before
    del body["nodes"]["9"]
    assert client.put(FACTS, json=body).status_code == 200
    body["nodes"]["1"] = {"astute": "a: 2\n"}
    assert_error(client.put(FACTS, json=body), 400, "'node-1.domain.tld' and '1' are one node")


def test_malformed_bodies_are_400_naming_the_part(client):
    cases = [
        ({"nodes": []}, "'nodes'"),
        ({"nodes": {}}, "'nodes'"),
        ({"nodes": {"1": {"astute": 5}}}, "nodes['1']['astute']"),
        ({"nodes": {"1": {"astute": {}}}, "extra": 1}, "'extra'"),
        ({"nodes": {"1": {"astute": {}}}, "shared": {"globals": {}}}, "'globals'"),
    ]
    for body, fragment in cases:
        assert_error(client.put(FACTS, json=body), 400, fragment)


def test_a_later_upload_of_one_node_agreeing_with_the_global_lists_leaves_them_out(
    client, fuel_store
):
    listing = [{"uid": "1"}, {"uid": "2"}]
    body = {"shared": {"astute": {"nodes": listing}}, "nodes": {"1": {"astute": {}}, "2": {}}}
    body["nodes"]["2"] = {"astute": {"uid": "2"}}
    assert client.put(FACTS, json=body).status_code == 200
    one = {"nodes": {"2": {"astute": {"nodes": listing, "uid": "two"}}}}
    answer = client.put(FACTS, json=one)
    assert answer.status_code == 200 and answer.json["stored_once"] == {}
    assert stored(fuel_store, "2") == {"uid": "two"}
    assert stored(fuel_store, None) == {"nodes": listing}
    other = {"nodes": {"2": {"astute": {"nodes": listing[:1], "uid": "two"}}}}
    assert client.put(FACTS, json=other).status_code == 200
    assert stored(fuel_store, None) == {}
    assert stored(fuel_store, "1") == {"nodes": listing}  # given back what it relied on
    assert stored(fuel_store, "2", effective=True) == {"nodes": listing[:1], "uid": "two"}


def test_an_upload_that_changes_nothing_makes_no_commit(client, env_commits):
    body = {"nodes": {"1": {"astute": FIXTURE}}}
    first = client.put(FACTS, json=body)
    before = env_commits()
    again = client.put(FACTS, json=body)
    assert again.status_code == 200, again.json
    assert env_commits() == before
    assert again.json["commit"] == first.json["commit"]
