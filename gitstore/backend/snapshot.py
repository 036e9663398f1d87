"""A read-only view of one commit's tree: every read of a request goes through one Snapshot.

A revision is resolved to a commit once; every later read names paths inside that commit, so one
answer never mixes two versions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pygit2

from gitstore import yamlio
from gitstore.backend.cache import PARSED_BLOBS, parsed
from gitstore.backend.changes import Graft
from gitstore.backend.damage import damaged
from gitstore.errors import InvalidInput


@dataclass(frozen=True)
class Entry:
    """One child of a folder."""

    name: str
    is_tree: bool


@dataclass(frozen=True)
class CommitInfo:
    commit: str
    author: str
    email: str
    date: str
    message: str
    parents: tuple[str, ...]


class Snapshot:
    """The tree of one commit of one repository.

    A `tracked` snapshot records every path it looked up and the object found there, and
    whether the commit itself was asked for (`commit_id`, `version`, `info`): a write computed
    on it still holds on a later head where `unchanged_at` that head (see `Repository.update`).
    """

    def __init__(
        self,
        repo: pygit2.Repository,
        commit: pygit2.Commit,
        name: str,
        version: int,
        *,
        tracked: bool = False,
    ):
        self._repo = repo
        self._commit = commit
        self._tree = commit.tree
        self.repository = name
        self._commit_id = str(commit.id)
        self._version = version
        self._reads: dict[str, pygit2.Oid | None] | None = {} if tracked else None
        self._pinned = False

    @property
    def commit_id(self) -> str:
        self._pinned = True
        return self._commit_id

    @property
    def version(self) -> int:
        self._pinned = True
        return self._version

    def unchanged_at(self, tree: pygit2.Tree) -> bool:
        """Whether every read of this tracked snapshot finds the same object in `tree`."""
        if self._reads is None or self._pinned:
            return False
        return all(_id_of(_lookup(tree, path)) == oid for path, oid in self._reads.items())

    # -- objects ---------------------------------------------------------------------------
    def _object(self, path: str):
        path = path.strip("/")
        try:
            obj = _lookup(self._tree, path)
        except pygit2.GitError as exc:
            raise self._damaged(f"the tree holding {path!r} is unreadable ({exc})") from exc
        if self._reads is not None:
            self._reads[path] = _id_of(obj)
        return obj

    def exists(self, path: str) -> bool:
        return self._object(path) is not None

    def is_tree(self, path: str) -> bool:
        return isinstance(self._object(path), pygit2.Tree)

    def object_id(self, path: str) -> str | None:
        obj = self._object(path)
        return str(obj.id) if obj is not None else None

    def graft(self, path: str) -> Graft | None:
        obj = self._object(path)
        if obj is None:
            return None
        return Graft(str(obj.id), isinstance(obj, pygit2.Tree))

    # -- files -----------------------------------------------------------------------------
    def read(self, path: str) -> bytes | None:
        obj = self._object(path)
        if not isinstance(obj, pygit2.Blob):
            return None
        return self._data(obj, path)

    def _data(self, blob: pygit2.Blob, path: str) -> bytes:
        try:
            return blob.data
        except pygit2.GitError as exc:
            damage = f"{path} (object {blob.id}) is unreadable ({exc})"
            raise self._damaged(damage, str(blob.id)) from exc

    def _damaged(self, damage: str, object_id: str | None = None):
        folder = os.path.basename(os.path.dirname(self._repo.path.rstrip("/")))
        name = f"{self.repository} ({folder}/{os.path.basename(self._repo.path.rstrip('/'))})"
        return damaged(self._repo.path, name, damage, object_id)

    def size(self, path: str) -> int | None:
        """The size of the file at `path` in bytes (None if it is no file), without reading it."""
        obj = self._object(path)
        if not isinstance(obj, pygit2.Blob):
            return None
        try:
            return self._repo.odb.read_header(obj.id)[1]
        except (KeyError, pygit2.GitError) as exc:
            damage = f"{path} (object {obj.id}) is unreadable ({exc})"
            raise self._damaged(damage, str(obj.id)) from exc

    def read_yaml(self, path: str) -> Any:
        """The parsed document at `path` (None if absent). Shared cache: never mutate it."""
        return self._parsed(self._object(path), path)

    def _parsed(self, obj: Any, path: str) -> Any:
        if not isinstance(obj, pygit2.Blob):
            return None
        label = f"{self.repository}:{path}"
        return parsed(
            str(obj.id), lambda: self._data(obj, path), lambda data: yamlio.load(data, path=label)
        )

    def read_mapping(self, path: str) -> dict | None:
        """A document that must be a mapping; None if the file is absent."""
        obj = self._object(path)  # once: an absent layer is the usual case, not a second look
        doc = self._parsed(obj, path)
        if doc is None:
            return None if obj is None else {}
        if not isinstance(doc, dict):
            raise InvalidInput(f"{path}: document is not a mapping", path=path)
        return doc

    # -- folders ---------------------------------------------------------------------------
    def list(self, path: str = "") -> list[Entry]:
        obj = self._object(path)
        if not isinstance(obj, pygit2.Tree):
            return []
        return [Entry(entry.name, entry.type_str == "tree") for entry in obj]

    def walk(self, path: str = "") -> Iterator[str]:
        """Every file path below `path` (repository-relative), depth first, sorted."""
        prefix = path.strip("/")
        for entry in sorted(self.list(prefix), key=lambda e: e.name):
            child = f"{prefix}/{entry.name}" if prefix else entry.name
            if entry.is_tree:
                yield from self.walk(child)
            else:
                yield child

    # -- the commit ------------------------------------------------------------------------
    def info(self) -> CommitInfo:
        self._pinned = True
        return commit_info(self._commit)


def _lookup(tree: pygit2.Tree, path: str):
    """The object at `path`, or None.

    pygit2 1.21 keeps a reference to every path string given to `Tree.__getitem__` (and to
    `__contains__`, `TreeBuilder.get` and `.remove`), so each lookup with a fresh string leaked
    it: ~1 KB per uncached lookup, 100 MB over 100,000 (measured with `sys.getrefcount`). An
    interned path is one object per distinct path, so the leak is bounded by the paths that
    exist.
    """
    if not path:
        return tree
    try:
        return tree[sys.intern(path)]
    except (KeyError, ValueError):
        return None


def _id_of(obj) -> pygit2.Oid | None:
    return obj.id if obj is not None else None


def parsed_blob(data: bytes, label: str) -> Any:
    """The parsed YAML of file content `data`, from the blob-id cache every Snapshot shares.

    Never mutate the result. A parse error is InvalidInput naming `label`.
    """
    return parsed(str(pygit2.hash(data)), lambda: data, lambda raw: yamlio.load(raw, path=label))


def remember_parsed(data: bytes, document: Any) -> None:
    """Record `document` as the parse of file content `data` (the writer that just encoded it
    knows it), so the next read or write of that blob does not parse it again: a 27 KB
    astute.yaml took ~20 ms to parse, most of a one-key write into it. Never mutate it.
    """
    PARSED_BLOBS.put(str(pygit2.hash(data)), document, len(data))


def commit_info(commit: pygit2.Commit) -> CommitInfo:
    author = commit.author
    when = datetime.fromtimestamp(author.time, UTC).isoformat().replace("+00:00", "Z")
    return CommitInfo(
        commit=str(commit.id),
        author=author.name,
        email=author.email,
        date=when,
        message=commit.message.strip(),
        parents=tuple(str(p) for p in commit.parent_ids),
    )
