"""One bare git repository: resolve versions, read snapshots and revisions; its commits go
through its commit queue (`commits.py`: compare-and-swap, guesses before the lock, rounds, the
lock order).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pygit2

from gitstore import yamlio
from gitstore.backend import chainindex, refs, revisions
from gitstore.backend.cache import Caches, parsed
from gitstore.backend.changes import ChangeSet, Graft
from gitstore.backend.commits import (
    COMMITTER,
    MAIN,
    WRITE_LOCK,
    Author,
    CommitQueue,
    Operation,
    Replication,
    WriteResult,
)
from gitstore.backend.damage import damaged, first_unreadable, recorded
from gitstore.backend.handles import Handles
from gitstore.backend.revisions import FileChange, TagInfo
from gitstore.backend.snapshot import CommitInfo, Snapshot, commit_info, commit_of
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.errors import Conflict, Damaged, NotFound, Unavailable, UnknownRevision
from gitstore.names import is_commit_id, is_number

#: Names other modules import from here; they live in `commits.py`.
__all__ = [
    "COMMITTER",
    "MAIN",
    "WRITE_LOCK",
    "Author",
    "Operation",
    "Repository",
    "WriteResult",
]
#: git settings of every repository: gitstore packs them itself (`gitstore.ops.maintenance`),
#: so git's own `gc --auto` (after a push, say) never runs a second repack beside it.
GIT_SETTINGS = {"gc.auto": "0", "receive.autoGC": "false"}

#: Steps `depth` walks on its own before it asks main's index.
_DEPTH_WALK = 256


class Repository:
    """A bare repository whose branch `main` is the served state."""

    def __init__(
        self,
        path: Path,
        name: str,
        write_guard: Callable[[], None] | None = None,
        *,
        replication: Replication | None = None,
        served_as: str = "",
        caches: Caches | None = None,
    ) -> None:
        """`served_as` is the repository's name below its store root (`environments/1.git`),
        as its `replication` (a cluster member's; None on a single node) names it. `caches`:
        its store's (depths, chains, parsed blobs), handed to every snapshot it reads; one
        opened outside a store keeps its own."""
        self.path = Path(path)
        self.name = name
        self.caches = caches if caches is not None else Caches()
        self._depths, self._chains = self.caches.depths, self.caches.chains
        self._handles = Handles(self.path)  # one pygit2 handle per OS thread (see there)
        # Called before every `update`; it raises to refuse the write (the facade refuses
        # writes to a repository in mirror mode, whose source of truth is elsewhere).
        self._write_guard = write_guard
        #: Every commit to main goes through here (`commits.py`).
        self.commits = CommitQueue(self, replication, served_as)
        # main's chain on disk, shared with the other processes (`chainindex`).
        self._index = chainindex.ChainIndex(self.path)

    # -- lifecycle -------------------------------------------------------------------------
    @classmethod
    def create(cls, path: Path, name: str, first: ChangeSet, author: Author) -> Repository:
        """Initialise a bare repository at `path` holding one commit made of `first`."""
        _set_up(pygit2.init_repository(str(path), bare=True, initial_head="main"))
        repo = cls(path, name)
        repo.commits.first(None, first, author)
        return repo

    @classmethod
    def create_clone(
        cls, path: Path, name: str, source: Repository, operation: Operation, author: Author
    ) -> Repository:
        """Initialise a bare repository at `path` holding the history of `source`'s main plus
        one commit that `operation` makes on top of it, so `git log` and `git diff` connect them.

        The objects are copied (a local `git fetch`), never shared through alternates: the new
        repository stays whole when `source` is archived.
        """
        _set_up(pygit2.init_repository(str(path), bare=True, initial_head="main"))
        _fetch_main(source, Path(path))
        repo = cls(path, name)
        head = repo.head()
        if head is None:
            raise NotFound(f"repository {source.name} has no commits")
        repo.commits.first(head, operation(repo.snapshot_of(commit_of(repo.git, head))), author)
        return repo

    @property
    def git(self) -> pygit2.Repository:
        """This thread's pygit2 handle (handles are not shared between threads)."""
        try:
            return self._handles.get()
        except pygit2.GitError as exc:
            raise self._damaged(f"git cannot open it ({exc})") from exc

    # -- reading ---------------------------------------------------------------------------
    def head(self) -> str | None:
        """The commit id of main; None before the first commit; Damaged for a corrupt ref."""
        try:
            head = refs.read_ref(self.path, MAIN)
        except (UnicodeDecodeError, OSError) as exc:
            raise self._damaged(f"{MAIN} is unreadable ({exc})") from exc
        if head is not None and is_commit_id(head):
            return head
        if head is None and not os.path.exists(os.path.join(self.path, MAIN)):
            return None
        raise self._damaged(
            f"{MAIN} holds {head!r}, not a commit id" if head else f"{MAIN} is empty"
        )

    def recorded_damage(self, *, verify: bool = False) -> str | None:
        """Damage of this repository's objects that a read in this process met (still there);
        with `verify`, every object of the served tree is read now to find any."""
        if verify:
            head = self.head()
            found = first_unreadable(self.git, self._head_commit(head).tree) if head else None
            if found is not None:
                return self._damaged(found).damage
        return recorded(self.path, self.git)

    def _damaged(self, damage: str, object_id: str | None = None) -> Damaged:
        folder = f"{self.path.parent.name}/{self.path.name}"
        return damaged(self.path, f"{self.name} ({folder})", damage, object_id)

    def snapshot(self, version: str | int | None = None, *, head: str | None = None) -> Snapshot:
        """The tree of `version` (None: the head of main). Its `version` number is None for a
        commit off main's first-parent chain (a review branch's): its depth there is the number
        of another commit of main.

        `head`: a head of main the caller read for this request (`head()`). A version number or
        a commit id is resolved against it, as a read of the head is made at it, so the request
        reads the ref once; a revision name (a branch, `main~1`) is resolved by git as it is now.
        """
        if head is None:
            head = self._head_for(version)
        text = "" if version is None else str(version).strip()
        if is_number(text):
            return self._snapshot_at_version(int(text), text, head)
        commit = self._resolve(version, head)
        numbered = not text or self._on_main_chain(str(commit.id), head)
        return self.snapshot_of(commit, numbered)

    def _head_for(self, version: str | int | None) -> str | None:
        """main's head, read now, for a `version` resolved against it (the head itself, a
        number, a commit id); None for a revision name, which git resolves on its own."""
        text = "" if version is None else str(version).strip()
        return self.head() if not text or is_number(text) or is_commit_id(text) else None

    def _on_main_chain(self, commit_id: str, head: str | None) -> bool:
        if head is None:
            head = self.head()
        if head is None:
            return False
        view = self._view(head)
        if view is not None:
            return view.commit_at(self.depth(commit_id, head=head)) == commit_id
        chain, depth = self._chain(head), self.depth(commit_id, head=head)
        return depth <= len(chain) and chain[depth - 1] == commit_id

    def snapshot_at_head(self, head: str) -> Snapshot:
        """The tree of `head`, a head of main the caller has just read (`head()`): what
        `snapshot()` makes, without reading the ref a second time."""
        return self.snapshot_of(self._head_commit(head))

    def snapshot_of(
        self,
        commit: pygit2.Commit,
        numbered: bool = True,
        *,
        git: pygit2.Repository | None = None,
        depth: int | None = None,
    ) -> Snapshot:
        """The tree of `commit`, read through `git` (default this thread's handle; a commit
        not written yet is read through the `NewObjects` handle that made it, its `depth`
        given: only what is on disk can be walked)."""
        try:
            number = (depth or self.depth(str(commit.id))) if numbered else None
            return Snapshot(git or self.git, commit, self.name, number, caches=self.caches)
        except (KeyError, pygit2.GitError) as exc:
            raise self._damaged(
                f"commit {str(commit.id)[:12]} or its history is incomplete ({exc})"
            ) from exc

    def _resolve(self, version: str | int | None, head: str | None) -> pygit2.Commit:
        """The commit of `version`, not a number (`_snapshot_at_version`); `head` is main's
        head the request reads at (`_head_for`)."""
        if version is None or version == "":
            if head is None:
                raise NotFound(f"repository {self.name} has no commits")
            return self._head_commit(head)
        text = str(version).strip()
        if is_commit_id(text):
            return self._commit_by_id(text)
        return self._revparse(text)

    def _head_commit(self, head: str) -> pygit2.Commit:
        try:
            commit = commit_of(self.git, head)
        except KeyError as exc:
            raise self._damaged(f"{MAIN} points at {head}, which is not in the repository") from exc
        except pygit2.GitError as exc:
            raise self._damaged(f"commit {head} of {MAIN} is unreadable ({exc})", head) from exc
        if not isinstance(commit, pygit2.Commit):
            raise self._damaged(f"{MAIN} points at {head}, a {commit.type_str}, not a commit")
        return commit

    def _commit_by_id(self, text: str) -> pygit2.Commit:
        try:
            return self.git[text].peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
            raise UnknownRevision(text, self.name) from exc

    def _revparse(self, text: str) -> pygit2.Commit:
        if text.startswith("-") or any(ch in text for ch in "\0\n\r"):
            raise UnknownRevision(text, self.name)
        try:
            obj = self.git.revparse_single(text)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError) as exc:
            raise UnknownRevision(text, self.name) from exc
        return commit

    def _snapshot_at_version(self, number: int, text: str, head: str | None) -> Snapshot:
        """The tree of version `number`; from main's index, its tree is read without its
        commit (a first read at an old version reads what it must, docs/performance.md)."""
        if head is None or number < 1:
            raise UnknownRevision(text, self.name)
        view = self._view(head)
        if view is None:
            return self.snapshot_of(self._walked_to(number, text, head), depth=number)
        entry = view.entry_at(number)
        if entry is None:
            raise UnknownRevision(text, self.name)
        commit_id, tree_id = entry
        self._depths.put((self.path, commit_id), number)  # its depth: no walk to learn it again
        if tree_id is None:  # above the index, or indexed by an older gitstore
            return self.snapshot_of(commit_of(self.git, commit_id), depth=number)
        try:
            tree = self.git[tree_id]
        except (KeyError, ValueError, pygit2.GitError) as exc:
            damage = f"tree {tree_id[:12]} of version {number} is unreadable ({exc})"
            raise self._damaged(damage, tree_id) from exc
        if not isinstance(tree, pygit2.Tree):
            raise self._damaged(f"main's index names {tree_id[:12]}, not a tree, at {number}")
        return Snapshot(self.git, commit_id, self.name, number, caches=self.caches, tree=tree)

    def _walked_to(self, number: int, text: str, head: str) -> pygit2.Commit:
        """The `number`-th commit of main's first-parent chain at `head` (not past it), found
        by walking the chain (no index)."""
        try:
            chain = self._chain(head)
        except (KeyError, pygit2.GitError) as exc:
            raise self._damaged(f"the history of {MAIN} is incomplete ({exc})") from exc
        if number > len(chain):
            raise UnknownRevision(text, self.name)
        return commit_of(self.git, chain[number - 1])

    def _chain(self, head: str) -> list[str]:
        """Commit ids of `head`'s first-parent chain, root first (`chain[n - 1]` = version n).

        Extended from the chain known for an earlier head by walking only the commits made
        since, so `version=N` costs a list index, not a walk of history, after every write.
        """
        known: tuple[str, list[str]] | None = self._chains.get(self.path)  # (head, its chain)
        if known is not None and known[0] == head:
            return known[1]
        ids: list[str] = known[1] if known is not None else []
        walked: list[str] = []
        base = 0
        current: str | None = head
        while current is not None:
            depth = self.depth(current)
            if depth <= len(ids) and ids[depth - 1] == current:
                base = depth
                break
            walked.append(current)
            parents = commit_of(self.git, current).parent_ids
            current = str(parents[0]) if parents else None
        chain = ids[:base] + walked[::-1]
        self._chains.put(self.path, (head, chain), len(chain))
        return chain

    def depth(self, commit_id: str, *, head: str | None = None) -> int:
        """The commit's position on its own first-parent chain (1 = root).

        A few steps down the chain usually reach a commit whose depth this process knows (a
        write's parent); past `_DEPTH_WALK` steps main's index on disk answers (a process that
        starts on a long history never walks all of it), at `head` when the caller read it.
        """
        known: int | None = self._depths.get((self.path, commit_id))
        if known is not None:
            return known
        pending: list[str] = []
        current: str | None = commit_id
        base = 0
        view = None
        while current is not None:
            cached = self._depths.get((self.path, current))
            if cached is None and view is not None:
                cached = view.version_of(current)
            if cached is not None:
                base = cached
                break
            pending.append(current)
            if len(pending) == _DEPTH_WALK:
                view = self._view(head if head is not None else self.head())
            parents = commit_of(self.git, current).parent_ids
            current = str(parents[0]) if parents else None
        for offset, cid in enumerate(reversed(pending), start=1):
            self._depths.put((self.path, cid), base + offset)
        return base + len(pending)

    # -- main's chain on disk (`chainindex`) -----------------------------------------------
    def _view(self, head: str | None) -> chainindex.ChainView | None:
        """main's chain at `head` from its index (None without an index, or when it cannot be
        read: callers then walk). Read-only: maintenance alone extends the index."""
        if head is None or not self._index.exists():
            return None
        previous: chainindex.ChainView | None = self.caches.chain_views.get(self.path)
        if previous is not None and previous.head == head:
            return previous
        try:
            found = chainindex.view(self._index, head, self._first_parent_diff, previous)
        except (chainindex.Error, OSError, LookupError):
            return None
        self.caches.chain_views.put(self.path, found)
        return found

    def update_index(self) -> int | None:
        """Extend main's index to the head (maintenance does, in the background); the head's
        version."""
        head = self.head()
        if head is None:
            return None
        return self._index.update(head, self._first_parent_diff, self._tree_of)

    def _first_parent_diff(self, commit_id: str) -> tuple[str | None, list[str], str]:
        commit = commit_of(self.git, commit_id)
        parent = str(commit.parent_ids[0]) if commit.parent_ids else None
        before = commit_of(self.git, parent).tree if parent else None
        changed = [change.path for change in revisions.compare(before, commit.tree)]
        return parent, changed, str(commit.tree_id)

    def _tree_of(self, commit_id: str) -> str:
        return str(commit_of(self.git, commit_id).tree_id)

    def commits_changing(
        self,
        start: str,
        stop: str | None,
        paths: Sequence[str],
        deadline: Deadline = UNBOUNDED,
    ) -> Iterator[str]:
        """Commits of `start`'s first-parent chain, newest first, down to `stop` (excluded)
        or the root, whose object at one of `paths` (a file, or a folder: anything below it)
        differs from their first parent's.

        Commits off main are compared one by one until the chain reaches main; from there
        main's index answers, so a path that did not change costs the same at any depth.
        Without an index each commit compared is a step of `deadline`.
        """
        current: str | None = start
        view = self._view(self.head())
        while current is not None and current != stop:
            deadline.check()
            if view is not None and (version := view.version_of(current)) is not None:
                low = view.version_of(stop) if stop is not None else None
                yield from view.changed(paths, version, low if low and low < version else 0)
                return
            parent = self.parent(current)
            if parent is None or self.object_ids(current, paths) != self.object_ids(parent, paths):
                yield current
            current = parent

    def commit_info(self, commit_id: str) -> CommitInfo:
        return commit_info(commit_of(self.git, commit_id))

    def first_parent_log(
        self, start: str | None = None, limit: int | None = None
    ) -> Iterator[CommitInfo]:
        """CommitInfo of the first-parent chain from `start` (default head), newest first."""
        head = start or self.head()
        commit = commit_of(self.git, head) if head else None
        count = 0
        while commit is not None and (limit is None or count < limit):
            yield commit_info(commit)
            count += 1
            commit = commit_of(self.git, commit.parent_ids[0]) if commit.parent_ids else None

    # -- several commits (history, diff, revert, labels) ---------------------------------
    def parent(self, commit_id: str) -> str | None:
        """The first parent of a commit (None for the root)."""
        parents = commit_of(self.git, commit_id).parent_ids
        return str(parents[0]) if parents else None

    def object_ids(self, commit_id: str, paths: Sequence[str]) -> tuple[str | None, ...]:
        """The object id of each path in the commit's tree (None where absent)."""
        tree = commit_of(self.git, commit_id).tree
        return tuple(_id_of(revisions.lookup(tree, path)) for path in paths)

    def changed_files(
        self, commit_id: str, under: Sequence[str] = ("",), skip: Sequence[str] = ()
    ) -> list[FileChange]:
        """Files the commit changed against its first parent, below the folders `under`.

        `skip` names top-level entries left out when `under` holds the root (``""``).
        """
        commit = commit_of(self.git, commit_id)
        before = commit_of(self.git, commit.parent_ids[0]).tree if commit.parent_ids else None
        changes = []
        for path in under:
            old, new = revisions.lookup(before, path), revisions.lookup(commit.tree, path)
            changes.extend(revisions.compare(old, new, path.strip("/"), skip if not path else ()))
        return changes

    def blob(self, blob_id: str) -> bytes:
        try:
            return cast(pygit2.Blob, self.git[blob_id]).data  # pygit2 types it as any object
        except (KeyError, pygit2.GitError) as exc:
            raise self._damaged(f"object {blob_id} is unreadable ({exc})", blob_id) from exc

    def blob_yaml(self, blob_id: str, label: str) -> Any:
        """The parsed YAML of a blob (shared cache: never mutate it)."""
        return parsed(
            self.caches.parsed_blobs,
            blob_id,
            lambda: self.blob(blob_id),
            lambda data: yamlio.load(data, path=f"{self.name}:{label}"),
        )

    def revert_entries(self, commit_id: str, head_id: str) -> dict[str, Graft | None]:
        """Changes that undo commit `commit_id` on top of `head_id`; Conflict names clashes."""
        return revisions.revert_entries(
            self.git, commit_of(self.git, commit_id), commit_of(self.git, head_id)
        )

    def tags(self) -> list[TagInfo]:
        return revisions.tags(self.git)

    def create_tag(self, name: str, commit_id: str, author: Author, message: str) -> TagInfo:
        """Tag `commit_id` as `name` (annotated); Conflict if the tag exists (never moved)."""
        tag_id = revisions.tag_object(
            self.git, name, commit_id, (author.name, author.email), message
        )
        ref = revisions.TAGS + name
        if not refs.compare_and_swap(self.path, ref, None, tag_id):
            raise Conflict(f"label {name!r} already exists in {self.name}", key="name")
        try:
            self.commits.labelled(ref, tag_id)
        except BaseException:
            with contextlib.suppress(KeyError):  # never acknowledged: not kept
                self.git.references.delete(ref)
            raise
        return revisions.tag_info(self.git, ref)

    # -- writing (commits.py) ---------------------------------------------------------------
    def update(
        self, operation: Operation, author: Author, deadline: Deadline = UNBOUNDED
    ) -> WriteResult:
        """Apply `operation` to the head as one commit, re-applying it on a lost race.

        The operation first runs on the head of the moment, outside the write lock. Once the
        lock is ours, that result is committed if nothing the operation read has changed
        since: writes to different files (per-node facts and overrides) parse, merge, seal and
        encode in parallel and only commit in turn, so the lock is held for the trees, the
        commit and the ref. Otherwise the operation runs again on the new head, under the
        lock. The writers of this process that queue meanwhile are committed together, in a
        round (`CommitQueue`).

        An operation that raises before the lock refuses the write at once: main was at the
        head it ran on, so the refusal is what that version of the store answers (a bad
        request never waits for the lock or holds it).

        `deadline` is checked before each attempt to commit, never after: a write it cuts has
        written nothing, and one that began its commit completes.
        """
        if self._write_guard is not None:
            self._write_guard()
        return self.commits.commit(operation, author, deadline)

    def dry_run(self, operation: Operation, author: Author) -> WriteResult:
        """The commit `operation` would make on the head, built but never served: `main`
        does not move, and the commit is reachable only by its id (a preview of a write,
        readable at `version=<id>` until `git gc` prunes it).

        `changed` is false when the operation would change nothing (the head is returned).
        A repository that refuses writes (mirror mode) refuses their previews too.
        """
        if self._write_guard is not None:
            self._write_guard()
        return self.commits.dry_run(operation, author)


def _set_up(git: pygit2.Repository) -> None:
    for key, value in GIT_SETTINGS.items():
        git.config[key] = value


def _fetch_main(source: Repository, target: Path) -> None:
    """Copy `source`'s main, with every object it reaches, into `target`'s main."""
    command = [
        "git",
        "--git-dir",
        str(target),
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--update-head-ok",
        "--",
        str(source.path.resolve()),
        f"+{MAIN}:{MAIN}",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise Unavailable(f"copying the history of {source.name} failed: {detail}")


def _id_of(obj: pygit2.Tree | pygit2.Blob | None) -> str | None:
    return str(obj.id) if obj is not None else None
