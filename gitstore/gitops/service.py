"""GitOps: the push gate, mirror mode and pull-request review (a facade service).

- **Gate.** The pre-receive hook of every repository calls `check_push` before git moves a ref:
  `main` is never deleted nor rewound, and the tree that would be served passes `validate_tree`
  (the rules REST writes apply too). Other refs are not served and are not checked.
- **Mirror mode.** A repository may follow a branch of a remote (a forge). Its settings live in
  `<root>/gitops/mirrors.json` (mode 0600: it holds the webhook secret and forge token), never
  in a served repository. `sync` runs the real `git fetch` into a quarantine ref, gates the
  fetched commit, and fast-forwards `main` to it only when it passes; the outcome of every sync
  is recorded in `<root>/gitops/state/` for `status`.
- **Review.** `review` reports what a change does: validation, effective keys per scope (the
  versions diff), nodes affected, override files. `render_markdown` formats it for a forge.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitstore import files, limits, metrics
from gitstore.backend import remote
from gitstore.backend.remote import ZERO
from gitstore.backend.repository import MAIN, Repository
from gitstore.backend.snapshot import Snapshot
from gitstore.catalog.view import CatalogView
from gitstore.errors import Conflict, Damaged, GitstoreError, InvalidInput, NotFound
from gitstore.gitops import arrivals, pushes, refrules
from gitstore.gitops.mirrors import MirrorSettings, check_branch, now, public_settings
from gitstore.gitops.rules import validate as validate_tree
from gitstore.layout import (
    INVENTORY_NODES,
    NODES_LEVEL,
    EnvironmentView,
    Target,
    environment_repository,
    layer_file,
    parse_repository_name,
)
from gitstore.names import is_number
from gitstore.repositories import open_repository
from gitstore.secrets.mask import mask_scopes
from gitstore.secrets.rules import rules_for_file
from gitstore.validation import (
    ENVIRONMENT,
    Problem,
    detect_kind,
    format_problem,
    raise_problems,
)
from gitstore.versions.diffs import diff_environment

if TYPE_CHECKING:
    from gitstore.filechecks import FileChecks
    from gitstore.repositories import Repositories

log = logging.getLogger("gitstore.gitops")

#: Where fetched commits wait for the gate: a ref nobody serves.
INCOMING = "refs/gitstore/mirror/incoming"
REVIEW_REFS = "refs/gitstore/review/"
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,200}$")
_SECRET_FIELDS = ("webhook_secret", "api_token")


@dataclass
class Review:
    """What a change does; `report` is the JSON form `{valid, errors, scopes, ...}`."""

    base: str
    head: str
    report: dict[str, Any]
    changed_files: list[str] = field(default_factory=list)


class GitOps:
    """The push gate, mirror settings and syncs, status, and reviews of one store."""

    def __init__(
        self,
        repos: Repositories,
        mirrors: MirrorSettings,
        eyaml_problems: Callable[[Snapshot], list] | None = None,
        checks: FileChecks | None = None,
    ) -> None:
        self._repos = repos
        self.mirror_settings = mirrors
        #: The pushed eyaml values that do not decrypt (`secrets.eyamlpush`).
        self._eyaml_problems = eyaml_problems
        self._checks = checks  # what the rules found per file (`gitstore.filechecks`)

    # -- repositories ----------------------------------------------------------------------
    def repository_path(self, name: str) -> Path:
        """The folder of repository `name`; NotFound unless it exists in this store."""
        self._repository(parse_repository_name(name))
        return self._repos.root / name

    def _repository(self, target: Target) -> Repository:
        if target.env_id is not None:
            return self._repos.environment_repo(target.env_id)
        return self._repos.catalog()

    def _target_of_path(self, repo_path: Path) -> Target:
        try:
            name = Path(repo_path).resolve().relative_to(self._repos.root.resolve()).as_posix()
        except ValueError as exc:
            raise NotFound(f"{repo_path} is not a repository of {self._repos.root}") from exc
        return parse_repository_name(name)

    def names(self) -> list[str]:
        """Every repository of the store: the catalog first, then environments by id."""
        return ["catalog.git", *(environment_repository(i) for i in self._repos.environment_ids())]

    # -- validation ------------------------------------------------------------------------
    def validate(self, name: str, revision: str | None = None) -> list[Problem]:
        """Problems of repository `name` at `revision` (default: the served main)."""
        target = parse_repository_name(name)
        repo = self._repository(target)
        return self._validate_commit(repo, target, repo.snapshot(revision))

    def validate_all(self, revision: str | None = None) -> dict[str, list[Problem]]:
        return {name: self.validate(name, revision) for name in self.names()}

    def _validate_commit(self, repo: Repository, target: Target, snapshot: Snapshot):
        oversized = oversized_files(snapshot)
        if oversized:
            return oversized  # refused before anything parses them
        catalog = self._served_catalog()
        if target.kind != ENVIRONMENT:  # what environments hold data for stays defined
            return validate_tree(snapshot, target.kind, catalog=catalog, repos=self._repos)
        problems = validate_tree(
            snapshot, target.kind, catalog=catalog, env_id=target.env_id, checks=self._checks
        )
        if not problems and self._eyaml_problems is not None:  # a sound tree: files read
            problems = self._eyaml_problems(snapshot)
        return problems

    def _served_catalog(self) -> CatalogView:
        return CatalogView(self._repos.catalog().snapshot())

    # -- the push gate ---------------------------------------------------------------------
    def check_push(
        self,
        repo_path: Path,
        old: str,
        new: str,
        ref: str,
        staged: tuple[str, str] | None = None,
    ) -> None:
        """Refuse (raise) a ref update of a push: deleting or rewinding main, a bad tree, or
        what `refrules` forbids for every other ref. `staged` = (old, onto): the HTTP view
        re-aimed a push to main from `old` at `pushes.STAGING`, to land on `onto` (`pushes`)."""
        target = self._target_of_path(repo_path)
        if staged is not None and ref == pushes.STAGING:
            self._check_main_pushable(target)
            repo = Repository(repo_path, target.name)
            remote.include_quarantine(repo)
            check = partial(self._validate_commit, repo, target)
            pushes.check_staged(repo, staged[0], new, staged[1], check)
            return
        if ref != MAIN:
            repo = Repository(repo_path, target.name)
            remote.include_quarantine(repo)
            refrules.check_ref(repo, target.name, old, new, ref)
            return
        if new == ZERO:
            raise Conflict(f"{target.name}: deleting main is refused (it is the served state)")
        self._check_main_pushable(target)
        repo = Repository(repo_path, target.name)
        remote.include_quarantine(repo)
        if old != ZERO and not remote.is_ancestor(repo, old, new):
            raise Conflict(
                f"{target.name}: non-fast-forward push to main refused (history is "
                "never rewritten); fetch, merge or rebase onto main, and push again"
            )
        problems = self._validate_commit(repo, target, repo.snapshot(new))
        raise_problems(problems, f"{target.name}: push rejected, commit {new[:12]} is invalid")

    def accepted_push(self, repo_path: Path, updates: list[tuple[str, str, str]]) -> None:
        """Count and log the commits a push the gate accepted brings to `main`."""
        arrivals.record_accepted(repo_path, self._target_of_path(repo_path).name, updates)

    def _check_main_pushable(self, target: Target) -> None:
        mirror = self.mirror_of(target.name)
        if mirror is not None:
            raise Conflict(
                f"{target.name} mirrors {remote.redact(mirror['url'])}: push there; "
                "the store follows it"
            )

    def admit_push(self, name: str) -> pushes.PushAdmission:
        """A push over HTTP to repository `name`, queued with REST writers (see `pushes`)."""
        target = parse_repository_name(name)
        repo = self._repository(target)
        return pushes.PushAdmission(repo, partial(self._validate_commit, repo, target))

    def advertise_for_push(self, name: str, answer: bytes) -> bytes:
        """git's receive-pack advertisement of `name`, naming main's settled head (`pushes`)."""
        return pushes.settle_advertisement(self._repository(parse_repository_name(name)), answer)

    def recover_from_killed_pushes(self, repo_path: Path, pushed_refs: list[str]) -> list[str]:
        """Before a push is gated: remove the ref locks and quarantine folders that killed
        pushes left and no live process owns (git never does, and they block later pushes)."""
        target = self._target_of_path(repo_path)
        return remote.recover_from_killed_pushes(Repository(repo_path, target.name), pushed_refs)

    # -- mirror settings (gitops.mirrors) ----------------------------------------------------
    def mirror_of(self, name: str) -> dict | None:
        return self.mirror_settings.mirror_of(name)

    def check_writable(self, name: str) -> None:
        self.mirror_settings.check_writable(name)

    def add_mirror(self, name: str, url: str, **settings: Any) -> dict:
        """Make repository `name` follow a branch of `url` (see `MirrorSettings.add`)."""
        self._repository(parse_repository_name(name))  # it must exist
        return self.mirror_settings.add(name, url, **settings)

    def remove_mirror(self, name: str) -> None:
        self.mirror_settings.remove(name)

    def mirrors(self) -> list[dict]:
        """Every mirror, secrets masked."""
        return self.mirror_settings.public()

    def authenticate_webhook(self, *args, **kwargs) -> list[str]:
        return self.mirror_settings.authenticate_webhook(*args, **kwargs)

    def forge_api(self, name: str) -> tuple[str | None, str | None]:
        return self.mirror_settings.forge_api(name)

    def branch_of(self, name: str) -> str:
        return self.mirror_settings.branch_of(name)

    # -- syncing ---------------------------------------------------------------------------
    def sync(self, name: str) -> dict:
        """Fetch the mirror of `name`, gate the new commit, fast-forward main if it passes.

        A failing commit leaves main where it was; the failure is recorded and returned in
        the status. An unreachable remote raises Unavailable (also recorded; the newest remote
        commit seen before stays in the status).
        """
        target = parse_repository_name(name)
        settings = self.mirror_settings.get(target.name)
        repo = self._repository(target)
        with files.exclusive_lock(repo.path / "gitstore-mirror.lock"):
            state = {**self.mirror_settings.state(target.name), "last_fetch": now()}
            try:
                remote.fetch(
                    repo, settings["url"], [f"+refs/heads/{settings['branch']}:{INCOMING}"]
                )
            except GitstoreError as exc:
                state["failure"] = {"message": exc.message}
                self.mirror_settings.record(target.name, state)
                raise
            state["remote_commit"] = remote.read_ref(repo, INCOMING)
            state["failure"] = self._advance(repo, target, state["remote_commit"])
            metrics.sync_refused(target.name, state["failure"])
            self.mirror_settings.record(target.name, state)
        return self.status_of(target.name)

    def sync_all(self) -> list[dict]:
        """Sync every mirror; one failing mirror does not stop the others."""
        results = []
        for name in sorted(self.mirror_settings.all()):
            try:
                results.append(self.sync(name))
            except GitstoreError as exc:
                log.warning("mirror sync of %s failed: %s", name, exc.message)
                results.append(self.status_of(name))
        return results

    def _advance(self, repo: Repository, target: Target, incoming: str | None) -> dict | None:
        served = repo.head()
        if incoming is None or incoming == served:
            return None
        if served and remote.is_ancestor(repo, incoming, served):
            return None  # the remote is behind what we serve: nothing new
        if served and not remote.is_ancestor(repo, served, incoming):
            return {
                "commit": incoming,
                "message": f"the remote branch does not contain the "
                f"served commit {served[:12]} (history rewritten, or commits made here); "
                "not served",
            }
        problems = self._validate_commit(repo, target, repo.snapshot(incoming))
        if problems:
            return {
                "commit": incoming,
                "message": f"commit {incoming[:12]} is invalid; "
                f"{served[:12] if served else 'nothing'} stays served",
                "errors": problems,
            }
        if not remote.fast_forward(repo, served, incoming):
            return {"commit": incoming, "message": "main moved during the sync; sync again"}
        arrivals.record_mirrored(repo, target.name, served, incoming)
        return None

    # -- status ----------------------------------------------------------------------------
    def status(self, *, verify: bool = False) -> dict:
        """Per repository: served commit, mirror, newest remote commit, last fetch, failure,
        damage; and the names of the damaged repositories. `verify` reads every served object."""
        rows = [self.status_of(name, verify=verify) for name in self.names()]
        return {"repositories": rows, "damaged": [r["repository"] for r in rows if r["damage"]]}

    def status_of(self, name: str, *, verify: bool = False) -> dict:
        target = parse_repository_name(name)
        settings = self.mirror_settings.all().get(name)
        state = self.mirror_settings.state(name)
        served, damage = _health(self._repository(target), verify)
        return {
            "repository": name,
            "env_id": target.env_id,
            "damage": damage,
            "served_commit": served,
            "mirror": public_settings(name, settings) if settings else None,
            "remote_commit": state.get("remote_commit"),
            "last_fetch": state.get("last_fetch"),
            "failure": state.get("failure"),
        }

    # -- review ----------------------------------------------------------------------------
    def review_in_store(self, name: str, base: str, head: str) -> Review:
        target = parse_repository_name(name)
        catalog = self._served_catalog() if target.kind == ENVIRONMENT else None
        return review(self._repository(target), base, head, catalog, target.env_id)

    def review_pull_request(
        self,
        name: str,
        number: int,
        head_ref: str,
        base_branch: str,
        base_sha: str | None,
        head_sha: str | None,
    ) -> Review:
        """Fetch a pull request of mirror `name` and review it against its merge base."""
        target = parse_repository_name(name)
        settings = self.mirror_settings.get(name)
        repo = self._repository(target)
        prefix = f"{REVIEW_REFS}{int(number)}"
        remote.fetch(
            repo,
            settings["url"],
            [
                f"+{_check_ref(head_ref)}:{prefix}/head",
                f"+refs/heads/{check_branch(base_branch)}:{prefix}/base",
            ],
        )
        head = _known(repo, head_sha) or remote.read_ref(repo, f"{prefix}/head")
        base = _known(repo, base_sha) or remote.read_ref(repo, f"{prefix}/base")
        assert head is not None and base is not None  # the fetch above wrote both refs
        base = remote.merge_base(repo, base, head) or base
        return self.review_in_store(name, base, head)


# -- review ------------------------------------------------------------------------------
def review(
    repo: Repository,
    base: str,
    head: str,
    catalog: CatalogView | None = None,
    env_id: int | None = None,
) -> Review:
    """What going from `base` to `head` does (see the module docstring)."""
    before, after = repo.snapshot(base), repo.snapshot(head)
    kind = detect_kind(after)
    errors = validate_tree(after, kind, catalog=catalog, env_id=env_id)
    changed = _changed_files(before, after)
    scopes: dict = {}
    nodes: list[int | str] = []
    if kind == ENVIRONMENT:
        with contextlib.suppress(GitstoreError):  # the errors already say why
            old, new = EnvironmentView(before), EnvironmentView(after)
            scopes = diff_environment(old, new)
            nodes = nodes_affected(old, new, scopes)
            scopes = _masked(scopes, new, catalog)
    report = {
        "valid": not errors,
        "errors": errors,
        "scopes": scopes,
        "nodes_affected": nodes,
        "override_files": [f for f in changed if "/overrides/" in f"/{f}"],
    }
    return Review(before.commit_id, after.commit_id, report, changed)


# -- helpers ------------------------------------------------------------------------------
def _masked(scopes: dict, view: EnvironmentView, catalog: CatalogView | None) -> dict:
    """The diff with secret values masked: a review report may reach a forge comment."""
    definitions = (
        {d["name"]: d for d in catalog.definitions_of(view.components)}
        if catalog is not None
        else None
    )
    shown, _ = mask_scopes(
        scopes,
        lambda resource: rules_for_file(
            layer_file(None, "values", resource), definitions, view.doc
        ),
    )
    return shown


def nodes_affected(
    before: EnvironmentView, after: EnvironmentView, scopes: dict
) -> list[int | str]:
    """Nodes whose effective values differ: a changed `/nodes/<id>/` scope, or a change of
    global for a node with no data of its own (its effective values are global's)."""
    with_data = set(before.level_values(NODES_LEVEL)) | set(after.level_values(NODES_LEVEL))
    nodes = with_data | _inventory_ids(before) | _inventory_ids(after)
    affected = {n for n in with_data if f"/{NODES_LEVEL}/{n}/" in scopes}
    if "/" in scopes:
        affected |= nodes - with_data
    ordered = sorted(affected, key=lambda n: (0, int(n), "") if is_number(n) else (1, 0, n))
    return [int(n) if is_number(n) else n for n in ordered]


def _inventory_ids(view: EnvironmentView) -> set[str]:
    return {
        e.name[: -len(".yaml")]
        for e in view.snapshot.list(INVENTORY_NODES)
        if not e.is_tree and e.name.endswith(".yaml")
    }


def oversized_files(snapshot: Snapshot) -> list[Problem]:
    """A problem for each file over the limit `blob_bytes` (sizes read from object headers)."""
    limit = limits.current().blob_bytes
    problems: list[Problem] = []
    for path in snapshot.walk():
        size = snapshot.size(path) or 0
        if size > limit:
            message = (
                f"the file is {size} bytes, over the limit blob_bytes of {limit} (raise it "
                f"in <root>/{limits.LIMITS_FILE}, see docs/security.md)"
            )
            problems.append({"file": path, "message": message})
    return problems


def _health(repo: Repository, verify: bool) -> tuple[str | None, str | None]:
    """The served commit and the damage of `repository`: its ref, head commit and history are
    read now; damage of objects deeper down is what reads in this process met (or, with
    `verify`, what reading every object finds)."""
    try:
        commit = repo.snapshot().commit_id
        return commit, repo.recorded_damage(verify=verify)
    except Damaged as exc:
        return None, exc.damage
    except NotFound:
        return None, None


def _changed_files(before: Snapshot, after: Snapshot) -> list[str]:
    old = {p: before.object_id(p) for p in before.walk()}
    new = {p: after.object_id(p) for p in after.walk()}
    return sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p))


def _known(repo: Repository, commit: str | None) -> str | None:
    return commit if commit and remote.has_commit(repo, commit) else None


def _check_ref(ref: str) -> str:
    if not ref.startswith("refs/"):
        raise InvalidInput(f"ref {ref!r} must start with refs/", key="ref")
    check_branch(ref)
    return ref


# -- repositories outside a store (CI) -------------------------------------------------------
def _catalog_at(path: str | os.PathLike | None, repo_path: Path) -> CatalogView | None:
    """The catalog of `--catalog PATH`, or of the store `repo_path` lives in, or None."""
    if path is None:
        root = repo_path.resolve().parent.parent
        if repo_path.resolve().parent.name != "environments" or not (root / "catalog.git").is_dir():
            return None
        path = root / "catalog.git"
    return CatalogView(open_repository(path).snapshot("HEAD"))


def validate_repository(
    path: str | os.PathLike, revision: str | None = None, catalog: str | os.PathLike | None = None
) -> list[Problem]:
    """Problems of the repository at `path` at `revision` (default HEAD)."""
    repo = open_repository(path)
    snapshot = repo.snapshot(revision or "HEAD")
    kind = detect_kind(snapshot)
    view = _catalog_at(catalog, repo.path) if kind == ENVIRONMENT else None
    return validate_tree(snapshot, kind, catalog=view)


def review_repository(
    path: str | os.PathLike, base: str, head: str, catalog: str | os.PathLike | None = None
) -> Review:
    """`GitOps.review` for a repository by path, with no store and no server."""
    repo = open_repository(path)
    return review(repo, base, head, _catalog_at(catalog, repo.path))


# -- the report as a forge comment ------------------------------------------------------------
def render_markdown(review: Review) -> str:
    """The review as Markdown for a pull-request comment or a CI log."""
    report = review.report
    count = len(report["errors"])
    plural = "s" if count != 1 else ""
    verdict = "valid" if report["valid"] else f"INVALID ({count} problem{plural})"
    lines = [
        f"### gitstore review: {verdict}",
        "",
        f"`{review.base[:12]}` → `{review.head[:12]}`",
        "",
    ]
    if report["errors"]:
        lines += ["**Validation**", ""]
        lines += [f"- `{format_problem(p)}`" for p in report["errors"]] + [""]
    lines += ["**Effective changes**", ""]
    if not report["scopes"]:
        lines += ["No effective value changes.", ""]
    for scope, resources in report["scopes"].items():
        for resource, change in resources.items():
            lines += [f"`{scope}` {resource}", "", "| key | old | new |", "|---|---|---|"]
            lines += _change_rows(change) + [""]
    nodes = report["nodes_affected"]
    lines += [f"**Nodes affected** ({len(nodes)}): " + (", ".join(map(str, nodes)) or "none"), ""]
    if report["override_files"]:
        lines += ["**Override files** (owners of `**/overrides/**` review these):", ""]
        lines += [f"- `{f}`" for f in report["override_files"]] + [""]
    return "\n".join(lines)


def _change_rows(change: dict) -> list[str]:
    rows = [f"| `{k}` | | {_cell(v)} |" for k, v in change.get("added", {}).items()]
    rows += [f"| `{k}` | {_cell(v)} | |" for k, v in change.get("removed", {}).items()]
    rows += [
        f"| `{k}` | {_cell(v['old'])} | {_cell(v['new'])} |"
        for k, v in change.get("changed", {}).items()
    ]
    return rows


def _cell(value: Any) -> str:
    text = json.dumps(value, default=str)
    text = text if len(text) <= 80 else text[:77] + "..."
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def start_poller(
    gitops: GitOps, seconds: float, stop: threading.Event | None = None
) -> threading.Thread:
    """Sync every mirror every `seconds` in a daemon thread (`serve --poll`).

    Run it in one process only (e.g. the gunicorn arbiter's `when_ready`, or the `serve`
    command before it starts gunicorn): syncs are serialised per repository anyway.
    """
    if seconds <= 0:
        raise InvalidInput("--poll needs a positive number of seconds", key="poll")
    stop = stop or threading.Event()

    def loop() -> None:
        while not stop.wait(seconds):
            try:
                gitops.sync_all()
            except Exception:  # noqa: BLE001 - a poller must outlive any one bad round
                log.exception("mirror poll failed")

    thread = threading.Thread(target=loop, name="gitstore-mirror-poll", daemon=True)
    thread.start()
    return thread
