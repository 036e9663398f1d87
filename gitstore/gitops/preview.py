"""Previews: what an edit or a revert would do, computed before anything is served.

The write is built as a commit on the current head that `main` never points at
(`Repository.dry_run`); the report compares it with its parent as a push would be judged:
the gate's problems (`rules.validate`), the effective values of every level value (the
versions diff) and of every node with its whole chain of levels (global, role..., node), and
the files changed. Secret values are masked as in every diff. A refused write (a schema or
key-path problem) is a report too, with the refusal as its problem and no proposed commit.

Saving is the real write, conditional on the previewed base (`expected=`): a concurrent
change of the same files is a PreconditionFailed, never a silent overwrite.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from gitstore.backend.repository import Author
from gitstore.catalog.view import CatalogView
from gitstore.configdb.hiera import find_node
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.gitops import warmup
from gitstore.gitops.rules import check
from gitstore.layout import (
    INVENTORY_NODES,
    NODES_LEVEL,
    EnvironmentView,
    LevelPairs,
    layer_file,
    scope_of,
)
from gitstore.names import is_number
from gitstore.secrets.mask import mask_scopes
from gitstore.served import Served
from gitstore.validation import ENVIRONMENT
from gitstore.versions.diffs import ScopeDiffs, diff_environment

if TYPE_CHECKING:
    from gitstore.configdb.values import Config
    from gitstore.filechecks import FileChecks
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets
    from gitstore.versions.service import Versions

#: The kind of document a console edit changes: operators override, automation uploads values.
EDITED_KIND = "overrides"


class Previews:
    """Dry runs of key edits and reverts, reported as the gate and the diff see them."""

    def __init__(
        self,
        repos: Repositories,
        config: Config,
        versions: Versions,
        secrets: Secrets,
        checks: FileChecks | None = None,
    ) -> None:
        self._repos = repos
        self._config = config
        self._versions = versions
        self._secrets = secrets
        self._checks = checks  # what the gate found per file, shared with the push gate

    def warmer(
        self,
        *,
        max_files: int = warmup.MAX_FILES,
        budget: float = warmup.BUDGET,
        settle: float = warmup.SETTLE,
    ) -> warmup.Warmer | None:
        """What keeps the per-file results of each environment's `main` filled, so that the
        first preview replays them (`gitops.warmup`). None when previews keep no results."""
        if self._checks is None:
            return None
        return warmup.Warmer(
            self._repos, self._checks, max_files=max_files, budget=budget, settle=settle
        )

    def edit(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        op: str,
        paths: Any,
        author: Author | None = None,
    ) -> Served:
        """The report of setting or deleting override keys (`op`, `paths` as in
        `Config.update_keys`) at level `pairs`."""
        try:
            proposed = self._config.update_keys(
                env_id, pairs, resource, EDITED_KIND, op, paths, author, dry_run=True
            )
        except (InvalidInput, Conflict) as exc:
            return self._refused(env_id, exc)
        assert proposed.commit is not None  # a dry run answers the commit it built
        return self.report(env_id, proposed.commit, changed=proposed.data["changed"])

    def revert(self, env_id: int, commit: str, author: Author | None = None) -> Served:
        """The report of undoing commit `commit` on the head."""
        try:
            proposed = self._versions.revert(env_id, {"commit": commit}, author, dry_run=True)
        except (InvalidInput, Conflict) as exc:
            return self._refused(env_id, exc)
        assert proposed.commit is not None  # a dry run answers the commit it built
        return self.report(env_id, proposed.commit, changed=proposed.data["changed"])

    def report(self, env_id: int, proposed: str, *, changed: bool = True) -> Served:
        """What commit `proposed` does to its first parent; with `changed` false, `proposed`
        is the head that a write would leave as it is."""
        repo = self._repos.environment_repo(env_id)
        after = EnvironmentView(repo.snapshot(proposed))
        base = repo.parent(proposed) if changed else proposed
        before = EnvironmentView(repo.snapshot(base))
        catalog = CatalogView(self._repos.catalog().snapshot())
        tree = check(
            after.snapshot, ENVIRONMENT, catalog=catalog, env_id=env_id, checks=self._checks
        )
        problems = tree.sorted_problems()
        rules_of = self._secrets.rules_of(after)

        def masked(scopes: dict) -> dict:
            return mask_scopes(scopes, lambda r: rules_of(layer_file(None, "values", r)))[0]

        # Level values and node chains share their parents; the files the gate parsed (every
        # one, on a worker's first check) are not parsed again for the nodes' key indexes.
        differ = ScopeDiffs(before, after, tree.parsed_mapping)

        data = {
            "base": _version_of(before),
            "proposed": _version_of(after) if changed else None,
            "changed": changed,
            "valid": not problems,
            "errors": problems,
            "files": [c.path for c in repo.changed_files(proposed)] if changed else [],
            "scopes": masked(diff_environment(before, after, differ=differ)),
            "nodes": _nodes_changed(before, after, masked, differ),
        }
        return Served(data, before.snapshot.commit_id, before.snapshot.version)

    def _refused(self, env_id: int, exc: InvalidInput | Conflict) -> Served:
        """The report of a write the store refuses: its problems, nothing proposed."""
        head = EnvironmentView(self._repos.environment_repo(env_id).snapshot())
        problems = exc.errors or [{"message": exc.message}]
        data = {
            "base": _version_of(head),
            "proposed": None,
            "changed": False,
            "valid": False,
            "errors": [{**p, "message": p.get("message") or exc.message} for p in problems],
            "files": [],
            "scopes": {},
            "nodes": [],
        }
        return Served(data, head.snapshot.commit_id, head.snapshot.version)


def _version_of(view: EnvironmentView) -> dict[str, Any]:
    return {"commit": view.snapshot.commit_id, "version": view.snapshot.version}


def _nodes_changed(
    before: EnvironmentView, after: EnvironmentView, masked, differ: ScopeDiffs
) -> list[dict]:
    """Every node whose effective values differ, each with its whole chain of levels."""
    nodes = {}
    for node_id in sorted(_node_ids(before) | _node_ids(after), key=_node_order):
        for view in (after, before):  # a node removed by the change is read where it was
            with contextlib.suppress(NotFound):
                nodes[node_id] = find_node(view, node_id)
                break
    by_scope: dict[str, list] = {}
    for node in nodes.values():
        by_scope.setdefault(scope_of(node.pairs), []).append(node)
    scopes = [list(pairs) for pairs in dict.fromkeys(n.pairs for n in nodes.values())]
    changed = masked(diff_environment(before, after, scopes, differ=differ))
    return [
        {"node": node.id, "fqdn": node.fqdn, "scope": scope, "resources": resources}
        for scope, resources in changed.items()
        for node in by_scope[scope]
    ]


def _node_ids(view: EnvironmentView) -> set[str]:
    """Nodes with an inventory record or a folder at the `nodes` level."""
    found = set(view.level_values(NODES_LEVEL)) if NODES_LEVEL in view.hierarchy else set()
    found.update(
        entry.name[: -len(".yaml")]
        for entry in view.snapshot.list(INVENTORY_NODES)
        if not entry.is_tree and entry.name.endswith(".yaml")
    )
    return found


def _node_order(node_id: str) -> tuple:
    return (0, int(node_id), "") if is_number(node_id) else (1, 0, node_id)
