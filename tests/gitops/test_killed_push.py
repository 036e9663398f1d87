"""What a killed `git push` leaves must not block or litter later pushes.

Real pushes (the local transport: a real `git receive-pack` running the repository's real hooks)
are SIGKILLed at a point a test hook holds them at: while git holds `refs/heads/main.lock`
(the `reference-transaction` hook, state `prepared`), or while the pushed objects wait in
quarantine (the pre-receive hook). git never cleans either up; the next push's gate does, once
no live process can own them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from gitstore.backend import refs, remote
from gitstore.backend.hooks import install_hooks

from .helpers import commit_files, git

HOLD = """#!/bin/sh
# test only: hold the push here until killed
{condition} || exit 0
cat >/dev/null
touch {marker}
exec sleep 600
"""


def _hold_at(repo: Path, hook: str, marker: Path, condition: str = "true") -> None:
    script = repo / "hooks" / hook
    script.write_text(HOLD.format(condition=condition, marker=marker))
    script.chmod(0o755)


def _killed_push(work: Path, marker: Path) -> None:
    """Start `git push`, wait until a hook holds it, SIGKILL every process of it."""
    push = subprocess.Popen(
        ["git", "push", "-q", "origin", "main"],
        cwd=work,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert push.poll() is None, "the push ended before the hook held it"
        assert time.monotonic() < deadline, "the hook never held the push"
        time.sleep(0.05)
    os.killpg(push.pid, signal.SIGKILL)
    push.wait()


def _age(path: Path, seconds: float) -> None:
    """Make `path` look `seconds` old: what waiting that long would do, without the wait."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def _quarantines(repo: Path) -> list[Path]:
    return sorted((repo / "objects").glob(remote.QUARANTINE_PREFIX + "*"))


def _clone(repo: Path, tmp_path: Path) -> Path:
    work = tmp_path / "work"
    git("clone", "-q", str(repo), str(work))
    return work


def test_a_lock_left_by_a_killed_push_does_not_block_the_next_push(gitops_store, tmp_path):
    repo = gitops_store.environment_path(1)
    before = git("--git-dir", str(repo), "rev-parse", "main").stdout.strip()
    work = _clone(repo, tmp_path)
    commit_files(work, {"nodes/3/values/globals.yaml": "x: 2\n"}, "killed")
    marker = tmp_path / "holding-main-lock"
    _hold_at(repo, "reference-transaction", marker, condition='[ "$1" = prepared ]')
    _killed_push(work, marker)
    (repo / "hooks/reference-transaction").unlink()
    lock = repo / "refs/heads/main.lock"
    assert lock.exists()  # git's own lock, left by the dead receive-pack
    assert git("--git-dir", str(repo), "rev-parse", "main").stdout.strip() == before
    for left in [lock, repo / "HEAD.lock"]:  # git locks HEAD too: it names main
        if left.exists():
            _age(left, refs.STALE_LOCK_SECONDS + 5)

    new = commit_files(work, {"nodes/3/values/globals.yaml": "x: 3\n"}, "next")
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode == 0, done.stderr
    assert git("--git-dir", str(repo), "rev-parse", "main").stdout.strip() == new
    assert not lock.exists() and not (repo / "HEAD.lock").exists()


def test_a_quarantine_left_by_a_killed_push_is_cleaned_by_the_next(gitops_store, tmp_path):
    repo = gitops_store.environment_path(1)
    work = _clone(repo, tmp_path)
    commit_files(work, {"nodes/3/values/globals.yaml": "x: 4\n"}, "killed")
    marker = tmp_path / "holding-quarantine"
    _hold_at(repo, "pre-receive", marker)
    _killed_push(work, marker)
    install_hooks(repo)  # the gate again
    left = _quarantines(repo)
    assert left, "the killed push left no quarantine"
    for folder in left:
        for entry in [folder, *folder.iterdir()]:
            _age(entry, remote.STALE_QUARANTINE_SECONDS + 5)

    young = repo / "objects" / (remote.QUARANTINE_PREFIX + "young")
    young.mkdir()  # too young to be judged dead: kept
    new = commit_files(work, {"nodes/3/values/globals.yaml": "x: 5\n"}, "next")
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode == 0, done.stderr
    assert git("--git-dir", str(repo), "rev-parse", "main").stdout.strip() == new
    assert _quarantines(repo) == [young]
