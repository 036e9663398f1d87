"""Versions of an environment: history, diff, revert, explain and labels (the facade service).

Every commit is a version. Reads resolve their revisions once, then answer from immutable
objects; the two writes (revert, labels) never rewrite history: a revert is one new commit, a
label is a new tag that never moves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from gitstore import keypaths
from gitstore.backend.cache import Caches
from gitstore.backend.changes import ChangeSet, Graft
from gitstore.backend.repository import Author, Repository
from gitstore.backend.snapshot import Snapshot
from gitstore.bodies import Body
from gitstore.configdb.scopes import parse_scope
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.errors import (
    Conflict,
    GitstoreError,
    InvalidInput,
    NotFound,
    PreconditionFailed,
    UnknownRevision,
)
from gitstore.layout import EnvironmentView, LevelPairs, layer_file, scope_of
from gitstore.names import check_segment, is_number
from gitstore.secrets import mask as secret_masks
from gitstore.served import Served
from gitstore.versions.diffs import diff_environment
from gitstore.versions.explain import explain
from gitstore.versions.history import Walk, change_log, recent, value_history
from gitstore.versions.labels import check_label_name, label_entity

if TYPE_CHECKING:
    from gitstore.configdb.values import Config
    from gitstore.repositories import Repositories
    from gitstore.secrets.rules import Rules
    from gitstore.secrets.service import Secrets

DEFAULT_LIMIT = 100
MAX_LIMIT = 10_000


LABEL_BODY = Body("label", ("name", "version", "message"), example='{"name": "before-upgrade"}')
REVERT_BODY = Body("revert", ("to", "commit", "paths", "message"), example='{"to": "3"}')


class Versions:
    """History, diff, revert, explain and labels of environments."""

    def __init__(
        self, repos: Repositories, config: Config, secrets: Secrets, caches: Caches
    ) -> None:
        self._repos = repos
        self._config = config
        self._secrets = secrets
        #: Masked explain answers (data, masked paths) by commit, catalog head and request;
        #: shared: never edit them.
        self._masked_explains = caches.masked_explains

    def _repo(self, env_id: int) -> Repository:
        return self._repos.environment_repo(env_id)

    # -- reading ---------------------------------------------------------------------------
    def history(
        self,
        env_id: int,
        *,
        path: str | None = None,
        resource: str | None = None,
        key: str | None = None,
        limit: Any = None,
        since: str | None = None,
        version: str | None = None,
        deadline: Deadline = UNBOUNDED,
    ) -> Served:
        """Commits that changed what is asked, newest first (see docs/versions.md); each commit
        walked is a step of `deadline`."""
        repo = self._repo(env_id)
        start = _snapshot(repo, version, "version")
        view = EnvironmentView(start)
        pairs = parse_scope(path)
        head = self._config.head_view(env_id)
        pairs = view.check_levels(pairs, head=head) if pairs is not None else None
        name = self._config.resource_name(view, resource) if resource else None
        stop = _snapshot(repo, since, "since").commit_id if since else None
        walk = Walk(start.commit_id, stop, _limit(limit), deadline)
        if key is not None:
            keypaths.split_dotted(key)
        masked: tuple[str, ...] = ()
        if key is not None and pairs is not None:
            if name is None:
                raise InvalidInput(
                    "the history of an effective value needs resource=", key="resource"
                )
            entries = value_history(repo, walk, pairs, name, key)
            rules = self._secrets.rules_of(view)(layer_file(None, "values", name))
            entries, found = secret_masks.mask_history(entries, rules, key)
            masked = tuple(found)
        else:
            entries = change_log(repo, walk, pairs, name, key)  # key names only, no values
        return Served({"entries": entries}, start.commit_id, start.version, masked=masked)

    def commits(self, env_id: int, *, limit: Any = None, version: str | None = None) -> Served:
        """The newest commits of main's first-parent chain from `version` (None: the head):
        version, commit, author, date and message, without what each changed (a history
        entry's `changes` reads every document a commit touched: a whole upload of 1,000
        nodes' facts for one entry)."""
        repo = self._repo(env_id)
        start = _snapshot(repo, version, "version")
        walk = Walk(start.commit_id, None, _limit(limit))
        return Served({"entries": recent(repo, walk)}, start.commit_id, start.version)

    def diff(
        self,
        env_id: int,
        source: str | None,
        target: str | None = None,
        *,
        levels: Sequence[str] = (),
        resource: str | None = None,
        deadline: Deadline = UNBOUNDED,
    ) -> Served:
        """Effective values that differ between versions `source` and `target` (default head).

        `levels` names the scopes to compare (`nodes=1`, `role/compute/nodes/1`); by default
        global and every level value with data. Each document compared is a step of `deadline`.
        """
        if not source:
            raise InvalidInput("diff needs from=<version>", key="from")
        repo = self._repo(env_id)
        before = EnvironmentView(_snapshot(repo, source, "from"))
        after = EnvironmentView(_snapshot(repo, target, "to"))
        # A scope may hold data at one end only: a node known at either end is known.
        scopes = [after.check_levels(parse_scope(t), head=lambda: before) for t in levels] or None
        name = self._config.resource_name(after, resource) if resource else None
        rules_of = self._secrets.rules_of(after)
        shown, masked = secret_masks.mask_scopes(
            diff_environment(before, after, scopes, name, deadline=deadline),
            lambda resource: rules_of(layer_file(None, "values", resource)),
        )
        data = {"from": before.snapshot.commit_id, "to": after.snapshot.commit_id, "scopes": shown}
        return Served(data, after.snapshot.commit_id, after.snapshot.version, masked=tuple(masked))

    def explain(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        key: str | None = None,
        version: str | None = None,
        *,
        effective: bool = True,
        reveal: bool = False,
        who: str | None = None,
        deadline: Deadline = UNBOUNDED,
    ) -> Served:
        """Every key path of an effective document with the layers behind it.

        Secret values are masked unless `reveal` (recorded in the audit log as made by `who`).
        Each commit walked to find who set a value is a step of `deadline`.
        """
        if not effective:
            raise Conflict("explain needs effective (add ?effective)")
        repo = self._repo(env_id)
        view = EnvironmentView(repo.snapshot(version))
        pairs = view.check_levels(pairs, head=self._config.head_view(env_id))
        name = self._config.resource_name(view, resource)
        data = explain(repo, view, pairs, name, key, deadline)  # cached: never edit
        commits = sorted({item["commit"] for item in data["keys"] if item["commit"]})
        inputs = ("explain", key, reveal, view.merge, *view.layer_inputs(pairs, name), *commits)
        secrets = self._secrets

        def rules() -> Rules:
            return secrets.rules_of(view)(layer_file(None, "values", name))

        if reveal:  # opened every time: every reveal is audited
            data, shown = secret_masks.mask_explain(data, rules(), secrets.opener(env_id))
        else:
            # Masked, the answer follows from the commit, the catalog's head (definitions hold
            # secret rules) and the request: kept by those ids, it never goes stale. Masking
            # ~1,600 keys costs more than the cached explain it masks (bench/console.py).
            cache_key: tuple[Any, ...] = (
                repo.path,
                view.snapshot.commit_id,
                self._repos.catalog().head(),
            )
            cache_key += (tuple(map(tuple, pairs)), name, key)
            data, shown = self._masked_explains.get_or_compute(
                cache_key, lambda: secret_masks.mask_explain(data, rules(), None)
            )
        if reveal:
            secrets.record_reveal(
                who, env_id, f"explain {scope_of(pairs)} {name}", view.snapshot.commit_id, shown
            )
        return Served(
            data,
            view.snapshot.commit_id,
            view.snapshot.version,
            inputs=inputs,
            masked=() if reveal else tuple(shown),
        )

    # -- labels ----------------------------------------------------------------------------
    def labels(self, env_id: int) -> Served:
        repo = self._repo(env_id)
        head = repo.snapshot()
        return Served(
            [label_entity(repo, tag) for tag in repo.tags()], head.commit_id, head.version
        )

    def create_label(self, env_id: int, body: Any, author: Author | None = None) -> Served:
        """Name a version (default: the head); Conflict if the name is taken."""
        body = LABEL_BODY.check(body)
        name = check_label_name(body.get("name"))
        message = _optional_text(body, "message") or f"label {name}"
        repo = self._repo(env_id)
        target = _snapshot(repo, _optional_text(body, "version"), "version")
        tag = repo.create_tag(name, target.commit_id, author or self._repos.default_author, message)
        return Served(label_entity(repo, tag), target.commit_id, target.version)

    # -- revert ----------------------------------------------------------------------------
    def revert(
        self,
        env_id: int,
        body: Any,
        author: Author | None = None,
        *,
        expected: str | None = None,
        dry_run: bool = False,
        deadline: Deadline = UNBOUNDED,
    ) -> Served:
        """One new commit restoring files as at `to`, or undoing commit `commit`.

        The answer's data is `{commit, version, changed}`; `changed` is false when the state
        already was the requested one (no commit was made). With `expected` (a version), the
        files the revert may touch must be as they were at that version (PreconditionFailed
        otherwise: the revert was reviewed against them). `dry_run` builds the commit without
        serving it (`Repository.dry_run`). Past `deadline` before its commit, nothing is written.
        """
        to, commit, paths, message = _check_revert_body(body)
        repo = self._repo(env_id)
        if to is not None:
            operation = _restore(_snapshot(repo, to, "to"), paths, message)
        else:
            operation = _undo(repo, _snapshot(repo, commit, "commit"), message)
        if expected is not None:
            operation = _unless_changed(repo, expected, operation)
        author = author or self._repos.default_author
        if dry_run:
            result = repo.dry_run(operation, author)
        else:
            result = repo.update(operation, author, deadline)
        data = {"commit": result.commit, "version": result.version, "changed": result.changed}
        return Served(data, result.commit, result.version)


# -- helpers --------------------------------------------------------------------------------------
def _snapshot(repo: Repository, revision: str | None, field: str) -> Snapshot:
    """The snapshot of `revision`; an unknown one is a NotFound naming the parameter."""
    try:
        return repo.snapshot(revision)
    except UnknownRevision as exc:
        raise NotFound(f"unknown {field} version {revision!r} in {repo.name}", key=field) from exc


def _limit(raw: Any) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    text = str(raw).strip()
    if not is_number(text) or not 1 <= int(text) <= MAX_LIMIT:
        raise InvalidInput(f"limit {raw!r} must be an integer from 1 to {MAX_LIMIT}", key="limit")
    return int(text)


def _optional_text(body: dict, field: str) -> str | None:
    value = body.get(field)
    if value is not None and (
        not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip()
    ):
        raise InvalidInput(f"field {field!r} must be a non-empty string", key=field)
    return None if value is None else str(value)


def _check_revert_body(body: Any) -> tuple[str | None, str | None, list[str], str | None]:
    body = REVERT_BODY.check(body)
    to, commit = _optional_text(body, "to"), _optional_text(body, "commit")
    if (to is None) == (commit is None):
        raise InvalidInput(
            "give exactly one of 'to' (restore a version) or 'commit' (undo one commit)", key="to"
        )
    if commit is not None and "paths" in body:
        raise InvalidInput("'paths' goes with 'to', not with 'commit'", key="paths")
    return to, commit, _check_paths(body.get("paths")), _optional_text(body, "message")


def _check_paths(paths: Any) -> list[str]:
    if paths is None:
        return []
    if not isinstance(paths, list) or not paths:
        raise InvalidInput("field 'paths' must be a non-empty list of file paths", key="paths")
    checked = []
    for path in paths:
        if not isinstance(path, str) or not path.strip("/"):
            raise InvalidInput(f"path {path!r} must be a repository-relative path", key="paths")
        for segment in path.strip("/").split("/"):
            check_segment(segment, f"path {path!r} segment")
        checked.append(path.strip("/"))
    for path in checked:
        if any(other != path and other.startswith(path + "/") for other in checked):
            raise InvalidInput(f"path {path!r} contains another given path", key="paths")
    return sorted(set(checked))


def _restore(target: Snapshot, paths: list[str], message: str | None):
    what = ", ".join(paths) if paths else "the environment"
    message = message or (
        f"revert: restore {what} to version {target.version} ({target.commit_id[:12]})"
    )

    def operation(head: Snapshot) -> ChangeSet:
        changes = ChangeSet(message)
        names = paths or sorted({e.name for e in head.list()} | {e.name for e in target.list()})
        for path in names:
            graft = target.graft(path)
            if graft is None and paths and not head.exists(path):
                raise NotFound(
                    f"path {path!r} exists neither at version {target.version} nor now", path=path
                )
            if graft is None:
                changes.delete(path)
            else:
                changes.graft(path, graft)
        return changes

    return operation


def _undo(repo: Repository, target: Snapshot, message: str | None):
    info = target.info()
    subject = info.message.splitlines()[0] if info.message else target.commit_id
    message = message or f'Revert "{subject}"\n\nThis reverts commit {target.commit_id}.'

    def operation(head: Snapshot) -> ChangeSet:
        changes = ChangeSet(message)
        for path, change in repo.revert_entries(target.commit_id, head.commit_id).items():
            if change is None:
                changes.delete(path)
            else:
                _check_mapping(repo, path, change, target.commit_id)
                changes.graft(path, change)
        return changes

    return operation


def _unless_changed(repo: Repository, expected: str, operation):
    """`operation`, refused with PreconditionFailed when a file it changes differs between
    version `expected` and the head it runs on (another writer got there first)."""
    try:
        then = repo.snapshot(expected)
    except UnknownRevision as exc:
        raise PreconditionFailed(
            f"version {expected!r} names no version of {repo.name}", key="If-Match"
        ) from exc

    def checked(head: Snapshot) -> ChangeSet:
        changes = operation(head)
        moved = sorted(p for p in changes.entries if then.object_id(p) != head.object_id(p))
        if moved:
            raise PreconditionFailed(
                f"{', '.join(moved[:5])} changed since version {then.version} (now version "
                f"{head.version}, commit {head.commit_id[:12]}): review the revert again",
                path=moved[0],
                key="If-Match",
            )
        return changes

    return checked


def _check_mapping(repo: Repository, path: str, graft: Graft, commit_id: str) -> None:
    """A line-level undo must still leave every YAML file a mapping."""
    if not path.endswith(".yaml"):
        return
    try:
        doc = repo.blob_yaml(graft.object_id, path)
    except GitstoreError as exc:
        raise Conflict(
            f"undoing commit {commit_id} leaves {path} unreadable: {exc}", path=path
        ) from exc
    if doc is not None and not isinstance(doc, dict):
        raise Conflict(f"undoing commit {commit_id} leaves {path} not a mapping", path=path)
