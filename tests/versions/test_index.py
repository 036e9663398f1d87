"""History, explain and `version=N` read main's index (gitstore.backend.chainindex) and answer
exactly what the walk down the chain answers: without an index, with an index that lags main
(the commits since held in memory), with a current one, and from a commit off main."""

from __future__ import annotations

import random
import sqlite3

import pytest

from gitstore.backend import chainindex
from gitstore.backend import repository as repository_module
from gitstore.deadlines import UNBOUNDED
from gitstore.layout import EnvironmentView
from gitstore.versions.explain import _explain
from gitstore.versions.history import Walk, change_log, value_history

from .helpers import pairs_of, put

SCOPES = ["", "nodes/1", "nodes/2", "nodes/3"]
KEYS = ["net.mtu", "net.vlan", "hostname", "other"]


def _document(rng: random.Random) -> dict:
    doc: dict = {}
    if rng.random() < 0.7:
        doc["net"] = {
            k: rng.choice([1500, 9000, "1500", None])
            for k in ("mtu", "vlan")[: 1 + rng.randrange(2)]
        }
    if rng.random() < 0.5:
        doc["hostname"] = rng.choice(["a", "b"])
    if rng.random() < 0.3:
        doc["other"] = rng.randrange(3)
    return doc


def _script(store, steps: int, seed: int, on_step=None) -> None:
    rng = random.Random(seed)
    for step in range(steps):
        scope = rng.choice(SCOPES)
        kind = rng.choice(["values", "values", "overrides"])
        resource = "astute" if rng.random() < 0.85 else "globals"
        put(store, scope, _document(rng), kind=kind, resource=resource)
        if on_step is not None:
            on_step(step)


def _answers(store, extra_starts=()) -> list:
    repo = store.environment_repo(1)
    head = repo.head()
    starts = [head, repo.snapshot(40).commit_id, *extra_starts]
    found = []
    for start in starts:
        for scope in SCOPES:
            pairs = pairs_of(scope)
            for resource in ("astute", "globals"):
                for limit, stop in ((100, None), (3, None), (100, repo.snapshot(25).commit_id)):
                    walk = Walk(start, stop, limit)
                    found.append(change_log(repo, walk, pairs, resource, None))
                    found.append(change_log(repo, walk, pairs, None, None))
                    for key in KEYS:
                        found.append(change_log(repo, walk, pairs, resource, key))
                        found.append(value_history(repo, walk, pairs, resource, key))
                view = EnvironmentView(repo.snapshot(start))
                found.append(_explain(repo, view, pairs, resource, None, UNBOUNDED))
    for number in (1, 2, 17, 60, repo.depth(head)):
        snapshot = repo.snapshot(number)
        found.append((snapshot.commit_id, snapshot.version))
    return found


def _forget(repo) -> None:
    """Drop what this store remembers of main's chain, as a fresh worker would have it."""
    repo.caches.chain_views.clear()
    repo.caches.chains.clear()
    repo.caches.depths.clear()


@pytest.fixture
def history(fuel_store):
    lagging = []

    def index_at_60(step: int) -> None:
        if step == 60:
            fuel_store.environment_repo(1).update_index()
            lagging.append(fuel_store.environment_repo(1).head())

    _script(fuel_store, 90, seed=38, on_step=index_at_60)
    return fuel_store, lagging[0]


def test_answers_are_the_same_with_and_without_the_index(history):
    store, _indexed_head = history
    repo = store.environment_repo(1)
    preview = store.config.update_keys(
        1, [("nodes", "1")], "astute", "values", "set", [["net", {"mtu": 1}]], dry_run=True
    ).commit
    index_file = repo.path / chainindex.FILE
    lagging = index_file.read_bytes()  # indexed up to step 60 of 90
    index_file.unlink()
    _forget(repo)
    walked = _answers(store, [preview])
    assert repo._view(repo.head()) is None
    assert sum(1 for answer in walked if answer) > 500
    index_file.write_bytes(lagging)
    _forget(repo)
    assert _answers(store, [preview]) == walked  # the index, then 29 commits in memory
    view = repo._view(repo.head())
    assert view.base > 50 and len(view.tail) > 20
    assert view.base + len(view.tail) == repo.depth(repo.head())
    repo.update_index()
    _forget(repo)
    assert _answers(store, [preview]) == walked  # the index alone
    assert repo._view(repo.head()).tail == ()


def test_reads_open_the_index_read_only_and_leave_it_unchanged(history):
    store, _ = history
    repo = store.environment_repo(1)
    index_file = repo.path / chainindex.FILE
    before = index_file.stat().st_mtime_ns, index_file.stat().st_size
    _forget(repo)
    _answers(store)
    assert (index_file.stat().st_mtime_ns, index_file.stat().st_size) == before
    assert sorted(p.name for p in repo.path.glob("gitstore-history*")) == [chainindex.FILE]


def test_a_rewritten_main_drops_the_rows_above_the_shared_commit(history):
    store, _ = history
    repo = store.environment_repo(1)
    repo.update_index()
    old_head = repo.head()
    base = repo.snapshot(70).commit_id
    repository_module.refs.compare_and_swap(repo.path, repository_module.MAIN, old_head, base)
    _forget(repo)
    put(store, "nodes/1", {"hostname": "rewritten"})
    repo.update_index()
    _forget(repo)
    assert repo.snapshot(71).commit_id == repo.head()
    assert repo.snapshot(70).commit_id == base
    with pytest.raises(Exception, match="72"):
        repo.snapshot(72)
    entries = value_history(
        repo, Walk(repo.head(), None, 2), [("nodes", "1")], "astute", "hostname"
    )
    assert entries[0]["new"] == "rewritten" and entries[0]["version"] == 71


def test_an_index_too_far_behind_main_is_left_for_the_walk(history, monkeypatch):
    store, _ = history
    repo = store.environment_repo(1)
    _forget(repo)
    monkeypatch.setattr(chainindex, "MAX_TAIL", 5)
    assert repo._view(repo.head()) is None  # 30 commits above the index: walk instead
    assert repo.snapshot(80).version == 80


def _sql(index_file, statement: str) -> None:
    db = sqlite3.connect(index_file, isolation_level=None)
    db.execute(statement)
    db.close()


@pytest.mark.parametrize(
    "older",
    [
        "DROP TABLE trees",  # an index an older gitstore made
        "DELETE FROM trees WHERE commit_id IN (SELECT commit_id FROM chain WHERE version > 40)",
    ],  # the rows it added on top after a downgrade
    ids=["made-by-an-older-gitstore", "extended-by-one"],
)
def test_commits_indexed_without_their_trees_are_read_and_given_them_by_maintenance(history, older):
    store, _ = history
    repo = store.environment_repo(1)
    repo.update_index()
    _forget(repo)
    walked = _answers(store)
    _sql(repo.path / chainindex.FILE, older)
    _forget(repo)
    assert repo._view(repo.head()).entry_at(50) == (repo.snapshot(50).commit_id, None)
    assert _answers(store) == walked  # each version's commit read for its tree
    repo.update_index()
    _forget(repo)
    for number in (1, 50, repo.depth(repo.head())):
        commit = repo.git[repo._view(repo.head()).commit_at(number)]
        assert repo._view(repo.head()).entry_at(number) == (str(commit.id), str(commit.tree_id))
        snapshot = repo.snapshot(number)
        assert snapshot.info().commit == str(commit.id)  # the commit, read when asked for
        assert sorted(snapshot.walk()) == sorted(repo.snapshot_of(commit).walk())
    assert _answers(store) == walked
