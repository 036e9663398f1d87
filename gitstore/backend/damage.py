"""Damage on disk met while reading a repository: the named error, and a record for the status.

A corrupt ref, a ref to a missing object or an object that no longer inflates makes reads of that
one repository fail with `Damaged` (503) instead of a generic 500, and the damage is remembered
per repository so `GET /api/v1/status` reports it even when the status check itself cannot see it
(a corrupt blob deep in a tree is met only by the read that needs it). A remembered object that
reads again (restored from a backup) clears the record.
"""

from __future__ import annotations

import os
import threading

import pygit2

from gitstore.errors import Damaged

#: Repository folder -> (damage, the object id that was unreadable, if one was).
_SEEN: dict[str, tuple[str, str | None]] = {}
_LOCK = threading.Lock()


def damaged(
    path: str | os.PathLike[str], name: str, damage: str, object_id: str | None = None
) -> Damaged:
    """The error for `damage` of repository `name` at `path`, recorded for the status."""
    with _LOCK:
        _SEEN[_key(path)] = (damage, object_id)
    return Damaged(name, damage)


def recorded(path: str | os.PathLike[str], repo: pygit2.Repository) -> str | None:
    """Damage a read met in this process and that is still there; None if there is none."""
    key = _key(path)
    with _LOCK:
        found = _SEEN.get(key)
    if found is None:
        return None
    damage, object_id = found
    if object_id is not None and _readable(repo, object_id):
        with _LOCK:
            _SEEN.pop(key, None)
        return None
    return damage


def first_unreadable(repo: pygit2.Repository, tree: pygit2.Tree) -> str | None:
    """The first object below `tree` that does not read back whole, described; None if all do.

    Reads every object once (libgit2 checks each one's hash): a cost that grows with the
    store, so only an operator's `status?verify=1` pays it.
    """
    stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while stack:
        prefix, current = stack.pop()
        for entry in current:
            path = f"{prefix}{entry.name}"
            try:
                repo.odb.read(entry.id)
                if entry.type_str == "tree":
                    stack.append((f"{path}/", repo[entry.id].peel(pygit2.Tree)))
            except (KeyError, ValueError, pygit2.GitError) as exc:
                return f"{path} (object {entry.id}) is unreadable ({exc})"
    return None


def _readable(repo: pygit2.Repository, object_id: str) -> bool:
    try:
        repo.odb.read(object_id)
    except (KeyError, ValueError, pygit2.GitError):
        return False
    return True


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(path)
