"""Releases and plugins: catalog entities that own roles, tags and graphs (docs/design.md, "The
store on disk").

    releases/<name>/release.yaml   {id, name, version, operating_system, state, ...}
    releases/<name>/roles.yaml     {roles_metadata: {role: {name, tags, conflicts?, ...}}}
    releases/<name>/tags.yaml      {tags_metadata: {tag: {has_primary, ...}}}
    plugins/<name>/plugin.yaml     {id, name, version, roles_metadata?, tags_metadata?, ...}

An owner's folder (`folder_of`) also holds files other modules own (`graphs/<type>.yaml`,
`settings.yaml`, `upgrade.yaml`): a rename moves them along, a delete removes them. Environments
name their release and plugins by name, so an owner named by an environment can be neither
renamed nor deleted.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitstore import documents
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author, WriteResult
from gitstore.backend.snapshot import Snapshot
from gitstore.bodies import Body
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.layout import EnvironmentView
from gitstore.merge.tags import TAG_NAME, missing_role_tags
from gitstore.names import check_identifier, check_segment, is_number
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.repositories import Repositories

ROLES_FILE = "roles.yaml"
TAGS_FILE = "tags.yaml"
ROLES = "roles_metadata"
TAGS = "tags_metadata"
RELEASE_STATES = (
    "available",
    "unavailable",
    "manageable",
    "not_available",
    "manageonly",
    "deprecated",
)
#: Nailgun's name for a release's default settings, which gitstore keeps apart (settings.yaml).
NAILGUN_SETTINGS = "attributes_metadata"
#: Role metadata fields Nailgun gives a type, and that type (others are kept as given).
_ROLE_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "description": (str,),
    "has_primary": (bool,),
    "public_ip_required": (bool,),
    "public_for_dvs_required": (bool,),
    "public_for_dvr_required": (bool,),
    "weight": (int,),
    "group": (str,),
    "fault_tolerance": (str,),
    "limits": (dict,),
    "restrictions": (list,),
    "update_required": (list,),
    "update_once": (list,),
}
#: Where an entity's metadata lives: extra fields go to the main document as given.
_METADATA = (ROLES, TAGS)
#: Field order of an entity (other fields follow in the order given, metadata last).
_ORDER = ("id", "name", "version", "operating_system", "state", "description")


#: A release body: gitstore's fields and the others of Nailgun's release, kept as given.
#: `attributes_metadata` is named so that its own refusal (`check_entity`) explains where the
#: settings go; Nailgun's `deployment_tasks` are graphs here (`.../deployment_graphs/<type>`).
RELEASE_BODY = Body(
    "release",
    (
        *("id", "name", "version", "operating_system", "state", "description"),
        *(ROLES, TAGS, NAILGUN_SETTINGS),
        *("can_update_from_versions", "modes", "modes_metadata", "networks_metadata"),
        *("network_roles_metadata", "volumes_metadata", "vmware_attributes_metadata"),
        *("components_metadata", "wizard_metadata", "extensions", "is_deployable", "roles"),
        *("node_attributes", "nic_attributes", "bond_attributes", "required_component_types"),
    ),
)
#: A plugin body: gitstore's fields and the others of Nailgun's plugin, kept as given.
PLUGIN_BODY = Body(
    "plugin",
    (
        *("id", "name", "version", "description", ROLES, TAGS),
        *("title", "package_version", "fuel_version", "releases", "groups", "authors"),
        *("licenses", "homepage", "is_hotpluggable", "attributes_metadata", "volumes_metadata"),
        *("network_roles_metadata", "components_metadata", "nic_attributes_metadata"),
        *("bond_attributes_metadata", "node_attributes_metadata"),
    ),
)


@dataclass(frozen=True)
class OwnerKind:
    """How one kind of catalog owner is laid out and validated."""

    name: str  # "release" or "plugin"
    folder: str  # "releases" or "plugins"
    document: str  # "release.yaml" or "plugin.yaml"
    split_metadata: bool  # roles and tags in roles.yaml / tags.yaml
    required: tuple[str, ...]
    #: Role tags must be defined by this owner (a plugin's roles may name release tags).
    strict_role_tags: bool
    body: Body


RELEASE = OwnerKind(
    "release",
    "releases",
    "release.yaml",
    True,
    ("name", "version", "operating_system"),
    True,
    RELEASE_BODY,
)
PLUGIN = OwnerKind(
    "plugin", "plugins", "plugin.yaml", False, ("name", "version"), False, PLUGIN_BODY
)


class OwnerCatalog:
    """The releases (or plugins) of one catalog commit, read once."""

    def __init__(self, snapshot: Snapshot, kind: OwnerKind) -> None:
        self.snapshot = snapshot
        self.kind = kind
        self._entities: list[dict] | None = None

    def entities(self) -> list[dict]:
        """Every entity, sorted by id."""
        if self._entities is None:
            found = [
                self._read(entry.name)
                for entry in self.snapshot.list(self.kind.folder)
                if entry.is_tree
            ]
            self._entities = sorted(
                (e for e in found if e is not None), key=lambda e: e.get("id") or 0
            )
        return self._entities

    def entity(self, ref: int | str) -> dict:
        """The entity with id `ref` (an int or digits) or name `ref`; NotFound otherwise."""
        for entity in self.entities():
            if _matches(entity, ref):
                return entity
        raise NotFound(
            f"{self.kind.name} {ref!r} does not exist; list them with GET /api/v1/"
            f"{self.kind.folder}"
        )

    def folder_of(self, ref: int | str) -> str:
        """`releases/<name>`: where the entity's files (and graphs) live."""
        return f"{self.kind.folder}/{self.entity(ref)['name']}"

    def next_id(self) -> int:
        return max((e.get("id") or 0 for e in self.entities()), default=0) + 1

    def _read(self, folder_name: str) -> dict | None:
        folder = f"{self.kind.folder}/{folder_name}"
        doc = self.snapshot.read_mapping(f"{folder}/{self.kind.document}")
        if doc is None:
            return None
        entity = {**doc, "id": doc.get("id"), "name": folder_name}
        if self.kind.split_metadata:
            roles = self.snapshot.read_mapping(f"{folder}/{ROLES_FILE}") or {}
            tags = self.snapshot.read_mapping(f"{folder}/{TAGS_FILE}") or {}
        else:
            roles, tags = doc, doc
        entity[ROLES] = dict(roles.get(ROLES) or {})
        entity[TAGS] = dict(tags.get(TAGS) or {})
        return ordered(entity)


def ordered(entity: dict) -> dict:
    """`entity` with its fields in the documented order."""
    first = {k: entity[k] for k in _ORDER if k in entity}
    rest = {k: v for k, v in entity.items() if k not in first and k not in _METADATA}
    return {**first, **rest, **{k: entity[k] for k in _METADATA if k in entity}}


def _matches(entity: dict, ref: int | str) -> bool:
    if isinstance(ref, int) or is_number(ref):
        return entity.get("id") == int(ref)
    return entity.get("name") == ref


# -- validation ---------------------------------------------------------------------------------
def check_entity(entity: dict, kind: OwnerKind) -> dict:
    """A whole entity (after defaults and partial updates) that obeys the owner's rules."""
    for name in kind.required:
        value = entity.get(name)
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(
                f"{kind.name} field {name!r} is required (a non-empty string)", key=name
            )
    check_segment(entity["name"], f"{kind.name} name")
    if kind is RELEASE and NAILGUN_SETTINGS in entity:
        raise InvalidInput(
            f"release field {NAILGUN_SETTINGS!r} (Nailgun's settings) is not part of a release "
            "body: leave it out and PUT it (its {editable, generated}) to "
            "/api/v1/releases/<id>/settings, or it would be silently unused",
            key=NAILGUN_SETTINGS,
        )
    if kind is RELEASE and entity.get("state") not in RELEASE_STATES:
        raise InvalidInput(
            f"release field 'state' must be one of {', '.join(RELEASE_STATES)}", key="state"
        )
    for key in entity:
        if key not in ("id", *_METADATA):
            check_identifier(key, f"{kind.name} field name")
    entity[TAGS] = check_tags_metadata(entity.get(TAGS), kind.name)
    entity[ROLES] = check_roles_metadata(entity.get(ROLES), kind.name)
    if kind is PLUGIN:
        _tag_untagged_roles(entity[ROLES], entity[TAGS])
    if kind.strict_role_tags:
        check_role_tags(entity[ROLES], entity[TAGS])
    return entity


def check_tag_name(name: Any) -> str:
    """A tag (or role) name: `^[a-zA-Z0-9_-]+$`."""
    if not isinstance(name, str) or not TAG_NAME.match(name):
        raise InvalidInput(f"tag name {name!r} must match ^[a-zA-Z0-9_-]+$", key="name")
    return name


def check_tag_meta(meta: Any, tag: str) -> dict:
    """Tag metadata: a mapping whose `has_primary` is a boolean."""
    if not isinstance(meta, dict) or not isinstance(meta.get("has_primary"), bool):
        raise InvalidInput(
            f"tag {tag!r}: meta.has_primary is required and must be a boolean", key="meta"
        )
    return meta


def check_tags_metadata(tags: Any, owner: str) -> dict:
    if tags is None:
        return {}
    if not isinstance(tags, dict):
        raise InvalidInput(f"{owner} field 'tags_metadata' must be a mapping", key=TAGS)
    for name, meta in tags.items():
        check_tag_meta(meta, check_tag_name(name))
    return tags


def check_roles_metadata(roles: Any, owner: str) -> dict:
    if roles is None:
        return {}
    if not isinstance(roles, dict):
        raise InvalidInput(f"{owner} field 'roles_metadata' must be a mapping", key=ROLES)
    for name, role in roles.items():
        check_tag_name(name)
        if not isinstance(role, dict):
            raise InvalidInput(f"role {name!r} must be a mapping", key=ROLES)
        _check_role_field_types(name, role)
        tags = role.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidInput(f"role {name!r}: 'tags' must be a list of tag names", key=ROLES)
        conflicts = role.get("conflicts", [])
        if conflicts != "*" and (
            not isinstance(conflicts, list) or not all(isinstance(c, str) for c in conflicts)
        ):
            raise InvalidInput(
                f"role {name!r}: 'conflicts' must be a list of roles or '*'", key=ROLES
            )
    return roles


def _tag_untagged_roles(roles: dict, tags: dict) -> None:
    """A plugin role that declares no tags is tagged with its own name, and that tag gets a
    `tags_metadata` entry with the role's `has_primary` (as Nailgun loads plugins), so its
    primary is elected like any tag's."""
    for name, role in roles.items():
        if "tags" in role:
            continue
        role["tags"] = [name]
        tags.setdefault(name, {"has_primary": bool(role.get("has_primary", False))})


def _check_role_field_types(name: str, role: dict) -> None:
    for field, types in _ROLE_FIELD_TYPES.items():
        value = role.get(field)
        wrong_bool = isinstance(value, bool) and bool not in types
        if field in role and (not isinstance(value, types) or wrong_bool):
            wanted = " or ".join(_TYPE_NAMES[t] for t in types)
            raise InvalidInput(
                f"role {name!r}: field {field!r} must be {wanted}, not {value!r}",
                key=f"{ROLES}.{name}.{field}",
            )


_TYPE_NAMES = {
    str: "a string",
    bool: "true or false",
    int: "an integer",
    dict: "a mapping",
    list: "a list",
}


def check_role_tags(roles: dict, tags: Mapping[str, Any]) -> None:
    """Every tag a role names is defined (a role's own name is implicit)."""
    for role, tag in missing_role_tags(roles, tags):
        raise InvalidInput(f"Role {role} contains non-existent tag {tag}", key=ROLES)


# -- storage ----------------------------------------------------------------------------------
def _put_entity(
    changes: ChangeSet, snapshot: Snapshot, kind: OwnerKind, entity: dict, old_name: str | None
) -> None:
    """Write `entity`'s files; a rename moves every other file of the old folder along."""
    folder = f"{kind.folder}/{entity['name']}"
    if old_name is not None and old_name != entity["name"]:
        old = f"{kind.folder}/{old_name}"
        for entry in snapshot.list(old):
            changes.graft(f"{folder}/{entry.name}", snapshot.graft(f"{old}/{entry.name}"))
        changes.delete(old)
        old_folder = old
    else:
        old_folder = folder
    main = {k: v for k, v in ordered(entity).items() if k not in _METADATA}
    files = {kind.document: main}
    if kind.split_metadata:
        files[ROLES_FILE] = {ROLES: entity[ROLES]}
        files[TAGS_FILE] = {TAGS: entity[TAGS]}
    else:
        main.update((k, entity[k]) for k in _METADATA if entity.get(k))
    for name, doc in files.items():
        old_data = snapshot.read(f"{old_folder}/{name}")
        path = f"{folder}/{name}"
        data = documents.encode(snapshot.repository, path, doc, old_data, caches=snapshot.caches)
        changes.put(path, data)


_DEFAULTS = {RELEASE.name: {"state": "available"}, PLUGIN.name: {}}


#: Told after a catalog commit changed the roles or tags of an owner, once per environment that
#: uses it: (env_id, message, author). The Store subscribes the node inventory, which re-runs
#: the primary election: the catalog itself knows nothing of nodes.
RolesChanged = Callable[[int, str, "Author | None"], None]


class Owners:
    """Releases or plugins: list, read, create, change (partially) and delete."""

    kind: OwnerKind = RELEASE

    def __init__(self, repos: Repositories) -> None:
        self._repos = repos
        self._roles_changed: list[RolesChanged] = []

    def on_roles_changed(self, listener: RolesChanged) -> None:
        """Call `listener` for every environment whose owner's roles or tags changed."""
        self._roles_changed.append(listener)

    # -- reading ---------------------------------------------------------------------------
    def view(self, version: str | None = None) -> OwnerCatalog:
        return OwnerCatalog(self._repos.catalog().snapshot(version), self.kind)

    def list(self, version: str | None = None) -> Served:
        view = self.view(version)
        return Served(view.entities(), view.snapshot.commit_id, view.snapshot.version)

    def get(self, ref: int | str, version: str | None = None) -> Served:
        view = self.view(version)
        return Served(view.entity(ref), view.snapshot.commit_id, view.snapshot.version)

    # -- writing ---------------------------------------------------------------------------
    def create(self, body: Any, author: Author | None = None) -> Served:
        body = self.kind.body.check(body)
        wanted_id = _check_id(body.get("id"))

        def operation(view: OwnerCatalog):
            entity = {**_DEFAULTS[self.kind.name], **body}
            entity["id"] = wanted_id or view.next_id()
            check_entity(entity, self.kind)
            self._check_unique(view, entity)
            changes = ChangeSet(f"catalog: create {self.kind.name} {entity['name']}")
            _put_entity(changes, view.snapshot, self.kind, entity, None)
            return changes, ordered(entity)

        entity, result = self._write(operation, author)
        return Served(entity, result.commit, result.version)

    def update(self, ref: int | str, body: Any, author: Author | None = None) -> Served:
        """Change the fields given (PUT and PATCH alike); the id never changes."""
        body = self.kind.body.check(body)

        def edit(current: dict, view: OwnerCatalog) -> tuple[dict, str]:
            if body.get("id") is not None and body["id"] != current["id"]:
                raise InvalidInput(f"field 'id' of a {self.kind.name} cannot be changed", key="id")
            return {**current, **body, "id": current["id"]}, "update"

        entity, result = self.change(ref, edit, author)
        if ROLES in body or TAGS in body:
            self.reconcile_users(entity["name"], "update", author)
        return Served(entity, result.commit, result.version)

    def reconcile_users(self, name: str, verb: str, author: Author | None) -> None:
        """Re-elect primaries in every environment using this owner, after a catalog commit
        changed its roles or tags (one commit per environment, only if something changed)."""
        for env_id in self.users(name):
            if not self._repos.accepts_writes(env_id):
                continue  # a mirror: its forge owns its history (GitOps.check_writable)
            for listener in self._roles_changed:
                listener(env_id, f"reconcile nodes after {self.kind.name} {name}: {verb}", author)

    def change(
        self,
        ref: int | str,
        edit: Callable[[dict, OwnerCatalog], tuple[dict, str]],
        author: Author | None = None,
    ) -> tuple[dict, WriteResult]:
        """Apply `edit(current, view) -> (new entity, verb)` in one catalog write.

        The new entity is validated whole; a rename is refused while environments name it.
        Other services (tags) change roles and tags through here.
        """

        def operation(view: OwnerCatalog):
            current = view.entity(ref)
            entity, verb = edit(_copy(current), view)
            check_entity(entity, self.kind)
            if entity["name"] != current["name"]:
                self._check_unique(view, entity, current["id"])
                self._check_unused(current, "renamed")
            changes = ChangeSet(f"catalog: {verb} {self.kind.name} {current['name']}")
            _put_entity(changes, view.snapshot, self.kind, entity, current["name"])
            return changes, ordered(entity)

        return self._write(operation, author)

    def delete(self, ref: int | str, author: Author | None = None) -> None:
        def operation(view: OwnerCatalog):
            current = view.entity(ref)
            self._check_unused(current, "deleted")
            changes = ChangeSet(f"catalog: delete {self.kind.name} {current['name']}")
            changes.delete(f"{self.kind.folder}/{current['name']}")
            return changes, None

        self._write(operation, author)

    # -- helpers ---------------------------------------------------------------------------
    def _write(self, operation, author: Author | None) -> tuple[Any, WriteResult]:
        outcome: dict[str, Any] = {}

        def op(snapshot: Snapshot) -> ChangeSet:
            changes, outcome["entity"] = operation(OwnerCatalog(snapshot, self.kind))
            return changes

        result = self._repos.catalog().update(op, author or self._repos.default_author)
        return outcome["entity"], result

    def _check_unique(self, view: OwnerCatalog, entity: dict, itself: int | None = None) -> None:
        for other in view.entities():
            if other["id"] == itself:
                continue
            if other["name"] == entity["name"]:
                raise Conflict(f"{self.kind.name} {entity['name']!r} already exists", key="name")
            if other["id"] == entity["id"]:
                raise Conflict(
                    f"{self.kind.name} id {entity['id']} is taken by {other['name']!r}", key="id"
                )

    def _check_unused(self, entity: dict, what: str) -> None:
        users = self.users(entity["name"])
        if users:
            raise Conflict(
                f"{self.kind.name} {entity['name']!r} is used by environments "
                f"{users}; it cannot be {what}"
            )

    def users(self, name: str) -> builtins.list[int]:
        """Ids of the environments that name this release (or enable this plugin)."""
        found = []
        for env_id in self._repos.environment_ids():
            try:
                doc = EnvironmentView(self._repos.environment_repo(env_id).snapshot()).doc
            except NotFound:
                continue  # archived meanwhile
            if name in owner_names(doc, self.kind):
                found.append(env_id)
        return found


class Releases(Owners):
    """Releases: roles, tags, graphs and default settings of an OpenStack version."""

    kind = RELEASE


class Plugins(Owners):
    """Plugins: extra roles, tags and graphs an environment can enable."""

    kind = PLUGIN


def owner_names(environment_doc: dict, kind: OwnerKind) -> list[str]:
    """The release (as a one-item list) or the plugins an `environment.yaml` names."""
    if kind is RELEASE:
        release = environment_doc.get("release")
        return [release] if release else []
    return list(environment_doc.get("plugins") or [])


def _check_id(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput("field 'id' must be a positive integer", key="id")
    return value


def _copy(entity: dict) -> dict:
    """A copy whose metadata mappings can be edited without touching the parse cache."""
    copied = dict(entity)
    copied[ROLES] = {k: dict(v) for k, v in (entity.get(ROLES) or {}).items()}
    copied[TAGS] = {k: dict(v) for k, v in (entity.get(TAGS) or {}).items()}
    return copied


# -- what environments store --------------------------------------------------------------------
def owner_refs(fields: dict, catalog: Snapshot) -> dict:
    """An environment body's `release` and `plugins` (ids or names) as the names to store."""
    stored: dict[str, Any] = {}
    if "release" in fields:
        ref = fields["release"]
        stored["release"] = (
            None
            if ref in (None, "")
            else OwnerCatalog(catalog, RELEASE).entity(_owner_ref(ref, "release"))["name"]
        )
    if "plugins" in fields:
        refs = fields["plugins"] or []
        if not isinstance(refs, list):
            raise InvalidInput("field 'plugins' must be a list of ids or names", key="plugins")
        view = OwnerCatalog(catalog, PLUGIN)
        names = [view.entity(_owner_ref(ref, "plugins"))["name"] for ref in refs]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise InvalidInput(f"plugin {repeated[0]!r} is enabled twice", key="plugins")
        stored["plugins"] = names
    return stored


def owner_fields(doc: dict, catalog: Snapshot) -> dict:
    """An environment entity's `release` (id or None) and `plugins` (ids, enabled order).

    Empty for an environment whose `environment.yaml` names neither (ConfigDB-only
    environments keep the entity shape of the ConfigDB API).
    """
    if "release" not in doc and "plugins" not in doc:
        return {}
    ids: dict[str, Any] = {"release": None, "plugins": []}
    for kind, key in ((RELEASE, "release"), (PLUGIN, "plugins")):
        view = OwnerCatalog(catalog, kind)
        for name in owner_names(doc, kind):
            try:
                owner_id = view.entity(name)["id"]
            except NotFound:
                continue  # removed behind our back (a push); tags_check reports it
            if key == "release":
                ids[key] = owner_id
            else:
                ids[key].append(owner_id)
    return ids


def _owner_ref(ref: Any, field_name: str) -> int | str:
    if isinstance(ref, bool) or not isinstance(ref, int | str):
        raise InvalidInput(f"field {field_name!r}: {ref!r} is not an id or a name", key=field_name)
    return ref
