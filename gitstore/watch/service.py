"""Blocking queries and the change stream of an environment (docs/watch.md).

A blocking query compares the answer at the client's `index` with the answer at the head and
holds until they differ: answers are compared by the inputs they were computed from (blob and
tree ids, as the ETag is) and, where those differ, by their data, so a commit that changes a
layer but not the merged result, or another node, does not end the wait.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

from gitstore.backend import remote
from gitstore.errors import InvalidInput, NotFound
from gitstore.served import Served
from gitstore.versions.history import Walk, change_log

if TYPE_CHECKING:
    from gitstore.repositories import Repositories
    from gitstore.watch.heads import Heads
    from gitstore.watch.slots import Slot, Slots

#: A wait longer than this is clamped (as Consul does); the default when none is given.
MAX_WAIT = 600.0
DEFAULT_WAIT = 300.0
#: How many past commits one replay step reads at most (the stream continues after them).
REPLAY_BATCH = 100

Answer = Callable[[str | None], Served]  # (None: the head)
#: How often a replica looks for an environment the primary created (a rare wait: no watch).
CREATION_POLL_SECONDS = 0.05


class Watch:
    """Hold reads until their answer changes; list the commits that landed after one."""

    def __init__(
        self, repos: Repositories, heads: Heads, slots: Slots, catch_up: float = 0.0
    ) -> None:
        self._repos = repos
        self.heads = heads
        self.slots = slots  # one per held request: a process holds a bounded number
        # A cluster's replica may not have the commit a client wrote on the primary yet: an
        # index it does not know is waited for this long (0 on a single node: a 400 at once).
        self.catch_up = catch_up

    def index_commit(self, env_id: int, index: str, field: str = "index") -> str:
        """The commit id `index` (a commit id or a version number) names on `main`."""
        deadline = time.monotonic() + self.catch_up
        repo = self._environment_repo(env_id, deadline)
        while True:
            missing = None
            head = repo.head()  # read once: waited on below, so a move after it wakes the wait
            try:
                commit = repo.snapshot(index).commit_id
            except NotFound as exc:
                commit, missing = None, exc
            if commit is not None and (not self.catch_up or _on_main(repo, commit, head)):
                return commit
            remaining = deadline - time.monotonic()
            if head is not None and remaining > 0 and not self.heads.closing:
                self.heads.wait(env_id, head, remaining)
            elif commit is not None:
                return commit  # not (yet) on main: answered as any other commit is
            elif head is None and missing is not None:
                raise missing
            else:
                raise InvalidInput(
                    f"{field} {index!r} names no commit of environment {env_id}", key=field
                ) from missing

    def _environment_repo(self, env_id: int, deadline: float):
        """The environment's repository; on a cluster's replica, one created on the primary
        (a new environment, a clone) is waited for until `deadline`."""
        while True:
            try:
                return self._repos.environment_repo(env_id)
            except NotFound:
                if time.monotonic() >= deadline or self.heads.closing:
                    raise
            time.sleep(CREATION_POLL_SECONDS)  # gevent's sleep in a worker: parks the greenlet

    def hold(
        self, env_id: int, index: str | None, wait: float, answer: Answer
    ) -> tuple[Served, str | None]:
        """The answer at the head once it differs from the answer at `index`, or after `wait`
        seconds; with the head it was read at. Holds a slot meanwhile (Busy when none is free)."""
        with self.slots.take():
            deadline = time.monotonic() + min(wait, MAX_WAIT)
            seen = _outcome(answer, self.index_commit(env_id, index)) if index else None
            while True:
                head = self.heads.head(env_id)
                now = _outcome(answer, head)
                remaining = deadline - time.monotonic()
                if seen is None or not _same(now, seen) or remaining <= 0 or self.heads.closing:
                    return _settled(now), head
                self.heads.wait(env_id, head, remaining)

    def close(self) -> None:
        """End every blocking query (it answers the head now, as when its wait runs out) and
        every stream: the process stops, and a graceful stop waits for every request."""
        self.heads.close()

    def commits_after(self, env_id: int, since: str | None) -> list[dict[str, Any]]:
        """Events of the commits of `main` after `since` (exclusive; None: none), oldest
        first, at most REPLAY_BATCH of them (the oldest ones)."""
        repo = self._repos.environment_repo(env_id)
        head = repo.head()
        if head is None or head == since:
            return []
        stop = self.index_commit(env_id, since, "since") if since else head
        if stop == head:
            return []
        ids = []
        current: str | None = head
        while current is not None and current != stop:
            ids.append(current)
            current = repo.parent(current)
        if current is None and since:
            raise InvalidInput(f"since {since!r} is not on the history of main", key="since")
        return [self._event(env_id, cid) for cid in reversed(ids[-REPLAY_BATCH:])]

    def _event(self, env_id: int, commit_id: str) -> dict[str, Any]:
        repo = self._repos.environment_repo(env_id)
        [logged] = change_log(repo, Walk(commit_id, None, 1), None, None, None)
        files = [change.path for change in repo.changed_files(commit_id)]
        return {
            "env": env_id,
            "commit": commit_id,
            "version": logged["version"],
            "author": logged["author"],
            "email": logged["email"],
            "message": logged["message"],
            "time": logged["date"],
            "files": files,
            "changes": logged["changes"],
        }

    def stream(self, env_id: int, since: str | None, keepalive: float) -> Held:
        """Events of every commit after `since`, then of each commit as it lands, forever;
        None every `keepalive` seconds without one (the front end sends a comment). It holds
        a slot, taken now (Busy when none is free), until it ends or is closed."""
        slot = self.slots.take()
        return Held(self._events(env_id, since, keepalive), slot)

    def _events(
        self, env_id: int, since: str | None, keepalive: float
    ) -> Generator[dict | None, None, None]:
        last = self.index_commit(env_id, since, "since") if since else self.heads.head(env_id)
        while True:
            events = self.commits_after(env_id, last)
            for event in events:
                yield event
                last = event["commit"]
            if not events:
                if self.heads.closing:
                    return  # the process stops: the client reconnects with Last-Event-ID
                self.heads.wait(env_id, last, keepalive)
                if self.heads.head(env_id) == last:
                    yield None


class Held:
    """An iterator that holds a slot until it is exhausted or closed, started or not (a
    generator closed before its first item never runs its `finally`)."""

    def __init__(self, items: Generator[dict | None, None, None], slot: Slot) -> None:
        self._items = items
        self._slot = slot

    def __iter__(self) -> Held:
        return self

    def __next__(self) -> dict | None:
        try:
            return next(self._items)
        except BaseException:
            self._slot.release()
            raise

    def close(self) -> None:
        self._slot.release()
        self._items.close()


def _on_main(repo, commit: str, head: str | None) -> bool:
    """Whether main, at `head`, holds `commit` (a cluster member may have its objects before
    etcd accepted it, and a replica may not have moved main to it yet)."""
    return head is not None and remote.is_ancestor(repo, commit, head)


def _outcome(answer: Answer, commit: str | None) -> Served | NotFound:
    """The answer at `commit`, or the NotFound it raised (a thing that does not exist yet can
    be waited for)."""
    try:
        return answer(commit)
    except NotFound as exc:
        return exc


def _same(one: Served | NotFound, other: Served | NotFound) -> bool:
    """Whether two answers are the same: equal inputs (cheap, no data compared), else equal
    data (a layer changed under an unchanged merged result)."""
    if isinstance(one, NotFound) or isinstance(other, NotFound):
        return type(one) is type(other) and str(one) == str(other)
    if one.inputs and one.inputs == other.inputs:
        return True
    return one.data == other.data


def _settled(outcome: Served | NotFound) -> Served:
    if isinstance(outcome, NotFound):
        raise outcome
    return outcome
