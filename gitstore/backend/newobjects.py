"""The objects of commits being made, kept in memory and then written as one pack.

`NewObjects` is a pygit2 handle on a repository whose writes (blobs, trees, commits made with
pygit2's own calls, so their bytes and ids are libgit2's) stay in memory, while its reads find
both those objects and the repository's, packed or loose. `write()` then lands everything
written as one pack (`packfile.py`), instead of one loose file per object; another process's
libgit2 finds that pack when it first misses one of its objects (it re-scans the pack folder on
a miss).

A handle lives for one batch of commits (a round of `CommitQueue`): libgit2 keeps the objects
a handle saw in a cache, so a handle must never outlive the objects it wrote but did not land.
Its memory layer is Python, called by libgit2: a pygit2 call that releases the GIL while
libgit2 reads objects (a revision walk, `Repository.walk`) must not run on it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Collection, Iterator
from pathlib import Path

import pygit2

from gitstore.backend import handles, packfile

#: Packs past which a round's objects are written loose instead, while maintenance rolls packs
#: up (a repack in the last `MAINTAINED_SECONDS`): under a burst of writes packs pass
#: maintenance's `PACK_LIMIT` while a roll-up runs, and loose files would bring back the cost
#: packs avoid (file creation on a disk where many were just deleted).
PACKS_BEFORE_LOOSE = 300
#: The same without maintenance (a store used by the library or the command line alone, never
#: served): packs would pile up one per commit, and every read that misses one searches them
#: all; a loose object costs a file but no search.
PACKS_BEFORE_LOOSE_UNMAINTAINED = 50
MAINTAINED_SECONDS = 60.0


def packs_before_loose(repo: Path) -> int:
    """How many packs `repo` may hold before a round is written loose (`handles.REPACKED` is
    replaced by every repack maintenance makes)."""
    try:
        repacked = os.stat(repo / handles.REPACKED).st_mtime
    except FileNotFoundError:
        return PACKS_BEFORE_LOOSE_UNMAINTAINED
    maintained = time.time() - repacked < MAINTAINED_SECONDS
    return PACKS_BEFORE_LOOSE if maintained else PACKS_BEFORE_LOOSE_UNMAINTAINED


def durable(git: pygit2.Repository) -> bool:
    """Whether a repository's writes must survive a power loss (git's `core.fsyncObjectFiles`):
    its packs are then flushed before a ref names them."""
    try:
        return git.config.get_bool("core.fsyncObjectFiles")
    except (KeyError, pygit2.GitError):
        return False


def land(path: Path, objects: Collection[tuple[int, bytes]], *, durable: bool) -> Path | None:
    """Write `objects` ((kind, data), each distinct) into repository `path` as one pack, and
    return it; past `packs_before_loose` packs, one loose file each instead (None)."""
    folder = path / "objects" / "pack"
    if packfile.count(folder) < packs_before_loose(path):
        return packfile.write_pack(folder, objects, durable=durable)
    loose = pygit2.Repository(str(path)).odb
    for kind, data in objects:
        loose.write(kind, data)
    return None


class NewObjects:
    """A write-only layer over one repository: what is written stays here until `write()`."""

    def __init__(self, path: Path, *, durable: bool) -> None:
        """`durable`: flush the pack to disk before `write()` returns (git's
        `core.fsyncObjectFiles`)."""
        self._path = Path(path)
        self._durable = durable
        self._memory = _Memory()
        odb = pygit2.Odb()
        # The repository's own stores as alternates, which libgit2 never writes to: a write
        # goes to the memory layer, or is skipped when the object exists already.
        # Interned: pygit2 keeps a reference to the path string it is given (one string per
        # repository, not one per round; see snapshot.py).
        odb.add_disk_alternate(sys.intern(str(self._path / "objects")))
        odb.add_backend(self._memory, 1)
        #: The handle to build commits with (and to read them back before they are written).
        self.git = pygit2.Repository(str(self._path))
        self.git.set_odb(odb)

    def __len__(self) -> int:
        return len(self._memory.objects)

    def write(self) -> Path | None:
        """Land every object written so far as one pack (None: there were none, or too many
        packs wait for maintenance and they were written loose), and start empty again."""
        if not self._memory.objects:
            return None
        pack = land(self._path, self._memory.objects.values(), durable=self._durable)
        self._memory.objects = {}
        return pack


class _Memory(pygit2.OdbBackend):
    """libgit2's view of the objects written: its read, write and lookup callbacks.

    A missing object raises KeyError, which pygit2 hands libgit2 as "not found" (it then
    asks the next store).
    """

    def __init__(self) -> None:
        super().__init__()
        self.objects: dict[pygit2.Oid, tuple[int, bytes]] = {}  # in the order written

    def write_cb(self, oid: pygit2.Oid, data: bytes, kind: int) -> None:
        self.objects[oid] = (kind, data)

    def exists_cb(self, oid: pygit2.Oid) -> bool:
        return oid in self.objects

    def read_cb(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        return self.objects[oid]

    def read_header_cb(self, oid: pygit2.Oid) -> tuple[int, int]:
        kind, data = self.objects[oid]
        return kind, len(data)

    def read_prefix_cb(self, prefix: str) -> tuple[int, bytes, pygit2.Oid]:
        oid = self.exists_prefix_cb(prefix)
        kind, data = self.objects[oid]
        return kind, data, oid

    def exists_prefix_cb(self, prefix: str) -> pygit2.Oid:
        if len(prefix) == 40:
            oid = pygit2.Oid(hex=prefix)
            if oid in self.objects:
                return oid
            raise KeyError(prefix)
        found = [oid for oid in self.objects if str(oid).startswith(prefix)]
        if len(found) > 1:
            raise ValueError(f"{prefix} names several objects")
        if not found:
            raise KeyError(prefix)
        return found[0]

    def refresh_cb(self) -> None:
        pass  # nothing on disk to look at again

    def __iter__(self) -> Iterator[pygit2.Oid]:
        return iter(list(self.objects))
