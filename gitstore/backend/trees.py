"""Build a new tree from a base tree and a change set, touching only the changed paths.

Only the trees on the path to a changed file are rebuilt; every other subtree is reused by id,
so a one-file write costs the depth of the path, not the size of the repository. A folder left
empty disappears (git stores no empty trees below the root).
"""

from __future__ import annotations

import sys

import pygit2

from gitstore.backend.changes import Graft

_Change = bytes | Graft | None


def build_tree(
    repo: pygit2.Repository, base: pygit2.Tree | None, entries: dict[str, _Change]
) -> pygit2.Oid:
    """The id of `base` with `entries` applied in order (an empty result is the empty tree)."""
    oid = _build(repo, base, entries)
    return oid if oid is not None else repo.TreeBuilder().write()


def _build(
    repo: pygit2.Repository, tree: pygit2.Tree | None, entries: dict[str, _Change]
) -> pygit2.Oid | None:
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    direct, nested = _split(entries)
    for name, change in direct.items():
        _apply_direct(repo, builder, name, change)
    for name, sub_entries in nested.items():
        base = _base_below(repo, tree, name, direct)
        sub_oid = _build(repo, base, sub_entries)
        if sub_oid is None:
            _remove(builder, name)
        else:
            builder.insert(name, sub_oid, pygit2.GIT_FILEMODE_TREE)
    if len(builder) == 0:
        return None
    return builder.write()


def _split(
    entries: dict[str, _Change],
) -> tuple[dict[str, _Change], dict[str, dict[str, _Change]]]:
    """Changes of direct children, and per child folder the changes below it.

    A direct change of `name` supersedes the changes below `name` made before it.
    """
    direct: dict[str, _Change] = {}
    nested: dict[str, dict[str, _Change]] = {}
    for path, change in entries.items():
        head, _, rest = path.strip("/").partition("/")
        if rest:
            nested.setdefault(head, {})[rest] = change
        else:
            direct[head] = change
            nested.pop(head, None)
    return direct, nested


def _base_below(
    repo: pygit2.Repository, tree: pygit2.Tree | None, name: str, direct: dict[str, _Change]
) -> pygit2.Tree | None:
    """The folder that changes below `name` apply to: what a direct change put there, if any."""
    if name not in direct:
        return _subtree(tree, name)
    change = direct[name]
    if isinstance(change, Graft) and change.is_tree:
        return repo[change.object_id].peel(pygit2.Tree)  # a tree: peeling returns it as is
    return None  # deleted, or replaced by a file: the folder starts empty


def _apply_direct(
    repo: pygit2.Repository, builder: pygit2.TreeBuilder, name: str, change: _Change
) -> None:
    if change is None:
        _remove(builder, name)
    elif isinstance(change, Graft):
        mode = pygit2.GIT_FILEMODE_TREE if change.is_tree else pygit2.GIT_FILEMODE_BLOB
        builder.insert(name, pygit2.Oid(hex=change.object_id), mode)
    else:
        builder.insert(name, repo.create_blob(change), pygit2.GIT_FILEMODE_BLOB)


def _subtree(tree: pygit2.Tree | None, name: str) -> pygit2.Tree | None:
    name = sys.intern(name)  # pygit2 leaks a reference to a name it looks up (snapshot.py)
    if tree is None or name not in tree:
        return None
    entry = tree[name]
    return entry if isinstance(entry, pygit2.Tree) else None


def _remove(builder: pygit2.TreeBuilder, name: str) -> None:
    name = sys.intern(name)  # as in _subtree
    if builder.get(name) is not None:
        builder.remove(name)
