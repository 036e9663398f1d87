"""Storage drivers: where the objects of the plan stores live, behind one interface.

A driver stores *records*, plain dictionaries of one *kind* (template, role, environment file,
plan). A driver implements two primitives:

- `view(at)`: the objects of one revision, read only (`at`: None for the latest, or a version);
- `transact(change, message, author)`: run `change(objects)` on the latest objects and store
  what it put and removed as one atomic write; a write that loses a race is run again.

On top of them `Driver` provides the seed's operations (`create`, `retrieve`, `update`,
`delete`, `list`, `retrieve_by_name`) with their rules (names unique, versions latest + 1,
identical content makes no new version), so every driver keeps them alike. `GitDriver`
(`gitdriver.py`, the default) keeps the objects in the catalog repository; `MemoryDriver` keeps
them in a list of states, one per write, for fast tests of the rules. One contract test suite
runs against both.
"""

from __future__ import annotations

import copy
import threading
import uuid as uuidlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from gitstore.backend.repository import Author
from gitstore.errors import UnknownRevision
from gitstore.names import is_number
from gitstore.plans.errors import NameAlreadyUsed, UnknownName, UnknownUUID, UnknownVersion
from gitstore.plans.models import Revision

T = TypeVar("T")


@dataclass(frozen=True)
class Kind:
    """One kind of stored object and the rules it follows."""

    name: str  # how messages name one: "role"
    folder: str  # where the git driver keeps them: "roles"
    named: bool
    versioned: bool


TEMPLATE = Kind("template", "templates", named=True, versioned=True)
ROLE = Kind("role", "roles", named=True, versioned=True)
ENVIRONMENT = Kind("environment file", "environment_files", named=False, versioned=False)
PLAN = Kind("plan", "plans", named=True, versioned=False)
KINDS = (TEMPLATE, ROLE, ENVIRONMENT, PLAN)
KINDS_BY_NAME = {kind.name: kind for kind in KINDS}


def now() -> str:
    """A timestamp as records keep it: UTC, ISO 8601, `Z`."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def new_uuid() -> str:
    return str(uuidlib.uuid4())


def check_uuid(kind: Kind, text: Any) -> str:
    """`text` as a canonical uuid; anything else names no object (UnknownUUID)."""
    try:
        return str(uuidlib.UUID(str(text)))
    except ValueError:
        raise UnknownUUID(kind.name, str(text)[:60]) from None


class Objects:
    """The objects of one revision; in a transaction, also what the change put and removed.

    Records are loaded per kind on first use (`_load`). Never mutate a record you got: build a
    new one and `put` it.
    """

    def __init__(self, revision: Revision, loader: Callable[[Kind], dict[str, dict]]) -> None:
        self.revision = revision
        self.message: str | None = None  # a change may name its commit once it knows more
        self._loader = loader
        self._kinds: dict[str, dict[str, dict]] = {}
        self.changed: dict[str, set[str]] = {}

    def _of(self, kind: Kind) -> dict[str, dict]:
        if kind.name not in self._kinds:
            self._kinds[kind.name] = dict(self._loader(kind))
        return self._kinds[kind.name]

    # -- reading ---------------------------------------------------------------------------
    def all(self, kind: Kind) -> list[dict]:
        """Every record of `kind`, by name then version (unnamed kinds by creation)."""
        return sorted(self._of(kind).values(), key=_order)

    def get(self, kind: Kind, uuid: str) -> dict:
        record = self._of(kind).get(check_uuid(kind, uuid))
        if record is None:
            raise UnknownUUID(kind.name, uuid)
        return record

    def named(self, kind: Kind, name: str) -> list[dict]:
        """The records called `name`, oldest version first."""
        return [r for r in self.all(kind) if r.get("name") == name]

    def latest(self, kind: Kind, name: str) -> dict | None:
        found = self.named(kind, name)
        return found[-1] if found else None

    # -- changing --------------------------------------------------------------------------
    def put(self, kind: Kind, record: dict) -> None:
        self._of(kind)[record["uuid"]] = copy.deepcopy(record)
        self.changed.setdefault(kind.name, set()).add(record["uuid"])

    def remove(self, kind: Kind, uuid: str) -> None:
        self._of(kind).pop(uuid, None)
        self.changed.setdefault(kind.name, set()).add(uuid)

    def loaded(self, kind_name: str) -> dict[str, dict]:
        """The records of a kind this transaction touched (after its changes)."""
        return self._kinds[kind_name]


def _order(record: dict) -> tuple:
    return (
        record.get("name") or "",
        record.get("version") or 0,
        record.get("created_at") or "",
        record["uuid"],
    )


@dataclass(frozen=True)
class Outcome:
    """What a driver operation returns: the record(s) and the revision they belong to."""

    data: Any
    revision: Revision


class Driver(ABC):
    """The storage-driver interface: two primitives, and the seed's operations built on them."""

    @abstractmethod
    def view(self, at: str | int | None = None) -> Objects:
        """The objects at revision `at` (None: the latest); UnknownRevision if there is none."""

    @abstractmethod
    def transact(
        self, change: Callable[[Objects], T], message: str, author: Author | None = None
    ) -> tuple[T, Revision]:
        """Run `change` on the latest objects and store its changes atomically."""

    def revision(self, at: str | int | None = None) -> Revision:
        """The revision `at` names, to pin later reads to it."""
        return self.view(at).revision

    # -- the seed's operations -------------------------------------------------------------
    def create(self, kind: Kind, record: dict, author: Author | None = None) -> Outcome:
        """Store a new object (version 1 of a versioned kind); NameAlreadyUsed if named so."""

        def change(objects: Objects) -> dict:
            if kind.named and objects.named(kind, record["name"]):
                raise NameAlreadyUsed(kind.name, record["name"])
            new = {
                **copy.deepcopy(record),
                "uuid": record.get("uuid") or new_uuid(),
                "created_at": now(),
                "updated_at": None,
            }
            if kind.versioned:
                new["version"] = 1
            objects.message = _message("create", kind, new)
            objects.put(kind, new)
            return new

        return Outcome(*self.transact(change, f"catalog: create {kind.name}", author))

    def retrieve(self, kind: Kind, uuid: str, at: str | int | None = None) -> Outcome:
        objects = self.view(at)
        return Outcome(copy.deepcopy(objects.get(kind, uuid)), objects.revision)

    def update(self, kind: Kind, uuid: str, fields: dict, author: Author | None = None) -> Outcome:
        """Change an object: a versioned kind gets a new version (latest + 1) unless `fields`
        would repeat the latest; another kind is changed in place."""

        def change(objects: Objects) -> dict:
            current = objects.get(kind, uuid)
            if kind.versioned:
                return _new_version(objects, kind, current, fields)
            updated = {**current, **copy.deepcopy(fields)}
            if updated == current:
                return current
            updated["updated_at"] = now()
            objects.put(kind, updated)
            return updated

        return Outcome(*self.transact(change, f"catalog: update {kind.name} {uuid}", author))

    def delete(self, kind: Kind, uuid: str, author: Author | None = None) -> Outcome:
        def change(objects: Objects) -> None:
            record = objects.get(kind, uuid)
            objects.message = _message("delete", kind, record)
            objects.remove(kind, record["uuid"])

        return Outcome(*self.transact(change, f"catalog: delete {kind.name} {uuid}", author))

    def list(self, kind: Kind, only_latest: bool = False, at: str | int | None = None) -> Outcome:
        objects = self.view(at)
        records = objects.all(kind)
        if only_latest:
            latest = {r.get("name"): r for r in records}  # sorted: the last version wins
            records = list(latest.values())
        return Outcome(copy.deepcopy(records), objects.revision)

    def retrieve_by_name(
        self, kind: Kind, name: str, version: int | None = None, at: str | int | None = None
    ) -> Outcome:
        objects = self.view(at)
        found = objects.named(kind, name)
        if not found:
            raise UnknownName(kind.name, name)
        if version is None:
            return Outcome(copy.deepcopy(found[-1]), objects.revision)
        for record in found:
            if record.get("version") == version:
                return Outcome(copy.deepcopy(record), objects.revision)
        raise UnknownVersion(kind.name, name, version)


def _new_version(objects: Objects, kind: Kind, current: dict, fields: dict) -> dict:
    latest = objects.latest(kind, current["name"])
    assert latest is not None  # `current` is one of its versions
    content = fields.get("content", latest["content"])
    description = fields.get("description")
    if content == latest["content"] and description in (None, latest.get("description")):
        return latest  # byte-identical content: no new version
    new = {
        "uuid": new_uuid(),
        "name": latest["name"],
        "version": latest["version"] + 1,
        "description": latest.get("description") if description is None else description,
        "content": content,
        "created_at": now(),
        "updated_at": None,
    }
    objects.message = _message("update", kind, new)
    objects.put(kind, new)
    return new


def _message(verb: str, kind: Kind, record: dict) -> str:
    name = record.get("name") or record.get("uuid") or ""
    version = f" version {record['version']}" if kind.versioned and "version" in record else ""
    return f"catalog: {verb} {kind.name} {name}{version}".rstrip()


class MemoryDriver(Driver):
    """Objects in memory: one state per write, so every earlier version stays readable."""

    def __init__(self) -> None:
        self._states: list[dict[str, dict[str, dict]]] = [{}]
        self._lock = threading.Lock()

    def view(self, at: str | int | None = None) -> Objects:
        with self._lock:
            number = len(self._states) if at is None else self._number(at)
            state = self._states[number - 1]
        return Objects(Revision(None, number), lambda kind: state.get(kind.name, {}))

    def _number(self, at: str | int) -> int:
        text = str(at).strip()
        if not is_number(text) or not 1 <= int(text) <= len(self._states):
            raise UnknownRevision(text, "memory")
        return int(text)

    def transact(
        self, change: Callable[[Objects], T], message: str, author: Author | None = None
    ) -> tuple[T, Revision]:
        with self._lock:
            state = self._states[-1]
            objects = Objects(
                Revision(None, len(self._states)), lambda kind: state.get(kind.name, {})
            )
            result = change(objects)
            if not _differs(objects, state):
                return result, Revision(None, len(self._states), changed=False)
            new_state = dict(state)
            for kind_name in objects.changed:
                new_state[kind_name] = objects.loaded(kind_name)
            self._states.append(new_state)
            return result, Revision(None, len(self._states), changed=True)


def _differs(objects: Objects, state: dict[str, dict[str, dict]]) -> bool:
    """Whether the change left any record other than it was (as an unchanged git tree would)."""
    return any(
        objects.loaded(kind).get(uuid) != state.get(kind, {}).get(uuid)
        for kind, uuids in objects.changed.items()
        for uuid in uuids
    )
