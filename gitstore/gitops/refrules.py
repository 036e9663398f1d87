"""What a push may do to refs other than `main` (the push gate's rules for every ref).

Every ref a push names is checked, because `version=` reads any ref name: a pushed
`refs/tags/main` once made `?version=main` serve version 1. So:

- labels (`refs/tags/<name>`) may be created, by anyone allowed to push, under the names the
  REST API accepts (`versions.labels.check_label_name`), pointing at a commit; never moved nor
  deleted by a push (a label names one version for good);
- review branches (`refs/heads/<name>`) may be pushed and deleted freely (never served), under a
  name `version=` cannot read as something else: not a number, nothing shaped like a commit id,
  not `HEAD`-like, not an existing label's name;
- `refs/gitstore/...` is gitstore's own (mirror and review refs) and every other namespace is
  refused: only branches and labels are pushed.
"""

from __future__ import annotations

import re

from gitstore.backend import remote
from gitstore.backend.remote import ZERO
from gitstore.backend.repository import Repository
from gitstore.errors import Conflict, Forbidden, InvalidInput
from gitstore.names import is_number, looks_like_commit_id
from gitstore.versions.labels import check_label_name

LABELS = "refs/tags/"
BRANCHES = "refs/heads/"
OWN = "refs/gitstore/"
_HEAD_LIKE = re.compile(r"^(?:[A-Z_]*HEAD|main)$")


def check_ref(repo: Repository, name: str, old: str, new: str, ref: str) -> None:
    """Refuse (raise) the update `old -> new` of `ref` (not main) in repository `name`."""
    if ref.startswith(LABELS):
        _check_label(repo, name, old, new, ref[len(LABELS) :])
    elif ref.startswith(BRANCHES):
        if new != ZERO:
            _check_branch(repo, name, ref[len(BRANCHES) :])
    elif ref.startswith(OWN):
        raise Forbidden(f"{name}: {ref} is gitstore's own ref; a push never writes refs/gitstore/")
    else:
        raise Forbidden(
            f"{name}: push to {ref} refused: only branches (refs/heads/) and labels "
            "(refs/tags/) are accepted"
        )


def _check_label(repo: Repository, name: str, old: str, new: str, label: str) -> None:
    if old != ZERO:
        what = "deleted" if new == ZERO else "moved"
        raise Conflict(
            f"{name}: label {label!r} is never {what} by a push (a label names one version "
            "for good); make a new label"
        )
    try:
        check_label_name(label)
    except InvalidInput as exc:
        raise InvalidInput(f"{name}: push to refs/tags/{label} refused: {exc.message}") from exc
    if label in remote.ref_names(repo, BRANCHES):
        raise Conflict(
            f"{name}: label {label!r} refused: a branch of that name exists, and "
            f"version={label} would stop meaning it"
        )
    if remote.peeled_commit(repo, new) is None:
        raise InvalidInput(f"{name}: label {label!r} refused: it must name a commit")


def _check_branch(repo: Repository, name: str, branch: str) -> None:
    last = branch.rsplit("/", 1)[-1]
    if is_number(branch) or looks_like_commit_id(branch) or _HEAD_LIKE.match(last):
        raise InvalidInput(
            f"{name}: branch {branch!r} refused: version={branch} would read it as a "
            "version number, a commit id or HEAD; choose a name with letters in it"
        )
    if branch in remote.ref_names(repo, LABELS):
        raise Conflict(
            f"{name}: branch {branch!r} refused: a label of that name exists, and "
            f"version={branch} means that label"
        )
