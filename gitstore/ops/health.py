"""Readiness: can this store root serve? Every repository's `main` resolves to a commit, the
keyring is present and readable, and the disk has room for writes.

Self-contained on purpose: it reads refs and objects itself rather than through the services
it checks, so a fault in them cannot hide behind the fault it should report.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitstore.backend import remote
from gitstore.backend.repository import Repository
from gitstore.errors import GitstoreError
from gitstore.names import is_number
from gitstore.secrets.keyring import Keyring

GIB = 1024**3
#: The store's layout (docs/store-format.md); `gitstore.store` names them too, but this package
#: sits below the facade.
CATALOG_REPO = "catalog.git"
ENVIRONMENTS_DIR = "environments"
DEFAULT_MIN_FREE_DISK = GIB


@dataclass(frozen=True)
class Check:
    """One readiness check: its name, whether it passed, and what failed."""

    name: str
    ok: bool
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"name": self.name, "ok": self.ok}
        if self.message:
            found["message"] = self.message
        return found


def repository_paths(root: Path) -> list[tuple[str, Path]]:
    """(name, folder) of every repository of the store at `root`: the catalog, then
    environments by id."""
    found = [(CATALOG_REPO, root / CATALOG_REPO)]
    folder = root / ENVIRONMENTS_DIR
    ids = []
    if folder.is_dir():
        for child in folder.iterdir():
            stem = child.name.removesuffix(".git")
            if child.name.endswith(".git") and is_number(stem) and (child / "HEAD").exists():
                ids.append(int(stem))
    found += [(f"{ENVIRONMENTS_DIR}/{i}.git", folder / f"{i}.git") for i in sorted(ids)]
    return found


class Readiness:
    """The readiness checks of one store root (keeps repository handles between probes)."""

    def __init__(self, root: Path, min_free_disk: int = DEFAULT_MIN_FREE_DISK) -> None:
        self.root = Path(root)
        self.min_free_disk = min_free_disk
        self._repos: dict[Path, Repository] = {}

    def report(self) -> dict[str, Any]:
        """`{"ready": bool, "checks": [{"name", "ok", "message"?}, ...]}`."""
        checks = [*self._repositories(), self._keyring(), self._disk()]
        return {"ready": all(c.ok for c in checks), "checks": [c.as_dict() for c in checks]}

    def _repositories(self) -> list[Check]:
        return [self._main_of(name, path) for name, path in repository_paths(self.root)]

    def _main_of(self, name: str, path: Path) -> Check:
        check = f"repository {name}"
        if not (path / "HEAD").exists():
            return Check(check, False, f"{path} is not a repository")
        repo = self._repos.get(path) or self._repos.setdefault(path, Repository(path, name))
        try:
            head = repo.head()
        except (GitstoreError, OSError, ValueError) as exc:
            return Check(check, False, f"main cannot be read: {exc}")
        if head is None:
            return Check(check, False, "main does not exist")
        try:
            found = remote.has_commit(repo, head)
        except Exception as exc:  # noqa: BLE001 - a corrupt object store: report, never 500
            return Check(check, False, f"main's commit {head[:12]} cannot be read: {exc}")
        if not found:
            return Check(check, False, f"main names {head[:40]!r}, which is not a commit here")
        return Check(check, True)

    def _keyring(self) -> Check:
        keyring = Keyring.of_root(self.root)
        if not keyring.exists():
            return Check("keyring", False, f"no keyring at {keyring.path}")
        try:
            keyring.require()
        except GitstoreError as exc:
            return Check("keyring", False, exc.message)
        return Check("keyring", True)

    def _disk(self) -> Check:
        free = shutil.disk_usage(self.root).free
        if free < self.min_free_disk:
            return Check(
                "disk",
                False,
                f"{free} bytes free under {self.root}, below the minimum {self.min_free_disk}",
            )
        return Check("disk", True)


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "m": 1000**2,
    "g": 1000**3,
    "t": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}


def parse_size(text: str) -> int:
    """Bytes of `1GiB`, `500M`, `1048576`; ValueError naming the input otherwise."""
    cleaned = str(text).strip().lower()
    number = cleaned.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
    unit = cleaned[len(number) :].strip()
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if unit not in _UNITS or not value >= 0:
        raise ValueError(f"{text!r} is not a size: use bytes or K, M, G, T, KiB, MiB, GiB, TiB")
    return int(value * _UNITS[unit])
