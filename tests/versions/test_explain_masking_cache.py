"""Masked explain answers are kept by commit and catalog head: a rule that changes in the
catalog (a definition's secret_keys) masks the next answer at the same environment commit."""

from __future__ import annotations

from gitstore.backend.repository import Author

ALICE = Author("alice", "alice@example.com")


def _value(store, key: str):
    keys = store.versions.explain(1, [("nodes", "1")], "astute", None, None).data["keys"]
    return {item["path"]: item["value"] for item in keys}[key]


def test_a_catalog_secret_rule_masks_the_next_explain(fuel_store):
    fuel_store.config.put(1, [("nodes", "1")], "astute", "values", {"db": {"pass": "p4ss"}}, ALICE)
    assert _value(fuel_store, "db.pass") == "p4ss"  # read once: the answer is kept
    fuel_store.definitions.update("astute", {"secret_keys": ["db.pass"]})
    assert _value(fuel_store, "db.pass") != "p4ss"


def test_an_environment_secret_rule_masks_the_next_explain(fuel_store):
    fuel_store.config.put(1, [("nodes", "1")], "astute", "values", {"db": {"pass": "p4ss"}}, ALICE)
    assert _value(fuel_store, "db.pass") == "p4ss"
    fuel_store.environments.update(1, {"secret_keys": ["db.pass"]})
    assert _value(fuel_store, "db.pass") != "p4ss"
