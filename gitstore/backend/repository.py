"""One bare git repository: resolve versions, read snapshots, write commits by compare-and-swap.

A write runs the operation against the current head, builds the new commit in memory, and moves
`refs/heads/main` only if it still points at that head (compare-and-swap, `refs.py`). A lost race
re-runs the operation on the new head (operations are key- or file-level, so re-applying is well
defined).

Our own writers (threads and gunicorn workers alike) also hold the repository's `flock` write
lock for an attempt: without it, eight writers on one file would mostly compute work that loses
the race. The kernel drops the flock of a killed process, so a crash never blocks the store. The
compare-and-swap still guards against `git push`, which moves the ref without our lock.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pygit2

from gitstore.backend import refs
from gitstore.backend.cache import LRUCache
from gitstore.backend.changes import ChangeSet
from gitstore.backend.snapshot import CommitInfo, Snapshot, commit_info
from gitstore.backend.trees import build_tree
from gitstore.errors import Conflict, NotFound, UnknownRevision

MAIN = "refs/heads/main"
MAX_ATTEMPTS = 50
_WRITE_LOCK = "gitstore-write.lock"

#: First-parent depth (the integer version) by commit id: immutable, so shared by the process.
_DEPTHS = LRUCache(max_entries=200_000)


@dataclass(frozen=True)
class Author:
    name: str
    email: str


@dataclass(frozen=True)
class WriteResult:
    """What a write produced: the commit now served and whether the write changed anything."""

    commit: str
    version: int
    changed: bool


Operation = Callable[[Snapshot], ChangeSet]


class Repository:
    """A bare repository whose branch `main` is the served state."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = Path(path)
        self.name = name
        self._local = threading.local()

    # -- lifecycle -------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, name: str, first: ChangeSet, author: Author) -> Repository:
        """Initialise a bare repository at `path` holding one commit made of `first`."""
        pygit2.init_repository(str(path), bare=True, initial_head="main")
        repo = cls(path, name)
        repo._commit_on(None, first, author)
        return repo

    @property
    def git(self) -> pygit2.Repository:
        """This thread's pygit2 handle (handles are not shared between threads)."""
        handle = getattr(self._local, "repo", None)
        if handle is None:
            try:
                handle = pygit2.Repository(str(self.path))
            except pygit2.GitError as exc:
                raise NotFound(f"repository {self.name} is not readable: {exc}") from exc
            self._local.repo = handle
        return handle

    # -- reading ---------------------------------------------------------------------------
    def head(self) -> str | None:
        return refs.read_ref(self.path, MAIN)

    def snapshot(self, version: str | int | None = None) -> Snapshot:
        """The tree of `version` (None: the head of main)."""
        commit = self._resolve(version)
        return Snapshot(self.git, commit, self.name, self.depth(str(commit.id)))

    def _resolve(self, version: str | int | None) -> pygit2.Commit:
        if version is None or version == "":
            head = self.head()
            if head is None:
                raise NotFound(f"repository {self.name} has no commits")
            return self.git[head]
        text = str(version).strip()
        if text.isdigit():
            return self._commit_at_version(int(text), text)
        return self._revparse(text)

    def _revparse(self, text: str) -> pygit2.Commit:
        if text.startswith("-") or any(ch in text for ch in "\0\n\r"):
            raise UnknownRevision(text, self.name)
        try:
            obj = self.git.revparse_single(text)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
            raise UnknownRevision(text, self.name) from exc
        return commit

    def _commit_at_version(self, number: int, text: str) -> pygit2.Commit:
        head = self.head()
        if head is None or number < 1:
            raise UnknownRevision(text, self.name)
        steps = self.depth(head) - number
        if steps < 0:
            raise UnknownRevision(text, self.name)
        commit = self.git[head]
        for _ in range(steps):
            commit = self.git[commit.parent_ids[0]]
        return commit

    def depth(self, commit_id: str) -> int:
        """The commit's position on its own first-parent chain (1 = root)."""
        known = _DEPTHS.get((self.path, commit_id))
        if known is not None:
            return known
        pending: list[str] = []
        current: str | None = commit_id
        base = 0
        while current is not None:
            cached = _DEPTHS.get((self.path, current))
            if cached is not None:
                base = cached
                break
            pending.append(current)
            parents = self.git[current].parent_ids
            current = str(parents[0]) if parents else None
        for offset, cid in enumerate(reversed(pending), start=1):
            _DEPTHS.put((self.path, cid), base + offset)
        return base + len(pending)

    def commit_info(self, commit_id: str) -> CommitInfo:
        return commit_info(self.git[commit_id])

    def first_parent_log(self, start: str | None = None, limit: int | None = None):
        """CommitInfo of the first-parent chain from `start` (default head), newest first."""
        head = start or self.head()
        commit = self.git[head] if head else None
        count = 0
        while commit is not None and (limit is None or count < limit):
            yield commit_info(commit)
            count += 1
            commit = self.git[commit.parent_ids[0]] if commit.parent_ids else None

    # -- writing ---------------------------------------------------------------------------
    def update(self, operation: Operation, author: Author) -> WriteResult:
        """Apply `operation` to the head as one commit, re-applying it on a lost race."""
        for attempt in range(MAX_ATTEMPTS):
            with self._write_lock():
                result = self._attempt(operation, author)
            if result is not None:
                return result
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise Conflict(f"{self.name}: could not move main (pushes kept winning the race)")

    def _attempt(self, operation: Operation, author: Author) -> WriteResult | None:
        head = self.head()
        snapshot = self.snapshot(head) if head else None
        changes = operation(snapshot)
        return self._commit_on(head, changes, author)

    def _commit_on(self, head: str | None, changes: ChangeSet, author: Author):
        git = self.git
        base_tree = git[head].tree if head else None
        tree_id = build_tree(git, base_tree, changes.entries)
        if base_tree is not None and tree_id == base_tree.id:
            return WriteResult(head, self.depth(head), changed=False)
        signature = pygit2.Signature(author.name, author.email)
        committer = pygit2.Signature("gitstore", "gitstore@localhost")
        parents = [pygit2.Oid(hex=head)] if head else []
        message = (changes.message or "gitstore: update").rstrip() + "\n"
        commit_id = str(git.create_commit(None, signature, committer, message, tree_id, parents))
        if not refs.compare_and_swap(self.path, MAIN, head, commit_id):
            return None
        return WriteResult(commit_id, self.depth(commit_id), changed=True)

    @contextmanager
    def _write_lock(self):
        fd = os.open(self.path / _WRITE_LOCK, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
