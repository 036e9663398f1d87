"""A lock holder that stalls is waited for, never broken: no acknowledged write is lost.

A process holding `main.lock` is stopped with SIGSTOP for longer than a lock is ever judged
stale, while other processes write through the facade. Before the guard flock of `refs.py`,
one of them broke the live lock after 5 s and the stalled holder then renamed *their* lock
file over main: an answer lied and a commit was lost.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

from gitstore import Store
from gitstore.backend import refs
from gitstore.configdb.values import Query

from .helpers import git, git_commit
from .writers import swap_stalled, write_acknowledged

STALL_SECONDS = 10.0
WRITERS = 2
WRITES = 5


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def _wait_for(path: Path, child, what: str) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert child.is_alive(), f"the child exited ({child.exitcode}) before {what}"
        assert time.monotonic() < deadline, f"the child never reached {what}"
        time.sleep(0.02)


def test_a_stalled_lock_holder_is_waited_for_and_every_answer_is_true(fuel_store, tmp_path):
    assert STALL_SECONDS > refs.STALE_LOCK_SECONDS + 2
    repo = fuel_store.environment_path(1)
    head = git(repo, "rev-parse", "main")
    stalled_commit = git_commit(repo, {"global/values/globals.yaml": "stalled: 1\n"}, head, "s")
    context = multiprocessing.get_context("spawn")
    marker, answer = tmp_path / "holding", tmp_path / "answer"
    holder = context.Process(
        target=swap_stalled, args=(str(repo), head, stalled_commit, str(marker), str(answer))
    )
    holder.start()
    _wait_for(marker, holder, "main.lock")
    deadline = time.monotonic() + 10
    while _state(holder.pid) != "T":
        assert time.monotonic() < deadline, "the holder did not stop"
        time.sleep(0.01)

    journals = [tmp_path / f"journal-{i}" for i in range(WRITERS)]
    writers = [
        context.Process(
            target=write_acknowledged,
            args=(str(fuel_store.root), 1, f"w{i}-", WRITES, str(journals[i])),
        )
        for i in range(WRITERS)
    ]
    for writer in writers:
        writer.start()
    try:
        time.sleep(STALL_SECONDS)
        lock_kept = (repo / "refs/heads/main.lock").exists()
    finally:
        os.kill(holder.pid, signal.SIGCONT)  # always: a stopped child would hang the run
        for process in [holder, *writers]:
            process.join(timeout=120)
            if process.is_alive():
                process.kill()
    assert lock_kept, "the stalled holder's main.lock was broken"
    assert [p.exitcode for p in [holder, *writers]] == [0] * (1 + WRITERS)

    assert answer.read_text() == "moved"
    history = git(repo, "rev-list", "--first-parent", "main").split()
    assert stalled_commit in history
    acknowledged = [line for j in journals for line in j.read_text().splitlines()]
    assert not [line for line in acknowledged if line.startswith("error")]
    assert len(acknowledged) == WRITERS * WRITES
    values = Store(fuel_store.root).config.read(1, [], "astute", "values", Query(effective=True))
    assert set(acknowledged) <= set(values.data)
    assert not (repo / "refs/heads/main.lock").exists()
