"""Labels: named versions of an environment, stored as annotated git tags (`refs/tags/<name>`).

They are called labels to keep them apart from deployment tags. A label never moves: creating an
existing one is a Conflict. Any read accepts a label as `version=`.
"""

from __future__ import annotations

import re
from typing import Any

from gitstore.backend.repository import Repository
from gitstore.backend.revisions import TagInfo
from gitstore.errors import InvalidInput
from gitstore.names import is_number, looks_like_commit_id

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
#: Names a revision parser would read as something else (a short sha, a version number).
#: Refs whose names a label must not shadow in `version=`.
_RESERVED = frozenset({"HEAD", "main", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD"})


def check_label_name(name: Any) -> str:
    """A label name: letters, digits, `_.-`, not a number, not sha-like, not a branch name."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidInput(
            f"label name {name!r} must be 1-100 letters, digits, '_', '.' or '-' "
            "starting with a letter or digit",
            key="name",
        )
    if is_number(name):
        raise InvalidInput(
            f"label name {name!r} must not be a number (version=N means the N-th commit)",
            key="name",
        )
    if looks_like_commit_id(name):
        raise InvalidInput(
            f"label name {name!r} looks like a commit id; add a non-hex letter", key="name"
        )
    if name in _RESERVED or ".." in name or name.endswith((".", ".lock")):
        raise InvalidInput(
            f"label name {name!r} is reserved or not a valid git tag name", key="name"
        )
    return name


def label_entity(repo: Repository, tag: TagInfo) -> dict[str, Any]:
    return {
        "name": tag.name,
        "commit": tag.commit,
        "version": repo.depth(tag.commit),
        "author": tag.tagger,
        "email": tag.email,
        "date": tag.date,
        "message": tag.message,
    }
