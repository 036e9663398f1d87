"""`PUT /api/v1/config/environments/<id>/documents`: several documents in one commit."""

from __future__ import annotations

import pytest

from .helpers import ENV, assert_error

URL = f"{ENV}/documents"


def item(resource: str, document, levels=(("nodes", "1"),), kind: str = "values") -> dict:
    return {
        "levels": [list(p) for p in levels],
        "resource": resource,
        "kind": kind,
        "document": document,
    }


def test_writes_every_document_in_one_commit(client, fuel_store, env_commits):
    before = env_commits()
    body = {
        "message": "facts: upload nodes/1",
        "documents": [
            item("astute", {"fqdn": "node-1"}),
            item("override/plugins", {"p": [1]}),
            item("globals", {"g": True}, levels=(), kind="overrides"),
        ],
    }
    response = client.put(URL, json=body)
    assert response.status_code == 204, response.get_json()
    assert env_commits() == before + 1
    assert response.headers["X-Gitstore-Version"] == str(before + 1)
    read = fuel_store.config.read
    assert read(1, [("nodes", "1")], "astute", "values").data == {"fqdn": "node-1"}
    assert read(1, [("nodes", "1")], "override/plugins", "values").data == {"p": [1]}
    assert read(1, [], "globals", "overrides").data == {"g": True}
    info = fuel_store.environment_repo(1).snapshot().info()
    assert info.message == "facts: upload nodes/1"


def test_default_kind_levels_and_message(client, fuel_store):
    response = client.put(URL, json={"documents": [{"resource": "astute", "document": {}}]})
    assert response.status_code == 204
    assert fuel_store.environment_repo(1).snapshot().info().message == ("config: write 1 documents")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ([], ["'documents'"]),
        ({"documents": []}, ["1 to 1000"]),
        ({"documents": ["x"]}, ["documents[0] must be a JSON object"]),
        ({"documents": [{"resource": "astute", "document": []}]}, ["documents[0].document"]),
        ({"documents": [{"resource": 3, "document": {}}]}, ["documents[0].resource"]),
        (
            {"documents": [{"levels": "nodes=1", "resource": "a", "document": {}}]},
            ["documents[0].levels"],
        ),
        ({"documents": [item("astute", {}), item("astute", {})]}, ["documents[1] repeats"]),
        ({"message": "two\nlines", "documents": [item("astute", {})]}, ["'message'"]),
    ],
)
def test_malformed_bodies_are_400_naming_the_part(client, body, words):
    assert_error(client.put(URL, json=body), 400, *words)


def test_one_bad_address_writes_nothing(client, fuel_store, env_commits):
    before = env_commits()
    body = {"documents": [item("astute", {"a": 1}), item("nope", {"a": 1})]}
    assert_error(client.put(URL, json=body), 404, "nope")
    body = {"documents": [item("astute", {"a": 1}, levels=(("role", "x"),))]}
    assert_error(client.put(URL, json=body), 404, "expected 'nodes'")
    assert env_commits() == before


def test_unknown_environment_is_404(client):
    body = {"documents": [item("astute", {})]}
    assert_error(client.put("/api/v1/config/environments/9/documents", json=body), 404, "9")
