"""A read view of one commit of `catalog.git`: every component and resource definition.

Shared by every service that needs the catalog of a commit (configdb, secrets, the gate): it
only reads.
"""

from __future__ import annotations

from gitstore.backend.snapshot import Snapshot
from gitstore.errors import NotFound
from gitstore.names import is_number

ORPHANS = "resource_definitions.yaml"
DEFINITION_EXTRAS = ("schema", "secret_keys")


class CatalogView:
    """Every component and definition of one catalog commit, with lookups by id or name."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.components: list[dict] = []
        for entry in snapshot.list("components"):
            if not entry.is_tree and entry.name.endswith(".yaml"):
                doc = snapshot.read_mapping(f"components/{entry.name}") or {}
                self.components.append(doc)
        self.components.sort(key=lambda c: c.get("id", 0))
        orphans = snapshot.read_mapping(ORPHANS) or {}
        self.orphans: list[dict] = list(orphans.get("resource_definitions") or [])

    def component(self, ref: int | str) -> dict:
        for component in self.components:
            if matches(component, ref):
                return component
        raise NotFound(
            f"component {ref!r} does not exist; list them with `gitstore component list` "
            "(GET /api/v1/config/components)"
        )

    def definitions(self) -> list[dict]:
        """Every definition as an API entity (with `component_id`), sorted by id."""
        found = [
            definition_entity(d, c.get("id"))
            for c in self.components
            for d in c.get("resource_definitions") or []
        ]
        found += [definition_entity(d, None) for d in self.orphans]
        return sorted(found, key=lambda d: d["id"])

    def definition(self, ref: int | str) -> dict:
        for definition in self.definitions():
            if matches(definition, ref):
                return definition
        raise NotFound(
            f"resource definition {ref!r} does not exist; list them with `gitstore def list` "
            "(GET /api/v1/config/resource_definitions)"
        )

    def definitions_of(self, component_names: list[str]) -> list[dict]:
        ids = {c.get("id") for c in self.components if c.get("name") in component_names}
        return [d for d in self.definitions() if d["component_id"] in ids]

    def next_component_id(self) -> int:
        return max((c.get("id", 0) for c in self.components), default=0) + 1

    def next_definition_id(self) -> int:
        return max((d["id"] for d in self.definitions()), default=0) + 1


def matches(entity: dict, ref: int | str) -> bool:
    if isinstance(ref, int) or is_number(ref):
        return entity.get("id") == int(ref)
    return entity.get("name") == ref


def definition_entity(stored: dict, component_id: int | None) -> dict:
    entity = {
        "id": stored["id"],
        "name": stored["name"],
        "component_id": component_id,
        "content": stored.get("content", {}),
    }
    for extra in DEFINITION_EXTRAS:
        if extra in stored:
            entity[extra] = stored[extra]
    return entity
