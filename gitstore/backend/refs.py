"""Compare-and-swap of a branch ref, safe across threads and processes.

pygit2 has no conditional ref update (see shared/FACTS.md), so this module speaks git's own
lockfile protocol: create `<ref>.lock` exclusively, check the current value, write the new one
into the lock file and rename it over the ref. `git receive-pack` (a `git push`) and libgit2 take
the same lock file, so a push and an API write can never both move `main` from the same parent.

A writer killed while holding the lock leaves a stale `.lock`; it is broken after
`STALE_LOCK_SECONDS` (a live holder keeps it for about a millisecond). Breakers take a `flock` of
their own first, so two of them can never both judge one lock stale and the second unlink the
fresh lock the first has just taken.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from pathlib import Path

from gitstore.errors import Conflict
from gitstore.files import fsync_folder

STALE_LOCK_SECONDS = 5.0
LOCK_TIMEOUT_SECONDS = 30.0
_BREAKER = "gitstore-lockbreak.lock"

_log = logging.getLogger(__name__)


def read_ref(git_dir: Path, ref: str) -> str | None:
    """The commit id a ref points at (loose file first, then packed-refs), or None.

    Read with bare `os` calls: every request reads a ref or two, and `Path.read_text` costs
    three times as much (text decoding set-up).
    """
    try:
        fd = os.open(os.path.join(git_dir, ref), os.O_RDONLY)
    except FileNotFoundError:
        return _read_packed_ref(git_dir, ref)
    try:
        value = os.read(fd, 4096).decode().strip()
    finally:
        os.close(fd)
    if value.startswith("ref: "):
        return read_ref(git_dir, value[5:])
    return value or None


def _read_packed_ref(git_dir: Path, ref: str) -> str | None:
    try:
        lines = (git_dir / "packed-refs").read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in lines:
        if line.startswith(("#", "^")):
            continue
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return None


def compare_and_swap(
    git_dir: Path, ref: str, expected: str | None, new: str, *, durable: bool = True
) -> bool:
    """Point `ref` at `new` if it still points at `expected` (None: does not exist yet).

    The rename makes the move atomic for readers and safe against a killed process. `durable`
    also flushes the ref and its folder to disk before returning, so that the move survives a
    power loss; that is only worth its cost when the objects it names are flushed too (see
    `Repository`: git's `core.fsyncObjectFiles`).
    """
    ref_path = git_dir / ref
    lock_path = ref_path.with_name(ref_path.name + ".lock")
    fd = _acquire(git_dir, lock_path)
    renamed = False
    try:
        if read_ref(git_dir, ref) != expected:
            return False
        os.write(fd, (new + "\n").encode())
        if durable:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.rename(lock_path, ref_path)
        renamed = True
        if durable:
            fsync_folder(ref_path.parent)
        return True
    finally:
        if fd >= 0:
            os.close(fd)
        if not renamed:
            _unlink_quietly(lock_path)


def _acquire(git_dir: Path, lock_path: Path) -> int:
    if not lock_path.parent.is_dir():  # a first tag or branch: its folder may not exist yet
        lock_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + LOCK_TIMEOUT_SECONDS
    delay = 0.0005
    while True:
        try:
            return os.open(lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            _break_if_stale(git_dir, lock_path)
        if time.monotonic() > deadline:
            raise Conflict(f"{lock_path.name} stayed locked for {LOCK_TIMEOUT_SECONDS:.0f}s")
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def _break_if_stale(git_dir: Path, lock_path: Path) -> None:
    fd = os.open(git_dir / _BREAKER, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            age = time.time() - lock_path.stat().st_mtime
        except FileNotFoundError:
            return
        if age > STALE_LOCK_SECONDS:
            _log.warning("breaking stale lock %s (%.0fs old)", lock_path, age)
            _unlink_quietly(lock_path)
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
