"""A read-only view of one commit's tree: every read of a request goes through one Snapshot.

A revision is resolved to a commit once; every later read names paths inside that commit, so one
answer never mixes two versions.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, cast

import pygit2

from gitstore import yamlio
from gitstore.backend.cache import Caches, parsed
from gitstore.backend.changes import Graft
from gitstore.backend.damage import damaged
from gitstore.errors import Damaged, InvalidInput


@dataclass(frozen=True)
class Entry:
    """One child of a folder; `filemode` is git's (0o100644, 0o040000, ...)."""

    name: str
    is_tree: bool
    filemode: int = pygit2.enums.FileMode.BLOB
    #: The object id (a blob's names its content for good: what caches of files key on).
    object_id: str | None = None


#: What a path below a tree names: a folder or a file's blob.
GitObject = pygit2.Tree | pygit2.Blob

#: Modes of a regular file in git; a symlink's blob holds its target's name, a gitlink names a
#: commit of another repository: neither is data, and neither is ever read as data.
REGULAR_MODES = (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE)
_IRREGULAR: dict[int, str] = {
    pygit2.enums.FileMode.LINK: "a symbolic link (mode 120000)",
    pygit2.enums.FileMode.COMMIT: "a gitlink (submodule entry, mode 160000)",
}


def not_a_file(filemode: int) -> str | None:
    """Why an entry of `filemode` is not a file gitstore reads (None: a regular file or a
    folder): the message the gate and every read give for it."""
    if filemode in REGULAR_MODES or filemode == pygit2.enums.FileMode.TREE:
        return None
    what = _IRREGULAR.get(filemode, f"an entry of mode {filemode:o}")
    return f"{what}, not a regular file: gitstore stores only regular files (docs/store-format.md)"


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
        commit: pygit2.Commit | str,
        name: str,
        version: int | None,
        *,
        caches: Caches,
        tracked: bool = False,
        tree: pygit2.Tree | None = None,
    ):
        """`commit`, or its id and its `tree` (read as main's index names it: the commit is
        read only if `info` asks for it)."""
        self._repo = repo
        #: The store's read caches (its repository's): what reads of this commit keep.
        self.caches = caches
        self._commit = commit if isinstance(commit, pygit2.Commit) else None
        self._commit_id = commit if isinstance(commit, str) else str(commit.id)
        self._tree = tree if tree is not None else cast(pygit2.Commit, commit).tree
        self.repository = name
        self._version = version
        self._reads: dict[str, pygit2.Oid | None] | None = {} if tracked else None
        self._pinned = False

    @property
    def commit_id(self) -> str:
        self._pinned = True
        return self._commit_id

    @property
    def version(self) -> int | None:
        """The commit's number on main (`version=N`); None off main's first-parent chain."""
        self._pinned = True
        return self._version

    def unchanged_at(self, tree: pygit2.Tree) -> bool:
        """Whether every read of this tracked snapshot finds the same object in `tree`."""
        if self._reads is None or self._pinned:
            return False
        return all(_id_of(_lookup(tree, path)) == oid for path, oid in self._reads.items())

    # -- objects ---------------------------------------------------------------------------
    def _object(self, path: str) -> GitObject | None:
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
        obj = self._file(self._object(path), path)
        if obj is None:
            return None
        return self._data(obj, path)

    def _file(self, obj: GitObject | None, path: str) -> pygit2.Blob | None:
        """`obj` if it is a regular file (None: absent or a folder). A symlink or gitlink stored
        before the gate refused them is InvalidInput naming it, never its target as data."""
        if obj is None or isinstance(obj, pygit2.Tree):
            return None
        why = not_a_file(obj.filemode)
        if why:
            raise InvalidInput(f"{path} is {why}", path=path)
        return obj

    def _data(self, blob: pygit2.Blob, path: str) -> bytes:
        try:
            return blob.data
        except pygit2.GitError as exc:
            damage = f"{path} (object {blob.id}) is unreadable ({exc})"
            raise self._damaged(damage, str(blob.id)) from exc

    def _damaged(self, damage: str, object_id: str | None = None) -> Damaged:
        folder = os.path.basename(os.path.dirname(self._repo.path.rstrip("/")))
        name = f"{self.repository} ({folder}/{os.path.basename(self._repo.path.rstrip('/'))})"
        return damaged(self._repo.path, name, damage, object_id)

    def size(self, path: str) -> int | None:
        """The size of the file at `path` in bytes (None if it is no regular file), without
        reading it."""
        obj = self._object(path)
        if not isinstance(obj, pygit2.Blob) or not_a_file(obj.filemode):
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
        obj = self._file(obj, path)
        if obj is None:
            return None
        label = f"{self.repository}:{path}"
        return parsed(
            self.caches.parsed_blobs,
            str(obj.id),
            lambda: self._data(obj, path),
            lambda data: yamlio.load(data, path=label),
        )

    def read_mapping(self, path: str) -> dict[str, Any] | None:
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
        return [
            Entry(entry.name, entry.type_str == "tree", entry.filemode, str(entry.id))
            for entry in _entries(obj)
        ]

    def file_ids(self, path: str) -> dict[str, str]:
        """Name -> blob id of each regular file directly in folder `path`, from one read of the
        folder: what a caller keyed by blob ids needs without a lookup per file."""
        obj = self._object(path)
        if not isinstance(obj, pygit2.Tree):
            return {}
        return {e.name: str(e.id) for e in _entries(obj) if e.filemode in REGULAR_MODES}

    def file_changes(self, path: str, since: str) -> dict[str, str | None] | None:
        """Name -> blob id (None: gone) of each regular file directly in folder `path` that is
        not as in `since`, an earlier tree of that folder: one diff of the two trees in
        libgit2, so a folder of thousands of files costs what its changes do. None when the
        folder is gone or `since` is unreadable (read the folder instead)."""
        new = self._object(path)
        try:
            old = self._repo[since]
        except (KeyError, ValueError, pygit2.GitError):
            return None
        if not isinstance(new, pygit2.Tree) or not isinstance(old, pygit2.Tree):
            return None
        changes: dict[str, str | None] = {}
        for delta in old.diff_to_tree(new).deltas:
            for side in (delta.old_file, delta.new_file):
                if "/" not in side.path and side.mode in REGULAR_MODES:
                    changes[side.path] = None  # gone, unless the new side names its blob
            if "/" not in delta.new_file.path and delta.new_file.mode in REGULAR_MODES:
                changes[delta.new_file.path] = str(delta.new_file.id)
        return changes

    def walk(self, path: str = "") -> Iterator[str]:
        """Every file path below `path` (repository-relative), depth first, sorted: symlinks
        and gitlinks included (`walk_entries` tells them apart)."""
        for child, _ in self.walk_entries(path):
            yield child

    def walk_entries(self, path: str = "") -> Iterator[tuple[str, Entry]]:
        """(path, entry) of every file below `path`, as `walk`."""
        prefix = path.strip("/")
        for entry in sorted(self.list(prefix), key=lambda e: e.name):
            child = f"{prefix}/{entry.name}" if prefix else entry.name
            if entry.is_tree:
                yield from self.walk_entries(child)
            else:
                yield child, entry

    # -- the commit ------------------------------------------------------------------------
    def info(self) -> CommitInfo:
        self._pinned = True
        if self._commit is None:
            self._commit = commit_of(self._repo, self._commit_id)
        return commit_info(self._commit)


def _lookup(tree: pygit2.Tree, path: str) -> GitObject | None:
    """The object at `path`, or None.

    pygit2 1.21 keeps a reference to every path string given to `Tree.__getitem__` (and to
    `__contains__`, `TreeBuilder.get` and `.remove`), so each lookup with a fresh string leaked
    it (seen with `sys.getrefcount`): a worker grew with every distinct lookup. An
    interned path is one object per distinct path, so the leak is bounded by the paths that
    exist.
    """
    if not path:
        return tree
    try:
        return tree[sys.intern(path)]
    except (KeyError, ValueError):
        return None


def _id_of(obj: GitObject | None) -> pygit2.Oid | None:
    return obj.id if obj is not None else None


def parsed_blob(caches: Caches, data: bytes, label: str) -> Any:
    """The parsed YAML of file content `data`, from the blob-id cache of `caches`.

    Never mutate the result. A parse error is InvalidInput naming `label`.
    """
    return parsed(
        caches.parsed_blobs,
        str(pygit2.hash(data)),
        lambda: data,
        lambda raw: yamlio.load(raw, path=label),
    )


def remember_parsed(caches: Caches, data: bytes, document: Any) -> None:
    """Record `document` as the parse of file content `data` (the writer that just encoded it
    knows it), so the next read or write of that blob does not parse it again: parsing a
    node's facts costs most of a one-key write into them. Never mutate it.
    """
    caches.parsed_blobs.put(str(pygit2.hash(data)), document, len(data))


class _TreeEntry(Protocol):
    """An entry of a tree as pygit2 yields it: named (pygit2 types `name` optional, for the
    objects not read from a tree)."""

    name: str
    id: pygit2.Oid
    filemode: int
    type_str: str


def _entries(tree: pygit2.Tree) -> Iterable[_TreeEntry]:
    return cast("Iterable[_TreeEntry]", tree)  # one cast per folder, none per entry


def commit_of(repo: pygit2.Repository, commit_id: str | pygit2.Oid) -> pygit2.Commit:
    """The commit `commit_id` names (pygit2 types `repo[id]` as any object; the ids the
    backend looks up this way are commit ids)."""
    return cast(pygit2.Commit, repo[commit_id])


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
