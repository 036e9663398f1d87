"""History: the change log of layer documents and the history of one effective value."""

from __future__ import annotations

import pytest

from gitstore.errors import InvalidInput, NotFound

from .helpers import ALICE, BOB, effective, put

#: 20 commits (scope, kind, resource, document); only some change net.mtu at /nodes/1/.
SCRIPT = [
    ("", "values", "astute", {"net": {"mtu": 1500}, "other": 1}),  # 1 introduces 1500
    ("", "values", "astute", {"net": {"mtu": 1500}, "other": 2}),  # 2 other key
    ("nodes/2", "values", "astute", {"net": {"mtu": 9000}}),  # 3 another node
    ("nodes/1", "values", "astute", {"hostname": "n1"}),  # 4 another key
    ("", "overrides", "astute", {"net": {"mtu": 1400}}),  # 5 1500 -> 1400
    ("nodes/1", "values", "astute", {"hostname": "n1", "net": {"mtu": 9000}}),  # 6 -> 9000
    ("", "values", "astute", {"net": {"mtu": 1600}, "other": 2}),  # 7 shadowed
    ("", "overrides", "astute", {"net": {"mtu": 1450}}),  # 8 shadowed
    ("nodes/1", "overrides", "astute", {"net": {"mtu": 9001}}),  # 9 -> 9001
    ("nodes/2", "overrides", "astute", {"x": 1}),  # 10 another node
    ("nodes/1", "values", "astute", {"hostname": "n1b", "net": {"mtu": 9000}}),  # 11 shadowed
    ("nodes/1", "overrides", "astute", {}),  # 12 -> 9000
    ("nodes/1", "values", "astute", {"hostname": "n1b"}),  # 13 -> 1450
    ("", "overrides", "astute", {}),  # 14 -> 1600
    ("nodes/1", "values", "globals", {"net": {"mtu": 1}}),  # 15 another resource
    ("", "values", "astute", {"net": {"mtu": 1600}, "other": 3}),  # 16 other key
    ("", "values", "astute", {"net": {}, "other": 3}),  # 17 removed
    ("nodes/3", "values", "astute", {"a": 1}),  # 18 another node
    ("", "values", "astute", {"net": {"mtu": "1500"}, "other": 3}),  # 19 back, as a string
    ("", "values", "astute", {"net": {"mtu": 1500}, "other": 3}),  # 20 string -> int
]
#: Script step -> (old, new) of net.mtu at /nodes/1/; None where absent.
EXPECTED = {
    20: ("1500", 1500),
    19: (None, "1500"),
    17: (1600, None),
    14: (1450, 1600),
    13: (9000, 1450),
    12: (9001, 9000),
    9: (9000, 9001),
    6: (1400, 9000),
    5: (1500, 1400),
    1: (None, 1500),
}


@pytest.fixture
def scripted(fuel_store):
    """Environment 1 after SCRIPT; step i is version i + 1 (version 1 created the env)."""
    commits = {}
    for step, (scope, kind, resource, doc) in enumerate(SCRIPT, start=1):
        author = BOB if scope.startswith("nodes") else ALICE
        result = put(fuel_store, scope, doc, kind=kind, resource=resource, author=author)
        assert result.version == step + 1
        commits[step] = result.commit
    return fuel_store, commits


def _pairs(entry):
    return entry.get("old"), entry.get("new")


def test_key_history_lists_only_commits_that_changed_the_effective_value(scripted):
    store, commits = scripted
    entries = store.versions.history(1, path="nodes/1", resource="astute", key="net.mtu").data[
        "entries"
    ]
    assert [e["commit"] for e in entries] == [commits[step] for step in EXPECTED]
    assert [e["version"] for e in entries] == [step + 1 for step in EXPECTED]
    assert [_pairs(e) for e in entries] == list(EXPECTED.values())
    introduced, removed = entries[-1], entries[2]
    assert "old" not in introduced and introduced["new"] == 1500
    assert "new" not in removed and removed["old"] == 1600
    assert entries[0]["author"] == "alice" and entries[3]["message"].startswith("config: set")


def test_key_history_agrees_with_effective_reads_at_every_version(scripted):
    store, commits = scripted
    entries = store.versions.history(1, path="/nodes/1/", resource="astute", key="net.mtu").data[
        "entries"
    ]
    by_version = {e["version"]: e for e in entries}
    for version in range(2, len(SCRIPT) + 2):
        before = effective(store, "nodes/1", version=version - 1).get("net", {}).get("mtu")
        after = effective(store, "nodes/1", version=version).get("net", {}).get("mtu")
        changed = before != after or type(before) is not type(after)
        assert (version in by_version) == changed, version


def test_key_history_limit_since_and_version(scripted):
    store, commits = scripted
    history = store.versions.history
    limited = history(1, path="nodes/1", resource="astute", key="net.mtu", limit=3).data
    assert [e["commit"] for e in limited["entries"]] == [commits[20], commits[19], commits[17]]
    since = history(1, path="nodes/1", resource="astute", key="net.mtu", since=commits[9]).data[
        "entries"
    ]
    assert [e["commit"] for e in since] == [commits[s] for s in (20, 19, 17, 14, 13, 12)]
    as_of = history(1, path="nodes/1", resource="astute", key="net.mtu", version="7").data
    assert [e["commit"] for e in as_of["entries"]] == [commits[6], commits[5], commits[1]]


def test_key_history_at_global_scope(scripted):
    store, commits = scripted
    entries = store.versions.history(1, path="/", resource="astute", key="net.mtu").data["entries"]
    assert [e["commit"] for e in entries] == [commits[s] for s in (20, 19, 17, 14, 8, 5, 1)]
    assert [_pairs(e) for e in entries] == [
        ("1500", 1500),
        (None, "1500"),
        (1600, None),
        (1450, 1600),
        (1400, 1450),
        (1500, 1400),
        (None, 1500),
    ]


def test_change_log_lists_every_commit_with_its_key_changes(scripted):
    store, commits = scripted
    entries = store.versions.history(1).data["entries"]
    assert len(entries) == len(SCRIPT) + 1
    assert [e["version"] for e in entries] == list(range(len(SCRIPT) + 1, 0, -1))
    assert entries[-1]["changes"] == []  # environment.yaml only
    assert entries[0]["changes"] == [
        {
            "level": "/",
            "resource": "astute",
            "kind": "values",
            "file": "global/values/astute.yaml",
            "keys_added": [],
            "keys_removed": [],
            "keys_changed": ["net.mtu"],
        }
    ]
    node = entries[len(SCRIPT) - 6]  # step 6
    assert node["commit"] == commits[6] and node["author"] == "bob"
    assert node["changes"][0]["level"] == "/nodes/1/"
    assert node["changes"][0]["keys_added"] == ["net"]


def test_change_log_filters(scripted):
    store, commits = scripted
    history = store.versions.history

    def steps(**filters):
        entries = history(1, **filters).data["entries"]
        return [list(commits.values()).index(e["commit"]) + 1 for e in entries]

    assert steps(resource="globals") == [15]
    scope_steps = steps(path="nodes/2", resource="astute")
    assert 3 in scope_steps and 10 in scope_steps and 1 in scope_steps  # global feeds nodes/2
    assert not {4, 6, 9, 18} & set(scope_steps)  # other nodes do not
    assert steps(key="hostname") == [11, 4]
    assert steps(key="net", resource="astute") == [20, 19, 17, 14, 13, 12, 9, 8, 7, 6, 5, 3, 1]
    # with a level path, `key` follows the effective value (global overrides shadow step 7)
    assert steps(key="net", resource="astute", path="nodes/3") == [20, 19, 17, 14, 8, 5, 1]
    assert len(history(1, limit=2).data["entries"]) == 2
    assert steps(since=commits[18]) == [20, 19]


def test_history_rejects_bad_queries(scripted):
    store, _ = scripted
    with pytest.raises(NotFound, match="since"):
        store.versions.history(1, since="no-such-rev")
    with pytest.raises(InvalidInput, match="resource"):
        store.versions.history(1, path="nodes/1", key="net.mtu")
    with pytest.raises(InvalidInput, match="limit"):
        store.versions.history(1, limit="0")
    with pytest.raises(InvalidInput, match="path"):
        store.versions.history(1, path="nodes")
    with pytest.raises(NotFound, match="level"):
        store.versions.history(1, path="racks/1")


def test_commits_are_the_history_entries_without_their_changes(scripted):
    store, _ = scripted
    history = store.versions.history(1, limit=5, version="10").data["entries"]
    listed = store.versions.commits(1, limit=5, version="10")
    assert listed.data["entries"] == [
        {key: value for key, value in entry.items() if key != "changes"} for entry in history
    ]
    assert [entry["version"] for entry in listed.data["entries"]] == [10, 9, 8, 7, 6]
    assert len(store.versions.commits(1, limit=500).data["entries"]) == len(SCRIPT) + 1
    with pytest.raises(InvalidInput, match="limit"):
        store.versions.commits(1, limit=0)
