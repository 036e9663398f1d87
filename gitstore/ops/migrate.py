"""`gitstore migrate`: move a store of an older format forward to this gitstore's format.

Each format step changes every repository on its own, atomically (a repository's new files are
written beside the old ones and renamed over them), after copying what it changes into
`<root>/backups/format-<from>-<stamp>/`. `store.yaml` is written last: a migration killed
half-way leaves a store of the old format whose migrated repositories are already in the new
layout, and running `gitstore migrate` again finishes it (every step may run twice).

A served store is refused (the server holds `gitstore-server.lock`, `gitstore.storeformat`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gitstore import storeformat
from gitstore.backend.repository import GIT_SETTINGS
from gitstore.errors import NotFound, Unavailable
from gitstore.ops.health import repository_paths

BACKUPS = "backups"


@dataclass
class Migration:
    """What a migration does (a dry run) or did: formats, steps, where the backup went."""

    root: str
    from_format: int
    to_format: int
    steps: list[str] = field(default_factory=list)
    backup: str | None = None


def _to_1(root: Path, backup: Path | None, steps: list[str]) -> None:
    """Format 1: repositories leave packing to gitstore's maintenance (`GIT_SETTINGS`)."""
    for name, path in repository_paths(root):
        steps.append(f"{name}: set {', '.join(f'{k}={v}' for k, v in GIT_SETTINGS.items())}")
        if backup is not None:
            _copy(path / "config", backup / name / "config")
            _rewrite_config(path, GIT_SETTINGS)


#: Step to format N+1 at index N.
_STEPS: list[Callable[[Path, Path | None, list[str]], None]] = [_to_1]


def migrate(root: str | os.PathLike, *, dry_run: bool = False) -> Migration:
    """Move the store at `root` to `storeformat.CURRENT` (a dry run only lists the steps)."""
    root = Path(root)
    found = storeformat.read(root)
    if not found.exists:
        raise NotFound(f"{root} is not a gitstore root (no catalog.git); run gitstore init")
    report = Migration(str(root), found.version, storeformat.CURRENT)
    if found.version == storeformat.CURRENT:
        return report
    with storeformat.held_for_migration(root):
        backup = None
        if not dry_run:
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            backup = root / BACKUPS / f"format-{found.version}-{stamp}"
            backup.mkdir(parents=True)
            report.backup = str(backup)
            if (root / storeformat.FILE).exists():
                _copy(root / storeformat.FILE, backup / storeformat.FILE)
        for version in range(found.version, storeformat.CURRENT):
            _STEPS[version](root, backup, report.steps)
        report.steps.append(f"{storeformat.FILE}: format {storeformat.CURRENT}")
        if not dry_run:
            storeformat.write(root, storeformat.CURRENT)
    return report


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)


def _rewrite_config(repo: Path, settings: dict[str, str]) -> None:
    """Set `settings` in a repository's config at once: a copy changed, then renamed over it."""
    new = repo / "config.migrating"
    shutil.copy2(repo / "config", new)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    for key, value in settings.items():
        done = subprocess.run(
            ["git", "config", "--file", str(new), key, value],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            new.unlink(missing_ok=True)
            raise Unavailable(f"{repo}: git config {key} failed: {done.stderr.strip()}")
    with open(new, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(new, repo / "config")
