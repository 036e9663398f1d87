"""Components and resource definitions, kept in `catalog.git` (docs/design.md, "The store on
disk").

`components/<name>.yaml` holds a component and its definitions; definitions that belong to no
component live in `resource_definitions.yaml`. Resource names are unique across the catalog,
because environment data files are named by resource name alone.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from gitstore import documents, keypaths, schemas
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.bodies import Body
from gitstore.catalog import usage
from gitstore.catalog.usage import holders_text
from gitstore.catalog.view import (
    DEFINITION_EXTRAS,
    ORPHANS,
    CatalogView,
    definition_entity,
)
from gitstore.errors import Conflict, InvalidInput
from gitstore.names import check_component_name, check_resource_name, is_number
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.repositories import Repositories

COMPONENT_BODY = Body("component", ("id", "name", "resource_definitions"))
DEFINITION_BODY = Body(
    "resource definition", ("id", "name", "component_id", "content", *DEFINITION_EXTRAS)
)
#: An item of a component body's `resource_definitions`.
NESTED_DEFINITION_BODY = Body("resource definition", ("id", "name", "content", *DEFINITION_EXTRAS))


def _stored_definition(entity: dict) -> dict:
    """`entity` as the catalog stores it. Every definition written passes here, so its schema
    is checked here: one that could not judge a document would make each write of it fail."""
    if entity.get("schema") is not None:
        schemas.check(entity["schema"], entity["name"])
    stored = {"id": entity["id"], "name": entity["name"]}
    if entity.get("content") not in (None, {}):
        stored["content"] = entity["content"]
    for extra in DEFINITION_EXTRAS:
        if entity.get(extra) is not None:
            stored[extra] = entity[extra]
    return stored


def component_entity(component: dict) -> dict:
    cid = component.get("id")
    return {
        "id": cid,
        "name": component.get("name"),
        "resource_definitions": [
            definition_entity(d, cid) for d in component.get("resource_definitions") or []
        ],
    }


def _check_same_id(body: dict, entity: dict, what: str) -> None:
    """An `id` in an update body may only repeat the entity's own id."""
    if body.get("id") is not None and body["id"] != entity.get("id"):
        raise InvalidInput(f"field 'id' of a {what} cannot be changed", key="id")


def _check_definition_fields(body: dict, *, partial: bool) -> dict:
    fields: dict[str, Any] = {}
    if "name" in body or not partial:
        if "name" not in body:
            raise InvalidInput("field 'name' is required", key="name")
        fields["name"] = check_resource_name(body["name"])
    if "content" in body:
        fields["content"] = body["content"]
    if "schema" in body and body["schema"] is not None and not isinstance(body["schema"], dict):
        raise InvalidInput("field 'schema' must be a JSON object (a JSON schema)", key="schema")
    if "secret_keys" in body and body["secret_keys"] is not None:
        keys = body["secret_keys"]
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise InvalidInput("field 'secret_keys' must be a list of strings", key="secret_keys")
    for extra in DEFINITION_EXTRAS:
        if extra in body:
            fields[extra] = body[extra]
    return fields


class _CatalogService:
    def __init__(self, repos: Repositories) -> None:
        self._repos = repos

    def view(self, version: str | None = None) -> CatalogView:
        return CatalogView(self._repos.catalog().snapshot(version))

    def _write(self, operation, author: Author | None) -> tuple[Any, Any]:
        outcome: dict[str, Any] = {}

        def op(snapshot: Snapshot) -> ChangeSet:
            changes, outcome["entity"] = operation(CatalogView(snapshot))
            return changes

        result = self._repos.catalog().update(op, author or self._repos.default_author)
        return outcome["entity"], result

    def _used_by(self, resource_names: list[str]) -> dict[int, list[str]]:
        return usage.holding_data(self._repos, resource_names)


def _component_path(name: str) -> str:
    return f"components/{name}.yaml"


def _put_component(changes: ChangeSet, view: CatalogView, component: dict) -> None:
    path = _component_path(component["name"])
    old = view.snapshot.read(path)
    changes.put(
        path, documents.encode("catalog", path, component, old, caches=view.snapshot.caches)
    )


def _put_orphans(changes: ChangeSet, view: CatalogView) -> None:
    doc = {"resource_definitions": view.orphans}
    old = view.snapshot.read(ORPHANS)
    changes.put(
        ORPHANS, documents.encode("catalog", ORPHANS, doc, old, caches=view.snapshot.caches)
    )


class Components(_CatalogService):
    """Components: named groups of resource definitions."""

    def __init__(self, repos: Repositories, definitions: ResourceDefinitions) -> None:
        super().__init__(repos)
        self._definitions = definitions

    def list(self, version: str | None = None) -> Served:
        view = self.view(version)
        entities = [component_entity(c) for c in view.components]
        return Served(entities, view.snapshot.commit_id, view.snapshot.version)

    def get(self, ref: int | str, version: str | None = None) -> Served:
        view = self.view(version)
        entity = component_entity(view.component(ref))
        return Served(entity, view.snapshot.commit_id, view.snapshot.version)

    def create(self, body: Any, author: Author | None = None) -> Served:
        body = COMPONENT_BODY.check(body)
        if body.get("id") is not None:
            raise InvalidInput("field 'id' of a component is allocated by the store", key="id")
        name = check_component_name(body.get("name"))
        items = _definition_items(body.get("resource_definitions", []))
        if any(def_id is not None for def_id, _ in items):
            raise InvalidInput(
                "a new component cannot take existing resource definitions (items with 'id')",
                key="resource_definitions",
            )
        fields = [item for _, item in items]

        def operation(view: CatalogView):
            if any(c.get("name") == name for c in view.components):
                raise Conflict(f"component {name!r} already exists", key="name")
            component = {"id": view.next_component_id(), "name": name, "resource_definitions": []}
            _add_definitions(view, component, fields)
            changes = ChangeSet(f"catalog: create component {name}")
            _put_component(changes, view, component)
            return changes, component_entity(component)

        entity, result = self._write(operation, author)
        return Served(entity, result.commit, result.version)

    def update(self, ref: int | str, body: Any, author: Author | None = None) -> Served:
        """Change the fields given: `name`, and `resource_definitions` (the new list)."""
        body = COMPONENT_BODY.check(body)
        new_name = check_component_name(body["name"]) if "name" in body else None
        items = (
            _definition_items(body["resource_definitions"])
            if "resource_definitions" in body
            else None
        )

        def operation(view: CatalogView):
            component = dict(view.component(ref))
            _check_same_id(body, component, "component")
            old_name = component["name"]
            changes = ChangeSet(f"catalog: update component {old_name}")
            if new_name and new_name != old_name:
                self._check_rename(view, component, new_name)
                changes.delete(_component_path(old_name))
                component["name"] = new_name
            if items is not None and self._replace_definitions(view, component, items):
                _put_orphans(changes, view)
            _put_component(changes, view, component)
            return changes, component_entity(component)

        entity, result = self._write(operation, author)
        return Served(entity, result.commit, result.version)

    def _check_rename(self, view: CatalogView, component: dict, new_name: str) -> None:
        if any(c.get("name") == new_name for c in view.components):
            raise Conflict(f"component {new_name!r} already exists", key="name")
        refusal = usage.attached_refusal(self._repos, component["name"], "renamed")
        if refusal:
            raise Conflict(refusal, key="name")

    def _replace_definitions(
        self, view: CatalogView, component: dict, items: builtins.list[tuple[int | None, dict]]
    ) -> bool:
        """Make `items` the component's definitions; True if orphans were adopted.

        Items with an id keep (and may change) an own definition or adopt an orphan; items
        without one are created; own definitions not listed are deleted unless an environment
        holds data for them.
        """
        own = {d["id"]: d for d in component.get("resource_definitions") or []}
        orphans = {d["id"]: d for d in view.orphans}
        kept = [
            self._keep(view, own.get(i) or orphans.get(i), i, fields)
            for i, fields in items
            if i is not None
        ]
        kept_ids = {d["id"] for d in kept}
        dropped = [d["name"] for i, d in own.items() if i not in kept_ids]
        holders = self._used_by(dropped)
        if holders:
            raise Conflict(
                f"component {component['name']!r}: environments hold data for "
                f"definitions being removed: {holders_text(holders)}",
                key="resource_definitions",
            )
        component["resource_definitions"] = kept
        _add_definitions(view, component, [f for i, f in items if i is None])
        names = [d["name"] for d in component["resource_definitions"]]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise Conflict(
                f"resource definition {repeated[0]!r} is given twice", key="resource_definitions"
            )
        adopted = kept_ids & set(orphans)
        view.orphans = [d for d in view.orphans if d["id"] not in adopted]
        return bool(adopted)

    def _keep(self, view: CatalogView, stored: dict | None, def_id: int, fields: dict) -> dict:
        """Definition `def_id` (own or orphan) with `fields` applied, as it will be stored."""
        if stored is None:
            owner = view.definition(def_id)["component_id"]
            raise Conflict(
                f"resource definition {def_id} belongs to component {owner}; "
                "move it with PUT /resource_definitions/<id>",
                key="resource_definitions",
            )
        updated = {**stored, **fields}
        if updated["name"] != stored["name"]:
            self._definitions.check_rename(view, stored, updated["name"])
        return _stored_definition(updated)

    def delete(self, ref: int | str, author: Author | None = None) -> Served:
        """Delete a component and its definitions, unless an environment holds data for them."""

        def operation(view: CatalogView):
            component = view.component(ref)
            names = [d["name"] for d in component.get("resource_definitions") or []]
            holders = self._used_by(names)
            if holders:
                raise Conflict(
                    f"component {component['name']!r} cannot be deleted: "
                    f"environments hold data for its resources: "
                    f"{holders_text(holders)}"
                )
            changes = ChangeSet(f"catalog: delete component {component['name']}")
            changes.delete(_component_path(component["name"]))
            return changes, None

        _, result = self._write(operation, author)
        return Served(None, result.commit, result.version)


def _definition_items(value: Any) -> list[tuple[int | None, dict]]:
    """`resource_definitions` of a component body: (id or None, checked fields) per item."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInput(
            "field 'resource_definitions' must be a list", key="resource_definitions"
        )
    items: list[tuple[int | None, dict]] = []
    for index, item in enumerate(value):
        if isinstance(item, int) and not isinstance(item, bool):
            items.append((item, {}))
            continue
        item = NESTED_DEFINITION_BODY.check(item, f"resource_definitions[{index}]")
        def_id = item.get("id")
        if def_id is not None and (isinstance(def_id, bool) or not isinstance(def_id, int)):
            raise InvalidInput(
                "field 'resource_definitions': 'id' must be an integer", key="resource_definitions"
            )
        items.append((def_id, _check_definition_fields(item, partial=def_id is not None)))
    ids = [i for i, _ in items if i is not None]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise InvalidInput(
            f"field 'resource_definitions': id {repeated[0]} is given twice",
            key="resource_definitions",
        )
    return items


def _add_definitions(view: CatalogView, component: dict | None, fields: list[dict]) -> list[dict]:
    """Give each new definition an id (max+1 inside this write) and attach it."""
    taken = {d["name"] for d in view.definitions()}
    added = []
    next_id = view.next_definition_id()
    for item in fields:
        if item["name"] in taken:
            raise Conflict(f"resource definition {item['name']!r} already exists")
        taken.add(item["name"])
        stored = _stored_definition({"id": next_id, **item})
        next_id += 1
        target = component["resource_definitions"] if component is not None else view.orphans
        target.append(stored)
        added.append(stored)
    return added


class ResourceDefinitions(_CatalogService):
    """Resource definitions: named documents that environments hold values for."""

    def list(self, component_id: str | None = None, version: str | None = None) -> Served:
        view = self.view(version)
        found = view.definitions()
        if component_id is not None:
            if component_id == "":
                found = [d for d in found if d["component_id"] is None]
            elif is_number(component_id):
                found = [d for d in found if d["component_id"] == int(component_id)]
            else:
                raise InvalidInput(
                    f"component_id {component_id!r} must be an integer", key="component_id"
                )
        return Served(found, view.snapshot.commit_id, view.snapshot.version)

    def get(self, ref: int | str, version: str | None = None) -> Served:
        view = self.view(version)
        return Served(view.definition(ref), view.snapshot.commit_id, view.snapshot.version)

    def create(self, body: Any, author: Author | None = None) -> Served:
        body = DEFINITION_BODY.check(body)
        if body.get("id") is not None:
            raise InvalidInput(
                "field 'id' of a resource definition is allocated by the store", key="id"
            )
        fields = _check_definition_fields(body, partial=False)
        component_ref = _component_ref(body)

        def operation(view: CatalogView):
            component = dict(view.component(component_ref)) if component_ref is not None else None
            if component is not None:
                component["resource_definitions"] = list(component["resource_definitions"])
            stored = _add_definitions(view, component, [fields])[0]
            changes = ChangeSet(f"catalog: create resource definition {stored['name']}")
            if component is not None:
                _put_component(changes, view, component)
            else:
                _put_orphans(changes, view)
            cid = component["id"] if component is not None else None
            return changes, definition_entity(stored, cid)

        entity, result = self._write(operation, author)
        return Served(entity, result.commit, result.version)

    def update(self, ref: int | str, body: Any, author: Author | None = None) -> Served:
        """Change the fields given; moving to another component is `component_id`."""
        body = DEFINITION_BODY.check(body)
        fields = _check_definition_fields(body, partial=True)
        move_to = _component_ref(body) if "component_id" in body else _UNCHANGED

        def operation(view: CatalogView):
            current = view.definition(ref)
            _check_same_id(body, current, "resource definition")
            updated = {**current, **fields}
            if move_to is not _UNCHANGED:
                target = view.component(move_to) if move_to is not None else None
                updated["component_id"] = target["id"] if target is not None else None
                if updated["component_id"] != current["component_id"]:
                    self._check_move(current, target)
            if updated["name"] != current["name"]:
                self.check_rename(view, current, updated["name"])
            changes = ChangeSet(f"catalog: update resource definition {current['name']}")
            _replace_definition(view, changes, current, updated)
            return changes, definition_entity(_stored_definition(updated), updated["component_id"])

        entity, result = self._write(operation, author)
        return Served(entity, result.commit, result.version)

    def check_rename(self, view: CatalogView, current: dict, new_name: str) -> None:
        """Conflict if `new_name` is taken or an environment holds data under the old name."""
        if any(d["name"] == new_name for d in view.definitions()):
            raise Conflict(f"resource definition {new_name!r} already exists", key="name")
        refusal = usage.held_refusal(self._repos, current["name"], "renamed")
        if refusal:
            raise Conflict(refusal, key="name")

    def _check_move(self, current: dict, target: dict | None) -> None:
        """Conflict if an environment holding data would no longer see the definition."""
        name = target["name"] if target is not None else None
        refusal = usage.move_refusal(self._repos, current["name"], name)
        if refusal:
            raise Conflict(refusal, key="component_id")

    def update_keys(
        self, ref: int | str, op: str, paths: Any, author: Author | None = None
    ) -> Served:
        """Set or delete key paths of a definition's `content` (atomic, one commit)."""
        paths = keypaths.check_batch(paths, op)

        def operation(view: CatalogView):
            current = view.definition(ref)
            content = current.get("content")
            if content is None:
                content = {}
            if not isinstance(content, dict):
                raise Conflict(
                    f"resource definition {current['name']!r}: content is not a "
                    "mapping, key operations need one"
                )
            updated = {**current, "content": keypaths.apply_batch(content, op, paths)}
            changes = ChangeSet(
                f"catalog: {op} {len(paths)} keys of resource definition {current['name']}"
            )
            _replace_definition(view, changes, current, updated)
            return changes, None

        _, result = self._write(operation, author)
        return Served(None, result.commit, result.version)

    def delete(self, ref: int | str, author: Author | None = None) -> Served:
        """Delete a definition unless an environment holds data for it."""

        def operation(view: CatalogView):
            current = view.definition(ref)
            refusal = usage.held_refusal(self._repos, current["name"], "deleted")
            if refusal:
                raise Conflict(refusal)
            changes = ChangeSet(f"catalog: delete resource definition {current['name']}")
            _replace_definition(view, changes, current, None)
            return changes, None

        _, result = self._write(operation, author)
        return Served(None, result.commit, result.version)


_UNCHANGED: Any = object()  # compared by identity


def _component_ref(body: dict) -> int | str | None:
    ref = body.get("component_id")
    if ref is None or ref == "":
        return None
    if isinstance(ref, bool) or not isinstance(ref, int | str):
        raise InvalidInput("field 'component_id' must be an integer or a name", key="component_id")
    return ref


def _replace_definition(
    view: CatalogView, changes: ChangeSet, current: dict, updated: dict | None
) -> None:
    """Remove `current` from its owner and put `updated` (if any) into its owner."""
    owners: dict[Any, dict | None] = {}

    def owner(cid: int | None) -> dict | None:
        if cid not in owners:
            if cid is None:
                owners[cid] = None
            else:
                component = dict(view.component(cid))
                component["resource_definitions"] = list(component["resource_definitions"])
                owners[cid] = component
        return owners[cid]

    source = owner(current["component_id"])
    defs = source["resource_definitions"] if source is not None else view.orphans
    defs[:] = [d for d in defs if d["id"] != current["id"]]
    if updated is not None:
        target = owner(updated["component_id"])
        defs = target["resource_definitions"] if target is not None else view.orphans
        defs.append(_stored_definition(updated))
        defs.sort(key=lambda d: d["id"])
    for component in owners.values():
        if component is None:
            _put_orphans(changes, view)
        else:
            _put_component(changes, view, component)
