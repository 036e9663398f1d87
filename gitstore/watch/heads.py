"""Wait, without polling git, until the head of an environment's `main` moves.

One `Heads` per process (the Store builds it): the first waiter starts one reader (a thread;
a greenlet in a gevent worker, whose `monkey.patch_all()` makes `threading` and `select`
cooperative) that blocks on one inotify descriptor watching `refs/heads/` and the repository
folder (`packed-refs`) of each environment someone waits on, and wakes that environment's
waiters. A waiter holds only a condition variable: no OS thread, no git reads while parked.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gitstore.watch.inotify import IN_Q_OVERFLOW, Inotify, InotifyUnavailable

if TYPE_CHECKING:
    from gitstore.repositories import Repositories

log = logging.getLogger(__name__)
#: Where inotify is missing, waiters re-read the head this often (a fallback, logged once).
FALLBACK_SECONDS = 1.0
_IGNORED = 0x00008000  # IN_IGNORED: the folder went away (environment deleted)


class _Signal:
    """A generation counter with a condition: waiters sleep until it moves."""

    def __init__(self) -> None:
        self.generation = 0
        self._condition = threading.Condition()

    def bump(self) -> None:
        with self._condition:
            self.generation += 1
            self._condition.notify_all()

    def wait(self, seen: int, timeout: float) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self.generation != seen, timeout)


class Heads:
    """The head of each environment's `main`, and a way to wait until it moves."""

    def __init__(self, repos: Repositories) -> None:
        self._repos = repos
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._inotify: Inotify | None = None
        self._watched: dict[int, tuple[int, str]] = {}  # watch descriptor -> (env id, file)
        self._signals: dict[int, _Signal] = {}
        self.wakeups = 0  # events that woke someone (for tests and the benchmark)
        #: Set when the process stops: every wait returns at once (`close`).
        self.closing = False

    def head(self, env_id: int) -> str | None:
        return self._repos.environment_repo(env_id).head()

    def wait(self, env_id: int, seen: str | None, timeout: float) -> str | None:
        """Block until the head of environment `env_id` is no longer `seen`, or `timeout`
        seconds pass; return the head then."""
        deadline = time.monotonic() + max(timeout, 0.0)
        signal = self._signal(env_id)
        while True:
            generation = signal.generation
            head = self.head(env_id)
            remaining = deadline - time.monotonic()
            if head != seen or remaining <= 0 or self.closing:
                return head
            if self._inotify is None:
                remaining = min(remaining, FALLBACK_SECONDS)
            signal.wait(generation, remaining)

    def close(self) -> None:
        """Wake every waiter and make every later wait return at once: the process stops, and
        a graceful stop waits for the requests it holds."""
        self.closing = True
        for signal in list(self._signals.values()):
            signal.bump()

    def _signal(self, env_id: int) -> _Signal:
        """The signal of `env_id`, its folders watched (again, if the environment was
        re-created: watching a folder already watched is one cheap system call)."""
        with self._lock:
            self._start()
            signal = self._signals.setdefault(env_id, _Signal())
            if self._inotify is not None:
                path = Path(self._repos.environment_path(env_id))
                self._watch(env_id, path / "refs" / "heads", "main")
                self._watch(env_id, path, "packed-refs")
            return signal

    def _watch(self, env_id: int, folder: Path, name: str) -> None:
        assert self._inotify is not None  # watches are added once the reader started
        try:
            self._watched[self._inotify.add_watch(folder)] = (env_id, name)
        except OSError as exc:  # a missing folder: the read of the head reports it
            log.debug("cannot watch %s: %s", folder, exc)

    def _start(self) -> None:
        """Start the reader once per process (a forked worker starts its own)."""
        if self._pid == os.getpid():
            return
        self._pid = os.getpid()
        self._watched, self._signals = {}, {}
        try:
            self._inotify = Inotify()
        except InotifyUnavailable as exc:
            log.warning("no inotify (%s): watchers re-read heads every %ss", exc, FALLBACK_SECONDS)
            self._inotify = None
            return
        reader = threading.Thread(
            target=self._read_forever, args=(self._inotify,), name="gitstore-heads", daemon=True
        )
        reader.start()

    def _read_forever(self, inotify: Inotify) -> None:
        while True:
            select.select([inotify.fd], [], [])
            for wd, mask, name in inotify.read():
                self._dispatch(wd, mask, name)

    def _dispatch(self, wd: int, mask: int, name: str) -> None:
        if mask & IN_Q_OVERFLOW:  # events were lost: wake everyone to re-read
            for each in list(self._signals.values()):
                each.bump()
            return
        target = self._watched.get(wd)
        if target is None:
            return
        env_id, wanted = target
        if mask & _IGNORED:
            self._watched.pop(wd, None)
        elif name != wanted:
            return
        signal = self._signals.get(env_id)
        if signal is not None:
            self.wakeups += 1
            signal.bump()
