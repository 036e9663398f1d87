"""A worker's warm-up (`gitstore.gitops.warmup`): each environment's main checked as a preview
checks it, at start and again when it moves, so the first preview parses only what it changes,
and reports exactly what a preview of a store that never warmed up reports, whatever changed
after the warm-up."""

from __future__ import annotations

import logging
import time

import yaml

from gitstore import Store, yamlio
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot

SHOWN = ("valid", "errors", "files", "scopes", "nodes")  # the commit ids differ between runs


def _parses(monkeypatch) -> list[str]:
    """The files parsed from now on by the gate, and the layer files read for a diff."""
    parsed: list[str] = []
    strict = yamlio.load_strict
    monkeypatch.setattr(
        yamlio, "load_strict", lambda d, *, path: parsed.append(path) or strict(d, path=path)
    )
    read_mapping = Snapshot.read_mapping

    def read_layer(self, path):
        if path.startswith("nodes/"):  # inventory records are read by every preview
            parsed.append(path)
        return read_mapping(self, path)

    monkeypatch.setattr(Snapshot, "read_mapping", read_layer)
    return parsed


def _edit(store: Store, key: str, value) -> dict:
    report = store.previews.edit(1, [], "astute", "set", [[key, value]]).data
    return {name: report[name] for name in SHOWN}


def _fresh(store: Store, key: str, value) -> dict:
    """The same preview by a store that never checked anything (a cold worker's)."""
    return _edit(Store(store.root), key, value)


def test_the_first_preview_after_the_warm_up_parses_only_what_it_changes(gitops_store, monkeypatch):
    warmed = gitops_store.previews.warmer().round()
    assert [(w.env_id, w.skipped) for w in warmed] == [(1, None)]
    assert warmed[0].indexes == 3  # nodes 1 and 2's astute, node 3's globals
    parsed = _parses(monkeypatch)
    report = _edit(gitops_store, "port", 9)
    assert [p for p in parsed if p.startswith(("nodes/", "inventory/"))] == []
    assert report["valid"] and len(report["nodes"]) == 4
    assert report == _fresh(gitops_store, "port", 9)


def test_what_changes_after_the_warm_up_is_judged_again(gitops_store):
    gitops_store.previews.warmer().round()
    # a node's file changes: its new blob is checked and indexed, the others replayed
    gitops_store.config.put(1, [("nodes", "2")], "astute", "values", {"port": 7})
    assert _edit(gitops_store, "port", 9) == _fresh(gitops_store, "port", 9)
    assert {n["node"] for n in _edit(gitops_store, "port", 9)["nodes"]} == {"1", "3", "4"}
    # the catalog changes: node 3's globals are now held to a schema they break
    catalog = gitops_store.catalog()
    component = yaml.safe_load(catalog.snapshot().read("components/fuel.yaml"))
    for definition in component["resource_definitions"]:
        if definition["name"] == "globals":
            definition["schema"] = {"properties": {"x": {"type": "string"}}}
    changes = ChangeSet("globals.x becomes a string")
    changes.put("components/fuel.yaml", yaml.safe_dump(component).encode())
    catalog.update(lambda _: changes, Author("seed", "seed@example.com"))
    report = _edit(gitops_store, "port", 9)
    assert [e["file"] for e in report["errors"]] == ["nodes/3/values/globals.yaml"]
    assert report == _fresh(gitops_store, "port", 9)


def test_an_environment_over_the_file_bound_is_left_cold(gitops_store):
    warmed = gitops_store.previews.warmer(max_files=2).round()
    assert [(w.env_id, w.skipped) for w in warmed] == [(1, "6 files, over 2")]
    assert len(gitops_store.file_checks) == 0 and len(gitops_store.caches.key_indexes) == 0


def test_the_warm_up_stops_at_its_budget(gitops_store, caplog):
    with caplog.at_level(logging.INFO, logger="gitstore.gitops"):
        assert gitops_store.previews.warmer(budget=0).round() == []
    assert "warm-up stopped after 0 s at environment 1" in caplog.text
    assert _edit(gitops_store, "port", 9) == _fresh(gitops_store, "port", 9)


def test_a_round_checks_again_only_the_environments_whose_main_moved(gitops_store, monkeypatch):
    warmer = gitops_store.previews.warmer(settle=0)
    assert [w.env_id for w in warmer.round()] == [1]
    assert warmer.round() == []  # nothing moved: nothing read, nothing logged
    gitops_store.config.put(1, [("nodes", "3")], "astute", "values", {"mtu": 3})
    parsed = _parses(monkeypatch)
    assert [(w.env_id, w.indexes) for w in warmer.round()] == [(1, 1)]  # node 3's new file
    assert [p for p in parsed if p.startswith("nodes/")] == ["nodes/3/values/astute.yaml"]
    parsed.clear()
    report = _edit(gitops_store, "port", 9)
    assert [p for p in parsed if p.startswith("nodes/")] == []
    assert report == _fresh(gitops_store, "port", 9)


def test_a_main_that_keeps_moving_is_checked_again_once_it_settles(gitops_store):
    """A stream of writes is not followed write by write: each round would walk the files."""
    warmer = gitops_store.previews.warmer(settle=0.3)
    assert [w.env_id for w in warmer.round()] == [1]
    for mtu in (1, 2, 3):
        gitops_store.config.put(1, [("nodes", "3")], "astute", "values", {"mtu": mtu})
        assert warmer.round() == []  # main just moved: not yet
    assert warmer.round() == []
    time.sleep(0.35)
    assert [w.env_id for w in warmer.round()] == [1]  # still for 0.35 s: checked
    assert warmer.round() == []
