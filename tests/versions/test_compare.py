"""Comparing two environments over REST: matched nodes, provenance, secrets, pages, errors."""

from __future__ import annotations

import pytest
from access.helpers import add_users, bearer

from gitstore.api import create_app
from gitstore.versions.compare import CompareQuery

from .helpers import BOB, assert_error

ENVS = "/api/v1/config/environments"
COMPARE = f"{ENVS}/1/compare/2"


def _put(store, env_id, pairs, document, kind="values", resource="astute", author=None):
    return store.config.put(env_id, pairs, resource, kind, document, author)


@pytest.fixture
def staged(fuel_store):
    """Environment 1 (staging) and 2 (production): nodes web-1 and db-1 in both (other ids),
    old-1 in staging only, new-1 in production only; mtu and web-1's ip differ."""
    store = fuel_store
    store.environments.create({"id": 2, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    ids = {}
    for env_id, names in ((1, ["web-1", "db-1", "old-1"]), (2, ["web-1", "db-1", "new-1"])):
        created = store.nodes.create(env_id, [{"fqdn": f"{n}.example"} for n in names]).data
        ids[env_id] = {node["fqdn"].split(".")[0]: str(node["id"]) for node in created}
    _put(store, 1, [], {"mtu": 1500, "ntp": ["a"], "same": {"x": 1}})
    commits = {"b_mtu": _put(store, 2, [], {"mtu": 9000, "ntp": ["a"], "same": {"x": 1}}).commit}
    web_a = [("nodes", ids[1]["web-1"])]
    web_b = [("nodes", ids[2]["web-1"])]
    commits["a_ip"] = _put(store, 1, web_a, {"ip": "10.0.0.1"}, "overrides").commit
    commits["b_ip"] = _put(store, 2, web_b, {"ip": "10.1.0.1"}, "overrides", author=BOB).commit
    return store, ids, commits


def _keys(entry) -> dict:
    return {(k["resource"], k["key"]): k for k in entry["keys"]}


def test_matched_nodes_list_the_keys_that_differ_with_level_and_commit(staged, client):
    store, ids, commits = staged
    response = client.get(COMPARE)
    assert response.status_code == 200
    data = response.get_json()
    assert data["a"]["environment"] == 1 and data["b"]["environment"] == 2
    assert response.headers["X-Gitstore-Commit"] == data["a"]["commit"]
    [mtu] = data["global"]["keys"]
    assert (mtu["key"], mtu["a"]["value"], mtu["b"]["value"]) == ("mtu", 1500, 9000)
    assert mtu["b"]["level"] == "/" and mtu["b"]["commit"] == commits["b_mtu"]
    assert [node["name"] for node in data["nodes"]] == ["db-1.example", "web-1.example"]
    web = data["nodes"][1]
    assert (web["a"]["node"], web["b"]["node"]) == (ids[1]["web-1"], ids[2]["web-1"])
    ip = _keys(web)[("astute", "ip")]
    assert ip["a"] == {
        "value": "10.0.0.1",
        "level": f"/nodes/{ids[1]['web-1']}/",
        "kind": "overrides",
        "file": f"nodes/{ids[1]['web-1']}/overrides/astute.yaml",
        "commit": commits["a_ip"],
        "author": "gitstore",
        "date": ip["a"]["date"],
    }
    assert (ip["b"]["commit"], ip["b"]["author"]) == (commits["b_ip"], "bob")
    assert set(_keys(web)) == {("astute", "mtu"), ("astute", "ip")}  # ntp, same: equal
    assert data["only_a"]["count"] == 1 and data["only_a"]["nodes"][0]["name"] == "old-1.example"
    assert [n["fqdn"] for n in data["only_b"]["nodes"]] == ["new-1.example"]
    assert data["page"] == {"offset": 0, "limit": 100, "matched": 2, "next": None}
    again = client.get(COMPARE, headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304


def test_a_key_on_one_side_only_has_null_on_the_other(staged, client):
    store, ids, _ = staged
    _put(store, 2, [("nodes", ids[2]["db-1"])], {"extra": [1, 2]})
    db = client.get(f"{COMPARE}?node=db-1.example").get_json()["nodes"][0]
    extra = _keys(db)[("astute", "extra")]
    assert extra["a"] is None and extra["b"]["value"] == [1, 2]


def test_filters_node_resource_and_key(staged, client):
    store, ids, _ = staged
    _put(store, 1, [], {"deep": {"a": 1, "b": 2}}, resource="globals")
    _put(store, 2, [], {"deep": {"a": 1, "b": 3}}, resource="globals")
    by_id = client.get(f"{COMPARE}?node={ids[2]['web-1']}").get_json()
    assert by_id["global"] is None and [n["name"] for n in by_id["nodes"]] == ["web-1.example"]
    only_b = client.get(f"{COMPARE}?node=new-1.example").get_json()
    assert only_b["nodes"] == [] and only_b["only_b"]["count"] == 1
    assert only_b["only_a"]["count"] == 0 and only_b["page"]["matched"] == 0
    globals_ = client.get(f"{COMPARE}?resource=globals").get_json()
    assert [k["key"] for k in globals_["global"]["keys"]] == ["deep.b"]
    assert globals_["resources"]["compared"] == ["globals"]
    under = client.get(f"{COMPARE}?key=deep").get_json()
    assert [k["key"] for k in under["global"]["keys"]] == ["deep.b"]
    assert client.get(f"{COMPARE}?key=deep.a").get_json()["global"]["keys"] == []


def test_secrets_compare_by_plain_text_and_are_never_shown(staged, client):
    store, ids, _ = staged
    _put(store, 1, [], {"db_password": "same-plain", "api_password": "one"}, resource="globals")
    _put(store, 2, [], {"db_password": "same-plain", "api_password": "two"}, resource="globals")
    stored = (
        store.environment_repo(2)
        .snapshot()
        .read(  # sealed per repository: never equal
            "global/values/globals.yaml"
        )
    )
    assert b"same-plain" not in stored
    response = client.get(f"{COMPARE}?resource=globals&reveal=1")
    body = response.get_data(as_text=True)
    assert "one" not in body.replace("none", "") and "two" not in body and "plain" not in body
    [secret] = response.get_json()["global"]["keys"]
    assert secret["key"] == "api_password" and secret["secret"] is True
    assert secret["a"]["value"] == secret["b"]["value"] == "******"
    assert not store.secrets.audit.path.exists()  # nothing was revealed, so nothing audited
    assert response.headers["X-Gitstore-Masked"].split(",") == [
        f"{scope}:globals:api_password" for scope in ("global", "db-1.example", "web-1.example")
    ]


def test_secrets_that_do_not_open_are_kept_with_a_note(staged, client):
    store, _, _ = staged
    _put(store, 1, [], {"db_password": "p"}, resource="globals")
    _put(store, 2, [], {"db_password": "p"}, resource="globals")
    store.secrets.keyring.path.rename(store.root / "keyring.moved")
    [secret] = client.get(f"{COMPARE}?resource=globals").get_json()["global"]["keys"]
    assert secret["secret"] is True and "not compared" in secret["note"]


def test_facts_only_nodes_match_by_their_level_value(fuel_store, client):
    store = fuel_store
    store.environments.create({"id": 2, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    _put(store, 1, [("nodes", "7")], {"cpu": 4})
    _put(store, 2, [("nodes", "7")], {"cpu": 8})
    _put(store, 2, [("nodes", "8")], {"cpu": 8})
    data = client.get(COMPARE).get_json()
    [node] = data["nodes"]
    assert node["name"] == "7" and node["a"]["fqdn"] is None
    assert _keys(node)[("astute", "cpu")]["b"]["level"] == "/nodes/7/"
    assert [n["node"] for n in data["only_b"]["nodes"]] == ["8"]


def test_matched_nodes_come_in_pages_and_the_global_level_with_the_first(fuel_store, client):
    store = fuel_store
    store.environments.create({"id": 2, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    _put(store, 1, [], {"mtu": 1})
    for env_id in (1, 2):
        for number in range(5):
            _put(store, env_id, [("nodes", str(number + 1))], {"n": number * env_id})
    first = client.get(f"{COMPARE}?limit=2").get_json()
    assert first["page"] == {"offset": 0, "limit": 2, "matched": 5, "next": 2}
    assert [n["name"] for n in first["nodes"]] == ["1", "2"]
    assert first["global"]["keys"][0]["key"] == "mtu"
    node_1 = _keys(first["nodes"][0])
    assert set(node_1) == {("astute", "mtu")}  # n: 0 on both sides
    last = client.get(f"{COMPARE}?limit=2&offset=4").get_json()
    assert last["global"] is None and last["page"]["next"] is None
    assert [n["name"] for n in last["nodes"]] == ["5"]


def test_two_versions_of_one_environment(staged, client):
    store, _, _ = staged
    data = client.get(f"{ENVS}/1/compare/1?version_a=1").get_json()
    assert data["a"]["version"] == 1 and data["b"]["version"] > 1
    assert {k["key"] for k in data["global"]["keys"]} == {
        "mtu",
        "ntp",
        "same",
    }  # absent at 1: whole
    assert data["only_b"]["count"] == 3 and data["page"]["matched"] == 0
    assert store.comparisons.compare(1, 1, CompareQuery()).data["global"]["keys"] == []


def test_bad_input_is_a_4xx_naming_the_bad_part(staged, client):
    assert_error(client.get(f"{ENVS}/9/compare/2"), 404, "environment 9")
    assert_error(client.get(f"{ENVS}/1/compare/9"), 404, "environment 9")
    assert_error(client.get(f"{COMPARE}?version_a=nope"), 404, "version_a", "nope")
    assert_error(client.get(f"{COMPARE}?version_b=999"), 404, "version_b", "999")
    assert_error(client.get(f"{COMPARE}?version_b="), 400, "version_b")
    assert_error(client.get(f"{COMPARE}?version=1"), 400, "version_a")
    assert_error(client.get(f"{COMPARE}?node=ghost.example"), 404, "node", "ghost.example")
    assert_error(client.get(f"{COMPARE}?resource=nope"), 404, "resource", "nope")
    assert_error(client.get(f"{COMPARE}?limit=0"), 400, "limit")
    assert_error(client.get(f"{COMPARE}?limit=1001"), 400, "limit")
    assert_error(client.get(f"{COMPARE}?offset=-1"), 400, "offset")
    assert_error(client.get(f"{COMPARE}?key=a..b"), 400, "a..b")


def test_a_comparison_needs_the_reader_role_on_both_environments(staged):
    store, _, _ = staged
    tokens = add_users(store.root)
    client = create_app({"TESTING": True}, store=store).test_client()
    for path in (COMPARE, f"{ENVS}/2/compare/1"):
        refused = client.get(path, headers=bearer(tokens["reader1"]))
        assert_error(refused, 403, "on environment 2")
    assert client.get(COMPARE, headers=bearer(tokens["reader"])).status_code == 200


def test_a_node_value_equal_to_the_global_one_is_named_at_the_node(fuel_store, client):
    """A small integer or `true` is one object in Python wherever it was read: the node's
    own layer, not the global one, is where its value won."""
    store = fuel_store
    store.environments.create({"id": 2, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    _put(store, 1, [], {"debug": True, "mtu": 1})
    _put(store, 2, [], {"debug": False, "mtu": 2})
    _put(store, 1, [("nodes", "7")], {"debug": True, "mtu": 1}, "overrides")
    _put(store, 2, [("nodes", "7")], {"x": 1})
    [node] = client.get(COMPARE).get_json()["nodes"]
    keys = _keys(node)
    assert keys[("astute", "debug")]["a"]["level"] == "/nodes/7/"
    assert keys[("astute", "mtu")]["a"]["kind"] == "overrides"


def test_the_keys_listed_are_those_of_the_effective_documents_rest_serves(staged, client):
    """Each node's keys, found partly from its parent scope's, are exactly the differences of
    the two effective documents (knockouts, nested mappings and one-sided keys included)."""
    from gitstore.configdb.values import Query
    from gitstore.merge.diff import dotted
    from gitstore.versions.keydiff import differences

    store, ids, _ = staged
    _put(store, 1, [], {"mtu": 1500, "net": {"a": 1, "b": {"c": 2}}, "gone": 1, "t": True})
    _put(store, 2, [], {"mtu": 9000, "net": {"a": 1, "b": {"c": 3}}, "t": True})
    _put(store, 1, [("nodes", ids[1]["web-1"])], {"net": {"b": {"c": 3}}, "--gone": None})
    _put(store, 2, [("nodes", ids[2]["db-1"])], {"t": True, "net": {"a": 5}})
    data = client.get(COMPARE).get_json()
    listed = {node["name"]: {k["key"] for k in node["keys"]} for node in data["nodes"]}
    for short in ("web-1", "db-1"):
        documents = [
            store.config.read(
                env_id, [("nodes", ids[env_id][short])], "astute", "values", Query(effective=True)
            ).data
            for env_id in (1, 2)
        ]
        expected = {dotted(path) for path, _, _ in differences(*documents)}
        assert listed.get(f"{short}.example", set()) == expected, short


def test_an_answer_is_kept_by_both_commits_and_a_new_commit_is_seen(staged):
    store, ids, _ = staged
    first = store.comparisons.compare(1, 2)
    assert store.comparisons.compare(1, 2).data is first.data  # kept: the same object
    _put(store, 2, [("nodes", ids[2]["db-1"])], {"mtu": 1500})
    again = store.comparisons.compare(1, 2).data
    assert again is not first.data and again["b"]["commit"] != first.data["b"]["commit"]
    # db-1's mtu is 1500 on both sides now: it differs no more, and is not listed
    assert [node["name"] for node in again["nodes"]] == ["web-1.example"]
