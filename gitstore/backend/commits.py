"""The commit queue of one repository: every commit to `main`, made by compare-and-swap.

A write runs its operation against the current head, builds the new commit in memory, and moves
`refs/heads/main` only if it still points at that head (compare-and-swap, `refs.py`). A lost race
re-runs the operation on the new head (operations are key- or file-level, so re-applying is well
defined).

Our own writers (threads and gunicorn workers alike) compute their change before they take the
repository's `flock` write lock (a *guess*), then hold it only to commit: the commit is made if
nothing the change read has moved since, and otherwise the operation runs again under the lock
(so eight writers on one file never compute work that keeps losing the race). While most recent
guesses were wasted, writers skip theirs (`_Guesses`). The kernel drops the flock of a killed
process, so a crash never blocks the store. The compare-and-swap still guards against
`git push`, which moves the ref without our lock.

The writers of one process queued on the lock are committed in rounds: a chain of their
commits, main moved to its tip once (`CommitQueue._in_round`). Each writer still gets its own
commit and is answered only once main holds it; the round pays the flock, the ref's lock file
and the ref update once. In a cluster (a `Replication` is given) each round also waits under
the lock for a peer round trip and an etcd transaction, paid once per round too (docs/ha.md).

Lock order. A writer meets the locks of a repository in this order, and no code takes them in
another:

1. the queue lock (`CommitQueue._queue_lock`, a thread lock): held only to join the queue or to
   take it whole, never while waiting for another lock;
2. the writers lock (`CommitQueue._writers`, a thread lock): one thread of the process waits
   for the flock, the others wait here for their round's outcome;
3. the flock on `WRITE_LOCK` (`gitstore-write.lock`): one process commits at a time; pushes over
   HTTP (`gitstore.gitops.pushes`) and a follower's catch-up (`gitstore.cluster.follower`) take
   it too, and take nothing before it; the replication's round trip is made under it;
4. the ref lock (`refs.compare_and_swap`): the guard flock on `gitstore-ref.lock`, then
   `refs/heads/main.lock`, held only to move the ref (git's own receive-pack takes the latter).

Under the flock the queue lock is taken once more, to take the queue; it is released before
anything else is waited for.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pygit2

from gitstore import metrics
from gitstore.backend import refs
from gitstore.backend.cache import Caches
from gitstore.backend.changes import ChangeSet
from gitstore.backend.newobjects import NewObjects, durable
from gitstore.backend.snapshot import Snapshot, commit_of
from gitstore.backend.trees import build_tree
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.errors import Conflict, NotFound
from gitstore.files import exclusive_lock

MAIN = "refs/heads/main"
MAX_ATTEMPTS = 50
#: The committer of every commit gitstore makes (the author is who asked for it).
COMMITTER = ("gitstore", "gitstore@localhost")
#: The flock every commit to main is made under; pushes over HTTP queue on it too.
WRITE_LOCK = "gitstore-write.lock"


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


class Branch(Protocol):
    """What the queue reads of its repository (`gitstore.backend.repository.Repository`)."""

    path: Path
    name: str
    caches: Caches

    @property
    def git(self) -> pygit2.Repository: ...
    def head(self) -> str | None: ...
    def depth(self, commit_id: str) -> int: ...
    def snapshot_of(
        self,
        commit: pygit2.Commit,
        numbered: bool = True,
        *,
        git: pygit2.Repository | None = None,
        depth: int | None = None,
    ) -> Snapshot: ...


class Replication(Protocol):
    """What a cluster member does before main moves and after a label is made (docs/ha.md;
    `gitstore.cluster.member.Member` implements it). `name` is the repository as served
    (`catalog.git`, `environments/<id>.git`); a method raises to refuse, and nothing is then
    acknowledged."""

    def commit(self, name: str, repo: Branch, old: str | None, new: str) -> bool:
        """Before main moves from `old` to `new` (write lock held; `new` may be the tip of a
        chain of commits on `old`, one per writer of a round); False: main moved."""

    def labelled(self, name: str, repo: Branch, ref: str, tag: str) -> None:
        """After a new label's `ref` (`refs/tags/<label>`) points at tag object `tag` (it is
        removed if this raises)."""


@dataclass(frozen=True)
class _Guess:
    """An operation's changes computed on a tracked snapshot of `head`, before the lock."""

    head: str
    snapshot: Snapshot
    changes: ChangeSet

    def holds_at(self, head: str, tree: pygit2.Tree) -> bool:
        """Whether these changes are still what the operation would compute at `head`."""
        return head == self.head or self.snapshot.unchanged_at(tree)


class _Guesses:
    """Whether running an operation before the lock (`CommitQueue._speculate`) still pays.

    A guess is wasted when what it read changed before its turn: writers contending on one
    document. Then every guess but the first runs again under the lock, and the wasted run
    only takes CPU from the lock's holder (the writers of one gevent worker even stop it: a
    guess runs without yielding). So while most recent guesses were wasted, a writer skips
    its guess, except one in `PROBE` that keeps the estimate current (measured through the
    facade with writers contending on one global document: less CPU per write and more writes
    per second). Writers of different files (node facts and overrides) keep guessing: their
    guesses hold.
    """

    #: Weight of the newest outcome in the running share of wasted guesses.
    WEIGHT = 0.125
    #: Above this share of wasted guesses, writers stop guessing (but one in PROBE).
    SKIP_ABOVE = 0.5
    PROBE = 8

    def __init__(self) -> None:
        self.wasted = 0.0  # updated without a lock: a lost update only blurs an estimate
        self._skipped = 0

    def record(self, held: bool) -> None:
        self.wasted += self.WEIGHT * ((0.0 if held else 1.0) - self.wasted)

    def worth_it(self) -> bool:
        if self.wasted <= self.SKIP_ABOVE:
            return True
        self._skipped += 1
        return self._skipped % self.PROBE == 0


@dataclass
class _Ticket:
    """A writer waiting for a round of commits (`CommitQueue._in_round`): what it
    asked for, then its outcome (a result; None: re-apply on the new head; or an error)."""

    operation: Operation
    author: Author
    guess: _Guess | None
    done: bool = False
    result: WriteResult | None = None
    error: Exception | None = None


@dataclass(frozen=True)
class _Link:
    """A ticket's place in a round's chain: its commit (or the tip it changed nothing on,
    or refused on) and, when it made one, the commit's message and changes."""

    ticket: _Ticket
    commit: str | None
    message: str | None
    changes: ChangeSet | None


class CommitQueue:
    """The commits of one repository's `main`: guessed before the lock, made in rounds under
    it, replicated (in a cluster) before main moves. The lock order is in the module docstring.
    """

    def __init__(
        self, repo: Branch, replication: Replication | None = None, served_as: str = ""
    ) -> None:
        self._repo = repo
        # None in single-node mode; in a cluster, main moves only once the commit is replicated
        # and etcd accepted it, and a new label counts only once replicated (docs/ha.md).
        self.replication = replication
        #: The repository's name as its replication knows it (`environments/<id>.git`).
        self.served_as = served_as
        # Threads of one process queue here before the flock, so that only one of them waits
        # in the kernel: with all of them there, writers in several processes committed fewer
        # writes per second (more threads woke to fight over the process's GIL).
        self._writers = threading.Lock()
        # How often this process's guesses were wasted lately (`_Guesses`).
        self._guesses = _Guesses()
        # The writers of this process waiting for the next round (`_in_round`).
        self._queue: list[_Ticket] = []
        self._queue_lock = threading.Lock()

    # -- replication -----------------------------------------------------------------------
    def accepts(self, old: str | None, new: str) -> bool:
        """Whether main may move from `old` to `new`: the replication's word (write lock held),
        always yes on a single node; it raises to refuse."""
        if self.replication is None:
            return True
        return self.replication.commit(self.served_as, self._repo, old, new)

    def labelled(self, ref: str, tag: str) -> None:
        """A new label counts once replicated; this raises to refuse it."""
        if self.replication is not None:
            self.replication.labelled(self.served_as, self._repo, ref, tag)

    # -- writing ---------------------------------------------------------------------------
    def commit(
        self, operation: Operation, author: Author, deadline: Deadline = UNBOUNDED
    ) -> WriteResult:
        """Apply `operation` to the head as one commit, re-applying it on a lost race
        (`Repository.update`). `deadline` is checked before each attempt, never after one
        started: a write cut by it wrote nothing."""
        for attempt in range(MAX_ATTEMPTS):
            guess = self._speculate(operation) if self._guesses.worth_it() else None
            deadline.check()
            result = self._in_round(_Ticket(operation, author, guess))
            if result is not None:
                return result
            time.sleep(random.uniform(0, 0.002 * (attempt + 1)))
        raise Conflict(f"{self._repo.name}: could not move main (pushes kept winning the race)")

    def first(self, head: str | None, changes: ChangeSet, author: Author) -> WriteResult | None:
        """Commit `changes` on `head` at once, outside any round: a repository's first commit,
        or the commit a clone adds (nothing else writes to a repository being created)."""
        objects = self._new_objects()
        built = self.build(objects.git, head, changes, author)
        if built is None:
            assert head is not None  # `build` finds no change only on an existing head
            return WriteResult(head, self._repo.depth(head), changed=False)
        commit_id, message = built
        objects.write()
        if not self.accepts(head, commit_id):
            return None
        if not refs.compare_and_swap(
            self._repo.path, MAIN, head, commit_id, durable=self._durable()
        ):
            return None
        metrics.commit_made(self._repo.name, commit_id, message, changes.entries)
        return WriteResult(commit_id, self._repo.depth(commit_id), changed=True)

    def dry_run(self, operation: Operation, author: Author) -> WriteResult:
        """The commit `operation` would make on the head, built but never served
        (`Repository.dry_run`)."""
        repo = self._repo
        head = repo.head()
        if head is None:
            raise NotFound(f"repository {repo.name} has no commits")
        changes = operation(repo.snapshot_of(commit_of(repo.git, head)))
        objects = self._new_objects()
        built = self.build(objects.git, head, changes, author)
        if built is None:
            return WriteResult(head, repo.depth(head), changed=False)
        objects.write()  # readable by its id from any process
        return WriteResult(built[0], repo.depth(built[0]), changed=True)

    def build(
        self, git: pygit2.Repository, head: str | None, changes: ChangeSet, author: Author
    ) -> tuple[str, str] | None:
        """(commit id, message) of `changes` made on `head` with the handle `git` (a
        `NewObjects`'), nothing moved; None: no change."""
        base_tree = commit_of(git, head).tree if head else None
        tree_id = build_tree(git, base_tree, changes.entries)
        if base_tree is not None and tree_id == base_tree.id:
            return None
        signature = pygit2.Signature(author.name, author.email)
        committer = pygit2.Signature(*COMMITTER)
        parents = [pygit2.Oid(hex=head)] if head else []
        message = (changes.message or "gitstore: update").rstrip() + "\n"
        commit_id = str(git.create_commit(None, signature, committer, message, tree_id, parents))
        return commit_id, message

    def _speculate(self, operation: Operation) -> _Guess | None:
        """`operation` on the current head, for use if its reads still hold once locked."""
        repo = self._repo
        head = repo.head()
        if head is None:
            return None
        commit = commit_of(repo.git, head)
        depth = repo.depth(head)
        snapshot = Snapshot(repo.git, commit, repo.name, depth, caches=repo.caches, tracked=True)
        return _Guess(head, snapshot, operation(snapshot))

    # -- group commit: the writers queued in this process, one ref update (and guard) ------
    def _in_round(self, ticket: _Ticket) -> WriteResult | None:
        """Commit `ticket` in a round: the writer of this process that takes the locks commits
        every writer queued meanwhile at once (`_commit_round`); the others find their outcome
        made when the locks come to them. The flock, the ref's lock file and, in a cluster, the
        replication's round trip (replicas, etcd) are then paid once per round instead of once
        per writer, while each writer still gets its own commit and is acknowledged only once
        main holds it (on one node, more writes per second than when each writer took the locks
        for its own commit)."""
        with self._queue_lock:
            self._queue.append(ticket)
        with self._writers:
            if not ticket.done:
                with self._write_lock():  # taken first: whoever queues while we wait joins
                    with self._queue_lock:
                        batch, self._queue = self._queue, []
                    self._commit_round(batch)
        if ticket.error is not None:
            raise ticket.error
        return ticket.result

    def _commit_round(self, batch: list[_Ticket]) -> None:
        """Build the tickets' commits as a chain on main (`_build_round`); have the replication
        (if any) replicate and accept the chain's tip once, then move main to it. Main (what
        readers see) moves only after the replication accepted, and all at once; if it
        refuses, every writer whose outcome rests on the chain is refused with it (or
        re-applied, if main moved)."""
        head = self._repo.head()
        links: list[_Link] = []
        try:
            objects = self._new_objects()
            tip = self._build_round(objects.git, head, batch, links)
            objects.write()  # one pack, on disk before main names it (or a peer is asked)
            # (a tip other than main's is a commit of this round, never None)
            if tip != head and tip is not None and not self._accept_chain(head, tip):
                for link in links:  # main moved: each re-applies its operation on the new head
                    link.ticket.error = None
                return
            for link in links:
                if link.ticket.error is None:
                    link.ticket.result = self._accepted(link)
        except Exception as exc:
            for link in links:
                link.ticket.error = exc
        finally:
            for ticket in batch:
                ticket.done = True

    def _build_round(
        self, git: pygit2.Repository, head: str | None, batch: list[_Ticket], links: list[_Link]
    ) -> str | None:
        """Build each ticket's commit on the one before (main first) with `git` (the round's
        `NewObjects`); the chain's tip. Whose operation refused on main itself is refused now;
        every other outcome (a commit, no change, a refusal on top of commits of this round)
        rests on the round (`links`)."""
        tip, depth = head, None  # depth: the tip's, once it is a commit of this round
        for ticket in batch:
            try:
                changes = self._changes_on(git, tip, depth, ticket)
                made = self.build(git, tip, changes, ticket.author)
                if made is not None:
                    depth = (depth or (self._repo.depth(tip) if tip else 0)) + 1
            except Exception as exc:
                ticket.error = exc
                if tip != head:
                    links.append(_Link(ticket, tip, None, None))
                continue
            tip = made[0] if made else tip
            links.append(_Link(ticket, tip, made[1] if made else None, changes))
        return tip

    def _accepted(self, link: _Link) -> WriteResult:
        # a link of a round that stands rests on a commit: main's, or one the round made
        assert link.commit is not None
        depth = self._repo.depth(link.commit)
        if link.message is None:
            return WriteResult(link.commit, depth, changed=False)
        assert link.changes is not None  # a link with a message made a commit of its changes
        metrics.commit_made(self._repo.name, link.commit, link.message, link.changes.entries)
        return WriteResult(link.commit, depth, changed=True)

    def _changes_on(
        self, git: pygit2.Repository, tip: str | None, depth: int | None, ticket: _Ticket
    ) -> ChangeSet:
        """The ticket's changes on `tip` (of `depth` when a commit of this round, which only
        `git` can read): its guess if that still holds there, else its operation run again."""
        guess = ticket.guess
        if guess is not None and tip is not None:
            held = guess.holds_at(tip, commit_of(git, tip).tree)
            self._guesses.record(held)
            if held:
                return guess.changes
        if tip is None:  # a repository without commits: its first commit needs no snapshot
            return ticket.operation(None)  # type: ignore[arg-type]
        return ticket.operation(self._repo.snapshot_of(commit_of(git, tip), git=git, depth=depth))

    def _accept_chain(self, head: str | None, tip: str) -> bool:
        if not self.accepts(head, tip):
            return False
        return refs.compare_and_swap(self._repo.path, MAIN, head, tip, durable=self._durable())

    def _new_objects(self) -> NewObjects:
        """Where a write's objects go until it lands them as one pack (`newobjects.py`)."""
        return NewObjects(self._repo.path, durable=self._durable())

    def _durable(self) -> bool:
        """Whether writes must survive a power loss (`newobjects.durable`): the pack of a
        write's objects is then flushed, and the ref after it. Without it, as in plain git, a
        process crash loses nothing but a power cut may."""
        return durable(self._repo.git)

    def _write_lock(self) -> contextlib.AbstractContextManager[None]:
        """The repository's write lock (a `flock`, dropped by the kernel if we die)."""
        return exclusive_lock(self._repo.path / WRITE_LOCK, 0o644)
