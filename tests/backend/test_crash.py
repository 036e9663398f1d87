"""A writer killed mid-commit leaves the store readable, consistent and writable.

The writer is a child process that pauses at a chosen point of a commit (see `writers.py`); the
test kills it there with SIGKILL, then checks what an operator would: the previous commit is
still served, `git fsck` finds nothing wrong, and the next write goes through (a stale ref lock
is broken; the kernel released the dead writer's flock).
"""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from gitstore import Store
from gitstore.backend import refs
from gitstore.configdb.values import Query

from .helpers import fsck, git, linear_history
from .writers import crash_while_writing

STALE_AFTER = 1.0  # seconds; shortened from refs.STALE_LOCK_SECONDS so the test stays quick


@pytest.fixture
def env_store(fuel_store) -> Store:
    fuel_store.config.update_keys(1, [], "astute", "values", "set", [["before", 1]])
    return fuel_store


def _values(store: Store) -> dict:
    return store.config.read(1, [], "astute", "values", Query(effective=True)).data


def _kill_at(store: Store, point: str, tmp_path: Path, served_meanwhile: dict) -> None:
    """Run the crash writer until it pauses at `point`, check reads go on, SIGKILL it."""
    marker = tmp_path / f"paused-{point}"
    context = multiprocessing.get_context("spawn")
    child = context.Process(
        target=crash_while_writing, daemon=True, args=(str(store.root), 1, point, str(marker))
    )
    child.start()
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.is_alive(), f"the writer exited ({child.exitcode}) before {point}"
            assert time.monotonic() < deadline, f"the writer never reached {point}"
            time.sleep(0.02)
        assert _values(store) == served_meanwhile  # reads go on while the writer is stuck
    finally:
        child.kill()
        child.join(timeout=30)
    assert child.exitcode == -9


#: What a writer killed at a point leaves in the pack folder: files no reader uses.
LEFTOVERS = {
    "pack-files": {"tmp_idx_", "tmp_pack_"},
    "pack": {"tmp_idx_", "a pack without its index"},
}


def _leftovers(repo: Path) -> set[str]:
    found = set()
    for path in (repo / "objects" / "pack").iterdir():
        if path.name.startswith("tmp_"):
            found.add(path.name[: path.name.index("_", 4) + 1])
        elif path.suffix == ".pack" and not path.with_suffix(".idx").exists():
            found.add("a pack without its index")
    return found


@pytest.mark.parametrize("point", ["operation", "pack-files", "pack", "objects", "ref-lock"])
def test_a_killed_writer_leaves_the_previous_commit_served(env_store, tmp_path, point, monkeypatch):
    monkeypatch.setattr(refs, "STALE_LOCK_SECONDS", STALE_AFTER)
    repo = env_store.environment_path(1)
    before = git(repo, "rev-parse", "main")
    _kill_at(env_store, point, tmp_path, served_meanwhile={"before": 1})

    assert git(repo, "rev-parse", "main") == before
    assert (repo / "refs/heads/main.lock").exists() == (point == "ref-lock")
    assert _leftovers(repo) == LEFTOVERS.get(point, set())  # what maintenance clears
    assert _values(env_store) == {"before": 1}
    assert Store(env_store.root).environments.get(1).data["id"] == 1
    fsck(repo)

    started = time.monotonic()
    env_store.config.update_keys(1, [], "astute", "values", "set", [["after", 2]])
    took = time.monotonic() - started
    # Nothing to wait for: the kernel dropped the flocks, and a main.lock the dead writer
    # recorded in the guard file is known to be dead at once.
    assert took < STALE_AFTER
    assert not (repo / "refs/heads/main.lock").exists()
    assert _values(env_store) == {"before": 1, "after": 2}
    assert linear_history(repo)[1] == before
    fsck(repo)


def test_a_writer_killed_after_moving_main_has_committed(env_store, tmp_path):
    repo = env_store.environment_path(1)
    before = git(repo, "rev-parse", "main")
    _kill_at(env_store, "ref-moved", tmp_path, served_meanwhile={"before": 1, "crashed": True})

    assert linear_history(repo)[1] == before  # its commit is on main, right after ours
    assert _values(env_store) == {"before": 1, "crashed": True}
    fsck(repo)
    env_store.config.update_keys(1, [], "astute", "values", "set", [["after", 2]])
    assert _values(env_store) == {"before": 1, "crashed": True, "after": 2}
