"""A scope's effective document is its parent scope's (kept) with the scope's own layers merged
over it (`configdb.scopes.effective_document`): it must be exactly the merge of every layer,
through the real store and app, knock-outs included, and follow any layer's change at once."""

from __future__ import annotations

import pytest

from gitstore.configdb.scopes import effective_document
from gitstore.layout import EnvironmentView
from gitstore.merge.effective import merge_layers

ENV = "/api/v1/config/environments/1"
NODE = f"{ENV}/role/compute/nodes/2/resources/astute"
ROLE = f"{ENV}/role/compute/resources/astute"
GLOBAL = f"{ENV}/resources/astute"


@pytest.fixture
def levels(client):
    client.put(ENV, json={"hierarchy_levels": ["role", "nodes"]})
    writes = {
        f"{GLOBAL}/values": {"a": {"x": 1, "y": 2}, "b": [1], "c": "global", "d": {"k": 1}},
        f"{GLOBAL}/overrides": {"c": "override"},
        f"{ROLE}/values": {"a": {"y": 3, "z": 4}, "--b": None, "e": {"f": 1}},
        f"{NODE}/values": {"--a": None, "a": {"only": True}, "g": [2], "d": {"--k": None}},
    }
    for url, document in writes.items():
        assert client.put(url, json=document).status_code in (200, 201, 204), url
    return client


def every_layer(store, pairs):
    view = EnvironmentView(store.environment_repo(1).snapshot())
    return view, merge_layers(view.layers(pairs, "astute"), view.merge)


def test_each_scope_is_the_merge_of_all_its_layers(levels, fuel_store):
    for pairs in ([], [("role", "compute")], [("role", "compute"), ("nodes", "2")]):
        view, expected = every_layer(fuel_store, pairs)
        assert effective_document(view, pairs, "astute") == expected
    assert levels.get(f"{NODE}/values?effective").get_json() == {
        "a": {"only": True},
        "c": "override",
        "d": {},
        "e": {"f": 1},
        "g": [2],
    }


def test_a_changed_parent_layer_reaches_the_node_at_once(levels, fuel_store):
    before = levels.get(f"{NODE}/values?effective").get_json()
    assert levels.put(f"{GLOBAL}/overrides", json={"c": "new", "h": 1}).status_code in (200, 204)
    after = levels.get(f"{NODE}/values?effective").get_json()
    assert after == {**before, "c": "new", "h": 1}
    pairs = [("role", "compute"), ("nodes", "2")]
    view, expected = every_layer(fuel_store, pairs)
    assert effective_document(view, pairs, "astute") == expected == after
