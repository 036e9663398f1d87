"""Compare-and-swap of a branch ref, safe across threads and processes.

pygit2 has no conditional ref update (see shared/FACTS.md), so this module speaks git's own
lockfile protocol: create `<ref>.lock` exclusively, check the current value, write the new one
into the lock file and rename it over the ref. `git receive-pack` (a `git push`) and libgit2 take
the same lock file, so a push and an API write can never both move `main` from the same parent.

A live holder's lock is never broken, however long it stalls (a paused process, a slow disk):
breaking one and renaming "our" lock path afterwards is how an acknowledged write gets lost.
So every gitstore holder first takes an `flock` on `gitstore-ref.lock` (the *guard*) and keeps it
until its lock file is gone; the kernel drops it when the holder dies. Only a process holding the
guard ever judges a `.lock` file, so it can never be a live gitstore holder's. What it finds is:

- a lock named in the guard's record: a gitstore holder wrote it, recorded it, and died before
  renaming it. Broken at once.
- any other lock: git's own (a push, `git update-ref`), or a gitstore holder that died in the
  microseconds between creating and recording it. Broken only when provably dead: older than
  `STALE_LOCK_SECONDS` *and* no other process works in the repository (`others_in`). A live
  `git receive-pack` always runs inside the repository, so its lock is waited for.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from gitstore.errors import Conflict
from gitstore.files import fsync_folder

STALE_LOCK_SECONDS = 5.0
LOCK_TIMEOUT_SECONDS = 30.0
GUARD = "gitstore-ref.lock"

_log = logging.getLogger(__name__)


def read_ref(git_dir: Path, ref: str) -> str | None:
    """The commit id a ref points at (loose file first, then packed-refs), or None.

    Read with bare `os` calls: every request reads a ref or two, and `Path.read_text` costs
    several times as much (text decoding set-up).
    """
    try:
        fd = os.open(os.path.join(git_dir, ref), os.O_RDONLY)
    except FileNotFoundError:
        return _read_packed_ref(git_dir, ref)
    try:
        value = os.read(fd, 4096).decode().strip()
    finally:
        os.close(fd)
    if value.startswith("ref: "):
        return read_ref(git_dir, value[5:])
    return value or None


def _read_packed_ref(git_dir: Path, ref: str) -> str | None:
    try:
        lines = (git_dir / "packed-refs").read_text().splitlines()
    except FileNotFoundError:
        return None
    for line in lines:
        if line.startswith(("#", "^")):
            continue
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return None


def compare_and_swap(
    git_dir: Path, ref: str, expected: str | None, new: str, *, durable: bool = True
) -> bool:
    """Point `ref` at `new` if it still points at `expected` (None: does not exist yet).

    The rename makes the move atomic for readers and safe against a killed process. `durable`
    also flushes the ref and its folder to disk before returning, so that the move survives a
    power loss; that is only worth its cost when the objects it names are flushed too (see
    `Repository`: git's `core.fsyncObjectFiles`).
    """
    ref_path = git_dir / ref
    lock_path = ref_path.with_name(ref_path.name + ".lock")
    deadline = time.monotonic() + LOCK_TIMEOUT_SECONDS
    with _guard(git_dir, deadline) as guard:
        fd = _acquire(git_dir, lock_path, guard, deadline)
        renamed = False
        try:
            if read_ref(git_dir, ref) != expected:
                return False
            os.write(fd, (new + "\n").encode())
            if durable:
                os.fsync(fd)
            _record(guard, ref, os.fstat(fd))
            os.close(fd)
            fd = -1
            os.rename(lock_path, ref_path)
            renamed = True
            _record(guard, None, None)
            if durable:
                fsync_folder(ref_path.parent)
            return True
        finally:
            if fd >= 0:
                os.close(fd)
            if not renamed:
                _unlink_quietly(lock_path)
                _record(guard, None, None)


def recover_stale_locks(git_dir: Path, refs: Iterable[str], wait: float = 5.0) -> list[str]:
    """Remove the lock files of `refs` that no live process owns (see the module docstring).

    For the push gate: git never breaks a lock, so without this a lock left by a killed push
    would refuse every later push until a gitstore write happened to break it. Gives up quietly
    (returns nothing) if the guard stays held for `wait` seconds: its holder is live and will
    clean up after itself. Returns the lock files removed.
    """
    removed = []
    with contextlib.suppress(Conflict), _guard(git_dir, time.monotonic() + wait) as guard:
        for ref in refs:
            lock_path = git_dir / (ref + ".lock")
            if _break_if_dead(git_dir, lock_path, guard):
                removed.append(str(lock_path))
    return removed


@contextlib.contextmanager
def _guard(git_dir: Path, deadline: float) -> Iterator[int]:
    """Hold the repository's guard flock (see the module docstring); Conflict at `deadline`."""
    fd = os.open(git_dir / GUARD, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        _flock_until(fd, deadline)
        yield fd
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _flock_until(fd: int, deadline: float) -> None:
    delay = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise Conflict(f"{GUARD} stayed held too long (a ref writer is stalled)") from None
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def _acquire(git_dir: Path, lock_path: Path, guard: int, deadline: float) -> int:
    if not lock_path.parent.is_dir():  # a first tag or branch: its folder may not exist yet
        lock_path.parent.mkdir(parents=True, exist_ok=True)
    delay = 0.0005
    while True:
        try:
            return os.open(lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            _break_if_dead(git_dir, lock_path, guard)
        if time.monotonic() > deadline:
            raise Conflict(f"{lock_path.name} stayed locked for {LOCK_TIMEOUT_SECONDS:.0f}s")
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def _record(guard: int, ref: str | None, info: os.stat_result | None) -> None:
    """Name in the guard file the lock we hold (None: we hold none), for whoever finds it
    after we die. The inode and nanosecond mtime single out that very file."""
    text = f"{ref} {info.st_ino} {info.st_mtime_ns}\n" if ref and info else ""
    os.ftruncate(guard, 0)
    if text:
        os.pwrite(guard, text.encode(), 0)


def _recorded(guard: int) -> str:
    return os.pread(guard, 4096, 0).decode("utf-8", "replace")


def _break_if_dead(git_dir: Path, lock_path: Path, guard: int) -> bool:
    """Unlink `lock_path` if its holder is provably dead; we hold the guard. True if broken."""
    try:
        info = lock_path.stat()
    except FileNotFoundError:
        return False
    ref = lock_path.relative_to(git_dir).as_posix().removesuffix(".lock")
    if _recorded(guard) == f"{ref} {info.st_ino} {info.st_mtime_ns}\n":
        why = "left by a gitstore writer that died"
    elif time.time() - info.st_mtime > STALE_LOCK_SECONDS and not others_in(git_dir):
        why = f"{time.time() - info.st_mtime:.0f}s old, no process works in the repository"
    else:
        return False
    _log.warning("breaking lock %s: %s", lock_path, why)
    _unlink_quietly(lock_path)
    _record(guard, None, None)
    return True


def others_in(git_dir: Path) -> bool:
    """Whether a process other than us and our ancestors may be using the repository: its
    working folder is inside it, or its command line or GIT_DIR names it. git runs inside the
    repository it serves (`receive-pack` enters it) or names it (`--git-dir`).

    Without /proc nothing can be proved: every process is assumed to be a user. Processes we
    may not inspect (another user's) are assumed not to be: run gitstore and git as one user.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    repo = str(Path(git_dir).resolve())
    mine = _ancestors()
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in mine:
            continue
        with contextlib.suppress(OSError):
            if _uses(entry, repo):
                return True
    return False


def _uses(entry: Path, repo: str) -> bool:
    cwd = os.readlink(entry / "cwd")
    if cwd == repo or cwd.startswith(repo + "/"):
        return True
    if repo.encode() in (entry / "cmdline").read_bytes():
        return True
    return f"GIT_DIR={repo}\0".encode() in (entry / "environ").read_bytes() + b"\0"


def _ancestors() -> set[int]:
    """This process and its parents (a push gate runs under the receive-pack it serves)."""
    pids, pid = set(), os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rpartition(")")[2].split()[1])
    return pids


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
