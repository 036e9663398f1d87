"""Compare-and-swap of refs with git's lockfile protocol, checked against the real git binary."""

from __future__ import annotations

import fcntl
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from gitstore.backend import refs
from gitstore.errors import Conflict

from .helpers import git, git_commit

MAIN = "refs/heads/main"


@pytest.fixture
def bare(tmp_path) -> Path:
    repo = tmp_path / "repo.git"
    git(repo.parent, "init", "--bare", "--initial-branch=main", str(repo))
    return repo


@pytest.fixture
def two_commits(bare) -> tuple[str, str]:
    first = git_commit(bare, {"a.yaml": "a: 1\n"}, None, "first")
    second = git_commit(bare, {"b.yaml": "b: 2\n"}, first, "second")
    return first, second


def _lock(repo: Path) -> Path:
    return repo / (MAIN + ".lock")


def test_creates_a_ref_that_does_not_exist(bare, two_commits):
    first, _ = two_commits
    assert refs.read_ref(bare, MAIN) is None
    assert refs.compare_and_swap(bare, MAIN, None, first)
    assert git(bare, "rev-parse", "main") == first
    assert not _lock(bare).exists()


def test_moves_the_ref_when_it_points_where_expected(bare, two_commits):
    first, second = two_commits
    git(bare, "update-ref", MAIN, first)
    assert refs.compare_and_swap(bare, MAIN, first, second)
    assert git(bare, "rev-parse", "main") == second
    assert refs.read_ref(bare, MAIN) == second


def test_refuses_when_the_ref_moved_and_leaves_it_alone(bare, two_commits):
    first, second = two_commits
    git(bare, "update-ref", MAIN, second)
    assert not refs.compare_and_swap(bare, MAIN, first, first)
    assert git(bare, "rev-parse", "main") == second
    assert not _lock(bare).exists()


def test_refuses_to_create_a_ref_that_exists(bare, two_commits):
    first, second = two_commits
    git(bare, "update-ref", MAIN, first)
    assert not refs.compare_and_swap(bare, MAIN, None, second)
    assert git(bare, "rev-parse", "main") == first


def test_refuses_when_an_expected_ref_is_absent(bare, two_commits):
    first, second = two_commits
    assert not refs.compare_and_swap(bare, MAIN, first, second)
    assert refs.read_ref(bare, MAIN) is None


def test_reads_and_moves_a_packed_ref(bare, two_commits):
    first, second = two_commits
    git(bare, "update-ref", MAIN, first)
    git(bare, "pack-refs", "--all")
    assert not (bare / MAIN).exists()
    assert first in (bare / "packed-refs").read_text()
    assert refs.read_ref(bare, MAIN) == first
    assert refs.compare_and_swap(bare, MAIN, first, second)
    assert git(bare, "rev-parse", "main") == second


def test_follows_a_symbolic_ref(bare, two_commits):
    first, _ = two_commits
    git(bare, "update-ref", MAIN, first)
    assert refs.read_ref(bare, "HEAD") == first


def test_git_cannot_move_the_ref_while_we_hold_its_lock(bare, two_commits):
    first, second = two_commits
    git(bare, "update-ref", MAIN, first)
    _lock(bare).write_text("")
    with pytest.raises(AssertionError, match="lock"):
        git(bare, "update-ref", MAIN, second, first)
    assert git(bare, "rev-parse", "main") == first


def test_a_stale_lock_is_broken(bare, two_commits):
    first, second = two_commits
    git(bare, "update-ref", MAIN, first)
    lock = _lock(bare)
    lock.write_text("left by a writer that died\n")
    old = time.time() - refs.STALE_LOCK_SECONDS - 10
    os.utime(lock, (old, old))
    started = time.monotonic()
    assert refs.compare_and_swap(bare, MAIN, first, second)
    assert time.monotonic() - started < 1.0
    assert git(bare, "rev-parse", "main") == second
    assert not lock.exists()


def test_a_live_lock_is_waited_for(bare, two_commits):
    first, second = two_commits
    git(bare, "update-ref", MAIN, first)
    lock = _lock(bare)
    lock.write_text("")
    release = threading.Timer(0.3, lock.unlink)
    release.start()
    started = time.monotonic()
    try:
        assert refs.compare_and_swap(bare, MAIN, first, second)
    finally:
        release.join()
    assert time.monotonic() - started >= 0.3
    assert git(bare, "rev-parse", "main") == second


def test_a_lock_held_too_long_is_a_conflict_and_is_not_stolen(bare, two_commits, monkeypatch):
    first, second = two_commits
    git(bare, "update-ref", MAIN, first)
    monkeypatch.setattr(refs, "LOCK_TIMEOUT_SECONDS", 0.2)
    _lock(bare).write_text("")
    with pytest.raises(Conflict, match="main.lock"):
        refs.compare_and_swap(bare, MAIN, first, second)
    assert _lock(bare).exists()
    assert git(bare, "rev-parse", "main") == first


def test_only_one_of_many_racing_swaps_wins(bare, two_commits):
    first, second = two_commits
    git(bare, "update-ref", MAIN, first)
    candidates = [git_commit(bare, {f"f{i}.yaml": f"i: {i}\n"}, first, f"c{i}") for i in range(6)]
    results: list[bool] = []
    barrier = threading.Barrier(len(candidates))

    def swap(new: str) -> None:
        barrier.wait()
        results.append(refs.compare_and_swap(bare, MAIN, first, new))

    threads = [threading.Thread(target=swap, args=(c,)) for c in candidates]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 1
    assert git(bare, "rev-parse", "main") in candidates


def test_an_old_lock_is_kept_while_a_process_works_in_the_repository(
    bare, two_commits, monkeypatch
):
    """git's lock (no gitstore record) is live while e.g. a receive-pack runs in the repo."""
    first, second = two_commits
    git(bare, "update-ref", MAIN, first)
    monkeypatch.setattr(refs, "LOCK_TIMEOUT_SECONDS", 0.5)
    lock = _lock(bare)
    lock.write_text(second + "\n")
    old = time.time() - refs.STALE_LOCK_SECONDS - 10
    os.utime(lock, (old, old))
    worker = subprocess.Popen(["sleep", "30"], cwd=bare)
    try:
        with pytest.raises(Conflict, match="main.lock"):
            refs.compare_and_swap(bare, MAIN, first, second)
        assert lock.exists()
    finally:
        worker.kill()
        worker.wait()
    assert refs.compare_and_swap(bare, MAIN, first, second)  # now provably dead
    assert git(bare, "rev-parse", "main") == second


def test_a_young_unrecorded_lock_is_not_broken(bare, two_commits):
    first, _ = two_commits
    git(bare, "update-ref", MAIN, first)
    _lock(bare).write_text("")
    assert refs.recover_stale_locks(bare, [MAIN]) == []
    assert _lock(bare).exists()


def test_recovery_waits_for_no_live_gitstore_holder(bare, two_commits):
    """A holder of the guard is live: recovery never judges its lock, it gives up instead."""
    first, _ = two_commits
    git(bare, "update-ref", MAIN, first)
    lock = _lock(bare)
    lock.write_text("")
    old = time.time() - refs.STALE_LOCK_SECONDS - 10
    os.utime(lock, (old, old))
    fd = os.open(bare / refs.GUARD, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert refs.recover_stale_locks(bare, [MAIN], wait=0.2) == []
        assert lock.exists()
    finally:
        os.close(fd)
    assert refs.recover_stale_locks(bare, [MAIN]) == [str(lock)]
