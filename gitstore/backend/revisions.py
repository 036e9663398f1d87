"""Questions about several commits at once: what changed, undo a commit, named versions (tags).

Helpers of `Repository` that need pygit2 objects. Tree comparison skips every subtree whose id is
the same on both sides, so asking what a commit changed costs the size of the change, not the
size of the repository.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import pygit2

from gitstore.backend.changes import Graft
from gitstore.errors import Conflict

TAGS = "refs/tags/"


@dataclass(frozen=True)
class FileChange:
    """One file that differs between two trees: its blob ids before and after (None = absent)."""

    path: str
    old: str | None
    new: str | None


@dataclass(frozen=True)
class TagInfo:
    """A tag: the commit it names and who made it when (the commit's author for light tags)."""

    name: str
    commit: str
    tagger: str
    email: str
    date: str
    message: str


def lookup(tree: pygit2.Tree | None, path: str) -> pygit2.Tree | pygit2.Blob | None:
    """The object at `path` below `tree` (the tree itself for ``""``), or None."""
    path = path.strip("/")
    if tree is None or not path:
        return tree
    try:
        return tree[sys.intern(path)]  # interned: see `snapshot._lookup`
    except (KeyError, ValueError):
        return None


def compare(
    old: pygit2.Tree | pygit2.Blob | None,
    new: pygit2.Tree | pygit2.Blob | None,
    prefix: str = "",
    skip: Iterable[str] = (),
) -> list[FileChange]:
    """Files that differ between objects `old` and `new` (trees, blobs or None) below `prefix`."""
    if old is not None and new is not None and old.id == new.id:
        return []
    old_tree = old if isinstance(old, pygit2.Tree) else None
    new_tree = new if isinstance(new, pygit2.Tree) else None
    changes = []
    old_blob = None if old is None or old_tree is not None else str(old.id)
    new_blob = None if new is None or new_tree is not None else str(new.id)
    if old_blob != new_blob:
        changes.append(FileChange(prefix, old_blob, new_blob))
    if old_tree is None and new_tree is None:
        return changes
    skipped = set(skip)
    # (`str`: pygit2 types an object's name optional; a tree's entries all have one)
    names = {str(e.name) for e in old_tree or ()} | {str(e.name) for e in new_tree or ()}
    for name in sorted(names - skipped):
        child = f"{prefix}/{name}" if prefix else name
        changes.extend(compare(lookup(old_tree, name), lookup(new_tree, name), child))
    return changes


def revert_entries(
    repo: pygit2.Repository, commit: pygit2.Commit, head: pygit2.Commit
) -> dict[str, Graft | None]:
    """Path -> Graft/None that undo `commit` on top of `head` (git revert: a three-way merge).

    Raises Conflict naming the files when the undo clashes with later changes.
    """
    if not commit.parent_ids:
        raise Conflict(
            f"commit {commit.id} is the first commit; it cannot be undone "
            "(revert to a later version instead)"
        )
    mainline = 1 if len(commit.parent_ids) > 1 else 0
    index = repo.revert_commit(commit, head, mainline)
    if index.conflicts is not None:
        files = sorted({entry.path for trio in index.conflicts for entry in trio if entry})
        raise Conflict(
            f"undoing commit {commit.id} conflicts with later changes in {', '.join(files)}",
            path=files[0],
            errors=[{"file": f, "message": "conflict"} for f in files],
        )
    result = repo[index.write_tree(repo)].peel(pygit2.Tree)  # a tree: peeling returns it
    return {c.path: (Graft(c.new, False) if c.new else None) for c in compare(head.tree, result)}


def tag_object(
    repo: pygit2.Repository, name: str, commit_id: str, tagger: tuple[str, str], message: str
) -> str:
    """Write an annotated tag object (no ref yet) and return its id."""
    who, email = (_clean(part) for part in tagger)
    text = (
        f"object {commit_id}\ntype commit\ntag {name}\n"
        f"tagger {who} <{email}> {int(time.time())} +0000\n\n{message.rstrip()}\n"
    )
    return str(repo.odb.write(pygit2.enums.ObjectType.TAG, text.encode("utf-8")))


def _clean(text: str) -> str:
    return "".join(ch for ch in text if ch not in "<>\n\r\0").strip() or "unknown"


def tags(repo: pygit2.Repository) -> list[TagInfo]:
    """Every tag that names a commit, sorted by name."""
    found = []
    for ref_name in sorted(r for r in repo.references if r.startswith(TAGS)):
        try:
            found.append(tag_info(repo, ref_name))
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            continue  # a tag of a tree or blob is no version
    return found


def tag_info(repo: pygit2.Repository, ref_name: str) -> TagInfo:
    target = repo[repo.references[ref_name].resolve().target]
    commit = target.peel(pygit2.Commit)
    if isinstance(target, pygit2.Tag) and target.tagger is not None:
        who, message = target.tagger, target.message or ""
    else:
        who, message = commit.author, ""
    when = datetime.fromtimestamp(who.time, UTC).isoformat().replace("+00:00", "Z")
    return TagInfo(
        ref_name[len(TAGS) :], str(commit.id), who.name, who.email, when, message.strip()
    )
