"""A persisted index of main's first-parent chain: version number -> commit (and its root
tree), and the versions at which each path changed.

History questions would otherwise walk the chain commit by commit: `version=N` from the head,
explain and key history down to the last change of a file that has not changed for 100,000
commits. Here each commit of main is diffed against its first parent once, and `version=N`,
"the last change of these files before version V" and "the changes below these folders" are
index lookups whose cost follows the number of answers, not the length of history.

The index lives in the repository (`gitstore-history.sqlite`). Only maintenance writes it
(`gitstore.ops.maintenance`, the server's background process, and `gitstore maintenance`):
reads never write, they open it read-only and see main as the index plus the commits made since
it was last extended (`ChainView`: at most a few seconds of writes, held in memory). Rows are
facts about immutable commits (a commit's depth on its own first-parent chain is its version),
so they never go stale; a main that was rewritten (a forced push) drops the rows above the last
commit both chains share. It is a cache: without the file, or on any SQLite failure, callers
walk the chain as before.
"""

from __future__ import annotations

import heapq
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitstore.files import os_thread_local

FILE = "gitstore-history.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS chain (version INTEGER PRIMARY KEY, commit_id TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS trees (commit_id TEXT PRIMARY KEY, tree_id TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (
    path TEXT NOT NULL, version INTEGER NOT NULL, PRIMARY KEY (path, version)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS changes_by_version ON changes (version);
CREATE TABLE IF NOT EXISTS paths (path TEXT PRIMARY KEY) WITHOUT ROWID;
"""
#: Changes of one path read at a time.
_PAGE = 64
#: Commits above the index's top a view holds in memory before it is built again from the
#: index (which maintenance extends meanwhile).
MAX_TAIL = 20_000

#: (commit id) -> (first parent id or None, paths changed against it, its root tree's id).
Diff = Callable[[str], tuple[str | None, list[str], str]]
#: (commit id) -> its root tree's id.
TreeOf = Callable[[str], str]
#: Commits of an index made without their trees (by an older gitstore) given theirs per
#: transaction.
_FILL_BATCH = 5000

Error = sqlite3.Error

#: A version's commit and its tree. Trees are keyed by commit, a fact that never goes stale:
#: an older gitstore (a downgrade) extends `chain` without them, and a rewritten main leaves
#: its old commits' rows unread.
_ENTRY = (
    "SELECT chain.commit_id, trees.tree_id FROM chain LEFT JOIN trees "
    "ON trees.commit_id = chain.commit_id WHERE chain.version = ?"
)
_WITHOUT_TREES = (
    "SELECT chain.commit_id FROM chain LEFT JOIN trees ON trees.commit_id = chain.commit_id "
    "WHERE trees.commit_id IS NULL LIMIT ?"
)


class ChainIndex:
    """The index of one repository (one SQLite connection per operating-system thread)."""

    def __init__(self, repo_path: Path) -> None:
        self.path = Path(repo_path) / FILE
        self._local = os_thread_local()

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def _db(self) -> sqlite3.Connection:
        """A read-only connection (a rollback journal, not WAL: a reader then changes no file)."""
        db = getattr(self._local, "db", None)
        if db is None:
            uri = f"file:{self.path}?mode=ro"
            db = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
            self._local.db = db
        return db

    # -- extending (maintenance only) ------------------------------------------------------
    def update(self, head: str, diff: Diff, tree_of: TreeOf) -> int:
        """Index main's chain up to `head`; `head`'s version. The commits an older gitstore
        indexed without their trees get them first."""
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.executescript(_SCHEMA)
            _fill_trees(db, tree_of)
            return _extend(db, head, diff)
        finally:
            db.close()

    # -- asking ----------------------------------------------------------------------------
    def version_of(self, commit_id: str) -> int | None:
        row = (
            self._db()
            .execute("SELECT version FROM chain WHERE commit_id = ?", (commit_id,))
            .fetchone()
        )
        return row[0] if row else None

    def entry_at(self, version: int) -> tuple[str, str | None] | None:
        """(commit id, its root tree's id, or None for a commit an older gitstore indexed)."""
        db = self._db()
        try:
            row = db.execute(_ENTRY, (version,)).fetchone()
        except sqlite3.OperationalError:  # an older index: no `trees` until maintenance
            row = db.execute("SELECT commit_id, NULL FROM chain WHERE version = ?", (version,))
            row = row.fetchone()
        return (row[0], row[1]) if row else None

    def top(self) -> int:
        row = self._db().execute("SELECT max(version) FROM chain").fetchone()
        return row[0] or 0

    def changed(self, paths: Sequence[str], high: int, low: int) -> Iterator[tuple[int, str]]:
        """(version, commit) newest first, of versions in (`low`, `high`] that changed a file
        at one of `paths` or below one: each file's changes are read newest first, a page at a
        time, and merged, so a file that did not change costs one lookup."""
        files = set(paths)
        for folder in paths:
            prefix = folder.strip("/") + "/"
            rows = self._db().execute(
                "SELECT path FROM paths WHERE path >= ? AND path < ?",
                (prefix, prefix[:-1] + "0"),  # "0" sorts right after "/"
            )
            files.update(row[0] for row in rows)
        streams = [self._changes_of(path, high, low) for path in sorted(files)]
        last = None
        for version, commit_id in heapq.merge(*streams, reverse=True):
            if version != last:
                last = version
                yield version, commit_id

    def _changes_of(self, path: str, high: int, low: int) -> Iterator[tuple[int, str]]:
        while high > low:
            rows = (
                self._db()
                .execute(
                    "SELECT changes.version, chain.commit_id FROM changes JOIN chain "
                    "ON chain.version = changes.version WHERE path = ? AND changes.version > ? "
                    "AND changes.version <= ? ORDER BY changes.version DESC LIMIT ?",
                    (path, low, high, _PAGE),
                )
                .fetchall()
            )
            yield from rows
            if len(rows) < _PAGE:
                return
            high = rows[-1][0] - 1


def _fill_trees(db: sqlite3.Connection, tree_of: TreeOf) -> None:
    """Give the commits an older gitstore indexed without their trees (an index it made, or
    extended after a downgrade: its rows are on top) theirs, so a `version=N` read finds the
    tree it reads without reading the commit. Checked at the top row: one lookup a run."""
    top = db.execute(_ENTRY, (db.execute("SELECT max(version) FROM chain").fetchone()[0],))
    if (top.fetchone() or ("", ""))[1] is not None:
        return
    while rows := db.execute(_WITHOUT_TREES, (_FILL_BATCH,)).fetchall():
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(
                "INSERT OR IGNORE INTO trees VALUES (?, ?)",
                ((commit_id, tree_of(commit_id)) for (commit_id,) in rows),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def _extend(db: sqlite3.Connection, head: str, diff: Diff) -> int:
    def version_of(commit_id: str) -> int | None:
        row = db.execute("SELECT version FROM chain WHERE commit_id = ?", (commit_id,)).fetchone()
        return row[0] if row else None

    known = version_of(head)
    if known is not None:
        return known
    walked: list[tuple[str, list[str], str]] = []
    current: str | None = head
    base = 0
    while current is not None and (base := version_of(current) or 0) == 0:
        parent, paths, tree_id = diff(current)
        walked.append((current, paths, tree_id))
        current = parent
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("DELETE FROM chain WHERE version > ?", (base,))
        db.execute("DELETE FROM changes WHERE version > ?", (base,))
        for offset, (commit_id, paths, tree_id) in enumerate(reversed(walked), start=1):
            version = base + offset
            db.execute("INSERT INTO chain VALUES (?, ?)", (version, commit_id))
            db.execute("INSERT OR IGNORE INTO trees VALUES (?, ?)", (commit_id, tree_id))
            db.executemany(
                "INSERT OR IGNORE INTO changes VALUES (?, ?)", ((p, version) for p in paths)
            )
            db.executemany("INSERT OR IGNORE INTO paths VALUES (?)", ((p,) for p in paths))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return base + len(walked)


@dataclass(frozen=True)
class ChainView:
    """main's chain at `head`: the index up to version `base`, then `tail` (newest first: the
    commits made since the index was extended, with the paths each changed)."""

    index: ChainIndex
    head: str
    base: int
    tail: tuple[tuple[str, tuple[str, ...]], ...]
    positions: dict[str, int]  # version of each commit of the tail

    @property
    def length(self) -> int:
        return self.base + len(self.tail)

    def version_of(self, commit_id: str) -> int | None:
        if commit_id in self.positions:
            return self.positions[commit_id]
        found = self.index.version_of(commit_id)
        return found if found is not None and found <= self.base else None

    def commit_at(self, version: int) -> str | None:
        entry = self.entry_at(version)
        return entry[0] if entry is not None else None

    def entry_at(self, version: int) -> tuple[str, str | None] | None:
        """(commit id, its root tree's id when the index holds it) of `version`."""
        if version > self.length or version < 1:
            return None
        if version > self.base:
            return self.tail[self.length - version][0], None
        return self.index.entry_at(version)

    def changed(self, paths: Sequence[str], high: int, low: int) -> Iterator[str]:
        """Commits of versions in (`low`, `high`], newest first, that changed `paths` (files,
        or folders: anything below them)."""
        prefixes = tuple(p.strip("/") + "/" for p in paths)
        for offset, (commit_id, changed) in enumerate(self.tail):
            version = self.length - offset
            if version <= low:
                return
            if version <= high and any(c in paths or c.startswith(prefixes) for c in changed):
                yield commit_id
        for _version, commit_id in self.index.changed(paths, min(high, self.base), low):
            yield commit_id


def view(index: ChainIndex, head: str, diff: Diff, previous: ChainView | None) -> ChainView:
    """main's chain at `head`: the index's, and the commits above it walked from `head` (or
    `previous`'s tail, when the walk reaches its head and the index has not moved since)."""
    top = index.top()
    reuse = previous if previous is not None and previous.base == top else None
    walked: list[tuple[str, tuple[str, ...]]] = []
    current: str | None = head
    while current is not None:
        if reuse is not None and current == reuse.head:
            return _made(index, head, reuse.base, (*walked, *reuse.tail))
        version = index.version_of(current)
        if version is not None:
            return _made(index, head, version, tuple(walked))
        if len(walked) >= MAX_TAIL:
            raise LookupError("the index is too far behind main")
        parent, paths, _tree = diff(current)
        walked.append((current, tuple(paths)))
        current = parent
    return _made(index, head, 0, tuple(walked))


def _made(index: ChainIndex, head: str, base: int, tail: tuple[Any, ...]) -> ChainView:
    length = base + len(tail)
    positions = {commit_id: length - offset for offset, (commit_id, _p) in enumerate(tail)}
    return ChainView(index, head, base, tail, positions)
