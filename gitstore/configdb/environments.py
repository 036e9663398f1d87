"""Environments: one bare repository each, described by `environment.yaml` (docs/design.md,
"The store on disk")."""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gitstore import documents
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.bodies import Body
from gitstore.catalog.releases import owner_fields, owner_refs
from gitstore.catalog.view import CatalogView
from gitstore.errors import Conflict, Damaged, InvalidInput, NotFound
from gitstore.layout import ENVIRONMENT_FILE, MAX_ENVIRONMENT_ID, EnvironmentView
from gitstore.merge import strategies
from gitstore.merge.effective import DEEP, MODES
from gitstore.names import check_level_name
from gitstore.secrets.rules import parse_patterns
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.deployment.graphs import Graphs
    from gitstore.deployment.inventory import Nodes
    from gitstore.repositories import Repositories
    from gitstore.secrets.service import Secrets

#: Told after an environment was archived: (its id, its last `environment.yaml`). The upgrade
#: relations subscribe (a deleted side frees its peer); configdb knows nothing of upgrades.
Deleted = Callable[[int, dict], None]

ENVIRONMENT_BODY = Body(
    "environment",
    (
        "id",
        "name",
        "components",
        "hierarchy_levels",
        "merge",
        "release",
        "plugins",
        "secret_keys",
        "lookup_options",
    ),
    example='{"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]}',
)
#: `PUT .../hierarchy_levels/<name>`: the new name; `parent` and `values` are a GET's echo.
LEVEL_BODY = Body("hierarchy level", ("name", "parent", "values"), required=("name",))


def environment_entity(doc: dict, catalog: CatalogView) -> dict:
    ids = []
    for name in doc.get("components") or []:
        try:
            ids.append(catalog.component(name)["id"])
        except NotFound:
            continue  # a component deleted while attached (it held no data here)
    return {
        "id": doc.get("id"),
        "name": doc.get("name"),
        "components": ids,
        "hierarchy_levels": list(doc.get("hierarchy") or []),
        "merge": doc.get("merge", "deep"),
        **({"secret_keys": doc["secret_keys"]} if doc.get("secret_keys") else {}),
        **({"lookup_options": doc["lookup_options"]} if doc.get("lookup_options") else {}),
        **owner_fields(doc, catalog.snapshot),
        **({"upgrade": doc["upgrade"]} if "upgrade" in doc else {}),
    }


def _check_body(body: Any, *, partial: bool) -> dict:
    body = ENVIRONMENT_BODY.check(body)
    fields: dict[str, Any] = {}
    if "id" in body and body["id"] is not None:
        env_id = body["id"]
        if (
            isinstance(env_id, bool)
            or not isinstance(env_id, int)
            or not (1 <= env_id <= MAX_ENVIRONMENT_ID)
        ):
            raise InvalidInput(
                f"field 'id' must be an integer from 1 to {MAX_ENVIRONMENT_ID}", key="id"
            )
        fields["id"] = body["id"]
    if "name" in body:
        fields["name"] = _check_name(body["name"])
    if "components" in body or not partial:
        fields["components"] = _check_components(body.get("components", []))
    if "hierarchy_levels" in body or not partial:
        fields["hierarchy"] = _check_levels(body.get("hierarchy_levels", []))
    if "merge" in body or not partial:
        merge = body.get("merge", "deep")
        if merge not in MODES:
            raise InvalidInput(f"field 'merge' must be one of {', '.join(MODES)}", key="merge")
        fields["merge"] = merge
    fields.update((key, body[key]) for key in ("release", "plugins") if key in body)
    if "secret_keys" in body:  # more key paths whose values are sealed (docs/secrets.md)
        parse_patterns(body["secret_keys"], "field 'secret_keys'")
        fields["secret_keys"] = list(body["secret_keys"] or [])
    if "lookup_options" in body:  # per-key merge strategies (docs/hiera.md#merge-strategies)
        strategies.parse(body["lookup_options"], DEEP, "field 'lookup_options'")
        fields["lookup_options"] = dict(body["lookup_options"] or {})
    return fields


def _check_name(name: Any) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str) or len(name) > 200 or any(ord(c) < 32 for c in name):
        raise InvalidInput("field 'name' must be a string of printable characters", key="name")
    return name


def _check_components(refs: Any) -> list:
    if not isinstance(refs, list):
        raise InvalidInput("field 'components' must be a list of ids or names", key="components")
    for ref in refs:
        if isinstance(ref, bool) or not isinstance(ref, int | str):
            raise InvalidInput(
                f"field 'components': {ref!r} is not an id or a name", key="components"
            )
    return refs


def _check_levels(levels: Any) -> list[str]:
    if not isinstance(levels, list):
        raise InvalidInput(
            "field 'hierarchy_levels' must be a list of names", key="hierarchy_levels"
        )
    checked = [check_level_name(level) for level in levels]
    repeated = sorted({level for level in checked if checked.count(level) > 1})
    if repeated:
        raise InvalidInput(f"hierarchy level {repeated[0]!r} is repeated", key="hierarchy_levels")
    return checked


def _component_names(refs: list, catalog: CatalogView) -> list[str]:
    names = [catalog.component(ref)["name"] for ref in refs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise Conflict(f"component {repeated[0]!r} is given twice", key="components")
    return names


class Environments:
    """Create, read, change and archive environments and their hierarchy levels."""

    def __init__(self, repos: Repositories, secrets: Secrets, graphs: Graphs, nodes: Nodes) -> None:
        self._repos = repos
        self._secrets = secrets
        self._graphs = graphs
        self._nodes = nodes
        self._deleted: list[Deleted] = []

    def on_deleted(self, listener: Deleted) -> None:
        """Call `listener(env_id, last environment.yaml)` after an environment is archived."""
        self._deleted.append(listener)

    # -- reading ---------------------------------------------------------------------------
    def view(self, env_id: int, version: str | None = None) -> EnvironmentView:
        return EnvironmentView(self._repos.environment_repo(env_id).snapshot(version))

    def _catalog(self) -> CatalogView:
        return CatalogView(self._repos.catalog().snapshot())

    def list(self) -> Served:
        catalog = self._catalog()
        entities = []
        for env_id in self._repos.environment_ids():
            try:
                entities.append(environment_entity(self.view(env_id).doc, catalog))
            except NotFound:
                continue  # archived between listing and reading
            except Damaged:
                continue  # reads of it answer 503 naming the damage; /status reports it
        return Served(entities)

    def get(self, env_id: int, version: str | None = None) -> Served:
        view = self.view(env_id, version)
        return Served(
            environment_entity(view.doc, self._catalog()),
            view.snapshot.commit_id,
            view.snapshot.version,
        )

    def levels(self, env_id: int, version: str | None = None) -> Served:
        view = self.view(env_id, version)
        return Served(view.level_entities(), view.snapshot.commit_id, view.snapshot.version)

    def level(self, env_id: int, name: str, version: str | None = None) -> Served:
        view = self.view(env_id, version)
        entity = _level_entity(view, name)
        return Served(entity, view.snapshot.commit_id, view.snapshot.version)

    # -- writing ---------------------------------------------------------------------------
    def create(self, body: Any, author: Author | None = None) -> Served:
        fields = _check_body(body, partial=False)
        catalog = self._catalog()
        doc: dict[str, Any] = {"id": None}
        if fields.get("name") is not None:
            doc["name"] = fields["name"]
        doc.update(
            components=_component_names(fields["components"], catalog),
            hierarchy=fields["hierarchy"],
            merge=fields["merge"],
        )
        for key in ("secret_keys", "lookup_options"):
            if fields.get(key):
                doc[key] = fields[key]
        doc.update(owner_refs(fields, catalog.snapshot))
        if doc.get("plugins"):
            self._graphs.check_plugins(doc["plugins"], catalog.snapshot)
        author = author or self._repos.default_author
        if "id" in fields:
            self._create_repo(fields["id"], doc, author)
        else:
            self._create_with_next_id(doc, author)
        return self.get(doc["id"])

    def _create_with_next_id(self, doc: dict, author: Author) -> None:
        for _ in range(100):
            env_id = max(self._repos.environment_ids(), default=0) + 1
            try:
                return self._create_repo(env_id, doc, author)
            except Conflict:
                continue  # another creator took this id first
        raise Conflict("could not allocate an environment id")

    def _create_repo(self, env_id: int, doc: dict, author: Author) -> None:
        doc["id"] = env_id
        first = ChangeSet(f"environment {env_id}: create")
        first.put(
            ENVIRONMENT_FILE, documents.encode(f"environment {env_id}", ENVIRONMENT_FILE, doc)
        )
        self._repos.create_environment_repo(env_id, first, author)

    def update(self, env_id: int, body: Any, author: Author | None = None) -> Served:
        fields = _check_body(body, partial=True)
        if "id" in fields and fields["id"] != env_id:
            raise InvalidInput("field 'id' cannot be changed", key="id")
        catalog = self._catalog()
        names = _component_names(fields["components"], catalog) if "components" in fields else None
        owners = owner_refs(fields, catalog.snapshot)
        if owners.get("plugins"):
            self._graphs.check_plugins(owners["plugins"], catalog.snapshot)

        def operation(snapshot: Snapshot) -> ChangeSet:
            view = EnvironmentView(snapshot)
            doc = dict(view.doc)
            if names is not None:
                self._check_detach(view, catalog, names)
                doc["components"] = names
            if "hierarchy" in fields:
                _check_dropped_levels(view, fields["hierarchy"])
                doc["hierarchy"] = fields["hierarchy"]
            for key in ("name", "merge", "secret_keys", "lookup_options"):
                if key in fields:
                    doc[key] = fields[key]
            for key in ("secret_keys", "lookup_options"):
                if not doc.get(key):
                    doc.pop(key, None)
            doc.update(owners)
            return _put_environment(view, doc, f"environment {env_id}: update settings")

        self._repos.environment_repo(env_id).update(operation, author or self._repos.default_author)
        if owners:  # the merged roles and tags changed: re-elect primaries
            self._nodes.reconcile(
                env_id, "reconcile nodes after a release or plugin change", author
            )
        return self.get(env_id)

    def _check_detach(
        self, view: EnvironmentView, catalog: CatalogView, names: builtins.list[str]
    ) -> None:
        dropped = [n for n in view.components if n not in names]
        resources = [d["name"] for d in catalog.definitions_of(dropped)]
        held = [r for r in resources if view.resource_has_data(r)]
        if held:
            raise Conflict(
                f"environment {view.env_id} holds data for resources {held} of the "
                f"components being detached",
                key="components",
            )

    def rename_level(
        self, env_id: int, name: str, body: Any, author: Author | None = None
    ) -> Served:
        """Rename level `name` (body `{"name": new}`): its folder moves in the same commit.

        `parent` and `values` of the level entity are derived, so a body may repeat them but
        not change them.
        """
        new_name = _check_level_body(body)

        def operation(snapshot: Snapshot) -> ChangeSet:
            view = EnvironmentView(snapshot)
            current = _level_entity(view, name)
            for field in ("parent", "values"):
                if field in body and body[field] != current[field]:
                    raise InvalidInput(
                        f"field {field!r} of a hierarchy level is read-only; "
                        "reorder levels with PUT /environments/<id>",
                        key=field,
                    )
            if new_name != name and new_name in view.hierarchy:
                raise Conflict(f"environment {env_id} already has a level {new_name!r}", key="name")
            doc = dict(view.doc)
            doc["hierarchy"] = [new_name if lvl == name else lvl for lvl in view.hierarchy]
            changes = _put_environment(
                view, doc, f"environment {env_id}: rename level {name} to {new_name}"
            )
            graft = snapshot.graft(name)
            if graft is not None and new_name != name:
                changes.graft(new_name, graft)
                changes.delete(name)
                self._secrets.moved_folder(env_id, snapshot, name, new_name, changes)
            return changes

        repo = self._repos.environment_repo(env_id)
        repo.update(operation, author or self._repos.default_author)
        return self.level(env_id, new_name)

    def delete(self, env_id: int) -> None:
        doc = self.view(env_id).doc  # read before the repository goes
        self._repos.archive_environment(env_id)
        for listener in self._deleted:
            listener(env_id, doc)

    # -- questions other services ask ------------------------------------------------------


def _level_entity(view: EnvironmentView, name: str) -> dict:
    for entity in view.level_entities():
        if entity["name"] == name:
            return entity
    raise NotFound(
        f"environment {view.env_id} has no hierarchy level {name!r} (its levels: "
        f"{', '.join(view.hierarchy) or 'none'}); {view.add_level_step(name)}"
    )


def _check_level_body(body: Any) -> str:
    body = LEVEL_BODY.check(body)
    return check_level_name(body["name"])


def _check_dropped_levels(view: EnvironmentView, new_levels: list[str]) -> None:
    for level in view.hierarchy:
        if level not in new_levels and view.snapshot.list(level):
            raise Conflict(
                f"hierarchy level {level!r} of environment {view.env_id} holds data; "
                "it cannot be removed",
                key="hierarchy_levels",
            )


def _put_environment(view: EnvironmentView, doc: dict, message: str) -> ChangeSet:
    changes = ChangeSet(message)
    old = view.snapshot.read(ENVIRONMENT_FILE)
    changes.put(
        ENVIRONMENT_FILE,
        documents.encode(
            view.snapshot.repository, ENVIRONMENT_FILE, doc, old, caches=view.snapshot.caches
        ),
    )
    return changes
