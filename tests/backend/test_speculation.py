"""A writer computes its change before it takes the write lock (also while another holds it),
and commits that work only if nothing it read has changed by the time the lock is its own."""

from __future__ import annotations

import fcntl
import os
import threading
import time

import pytest

from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import MAIN, Author, Repository
from gitstore.backend.snapshot import Snapshot

from .helpers import git, git_commit, linear_history

ALICE = Author("Alice", "alice@example.com")


@pytest.fixture
def repo(tmp_path) -> Repository:
    first = ChangeSet("test: v1")
    first.put("a.yaml", b"v: 1\n")
    first.put("b.yaml", b"w: 1\n")
    return Repository.create(tmp_path / "r.git", "r", first, ALICE)


def _tracked(repo: Repository) -> Snapshot:
    head = repo.head()
    depth = repo.depth(head)
    return Snapshot(repo.git, repo.git[head], repo.name, depth, caches=repo.caches, tracked=True)


def _push(repo: Repository, files: dict[str, str]) -> str:
    """Move main as a `git push` would (without our lock)."""
    head = repo.head()
    new = git_commit(repo.path, files, head, "pushed")
    git(repo.path, "update-ref", MAIN, new, head)
    return new


def test_a_tracked_snapshot_holds_until_something_it_read_changes(repo):
    snapshot = _tracked(repo)
    snapshot.read_yaml("a.yaml")
    assert snapshot.exists("missing.yaml") is False
    _push(repo, {"b.yaml": "w: 2\n"})
    assert snapshot.unchanged_at(repo.git[repo.head()].tree)
    _push(repo, {"missing.yaml": "m: 1\n"})  # an absence it relied on is gone
    assert not snapshot.unchanged_at(repo.git[repo.head()].tree)


def test_asking_for_the_commit_itself_pins_a_snapshot(repo):
    snapshot = _tracked(repo)
    assert snapshot.commit_id == repo.head()
    assert not snapshot.unchanged_at(repo.git[repo.head()].tree)


class _HeldLock:
    """The repository's write lock held by someone else (another open file, as another
    process would hold it)."""

    def __init__(self, repo: Repository) -> None:
        self.fd = os.open(repo.path / "gitstore-write.lock", os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _increment(calls: list[int]):
    def operation(snapshot):
        calls.append(1)
        value = snapshot.read_yaml("a.yaml")["v"]
        changes = ChangeSet("test: increment a")
        changes.put("a.yaml", f"v: {value + 1}\n".encode())
        return changes

    return operation


def _update_while_locked(repo: Repository, calls: list[int], change: dict[str, str]):
    """Start an update while the lock is held; once it has speculated, commit `change` as
    the lock's holder, release the lock, and return the update's result."""
    held = _HeldLock(repo)
    results = []
    writer = threading.Thread(target=lambda: results.append(repo.update(_increment(calls), ALICE)))
    writer.start()
    deadline = time.monotonic() + 10
    while not calls and time.monotonic() < deadline:
        time.sleep(0.005)
    assert calls, "the waiting writer did not work while it waited"
    _push(repo, change)
    held.release()
    writer.join(10)
    return results[0]


def test_a_waiting_writer_commits_its_work_when_its_file_did_not_change(repo):
    calls: list[int] = []
    result = _update_while_locked(repo, calls, {"b.yaml": "w: 2\n"})
    assert calls == [1]  # computed once, while waiting
    snapshot = repo.snapshot()
    assert snapshot.read_yaml("a.yaml") == {"v": 2}
    assert snapshot.read_yaml("b.yaml") == {"w": 2}  # the other writer's change is kept
    assert result.commit == repo.head() and len(linear_history(repo.path)) == 3


def test_a_waiting_writer_computes_again_when_its_file_changed(repo):
    calls: list[int] = []
    _update_while_locked(repo, calls, {"a.yaml": "v: 10\n"})
    assert calls == [1, 1]  # the guess was made on v: 1; it ran again on v: 10
    assert repo.snapshot().read_yaml("a.yaml") == {"v": 11}
    assert len(linear_history(repo.path)) == 3


def test_an_uncontended_writer_computes_once_and_commits_that(repo):
    calls: list[int] = []
    result = repo.update(_increment(calls), ALICE)
    assert calls == [1]
    assert repo.snapshot().read_yaml("a.yaml") == {"v": 2}
    assert result.commit == repo.head() and len(linear_history(repo.path)) == 2


def test_a_refused_write_is_refused_at_once_without_the_lock(repo):
    """The operation raised on the head of the moment: that is the answer, even while
    another writer holds the lock (the write neither waits for it nor runs again)."""
    calls: list[int] = []

    def refuse(snapshot):
        calls.append(1)
        snapshot.read_yaml("a.yaml")
        raise ValueError("refused")

    held = _HeldLock(repo)
    try:
        with pytest.raises(ValueError, match="refused"):
            repo.update(refuse, ALICE)
    finally:
        held.release()
    assert calls == [1]
    assert len(linear_history(repo.path)) == 1


def _update_after_a_change(repo: Repository, calls: list[int], change: dict[str, str]):
    """Start an update while the lock is held, commit `change` as the lock's holder a moment
    later (whether or not the update computed meanwhile), release the lock; the result."""
    held = _HeldLock(repo)
    results = []
    writer = threading.Thread(target=lambda: results.append(repo.update(_increment(calls), ALICE)))
    writer.start()
    time.sleep(0.2)
    _push(repo, change)
    held.release()
    writer.join(10)
    return results[0]


def test_writers_stop_guessing_while_their_guesses_are_wasted_and_resume_later(repo):
    """Writers contending on one document: every guess runs again under the lock, so after a
    few wasted guesses a writer computes only once, under the lock. Once guesses hold again
    (a probe among the skipped ones finds out), writers guess again."""
    for number in range(6):
        calls: list[int] = []
        _update_while_locked(repo, calls, {"a.yaml": f"v: {10 * number}\n"})
        assert calls == [1, 1]  # guessed on the old a.yaml, computed again on the new one

    calls = []
    _update_after_a_change(repo, calls, {"a.yaml": "v: 100\n"})
    assert calls == [1]  # no guess: computed once, under the lock, on v: 100
    assert repo.snapshot().read_yaml("a.yaml") == {"v": 101}

    for _ in range(8):  # uncontended writes: the probe's guess holds
        repo.update(_increment([]), ALICE)
    calls = []
    _update_while_locked(repo, calls, {"b.yaml": "w: 3\n"})  # asserts it computed while waiting
    assert calls == [1]
    assert repo.snapshot().read_yaml("a.yaml") == {"v": 110}
