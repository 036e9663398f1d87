"""The format of a store root: `<root>/store.yaml`, and the server's hold on a root.

`store.yaml` says which layout a root has (`format: N`). A gitstore serves and changes only
stores of its own format (`CURRENT`):

- newer: refused by every command and by `serve`, naming both formats (an older gitstore would
  misread it);
- older, and a store without the file (made before formats existed: format 0): served
  read-only, every write refused naming `gitstore migrate`, which moves it forward;
- a file that is unreadable, or holds no format number: refused, naming how to fix it.

`gitstore init` writes the file for a new store. A running server holds a shared `flock` on
`<root>/gitstore-server.lock` (with its pid written inside) for as long as it serves, so that
`gitstore migrate` can refuse a served store naming the server, and a server cannot start while
a migration holds it.

Formats: 0 (no file), 1 (`store.yaml`; every repository leaves packing to gitstore's own
maintenance: `gc.auto` 0, `receive.autoGC` false).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gitstore import yamlio
from gitstore.errors import Conflict, GitstoreError, Unavailable

FILE = "store.yaml"
CURRENT = 1
SERVER_LOCK = "gitstore-server.lock"
_CATALOG = "catalog.git"


@dataclass(frozen=True)
class StoreFormat:
    """The format a root holds, and whether this gitstore may change it."""

    root: Path
    version: int  # 0: a store made before format files
    exists: bool  # whether the root holds a store at all

    @property
    def writable(self) -> bool:
        return not self.exists or self.version == CURRENT

    def check_writable(self) -> None:
        """Refuse a write to a store of an older format (served read-only until migrated)."""
        if not self.writable:
            raise Conflict(
                f"the store at {self.root} has format {self.version} and this gitstore writes "
                f"format {CURRENT}: it is served read-only until "
                f"`gitstore migrate --root {self.root}` moves it forward (docs/operations.md)"
            )


def read(root: str | os.PathLike) -> StoreFormat:
    """The format of the store at `root`; refuses a newer or unreadable one."""
    root = Path(root)
    path = root / FILE
    exists = (root / _CATALOG).is_dir()
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return StoreFormat(root, 0, exists)
    except OSError as exc:
        raise _unreadable(path, str(exc)) from exc
    version = _version(path, text)
    if version > CURRENT:
        raise Unavailable(
            f"the store at {root} has format {version}, newer than format {CURRENT} that this "
            "gitstore reads: serve it with the gitstore that wrote it, or a newer one"
        )
    return StoreFormat(root, version, exists)


def _version(path: Path, text: bytes) -> int:
    try:
        data = yamlio.load(text, path=str(path))
    except GitstoreError as exc:
        raise _unreadable(path, exc.message) from exc
    version = data.get("format") if isinstance(data, dict) else None
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _unreadable(path, "it holds no `format: <number>` of 1 or more")
    return version


def _unreadable(path: Path, why: str) -> Unavailable:
    return Unavailable(
        f"{path} is unreadable ({why}): restore it from a backup, or remove it and run "
        f"`gitstore migrate --root {path.parent}`, which writes it again"
    )


def write(root: str | os.PathLike, version: int = CURRENT) -> None:
    """Record `version` in `<root>/store.yaml` (atomically: a crash leaves the old file)."""
    path = Path(root) / FILE
    temporary = path.with_name(f".{FILE}.tmp")
    temporary.write_text(
        f"# The layout of this gitstore root (docs/store-format.md); `gitstore migrate` "
        f"changes it.\nformat: {version}\n"
    )
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(temporary, path)


# -- the server's hold on a root ---------------------------------------------------------------
def hold_for_serving(root: str | os.PathLike) -> int:
    """Take the root's server lock (shared) for this process and the workers it forks, with
    our pid written in it; the open descriptor, kept until the process ends."""
    path = Path(root) / SERVER_LOCK
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise Conflict(
            f"{root} is being migrated (gitstore migrate): serve it afterwards"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


@contextlib.contextmanager
def held_for_migration(root: str | os.PathLike) -> Iterator[None]:
    """The root's server lock, exclusively: refused naming the pid of a server that serves it."""
    path = Path(root) / SERVER_LOCK
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise Conflict(
                f"{root} is being served by gitstore serve (pid {pid}): stop that server "
                "before migrating the store"
            ) from None
        yield
    finally:
        os.close(fd)
