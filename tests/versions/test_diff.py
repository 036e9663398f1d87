"""Diff: the data-level blast radius of a change, scope by scope."""

from __future__ import annotations

import pytest

from gitstore.errors import NotFound

from .helpers import ENV, assert_error, put

NODES = 50
SHADOWING = "7"


@pytest.fixture
def fifty(fuel_store):
    """50 nodes under global; node 7 overrides `k`. Returns the store and the base commit."""
    documents = {((), "astute", "values"): {"k": 1, "nested": {"a": 1}}}
    for node in range(1, NODES + 1):
        documents[((("nodes", str(node)),), "astute", "values")] = {"n": node}
    documents[((("nodes", SHADOWING),), "astute", "overrides")] = {"k": "mine"}
    base = fuel_store.config.write_many(1, documents, "fifty nodes")
    return fuel_store, base.commit


def test_a_global_edit_reaches_every_node_but_the_shadowing_one(fifty):
    store, base = fifty
    put(store, "", {"k": 2, "nested": {"a": 1}})
    scopes = store.versions.diff(1, base).data["scopes"]
    expected = {"/"} | {f"/nodes/{n}/" for n in range(1, NODES + 1) if str(n) != SHADOWING}
    assert set(scopes) == expected
    assert scopes["/nodes/12/"] == {
        "astute": {"added": {}, "removed": {}, "changed": {"k": {"old": 1, "new": 2}}}
    }


def test_only_changed_nodes_are_reported(fifty):
    store, base = fifty
    put(store, "nodes/3", {"n": 3, "extra": {"deep": True}})
    put(store, "nodes/40", {"n": 41})
    put(store, "nodes/7", {"n": 7, "k": "shadowed by the override"})
    data = store.versions.diff(1, base).data
    assert set(data["scopes"]) == {"/nodes/3/", "/nodes/40/"}
    assert data["scopes"]["/nodes/3/"]["astute"]["added"] == {"extra": {"deep": True}}
    assert data["scopes"]["/nodes/40/"]["astute"]["changed"] == {"n": {"old": 40, "new": 41}}
    assert data["from"] == base and data["to"] == store.environment_repo(1).head()


def test_levels_and_resource_limit_the_diff(fifty):
    store, base = fifty
    put(store, "", {"k": 2, "nested": {"b": 2}})
    put(store, "nodes/5", {"x": 1}, resource="globals")
    one = store.versions.diff(1, base, levels=["nodes=5"]).data["scopes"]
    assert set(one) == {"/nodes/5/"} and set(one["/nodes/5/"]) == {"astute", "globals"}
    assert one["/nodes/5/"]["astute"] == {
        "added": {"nested.b": 2},
        "removed": {"nested.a": 1},
        "changed": {"k": {"old": 1, "new": 2}},
    }
    only = store.versions.diff(1, base, resource="globals").data["scopes"]
    assert only == {"/nodes/5/": {"globals": {"added": {"x": 1}, "removed": {}, "changed": {}}}}


def test_a_node_added_or_removed_is_a_scope(fifty):
    store, base = fifty
    put(store, "nodes/51", {"n": 51})
    scopes = store.versions.diff(1, base).data["scopes"]
    assert scopes == {"/nodes/51/": {"astute": {"added": {"n": 51}, "removed": {}, "changed": {}}}}
    back = store.versions.diff(1, "HEAD", "HEAD~1").data["scopes"]
    assert back["/nodes/51/"]["astute"]["removed"] == {"n": 51}


def test_role_level_edits_reach_the_nodes_under_that_role(store):
    store.components.create({"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    store.environments.create(
        {"id": 1, "components": ["fuel"], "hierarchy_levels": ["role", "nodes"]}
    )
    roles = {str(n): ("compute" if n % 2 else "controller") for n in range(1, 21)}
    documents = {((("role", role),), "astute", "values"): {"cpu": 1} for role in roles.values()}
    for node, role in roles.items():  # a diff scope names nodes the environment knows
        documents[((("role", role), ("nodes", node)), "astute", "values")] = {"n": int(node)}
    base = store.config.write_many(1, documents, "twenty nodes under two roles").commit
    put(store, "role/compute", {"cpu": 2})
    chains = [f"role={role},nodes={node}" for node, role in roles.items()]
    scopes = store.versions.diff(1, base, levels=chains).data["scopes"]
    assert set(scopes) == {f"/role/compute/nodes/{n}/" for n, r in roles.items() if r == "compute"}
    # by default each level value is a scope of its own (with global)
    assert set(store.versions.diff(1, base).data["scopes"]) == {"/role/compute/"}


def test_unknown_revisions_are_named(fifty):
    store, _ = fifty
    with pytest.raises(NotFound, match="from version 'nope'"):
        store.versions.diff(1, "nope")
    with pytest.raises(NotFound, match="to version 'deadbeef'"):
        store.versions.diff(1, "1", "deadbeef")


def test_diff_over_rest(fifty, client):
    store, base = fifty
    put(store, "", {"k": 3, "nested": {"a": 1}})
    response = client.get(f"{ENV}/diff?from={base}&levels=nodes=1&levels=nodes/7")
    assert response.status_code == 200
    assert response.get_json()["scopes"] == {
        "/nodes/1/": {
            "astute": {"added": {}, "removed": {}, "changed": {"k": {"old": 1, "new": 3}}}
        }
    }
    assert response.headers["X-Gitstore-Version"] == "3"
    assert_error(client.get(f"{ENV}/diff?from=v9"), 404, "from", "v9")
    assert_error(client.get(f"{ENV}/diff?from=1&to=zzz"), 404, "to", "zzz")
    assert_error(client.get(f"{ENV}/diff"), 400, "from")
