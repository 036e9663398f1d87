"""A resource definition's `schema`: refused when it could not be run, never a 500 at a write."""

from __future__ import annotations

import time

import pytest
import yaml

from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author

from .helpers import API, ENV, assert_error

DEFS = f"{API}/resource_definitions"

#: Schemas that were accepted, then made every write of their resource a 500 or a 400.
UNUSABLE = [
    ({"$ref": "#"}, "recurses"),
    ({"allOf": [{"$ref": "#/$defs/a"}], "$defs": {"a": {"not": {"$ref": "#"}}}}, "recurses"),
    ({"$ref": "#/definitions/x"}, "#/definitions/x"),
    ({"$ref": "http://example.com/x"}, "http://example.com/x"),
    ({"properties": {"a": {"$ref": "other.json"}}}, "other.json"),
    ({"type": "bogus"}, "bogus"),
    ({"properties": {"a": {"pattern": "(unclosed"}}}, "(unclosed"),
]


@pytest.mark.parametrize("schema, word", UNUSABLE)
def test_an_unusable_schema_is_refused_naming_it(client, catalog_commits, schema, word):
    before = catalog_commits()
    created = client.post(DEFS, json={"name": "svc", "component_id": 1, "schema": schema})
    assert_error(created, 400, "schema", "'svc'", word)
    changed = client.put(f"{DEFS}/1", json={"schema": schema})
    assert_error(changed, 400, "schema", "'astute'", word)
    nested = {"name": "extra", "resource_definitions": [{"name": "svc", "schema": schema}]}
    assert_error(client.post(f"{API}/components", json=nested), 400, "schema", "'svc'")
    assert catalog_commits() == before


def test_recursive_schemas_that_read_input_are_accepted(client):
    tree = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "children": {"items": {"$ref": "#"}}},
        "$defs": {"leaf": {"$ref": "#/$defs/leaf2"}, "leaf2": {"type": "integer"}},
    }
    created = client.post(DEFS, json={"name": "svc", "component_id": 1, "schema": tree})
    assert created.status_code == 201, created.get_json()
    good = {"name": "a", "children": [{"name": "b", "children": []}]}
    assert client.put(f"{ENV}/resources/svc/values", json=good).status_code == 204
    bad = {"name": "a", "children": [{"name": 2}]}
    body = assert_error(client.put(f"{ENV}/resources/svc/values", json=bad), 400, "name")
    assert body["errors"][0]["key"] == "children.0.name"


def _store_definition(store, schema: dict) -> None:
    """Put a definition with `schema` into the catalog directly, as a store before the fix
    could hold it."""

    def operation(snapshot):
        doc = yaml.safe_load(snapshot.read("components/fuel.yaml"))
        doc["resource_definitions"].append({"id": 99, "name": "legacy", "schema": schema})
        changes = ChangeSet("catalog: a definition stored before schemas were checked")
        changes.put("components/fuel.yaml", yaml.safe_dump(doc).encode())
        return changes

    store.catalog().update(operation, Author("test", "test@example.com"))


@pytest.mark.parametrize("schema, word", UNUSABLE)
def test_a_stored_unusable_schema_makes_writes_a_400_not_a_500(
    client, fuel_store, env_commits, schema, word
):
    _store_definition(fuel_store, schema)
    before = env_commits()
    written = client.put(f"{ENV}/resources/legacy/values", json={"a": 1})
    assert_error(written, 400, "schema", "'legacy'")
    keyed = client.put(f"{ENV}/resources/legacy/values/keys/set", json=[["a", 1]])
    assert_error(keyed, 400, "schema", "'legacy'")
    assert env_commits() == before


def test_a_remote_reference_is_never_fetched(client, fuel_store, monkeypatch):
    import urllib.request

    fetched = []

    def no_network(url, *args, **kwargs):
        fetched.append(url)
        raise OSError("no network in tests")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    _store_definition(fuel_store, {"$ref": "http://127.0.0.1:9/schema.json"})
    written = client.put(f"{ENV}/resources/legacy/values", json={"a": 1})
    assert_error(written, 400, "schema", "http://127.0.0.1:9/schema.json")
    assert fetched == []


def test_a_backtracking_pattern_is_stopped_within_its_budget(client):
    """`^(a|aa)+$` on 40 `a`s and a `!` backtracks for ~10 s in `re`, for ever in `regex`."""
    schema = {"properties": {"a": {"pattern": "^(a|aa)+$"}}, "patternProperties": {"^(b|bb)+$": {}}}
    created = client.post(DEFS, json={"name": "svc", "component_id": 1, "schema": schema})
    assert created.status_code == 201
    for document in ({"a": "a" * 40 + "!"}, {"b" * 40 + "!": 1}):
        started = time.monotonic()
        written = client.put(f"{ENV}/resources/svc/values", json=document)
        assert time.monotonic() - started < 3
        assert_error(written, 400, "schema", "'svc'", "pattern", "took longer")
    assert client.put(f"{ENV}/resources/svc/values", json={"a": "aaaa"}).status_code == 204


def test_unevaluated_properties_with_pattern_properties_is_refused(client):
    schema = {"patternProperties": {"^x": {}}, "unevaluatedProperties": False}
    created = client.post(DEFS, json={"name": "svc", "component_id": 1, "schema": schema})
    assert_error(created, 400, "schema", "unevaluatedProperties")
