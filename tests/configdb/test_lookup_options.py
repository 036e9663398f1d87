"""An environment's `lookup_options`: effective reads, diff and explain follow the strategies."""

from __future__ import annotations

import pytest

from gitstore import Store
from gitstore.configdb.values import Query
from gitstore.errors import InvalidInput


@pytest.fixture
def store(tmp_path):
    store = Store.init(tmp_path / "store")
    store.components.create({"name": "c", "resource_definitions": [{"name": "r"}]})
    store.environments.create({"id": 1, "components": ["c"], "hierarchy_levels": ["nodes"]})
    store.config.write_many(
        1,
        {
            ((), "r", "values"): {"pkgs": ["vim"], "h": {"a": 1}},
            ((("nodes", "1"),), "r", "values"): {"pkgs": ["git"], "h": {"b": 2}},
        },
        "data",
    )
    return store


def _effective(store):
    return store.config.read(1, [("nodes", "1")], "r", "values", Query(effective=True)).data


def test_without_lookup_options_the_environment_merge_is_unchanged(store):
    assert _effective(store) == {"pkgs": ["git"], "h": {"a": 1, "b": 2}}


def test_lookup_options_change_effective_values_diff_and_explain(store):
    before = store.environment_repo(1).head()
    store.environments.update(1, {"lookup_options": {"pkgs": {"merge": "unique"}}})
    assert _effective(store) == {"pkgs": ["git", "vim"], "h": {"a": 1, "b": 2}}
    assert store.environments.get(1).data["lookup_options"] == {"pkgs": {"merge": "unique"}}
    changes = store.versions.diff(1, before, levels=["nodes=1"]).data
    assert "git" in repr(changes) and "vim" in repr(changes)
    explained = store.versions.explain(1, [("nodes", "1")], "r", "pkgs").data
    assert ["git", "vim"] in list(_values(explained))


def _values(tree):
    if isinstance(tree, dict):
        for value in tree.values():
            yield value
            yield from _values(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from _values(value)


def test_bad_lookup_options_are_refused_at_write(store):
    with pytest.raises(InvalidInput, match="lookup_options"):
        store.environments.update(1, {"lookup_options": {"pkgs": {"merge": "sideways"}}})
