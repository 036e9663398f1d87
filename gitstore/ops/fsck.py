"""`gitstore fsck`: every check of a whole store root, each problem named.

- `git fsck` of every repository (objects whole and connected, refs pointing at objects);
- every head passes the push gate's rules (the validation `gitstore validate` runs);
- no lock file of git's protocol left behind (`*.lock` older than a few seconds that no live
  process has open); gitstore's own `flock` files are never stale (the kernel drops them);
- no half-made repository (`.creating-*`, left by a crash while creating one);
- the keyring is present and opens every sealed value at every head (values are never shown).

A store being served can be checked: a lock or `.creating-*` folder younger than the grace
period is work in progress, not a problem.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gitstore.backend.repository import Repository
from gitstore.errors import GitstoreError
from gitstore.gitops.service import validate_repository
from gitstore.ops.health import ENVIRONMENTS_DIR, repository_paths
from gitstore.secrets import cipher
from gitstore.secrets.keyring import Keyring, Keys
from gitstore.secrets.leaves import secret_leaves
from gitstore.secrets.rules import Rules
from gitstore.validation import format_problem

#: Seconds after which a lock or a `.creating-*` folder is left over, not in use (a live
#: writer holds a ref lock for about a millisecond; creating a repository takes well under).
GRACE_SECONDS = 60.0
#: gitstore's own lock files are `flock`s: they stay on disk and are never stale.
_FLOCK_PREFIX = "gitstore-"
_YAML = (".yaml", ".yml")


@dataclass(frozen=True)
class Problem:
    """One problem: its kind (`git-fsck`, `gate`, `stale-lock`, `half-made`, `keyring`), where
    it is, and what is wrong."""

    kind: str
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.where}: {self.message}"


def fsck(root: Path, grace: float = GRACE_SECONDS) -> list[Problem]:
    """Every problem of the store at `root` (empty: the store is sound)."""
    root = Path(root)
    problems: list[Problem] = []
    open_files = _open_files()
    broken = set()
    for name, path in repository_paths(root):
        damage = git_fsck(name, path)
        if damage:
            broken.add(name)  # its objects cannot be trusted: the gate and keyring checks skip it
        problems += damage or gate(name, path)
        problems += stale_locks(name, path, grace, open_files)
    problems += half_made(root, grace)
    problems += keyring(root, skip=broken)
    return problems


def git_fsck(name: str, path: Path) -> list[Problem]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", "--git-dir", str(path), "fsck", "--no-progress", "--no-dangling"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode == 0:
        return []
    lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    return [Problem("git-fsck", name, line) for line in lines[:20]] or [
        Problem("git-fsck", name, f"git fsck exited {done.returncode}")
    ]


def gate(name: str, path: Path) -> list[Problem]:
    """The push gate's rules on the head of main."""
    try:
        return [Problem("gate", name, format_problem(p)) for p in validate_repository(path)]
    except GitstoreError as exc:
        return [Problem("gate", name, f"main cannot be checked: {exc.message}")]


def stale_locks(
    name: str, path: Path, grace: float, open_files: set[str] | None = None
) -> list[Problem]:
    open_files = _open_files() if open_files is None else open_files
    found = []
    for lock in sorted(path.rglob("*.lock")):
        if lock.name.startswith(_FLOCK_PREFIX) or not lock.is_file():
            continue
        age = _age(lock)
        if age is not None and age > grace and str(lock.resolve()) not in open_files:
            where = f"{name}/{lock.relative_to(path).as_posix()}"
            found.append(
                Problem("stale-lock", where, f"left {age:.0f}s ago by a process that is gone")
            )
    return found


def half_made(root: Path, grace: float) -> list[Problem]:
    found = []
    for folder in (root, root / ENVIRONMENTS_DIR):
        if not folder.is_dir():
            continue
        for child in sorted(folder.glob(".creating-*")):
            age = _age(child)
            if age is not None and age > grace:
                found.append(
                    Problem(
                        "half-made",
                        child.relative_to(root).as_posix(),
                        f"a repository whose creation stopped {age:.0f}s ago; remove it",
                    )
                )
    return found


def keyring(root: Path, skip: set[str] | frozenset[str] = frozenset()) -> list[Problem]:
    """The keyring is present, readable, and opens every sealed value at every head."""
    ring = Keyring.of_root(root)
    if not ring.exists():
        return [Problem("keyring", str(ring.path), "missing: no sealed value can be read")]
    try:
        keys = ring.require()
    except GitstoreError as exc:
        return [Problem("keyring", str(ring.path), exc.message)]
    found = []
    for name, path in repository_paths(root):
        if name not in skip:
            found += _sealed_values_open(name, path, keys)
    return found


def _sealed_values_open(name: str, path: Path, keys: Keys) -> list[Problem]:
    place_repository = name.removesuffix(".git")  # `catalog`, `environments/<id>`
    try:
        snapshot = Repository(path, name).snapshot()
    except GitstoreError:
        return []  # git fsck and the gate report an unreadable main
    found = []
    for file, document in _documents(snapshot):
        for key_path, value, _ in secret_leaves(document, Rules(defaults=False)):
            if not cipher.is_sealed(value):
                continue
            try:
                cipher.open_sealed(value, keys.keys, cipher.Place(place_repository, file, key_path))
            except GitstoreError as exc:
                found.append(Problem("keyring", name, exc.message))
    return found


def _documents(snapshot) -> Iterator[tuple[str, dict]]:
    for file in snapshot.walk():
        if not file.endswith(_YAML) or file.startswith("."):
            continue
        try:
            document = snapshot.read_yaml(file)
        except GitstoreError:
            continue  # the gate reports unreadable YAML
        if isinstance(document, dict):
            yield file, document


def _age(path: Path) -> float | None:
    try:
        return time.time() - path.lstat().st_mtime
    except FileNotFoundError:
        return None


def _open_files() -> set[str]:
    """Every file some process of ours has open now (Linux `/proc`; empty elsewhere)."""
    found = set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        try:
            for fd in fd_dir.iterdir():
                found.add(os.readlink(fd))
        except OSError:
            continue  # a process that ended meanwhile, or one we may not look into
    return found
