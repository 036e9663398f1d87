"""Explain an effective document: for every key path, the layers that set it, the winner, and
the commit that last changed the winning value.

The last change of a winning file's keys is found among the commits that changed that file
(main's index, `Repository.commits_changing`), newest first, stopping once each of its keys is
attributed: a key whose file has not changed for 100,000 commits costs one lookup. Answers are
cached per commit (they never change).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitstore import keypaths, yamlio
from gitstore.backend.repository import Repository
from gitstore.configdb.scopes import effective_document
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.errors import GitstoreError
from gitstore.layout import EnvironmentView, LevelPairs
from gitstore.merge.diff import dotted, leaf_paths, same_value
from gitstore.merge.effective import Layer

_MISSING = object()


def explain(
    repo: Repository,
    view: EnvironmentView,
    pairs: LevelPairs,
    resource: str,
    key: str | None = None,
    deadline: Deadline = UNBOUNDED,
) -> dict[str, Any]:
    """`{"keys": [{path, value, layers, winner, commit, author, date}]}` for the scope; each
    commit walked is a step of `deadline` (a cut walk caches nothing)."""
    cache_key = (str(repo.path), view.snapshot.commit_id, tuple(pairs), resource, key)
    return view.snapshot.caches.explain_answers.get_or_compute(
        cache_key, lambda: _explain(repo, view, pairs, resource, key, deadline)
    )


def _explain(
    repo: Repository,
    view: EnvironmentView,
    pairs: LevelPairs,
    resource: str,
    key: str | None,
    deadline: Deadline,
) -> dict[str, Any]:
    layers = view.layers(pairs, resource)
    merged = effective_document(view, pairs, resource)
    base = tuple(keypaths.split_dotted(key)) if key is not None else ()
    value = keypaths.get_path(merged, base) if base else merged
    paths = (
        [(*base, *p) for p in leaf_paths(value)]
        if isinstance(value, Mapping) and value
        else ([base] if base else [])
    )
    keys = [_explain_key(view, layers, path, keypaths.get_path(merged, path)) for path in paths]
    _attribute(repo, view.snapshot.commit_id, keys, deadline)
    for item in keys:
        item.pop("_path")
    return {"keys": keys}


def _explain_key(view: EnvironmentView, layers: list[Layer], path: tuple, value: Any) -> dict:
    found = []
    for layer in layers:
        layer_value = _get(layer.data, path)
        if layer_value is _MISSING:
            continue
        found.append(
            {
                "scope": layer.scope,
                "kind": layer.kind,
                "file": layer.file,
                "line": _line(view, layer.file, path),
                "value": layer_value,
            }
        )
    return {
        "path": dotted(path),
        "value": value,
        "layers": found,
        "winner": len(found) - 1 if found else None,
        "commit": None,
        "author": None,
        "date": None,
        "_path": path,
    }


def _get(document: Any, path: tuple) -> Any:
    """The value at `path` through mappings only (lists are values, not containers here)."""
    node = document
    for segment in path:
        if not isinstance(node, Mapping) or segment not in node:
            return _MISSING
        node = node[segment]
    return node


def _line(view: EnvironmentView, file: str, path: tuple) -> int | None:
    blob_id = view.snapshot.object_id(file)
    if blob_id is None:
        return None
    kept = view.snapshot.caches.explain_lines
    lines = kept.get_or_compute(blob_id, lambda: yamlio.key_lines(view.snapshot.read(file) or b""))
    return lines.get(tuple(str(segment) for segment in path))


def attribute(
    repo: Repository, start: str, keys: list[dict], deadline: Deadline = UNBOUNDED
) -> None:
    """`_attribute` for other readers of the versions package (the comparison of
    environments): each item names its `layers`, `winner` and key path `_path`."""
    _attribute(repo, start, keys, deadline)


def _attribute(repo: Repository, start: str, keys: list[dict], deadline: Deadline) -> None:
    """Set commit, author and date of the last change of each key's winning value."""
    pending: dict[str, list[dict]] = {}
    for item in keys:
        if item["winner"] is not None:
            pending.setdefault(item["layers"][item["winner"]]["file"], []).append(item)
    for file in sorted(pending):
        for commit_id in repo.commits_changing(start, None, [file], deadline):
            deadline.check()
            parent = repo.parent(commit_id)
            (blob_id,) = repo.object_ids(parent, [file]) if parent else (None,)
            if blob_id != repo.object_ids(commit_id, [file])[0]:
                _settle(repo, commit_id, file, blob_id, pending)
            if file not in pending:
                break


def _settle(
    repo: Repository,
    commit_id: str,
    file: str,
    parent_blob: str | None,
    pending: dict[str, list[dict]],
) -> None:
    """Attribute to `commit_id` every pending key of `file` whose value differs in the parent."""
    before = _past_document(repo, parent_blob, file)
    info = repo.commit_info(commit_id)
    still = []
    for item in pending[file]:
        winning = item["layers"][item["winner"]]["value"]
        old = _get(before, item["_path"])
        if old is not _MISSING and same_value(old, winning):
            still.append(item)
            continue
        item.update(commit=info.commit, author=info.author, date=info.date)
    if still:
        pending[file] = still
    else:
        del pending[file]


def _past_document(repo: Repository, blob_id: str | None, file: str) -> Any:
    if blob_id is None:
        return {}
    try:
        return repo.blob_yaml(blob_id, file)
    except GitstoreError:
        return {}
