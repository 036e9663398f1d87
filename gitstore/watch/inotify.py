"""A small ctypes wrapper of Linux inotify: the cross-process wake-up of watchers.

Every process that moves `main` (a gunicorn worker's REST write, `git receive-pack` after the
push gate, a mirror sync) replaces `refs/heads/main` by renaming a lock file over it, and
`git pack-refs` rewrites `packed-refs` the same way; the kernel reports each rename to every
process watching the folder, so no process has to poll git to learn that a commit landed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from collections.abc import Iterator

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_Q_OVERFLOW = 0x00004000
IN_ONLYDIR = 0x01000000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
#: A ref lands by rename (lock file moved over it) or, rarely, by writing in place.
REF_EVENTS = IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MODIFY
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)


class InotifyUnavailable(OSError):
    """This system offers no inotify (not Linux, or the instance limit is reached)."""


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        raise InotifyUnavailable("libc has no inotify_init1")
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc


class Inotify:
    """One inotify instance: a non-blocking file descriptor reporting events of watched folders."""

    def __init__(self) -> None:
        self._libc = _libc()
        fd = self._libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            errno = ctypes.get_errno()
            raise InotifyUnavailable(errno, f"inotify_init1: {os.strerror(errno)}")
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def add_watch(self, path: str | os.PathLike, mask: int = REF_EVENTS) -> int:
        """Watch folder `path`; the watch descriptor names it in events (the same folder
        watched twice gives the same descriptor)."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask | IN_ONLYDIR)
        if wd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"inotify_add_watch {path}: {os.strerror(errno)}")
        return wd

    def read(self) -> list[tuple[int, int, str]]:
        """The pending events as (watch descriptor, mask, file name); [] when none are pending."""
        try:
            raw = os.read(self.fd, 64 * 1024)
        except BlockingIOError:
            return []
        return list(_parse(raw))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _parse(raw: bytes) -> Iterator[tuple[int, int, str]]:
    offset = 0
    while offset + _HEADER.size <= len(raw):
        wd, mask, _cookie, length = _HEADER.unpack_from(raw, offset)
        start = offset + _HEADER.size
        name = raw[start : start + length].rstrip(b"\0").decode("utf-8", "replace")
        yield wd, mask, name
        offset = start + length
