"""Which commits changed what: the change log of layer documents, and the history of one
effective value.

Both go down the first-parent chain of `main` newest first. A commit is examined through the ids
of the objects it changed (subtrees with equal ids are never opened), and an effective value is
re-merged only at commits where one of its layer blobs, or `environment.yaml`, differs. Where
the question names its files or folders (a scope, a resource), only the commits that changed
them are visited, found in main's index (`Repository.commits_changing`): the cost follows the
number of relevant changes, not the length of history.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from gitstore import keypaths
from gitstore.backend.repository import Repository
from gitstore.backend.revisions import FileChange
from gitstore.configdb.scopes import effective_document, folder, layer_paths
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.errors import GitstoreError
from gitstore.layout import ENVIRONMENT_FILE, EnvironmentView, LevelPairs, parse_data_path, scope_of
from gitstore.merge.diff import changed_keys, related, same_value
from gitstore.names import RESERVED_TOP_LEVEL

#: Top-level entries that never hold layer documents (`global` does).
_NOT_LAYERS = sorted(RESERVED_TOP_LEVEL - {"global"})
_MISSING = object()


@dataclass(frozen=True)
class Walk:
    """A walk from `start` back to `stop` (excluded) collecting at most `limit` entries, each
    commit a step of `deadline` (which yields to other requests and cuts the walk)."""

    start: str
    stop: str | None
    limit: int
    deadline: Deadline = UNBOUNDED


def commits(repo: Repository, walk: Walk) -> Iterator[str]:
    """Commit ids of the first-parent chain from `walk.start`, newest first, until `walk.stop`."""
    current: str | None = walk.start
    while current is not None and current != walk.stop:
        walk.deadline.check()
        yield current
        current = repo.parent(current)


def entry(repo: Repository, commit_id: str) -> dict[str, Any]:
    """The common fields of a history entry."""
    info = repo.commit_info(commit_id)
    return {
        "version": repo.depth(commit_id),
        "commit": info.commit,
        "author": info.author,
        "email": info.email,
        "date": info.date,
        "message": info.message,
    }


def recent(repo: Repository, walk: Walk) -> list[dict[str, Any]]:
    """The common fields of the first `walk.limit` commits of the walk, newest first."""
    return [entry(repo, commit_id) for commit_id in islice(commits(repo, walk), walk.limit)]


# -- the change log -----------------------------------------------------------------------------
def change_log(
    repo: Repository, walk: Walk, pairs: LevelPairs | None, resource: str | None, key: str | None
) -> list[dict[str, Any]]:
    """Commits that changed layer documents, each with its changes, newest first.

    Without filters every commit is listed (`changes` may be empty). `pairs` keeps the changes of
    the documents that feed that scope (global and each level value of it), `resource` those of
    one resource, `key` those that touched a key path at, above or below `key`.
    """
    under, skip = _folders(pairs, resource)
    filtered = pairs is not None or resource is not None or key is not None
    candidates = (
        commits(repo, walk)
        if "" in under  # the whole tree: every commit is a candidate
        else repo.commits_changing(walk.start, walk.stop, under, walk.deadline)
    )
    entries = []
    for commit_id in candidates:
        changes = [
            change
            for change in (_describe(repo, fc) for fc in repo.changed_files(commit_id, under, skip))
            if change is not None and _wanted(change, resource, key)
        ]
        if changes or not filtered:
            entries.append({**entry(repo, commit_id), "changes": changes})
        if len(entries) >= walk.limit:
            break
    return entries


def _folders(pairs: LevelPairs | None, resource: str | None) -> tuple[list[str], list[str]]:
    if pairs is None:
        return [""], _NOT_LAYERS
    if resource is not None:
        return layer_paths(pairs, resource), []
    return [folder(pair) for pair in [None, *pairs]], []


def _describe(repo: Repository, change: FileChange) -> dict[str, Any] | None:
    parsed = parse_data_path(change.path)
    if parsed is None:
        return None
    pair, kind, resource = parsed
    old, new = _document(repo, change.old, change.path), _document(repo, change.new, change.path)
    return {
        "level": scope_of([pair] if pair else []),
        "resource": resource,
        "kind": kind,
        "file": change.path,
        **changed_keys(old, new),
    }


def _document(repo: Repository, blob_id: str | None, path: str) -> dict:
    """A layer document of the past; one that never parsed counts as empty, not as an error."""
    if blob_id is None:
        return {}
    try:
        doc = repo.blob_yaml(blob_id, path)
    except GitstoreError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _wanted(change: dict, resource: str | None, key: str | None) -> bool:
    if resource is not None and change["resource"] != resource:
        return False
    if key is None:
        return True
    touched = change["keys_added"] + change["keys_removed"] + change["keys_changed"]
    return any(related(key, other) for other in touched)


# -- one effective value ------------------------------------------------------------------------
def value_history(
    repo: Repository, walk: Walk, pairs: LevelPairs, resource: str, key: str
) -> list[dict[str, Any]]:
    """Commits where the effective value of `key` at scope `pairs` changed, with old and new.

    `old` is absent where the commit introduced the key, `new` where it removed it.
    """
    path = keypaths.split_dotted(key)
    inputs = [ENVIRONMENT_FILE, *layer_paths(pairs, resource)]
    entries: list[dict[str, Any]] = []
    value = _value_at(repo, walk.start, pairs, resource, path)
    # Between two commits that changed an input the value cannot have changed.
    for commit_id in repo.commits_changing(walk.start, walk.stop, inputs, walk.deadline):
        if len(entries) >= walk.limit:
            break
        walk.deadline.check()
        parent = repo.parent(commit_id)
        before = _MISSING if parent is None else _value_at(repo, parent, pairs, resource, path)
        if not _same(before, value):
            entries.append(_value_entry(repo, commit_id, before, value))
        value = before
    return entries


def _value_at(
    repo: Repository, commit_id: str, pairs: LevelPairs, resource: str, path: list[str]
) -> Any:
    try:
        view = EnvironmentView(repo.snapshot(commit_id))
        return keypaths.get_path(effective_document(view, pairs, resource), path)
    except GitstoreError:
        return _MISSING  # absent at that commit (or unreadable there: nothing to report)


def _same(a: Any, b: Any) -> bool:
    if a is _MISSING or b is _MISSING:
        return a is b
    return same_value(a, b)


def _value_entry(repo: Repository, commit_id: str, old: Any, new: Any) -> dict[str, Any]:
    result = entry(repo, commit_id)
    if old is not _MISSING:
        result["old"] = old
    if new is not _MISSING:
        result["new"] = new
    return result
