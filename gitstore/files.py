"""Files of the store root that live outside every repository: access file, mirror settings,
allocation and intent records. Written atomically; guarded by `flock` across processes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from gevent.threadpool import ThreadPool

T = TypeVar("T")


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` atomically with `data`, readable by the owner only.

    The rename gives the file a new inode, so a reader that watches (inode, size, mtime) notices.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def exclusive_lock(path: Path, mode: int = 0o600) -> Iterator[None]:
    """Hold an exclusive `flock` on `path` (created if missing); the kernel drops it if the
    process dies, so a crash never leaves the store locked."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, mode)
    try:
        _flock_exclusive(fd)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _flock_exclusive(fd: int) -> None:
    """Wait for an exclusive `flock` on `fd` without stopping other green threads.

    Under gevent (`gitstore serve`'s worker), a blocking `flock` stops the whole worker
    process, the green thread that holds the lock included if it is the same process: a
    deadlock as soon as the holder yields (a subprocess, a sleep) inside its critical section.
    So there the wait is handed to an operating-system thread of the worker's own pool, which
    the kernel wakes the moment the lock is released. (Polling, sleeping between tries, left
    the lock idle while its waiters slept: writers in several gevent processes committed fewer
    writes per second than with the handed-off wait.)

    A green thread killed while it waits leaves its pool thread blocked on `fd`; the caller
    closes `fd`, so the lock that thread may still get dies with its last reference at once.
    """
    if not _green():
        fcntl.flock(fd, fcntl.LOCK_EX)
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        _lock_waiters().apply(fcntl.flock, (fd, fcntl.LOCK_EX))


#: The operating-system threads that wait for flocks in a gevent worker (created on first
#: use, so after gunicorn forked the worker). Not gevent's shared pool: a writer per
#: repository and every queued push may wait at once, and a full pool would stall what else
#: uses it (name resolution).
_WAITERS: list[ThreadPool] = []


def _lock_waiters() -> ThreadPool:
    if not _WAITERS:
        from gevent.threadpool import ThreadPool

        _WAITERS.append(ThreadPool(64))
    return _WAITERS[0]


def _green() -> bool:
    """Whether gevent has replaced this process's blocking primitives (a gevent worker)."""
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and monkey.is_module_patched("time")


def os_thread_local() -> threading.local:
    """Storage per operating-system thread, also in a gevent worker.

    There gevent makes `threading.local` per green thread, that is per request: a pygit2
    handle kept in one would be opened again for every request, its object cache lost. Green
    threads of one OS thread never run a C call at the same time, so they may share a handle.
    """
    if _green():
        local: type[threading.local] = sys.modules["gevent.monkey"].get_original(
            "threading", "local"
        )
        return local()
    return threading.local()


def fsync_folder(folder: Path) -> None:
    """Make a rename or unlink inside `folder` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WatchedFile(Generic[T]):
    """A file parsed again only when it changes, so every process sees a rewrite at once.

    The (inode, size, mtime, ctime) stamp changes with every `write_private`, which replaces the
    file; checking it costs one `stat` per call, far less than parsing.
    """

    def __init__(self, path: Path, parse: Callable[[os.stat_result], T]) -> None:
        self.path = path
        self._parse = parse
        self._mutex = threading.Lock()
        self._stamp: tuple[int, ...] | None = None
        self._value: T | None = None

    def current(self) -> T | None:
        """The parsed content, or None when the file does not exist."""
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return None
        stamp = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        with self._mutex:
            if stamp != self._stamp:
                self._value = self._parse(info)
                self._stamp = stamp
            return self._value
