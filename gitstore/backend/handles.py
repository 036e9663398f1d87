"""The pygit2 handles on one repository: one per operating-system thread, opened again once
the repository's packs were rewritten.

libgit2 never forgets a pack it has found: a handle keeps every pack it ever loaded mapped, and
searches each one on every object lookup, also after a repack deleted it. Writes land as packs
(`newobjects.py`) and maintenance rolls them up (`gitstore.ops.maintenance`), so a handle kept
for the life of a worker would search more dead packs with every round of writes (and hold
their disk space). Maintenance replaces the file `REPACKED` after each repack that may have
deleted packs; a handle opened before that is replaced by a fresh one. Looking costs a `stat`
at most once every `CHECK_SECONDS` per thread.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pygit2

from gitstore.files import os_thread_local

#: Replaced (a new inode) by whatever deleted packs: handles opened before are reopened.
REPACKED = "gitstore-repacked"
CHECK_SECONDS = 1.0


class Handles:
    """This thread's handle on the repository at `path` (handles are not shared between
    threads; in a gevent worker, green threads of one OS thread share one: `os_thread_local`)."""

    def __init__(self, path: Path) -> None:
        self._path = Path(path)
        self._local = os_thread_local()

    def get(self) -> pygit2.Repository:
        """This thread's handle; pygit2.GitError when the repository cannot be opened."""
        local = self._local
        handle: pygit2.Repository | None = getattr(local, "repo", None)
        now = time.monotonic()
        if handle is not None and now < local.check_at:
            return handle
        stamp = _stamp(self._path / REPACKED)
        if handle is None or stamp != local.stamp:
            handle = pygit2.Repository(str(self._path))
            local.repo, local.stamp = handle, stamp
        local.check_at = now + CHECK_SECONDS
        return handle


def mark_repacked(repo: Path) -> None:
    """Tell every process's handles on `repo` that packs were deleted (they open again)."""
    temporary = Path(repo) / f"{REPACKED}.tmp"
    temporary.write_bytes(b"")
    os.replace(temporary, Path(repo) / REPACKED)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return info.st_ino, info.st_mtime_ns
