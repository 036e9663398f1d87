"""Revert: restore files as at a version, or undo one commit; always one new commit."""

from __future__ import annotations

import pytest

from gitstore.errors import NotFound

from .helpers import BOB, ENV, assert_error, effective, put


@pytest.fixture
def edited(fuel_store):
    """Global and node documents edited over four commits; returns the store and commits."""
    store = fuel_store
    base = put(store, "", {"a": 1, "b": {"c": 2}})
    put(store, "nodes/1", {"n": 1}, kind="overrides")
    node = put(store, "nodes/2", {"n": 2}, author=BOB)
    glob = put(store, "", {"a": 5, "b": {"c": 2}, "d": 4})
    return store, {"base": base.commit, "node": node.commit, "global": glob.commit}


def test_revert_to_a_version_restores_effective_values(edited, client):
    store, commits = edited
    expected = {"": effective(store, "", version=commits["base"])}
    response = client.post(f"{ENV}/revert", json={"to": commits["base"]})
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    assert body["changed"] is True and body["version"] == 6
    assert response.headers["X-Gitstore-Commit"] == body["commit"]
    for scope, values in expected.items():
        assert effective(store, scope) == values
    for node in ("nodes/1", "nodes/2"):  # their only documents are gone: unknown nodes now
        with pytest.raises(NotFound, match="cannot find node"):
            effective(store, node)
    history = store.versions.history(1).data["entries"]
    assert history[0]["commit"] == body["commit"]
    assert history[0]["message"].startswith("revert: restore the environment to version 2")
    assert {c["file"] for c in history[0]["changes"]} == {
        "global/values/astute.yaml",
        "nodes/1/overrides/astute.yaml",
        "nodes/2/values/astute.yaml",
    }
    # nothing left to restore: no new commit
    again = client.post(f"{ENV}/revert", json={"to": commits["base"]})
    assert again.status_code == 200 and again.get_json() == {**body, "changed": False}


def test_revert_named_paths_only(edited, client):
    store, commits = edited
    response = client.post(
        f"{ENV}/revert",
        json={
            "to": commits["base"],
            "paths": ["global/values/astute.yaml"],
            "message": "undo the global edit",
        },
    )
    assert response.status_code == 201
    assert effective(store, "") == {"a": 1, "b": {"c": 2}}
    assert effective(store, "nodes/2") == {"a": 1, "b": {"c": 2}, "n": 2}  # kept
    assert store.versions.history(1, limit=1).data["entries"][0]["message"] == (
        "undo the global edit"
    )
    # a path that exists nowhere is named
    assert_error(
        client.post(
            f"{ENV}/revert", json={"to": commits["base"], "paths": ["nodes/9/values/x.yaml"]}
        ),
        404,
        "nodes/9/values/x.yaml",
    )


def test_undo_one_commit_keeps_later_changes(edited, client):
    store, commits = edited
    response = client.post(f"{ENV}/revert", json={"commit": commits["node"]})
    assert response.status_code == 201
    with pytest.raises(NotFound, match="cannot find node '2'"):  # its only document is gone
        effective(store, "nodes/2")
    assert effective(store, "") == {"a": 5, "b": {"c": 2}, "d": 4}  # later global edit kept
    entry = store.versions.history(1, limit=1).data["entries"][0]
    assert entry["message"].startswith('Revert "config: set nodes/2 astute values')
    assert commits["node"] in entry["message"]


def test_undo_that_clashes_with_later_edits_is_a_conflict_naming_the_file(edited, client):
    store, commits = edited
    head = store.environment_repo(1).head()
    body = assert_error(
        client.post(f"{ENV}/revert", json={"commit": commits["base"]}),
        409,
        "global/values/astute.yaml",
    )
    assert body["errors"] == [{"file": "global/values/astute.yaml", "message": "conflict"}]
    assert store.environment_repo(1).head() == head  # nothing written
    assert_error(client.post(f"{ENV}/revert", json={"commit": "1"}), 409, "first commit")


def test_revert_rejects_bad_bodies(edited, client):
    _, commits = edited
    cases = [
        ({}, 400, "exactly one"),
        ({"to": "1", "commit": "2"}, 400, "exactly one"),
        ({"commit": "2", "paths": ["a"]}, 400, "paths"),
        ({"to": "1", "paths": ["../x"]}, 400, "../x"),
        ({"to": "1", "paths": ["global", "global/values"]}, 400, "global"),
        ({"to": "1", "colour": "red"}, 400, "colour"),
        ({"to": "nope"}, 404, "nope"),
        ({"commit": "nope"}, 404, "nope"),
    ]
    for body, status, word in cases:
        assert_error(client.post(f"{ENV}/revert", json=body), status, word)
