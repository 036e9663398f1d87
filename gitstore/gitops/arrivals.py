"""Commits that reach `main` through git rather than through a library write: an accepted push
(counted by the pre-receive hook before git moves `main`, or when the HTTP view lands a push it
re-aimed at its staging ref) and a mirror sync's fast-forward."""

from __future__ import annotations

from pathlib import Path

from gitstore import metrics
from gitstore.backend import remote
from gitstore.backend.repository import MAIN, Repository


def record_accepted(git_dir: Path, name: str, updates: list[tuple[str, str, str]]) -> None:
    """Count and log the commits each accepted update of `main` adds (objects in quarantine)."""
    for old, new, ref in updates:
        if ref != MAIN or new == remote.ZERO:
            continue
        repo = Repository(git_dir, name)
        remote.include_quarantine(repo)
        metrics.commits_arrived("push", name, old, new, remote.commits_between(repo, old, new))


def record_mirrored(repo: Repository, name: str, old: str | None, new: str) -> None:
    """Count and log the commits a mirror sync's fast-forward of `main` served."""
    metrics.commits_arrived("mirror", name, old or "", new, remote.commits_between(repo, old, new))


def record_landed(repo: Repository, old: str, new: str) -> None:
    """Count and log the commits a re-aimed push brought when the HTTP view landed it on `main`
    (the pre-receive hook saw only the staging ref)."""
    metrics.commits_arrived("push", repo.name, old, new, remote.commits_between(repo, old, new))
