"""The versions routes over REST: shapes, query parameters and errors."""

from __future__ import annotations

from .helpers import BOB, ENV, assert_error, put


def test_history_over_rest(fuel_store, client):
    put(fuel_store, "", {"a": 1})
    node = put(fuel_store, "nodes/1", {"a": 2}, kind="overrides", author=BOB)
    response = client.get(f"{ENV}/history?path=nodes/1&resource=astute&limit=1")
    assert response.status_code == 200
    assert response.headers["X-Gitstore-Version"] == "3"
    [entry] = response.get_json()["entries"]
    assert set(entry) >= {"version", "commit", "author", "date", "message", "changes"}
    assert (entry["commit"], entry["author"], entry["version"]) == (node.commit, "bob", 3)
    assert entry["changes"][0]["kind"] == "overrides"
    values = client.get(f"{ENV}/history?levels=nodes=1&resource=astute&key=a").get_json()
    assert [(e.get("old"), e["new"]) for e in values["entries"]] == [(1, 2), (None, 1)]


def test_version_routes_answer_404_for_unknown_environments(client):
    for url in ("/history", "/diff?from=1", "/labels"):
        assert_error(client.get(f"/api/v1/config/environments/9{url}"), 404, "environment 9")
    assert_error(
        client.post("/api/v1/config/environments/9/revert", json={"to": "1"}), 404, "environment 9"
    )


def test_history_query_errors(fuel_store, client):
    assert_error(client.get(f"{ENV}/history?limit=x"), 400, "limit")
    assert_error(client.get(f"{ENV}/history?since=nope"), 404, "since", "nope")
    assert_error(client.get(f"{ENV}/history?key=a..b"), 400, "a..b")
    assert_error(client.get(f"{ENV}/history?resource=nope"), 404, "nope")
    assert_error(client.get(f"{ENV}/history?path=nodes/1&key=a"), 404, "cannot find node '1'")
    client.put(f"{ENV}/nodes/1/resources/globals/values", json={"a": 1})
    assert_error(client.get(f"{ENV}/history?path=nodes/1&key=a"), 400, "resource")
