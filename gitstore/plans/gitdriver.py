"""The default storage driver: the objects of the plan stores in the catalog repository.

    templates/<name>/meta.yaml         {name, versions: [{version, uuid, description, created_at}]}
    templates/<name>/<version>.yaml    the template's content, byte for byte as uploaded
    roles/<name>/...                   the same for roles
    plans/<name>/meta.yaml             {uuid, name, description, created_at, updated_at, roles,
                                        master_template: {uuid, ...}, environment_file: {...}}
    plans/<name>/plan.yaml             the master template
    plans/<name>/environment.yaml      the environment (parameter values, resource registry)
    environment_files/<uuid>/meta.yaml, environment.yaml    environment files of no plan

Uploaded contents are stored verbatim (their bytes are their identity: reloading the same file
makes no new version). The documents a plan is composed of go through `gitstore.documents`,
the one door where hidden parameters are sealed. Every write is one catalog commit made by
compare-and-swap (`Repository.update`); a lost race runs the change again on the new head.
Reads resolve a revision once and read everything from that commit.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from gitstore import documents
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.backend.snapshot import Snapshot
from gitstore.errors import InvalidInput
from gitstore.names import check_identifier
from gitstore.plans import heat
from gitstore.plans.drivers import ENVIRONMENT, KINDS_BY_NAME, PLAN, Driver, Kind, Objects
from gitstore.plans.hidden import ENVIRONMENT as ENVIRONMENT_FILE
from gitstore.plans.hidden import MASTER, REPOSITORY, Hidden, plan_file
from gitstore.plans.models import Revision

if TYPE_CHECKING:
    from gitstore.repositories import Repositories
    from gitstore.secrets.seal import Sealer
    from gitstore.secrets.service import Secrets

T = TypeVar("T")
META = "meta.yaml"
#: Record fields of one version kept in its name's meta.yaml (the content is its own file).
_VERSION_FIELDS = ("version", "uuid", "description", "created_at", "updated_at")
_FILE_FIELDS = ("uuid", "created_at", "updated_at")
_PLAN_FIELDS = ("uuid", "name", "description", "created_at", "updated_at", "roles")


class GitDriver(Driver):
    """Plan-store objects in `catalog.git` of a store."""

    def __init__(self, repos: Repositories, secrets: Secrets | None = None) -> None:
        self._repos = repos
        self.hidden = Hidden(secrets)

    def view(self, at: str | int | None = None) -> Objects:
        snapshot = self._repos.catalog().snapshot(at)
        return _GitObjects(snapshot, self.hidden)

    def transact(
        self, change: Callable[[Objects], T], message: str, author: Author | None = None
    ) -> tuple[T, Revision]:
        outcome: list[T] = []

        def operation(snapshot: Snapshot | None) -> ChangeSet:
            objects = _GitObjects(snapshot, self.hidden)
            outcome[:] = [change(objects)]
            changes = ChangeSet(objects.message or message)
            objects.write(changes)
            return changes

        written = self._repos.catalog().update(operation, author or self._repos.default_author)
        return outcome[0], Revision(written.commit, written.version, written.changed)


class _GitObjects(Objects):
    """The objects of one catalog commit; `write` turns a change's puts into tree entries."""

    def __init__(self, snapshot: Snapshot | None, hidden: Hidden) -> None:
        # (the catalog has only main: a snapshot of it is numbered)
        revision = (
            Revision(snapshot.commit_id, snapshot.version or 0) if snapshot else Revision(None, 0)
        )
        super().__init__(revision, self._load)
        self._snapshot = snapshot
        self._hidden = hidden
        self._original: dict[str, dict[str, dict]] = {}

    def _load(self, kind: Kind) -> dict[str, dict]:
        if self._snapshot is None:
            found: dict[str, dict] = {}
        elif kind is PLAN:
            found = _load_plans(self._snapshot)
        elif kind is ENVIRONMENT:
            found = _load_environment_files(self._snapshot)
        else:
            found = _load_versions(self._snapshot, kind)
        self._original[kind.name] = found
        return found

    def write(self, changes: ChangeSet) -> None:
        """Add to `changes` the files of every record this transaction put or removed."""
        for kind_name, uuids in self.changed.items():
            kind = KINDS_BY_NAME[kind_name]
            old, new = self._original[kind_name], self.loaded(kind_name)
            if kind is PLAN:
                for uuid in sorted(uuids):
                    _write_plan(changes, self._snapshot, old.get(uuid), new.get(uuid), self._hidden)
            elif kind is ENVIRONMENT:
                for uuid in sorted(uuids):
                    _write_environment_file(changes, self._snapshot, new.get(uuid), uuid)
            else:
                names = {(new.get(u) or old[u])["name"] for u in uuids if u in new or u in old}
                for name in sorted(names):
                    _write_versions(changes, self._snapshot, kind.folder, name, old, new)


# -- reading -----------------------------------------------------------------------------------
def _meta(snapshot: Snapshot, path: str) -> dict | None:
    try:
        return snapshot.read_mapping(path)
    except InvalidInput:
        return None  # an unreadable meta file hides its object rather than every object


def _text(snapshot: Snapshot, path: str) -> str | None:
    data = snapshot.read(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _load_versions(snapshot: Snapshot, kind: Kind) -> dict[str, dict]:
    found = {}
    for entry in snapshot.list(kind.folder):
        base = f"{kind.folder}/{entry.name}"
        meta = _meta(snapshot, f"{base}/{META}") if entry.is_tree else None
        for version in (meta or {}).get("versions") or []:
            content = _text(snapshot, f"{base}/{version.get('version')}.yaml")
            if content is None or not version.get("uuid"):
                continue
            record = {key: version.get(key) for key in _VERSION_FIELDS}
            found[version["uuid"]] = {**record, "name": entry.name, "content": content}
    return found


def _load_plans(snapshot: Snapshot) -> dict[str, dict]:
    found = {}
    for entry in snapshot.list(PLAN.folder):
        base = f"{PLAN.folder}/{entry.name}"
        meta = _meta(snapshot, f"{base}/{META}") if entry.is_tree else None
        if not meta or not meta.get("uuid"):
            continue
        record = copy.deepcopy(meta)
        record["name"] = entry.name
        record["roles"] = list(record.get("roles") or [])
        for key, path, empty in (
            ("master_template", MASTER, heat.empty_master),
            ("environment_file", ENVIRONMENT_FILE, heat.empty_environment),
        ):
            document = _meta(snapshot, f"{base}/{path}")
            record[key] = {
                **(record.get(key) or {}),
                "document": copy.deepcopy(document) if document else empty(),
            }
        found[record["uuid"]] = record
    return found


def _load_environment_files(snapshot: Snapshot) -> dict[str, dict]:
    found = {}
    for entry in snapshot.list(ENVIRONMENT.folder):
        base = f"{ENVIRONMENT.folder}/{entry.name}"
        meta = _meta(snapshot, f"{base}/{META}") if entry.is_tree else None
        content = _text(snapshot, f"{base}/{ENVIRONMENT_FILE}")
        if meta and meta.get("uuid") == entry.name and content is not None:
            found[entry.name] = {**{k: meta.get(k) for k in _FILE_FIELDS}, "content": content}
    return found


# -- writing -----------------------------------------------------------------------------------
def _old_bytes(snapshot: Snapshot | None, path: str) -> bytes | None:
    return snapshot.read(path) if snapshot is not None else None


def _put_document(
    changes: ChangeSet,
    snapshot: Snapshot | None,
    path: str,
    document: dict,
    sealer: Sealer | None = None,
) -> bool:
    """Write a document through the one door (`documents.encode`), sealed by `sealer`;
    whether its bytes stay as they were."""
    old = _old_bytes(snapshot, path)
    caches = snapshot.caches if snapshot is not None else None
    data = documents.encode(REPOSITORY, path, document, old, sealer=sealer, caches=caches)
    changes.put(path, data)
    return data == old


def _write_versions(
    changes: ChangeSet,
    snapshot: Snapshot | None,
    folder: str,
    name: str,
    old: dict[str, dict],
    new: dict[str, dict],
) -> None:
    base = f"{folder}/{check_identifier(name, 'name')}"
    versions = sorted((r for r in new.values() if r["name"] == name), key=lambda r: r["version"])
    if not versions:
        changes.delete(base)
        return
    kept = {r["uuid"] for r in versions}
    for gone in (r for r in old.values() if r["name"] == name and r["uuid"] not in kept):
        changes.delete(f"{base}/{gone['version']}.yaml")
    for record in versions:
        if old.get(record["uuid"]) != record:
            changes.put(f"{base}/{record['version']}.yaml", record["content"].encode("utf-8"))
    meta = {"name": name, "versions": [{k: r.get(k) for k in _VERSION_FIELDS} for r in versions]}
    _put_document(changes, snapshot, f"{base}/{META}", meta)


def _write_plan(
    changes: ChangeSet,
    snapshot: Snapshot | None,
    old: dict | None,
    new: dict | None,
    hidden: Hidden,
) -> None:
    if old is not None and (new is None or new["name"] != old["name"]):
        changes.delete(f"{PLAN.folder}/{old['name']}")
    if new is None:
        return
    name = check_identifier(new["name"], "name")
    master = new["master_template"]["document"]
    sealer = hidden.sealer(master, hidden.caller)
    kept = _put_document(changes, snapshot, plan_file(name, MASTER), master, sealer)
    kept &= _put_document(
        changes,
        snapshot,
        plan_file(name, ENVIRONMENT_FILE),
        new["environment_file"]["document"],
        sealer,
    )
    meta = _plan_meta(new)
    if kept and old is not None and _unstamped(meta) == _unstamped(_plan_meta(old)):
        # Only hidden values were sent, and the sealer kept each stored one (the caller may
        # compare them): nothing changed, so no `updated_at` does either, and no commit.
        meta = _plan_meta(old)
    _put_document(changes, snapshot, plan_file(name, META), meta)


def _plan_meta(record: dict) -> dict:
    """What `plans/<name>/meta.yaml` holds of a plan record."""
    meta = {key: record.get(key) for key in _PLAN_FIELDS}
    for key in ("master_template", "environment_file"):
        meta[key] = {field: record[key].get(field) for field in _FILE_FIELDS}
    return meta


def _unstamped(meta: dict) -> dict:
    """`meta` without its `updated_at` stamps (the plan's and its two files')."""

    def without(fields: dict) -> dict:
        return {key: value for key, value in fields.items() if key != "updated_at"}

    return {
        key: without(value) if isinstance(value, dict) else value
        for key, value in without(meta).items()
    }


def _write_environment_file(
    changes: ChangeSet, snapshot: Snapshot | None, new: dict | None, uuid: str
) -> None:
    base = f"{ENVIRONMENT.folder}/{uuid}"
    if new is None:
        changes.delete(base)
        return
    changes.put(f"{base}/{ENVIRONMENT_FILE}", new["content"].encode("utf-8"))
    _put_document(
        changes, snapshot, f"{base}/{META}", {field: new.get(field) for field in _FILE_FIELDS}
    )
