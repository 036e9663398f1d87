"""ConfigDB values and overrides: read a layer or the effective result, write documents and keys.

Reads never write. Every write is one commit made of one document (docs/design.md: "The store
on disk", "Effective values").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitstore import documents, keypaths
from gitstore.backend.cache import Caches
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.catalog.view import CatalogView
from gitstore.configdb.scopes import effective_document
from gitstore.errors import Conflict, InvalidInput, NotFound, PreconditionFailed
from gitstore.layout import KINDS, EnvironmentView, LevelPairs, layer_file, scope_of
from gitstore.limits import check_plain_data
from gitstore.merge import effective
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets


@dataclass(frozen=True)
class Query:
    """What a read asks for beyond the document address."""

    effective: bool = False
    show_lookup: bool = False
    key: str | None = None
    version: str | None = None
    #: Open secret values instead of masking them (the caller must be allowed to see them).
    reveal: bool = False


class Config:
    """Values and overrides of resources at levels of an environment."""

    def __init__(self, repos: Repositories, secrets: Secrets, caches: Caches) -> None:
        self._repos = repos
        self._secrets = secrets
        self._answers = caches.value_answers  # shared with the merge and mask caches: read only
        self._catalogs = caches.catalogs

    # -- resolving names -------------------------------------------------------------------
    def resource_name(
        self, view: EnvironmentView, ref: str, catalog_head: str | None = None
    ) -> str:
        """The name of resource `ref` (id or name) if a component of the environment has it,
        in the catalog at `catalog_head` (a head the caller read; None: read it now)."""
        catalog = self._catalog_view(catalog_head)
        try:
            definition = catalog.definition(ref)
        except NotFound:
            definition = None
        attached = {d["name"] for d in catalog.definitions_of(view.components)}
        if definition is None or definition["name"] not in attached:
            raise NotFound(
                f"resource {ref!r} is not defined for environment {view.env_id} "
                f"(no attached component has it); {_define_step(view, catalog, definition, ref)}"
            )
        return definition["name"]

    def head_view(self, env_id: int) -> Callable[[], EnvironmentView]:
        """The view of the environment's head, made when asked (a read at an older version
        asks it whether a node unknown then is known now)."""
        return lambda: EnvironmentView(self._repos.environment_repo(env_id).snapshot())

    def definition(self, name: str) -> dict:
        return self._catalog_view().definition(name)

    def _catalog_view(self, head: str | None = None) -> CatalogView:
        """The catalog at `head` (None: its head now), built once per catalog commit (every
        write asks twice); a kept view is found without opening a snapshot.

        Per thread: a view keeps its snapshot, whose pygit2 handle is this thread's.
        """
        catalog = self._repos.catalog()
        if head is None:
            head = catalog.head()
        return self._catalogs.get_or_compute(
            (threading.get_ident(), head), lambda: CatalogView(catalog.snapshot(head))
        )

    # -- reading ---------------------------------------------------------------------------
    def heads(self, env_id: int) -> tuple[str | None, str | None]:
        """The heads of the environment and of the catalog: with the request, all that a
        masked answer follows from (`read` caches by them; so does the API's fast path)."""
        return self._repos.environment_repo(env_id).head(), self._repos.catalog().head()

    def read(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        kind: str,
        query: Query = Query(),
        who: str | None = None,
        heads: tuple[str, str] | None = None,
    ) -> Served:
        """One layer document or the effective document, secrets masked unless revealed.

        A reveal is recorded in the audit log as made by `who`. `heads` (the environment's and
        the catalog's, as `heads()` gives them) are ones the caller read for this request: the
        read is made at them instead of reading the refs again (a version number or commit id
        is resolved against the environment's head; `Repository.snapshot`).
        """
        _check_kind(kind)
        if query.show_lookup and not query.effective:
            raise Conflict("show_lookup needs effective (add ?effective)")
        repo = self._repos.environment_repo(env_id)
        if heads is None:
            snapshot = repo.snapshot(query.version)
            catalog_head = self._repos.catalog().head()  # read once: the answer is of this commit
        elif query.version is None:
            snapshot, catalog_head = repo.snapshot_at_head(heads[0]), heads[1]
        else:
            snapshot, catalog_head = repo.snapshot(query.version, head=heads[0]), heads[1]
        if query.reveal:  # computed every time: every reveal is audited
            return self._read(env_id, snapshot, pairs, resource, kind, query, who, catalog_head)
        # A masked answer follows from the environment commit, the catalog commit (definitions,
        # secret rules) and the request alone: cached by those ids, it never goes stale.
        key = (
            repo.path,
            snapshot.commit_id,
            catalog_head,
            tuple(map(tuple, pairs)),
            resource,
            kind,
            query,
        )
        return self._answers.get_or_compute(
            key,
            lambda: self._read(env_id, snapshot, pairs, resource, kind, query, who, catalog_head),
        )

    def _read(
        self,
        env_id: int,
        snapshot: Snapshot,
        pairs: LevelPairs,
        resource: str,
        kind: str,
        query: Query,
        who: str | None,
        catalog_head: str | None,
    ) -> Served:
        view = EnvironmentView(snapshot)
        pairs = view.check_levels(pairs, head=self.head_view(env_id))
        name = self.resource_name(view, resource, catalog_head)
        if query.effective:
            data, inputs, shown = self._effective(env_id, view, pairs, name, query, catalog_head)
            what = f"{scope_of(pairs)} {name} effective"
        else:
            path = layer_file(pairs[-1] if pairs else None, kind, name)
            data, shown = self._secrets.show(
                env_id,
                view,
                view.snapshot.read_mapping(path) or {},
                path,
                cache_key=("layer", view.snapshot.object_id(path)),
                reveal=query.reveal,
                catalog_head=catalog_head,
            )
            inputs = (view.snapshot.object_id(path),)
            if query.key is not None:
                data = keypaths.get_path(data, keypaths.split_dotted(query.key))
            what = path
        shown = _under(shown, query.key)
        if query.reveal:
            self._secrets.record_reveal(who, env_id, what, snapshot.commit_id, shown)
        return Served(
            data,
            snapshot.commit_id,
            snapshot.version,
            inputs=(kind, query.effective, query.show_lookup, query.key, query.reveal, *inputs),
            masked=() if query.reveal else shown,
            shared=not query.reveal,
        )

    def _effective(
        self,
        env_id: int,
        view: EnvironmentView,
        pairs: LevelPairs,
        name: str,
        query: Query,
        catalog_head: str | None,
    ):
        blobs = view.layer_inputs(pairs, name)  # looked up once: three uses below
        merged = effective_document(view, pairs, name, blobs)  # shared by blob ids: never mutate
        merged, shown = self._secrets.show_effective(
            env_id,
            view,
            pairs,
            name,
            merged,
            reveal=query.reveal,
            inputs=blobs,
            catalog_head=catalog_head,  # the rules of the catalog commit the answer is keyed by
        )
        inputs = (view.merge, *blobs)
        if query.key is not None:
            path = keypaths.split_dotted(query.key)
            value = keypaths.get_path(merged, path)
            if query.show_lookup:
                source = effective.lookup_sources(view.layers(pairs, name)).get(path[0], "/")
                return [value, source], inputs, shown
            return value, inputs, shown
        if query.show_lookup:
            sources = effective.lookup_sources(view.layers(pairs, name))
            return effective.with_lookup(merged, sources), inputs, shown
        return merged, inputs, shown

    # -- writing ---------------------------------------------------------------------------
    def put(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        kind: str,
        document: Any,
        author: Author | None = None,
        *,
        expected: str | None = None,
    ) -> Served:
        """Replace one values or overrides document (if unchanged since version `expected`)."""
        _check_kind(kind)
        if not isinstance(document, dict):
            raise InvalidInput(
                'the document must be a JSON object (a mapping) like {"key": "value"}; to set '
                'one key, PATCH .../keys/set with [["key", value]] (`gitstore config set --key`)'
            )

        def change(view, pairs, name, path, current):
            count = len(document)
            message = f"config: set {_where(pairs)} {name} {kind} ({count} keys)"
            return document, message

        return self._write(env_id, pairs, resource, kind, change, author, expected)

    def update_keys(
        self,
        env_id: int,
        pairs: LevelPairs,
        resource: str,
        kind: str,
        op: str,
        paths: Any,
        author: Author | None = None,
        *,
        expected: str | None = None,
        dry_run: bool = False,
    ) -> Served:
        """Set or delete a batch of key paths atomically (one commit, or nothing), if the
        document is unchanged since version `expected`.

        `dry_run` builds that commit without serving it (`Repository.dry_run`): the answer
        names the proposed commit, which a diff or the gate can then read, and its data says
        whether it `changed` anything (else the commit named is the head).
        """
        _check_kind(kind)
        if op not in keypaths.KEY_OPS:
            raise NotFound(f"unknown key operation {op!r}; use set or delete")
        paths = keypaths.check_batch(paths, op)

        keys = ", ".join(keypaths.dotted(p[:-1] if op == "set" else p) for p in paths[:5])
        more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""

        def message(pairs, name):
            return f"config: {op} {_where(pairs)} {name} {kind} keys {keys}{more}"

        def change(view, pairs, name, path, current):
            return keypaths.apply_batch(current, op, paths), message(pairs, name)

        def splice(view, pairs, name, path, old, sealer):
            """The new bytes without parsing the document, or None (see `documents.set_keys`);
            a resource with a schema is judged on the whole document, so it takes `change`."""
            if self.definition(name).get("schema"):
                return None
            caches = view.snapshot.caches
            known = caches.parsed_blobs.get(view.snapshot.object_id(path))
            splice_keys = documents.set_keys if op == "set" else documents.delete_keys
            data = splice_keys(path, old, paths, sealer=sealer, parsed=known, caches=caches)
            return None if data is None else (data, message(pairs, name))

        return self._write(
            env_id,
            pairs,
            resource,
            kind,
            change,
            author,
            expected,
            dry_run,
            edited=True,
            splice=splice,
        )

    def _write(
        self,
        env_id,
        pairs,
        resource,
        kind,
        change,
        author,
        expected=None,
        dry_run=False,
        edited=False,
        splice=None,
    ) -> Served:
        """Write the document `change` makes of the current one, in one commit. `splice`, if
        given, may make the new bytes from the old ones instead, without parsing them (a key
        batch into a large document); when it answers None, `change` runs."""
        repo = self._repos.environment_repo(env_id)

        def operation(snapshot: Snapshot) -> ChangeSet:
            view = EnvironmentView(snapshot)
            checked = view.check_levels(pairs, write=True)
            name = self.resource_name(view, resource)
            path = layer_file(checked[-1] if checked else None, kind, name)
            if expected is not None:
                _check_unchanged(repo, expected, path, snapshot)
            old = snapshot.read(path)
            sealer = self._secrets.sealer(env_id, view, self._secrets.caller)
            spliced = splice and old and splice(view, checked, name, path, old, sealer)
            if spliced:
                data, message = spliced
                changes = ChangeSet(message)
                changes.put(path, data)
                return changes
            current = snapshot.read_mapping(path) or {}
            document, message = change(view, checked, name, path, current)
            check_plain_data(document, path)
            self._validate(name, path, document, view)
            changes = ChangeSet(message)
            changes.put(
                path,
                documents.encode(
                    snapshot.repository,
                    path,
                    document,
                    old,
                    sealer=sealer,
                    edited=edited,
                    caches=snapshot.caches,
                ),
            )
            return changes

        write = repo.dry_run if dry_run else repo.update
        result = write(operation, author or self._repos.default_author)
        data = {"changed": result.changed} if dry_run else None  # a write answers nothing
        return Served(data, result.commit, result.version)

    def _validate(self, name: str, path: str, document: dict, view: EnvironmentView) -> None:
        """The push gate's rule for one resource file, applied to the one document written
        (its secret leaves' values unjudged, as the gate cannot read them)."""
        from gitstore.secrets.leaves import secret_paths
        from gitstore.validation import check_resource_document

        rules = self._secrets.rules_of(view)(path)
        check_resource_document(
            self.definition(name),
            path,
            document,
            secrets=secret_paths(document, rules),
            caches=view.snapshot.caches,
        )

    def write_many(
        self,
        env_id: int,
        documents_by_path: dict[tuple, dict],
        message: str,
        author: Author | None = None,
    ) -> Served:
        """Write several documents in one commit: keys are (pairs, resource, kind)."""
        return self.write_planned(env_id, lambda view: documents_by_path, message, author)

    def write_planned(
        self,
        env_id: int,
        plan: Callable[[EnvironmentView], dict[tuple, dict]],
        message: str,
        author: Author | None = None,
    ) -> Served:
        """Write, in one commit, the documents `plan` chooses from the head it is shown (again
        on the new head after a lost race): keys are (pairs, resource, kind)."""
        repo = self._repos.environment_repo(env_id)

        def operation(snapshot: Snapshot) -> ChangeSet:
            view = EnvironmentView(snapshot)
            sealer = self._secrets.sealer(env_id, view, self._secrets.caller)
            changes = ChangeSet(message)
            for (pairs, resource, kind), document in plan(view).items():
                _check_kind(kind)
                checked = view.check_levels(list(pairs), write=True)
                name = self.resource_name(view, resource)
                path = layer_file(checked[-1] if checked else None, kind, name)
                self._validate(name, path, document, view)
                changes.put(
                    path,
                    documents.encode(
                        snapshot.repository,
                        path,
                        document,
                        snapshot.read(path),
                        sealer=sealer,
                        caches=snapshot.caches,
                    ),
                )
            return changes

        result = repo.update(operation, author or self._repos.default_author)
        return Served(None, result.commit, result.version)


def _check_unchanged(repo, expected: str, path: str, head: Snapshot) -> None:
    """PreconditionFailed unless `path` is the same blob at version `expected` as at `head`.

    The document, not the commit, is compared: a commit that changed other files in between
    does not make the writer start over.
    """
    try:
        then = repo.snapshot(expected)
    except NotFound as exc:
        raise PreconditionFailed(
            f"If-Match {expected!r} names no version of {repo.name}; send the ETag, "
            "X-Gitstore-Commit or X-Gitstore-Version of a read of the document "
            "(`--if-version` takes the version `gitstore config get` printed)",
            key="If-Match",
        ) from exc
    if then.object_id(path) != head.object_id(path):
        raise PreconditionFailed(
            f"{path} changed since version {expected} (now version {head.version}, commit "
            f"{head.commit_id[:12]}): read it again (`gitstore config get`, or a GET) and "
            f"reapply the edit to what you read, with If-Match: {head.version} "
            f"(`--if-version {head.version}`)",
            path=path,
            key="If-Match",
        )


def _define_step(
    view: EnvironmentView, catalog: CatalogView, definition: dict | None, ref: str | int
) -> str:
    """How to make resource `ref` readable in the environment: attach the component that
    defines it, or define it in a component the environment has."""
    env = view.env_id
    owner = None
    if definition is not None and definition.get("component_id") is not None:
        owner = catalog.component(definition["component_id"])["name"]
    if owner is not None:
        components = ",".join([*view.components, owner])
        return (
            f"attach its component with `gitstore env update {env} --components {components}` "
            f"(PUT /api/v1/config/environments/{env})"
        )
    component = view.components[0] if view.components else "COMPONENT"
    name = "NAME" if str(ref).isdigit() else ref  # an id names nothing to create
    return (
        f"define it with `gitstore def create --component {component} --name {name}` "
        "(POST /api/v1/config/resource_definitions)"
    )


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise NotFound(f"unknown document kind {kind!r}; use values or overrides")


def _under(paths: tuple[str, ...], key: str | None) -> tuple[str, ...]:
    """The dotted paths at or below `key` (all of them without a key)."""
    if key is None:
        return paths
    return tuple(p for p in paths if p == key or p.startswith(key + "."))


def _where(pairs: LevelPairs) -> str:
    return scope_of(pairs).strip("/") or "global"
