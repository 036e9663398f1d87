"""The data-level difference of an environment between two versions: its blast radius.

For each scope, each resource's effective document at `from` is compared with the one at `to`.
A scope whose layer blobs (and merge mode) are the same at both versions is skipped without
merging, so a diff costs the number of scopes a change reaches, not the number of scopes.
"""

from __future__ import annotations

from typing import Any

from gitstore.configdb.scopes import default_scopes, effective_document, resources_at
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.layout import EnvironmentView, LevelPairs, scope_of
from gitstore.merge.diff import diff_documents


def diff_environment(
    before: EnvironmentView,
    after: EnvironmentView,
    scopes: list[LevelPairs] | None = None,
    resource: str | None = None,
    deadline: Deadline = UNBOUNDED,
) -> dict[str, dict[str, Any]]:
    """`{scope: {resource: {added, removed, changed}}}` for every scope that differs.

    `scopes` defaults to global plus every level value with data at either version; `resource`
    limits the comparison to one resource. Each document compared is a step of `deadline`.
    """
    found: dict[str, dict[str, Any]] = {}
    for pairs in default_scopes(before, after) if scopes is None else scopes:
        names = (
            [resource]
            if resource
            else sorted(resources_at(before, pairs) | resources_at(after, pairs))
        )
        for name in names:
            deadline.check()
            change = _diff_scope(before, after, pairs, name)
            if change:
                found.setdefault(scope_of(pairs), {})[name] = change
    return found


def _diff_scope(
    before: EnvironmentView, after: EnvironmentView, pairs: LevelPairs, resource: str
) -> dict:
    if before.merge == after.merge and before.layer_inputs(pairs, resource) == after.layer_inputs(
        pairs, resource
    ):
        return {}
    return diff_documents(
        effective_document(before, pairs, resource), effective_document(after, pairs, resource)
    )
