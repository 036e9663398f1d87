"""Every node one environment commit knows, with what a node list shows of it: fqdn, roles and
status.

A node is known by an inventory record (`inventory/nodes/<id>.yaml`) or by a folder at the
`nodes` level (ConfigDB's upload path: nodes that exist only as facts). A record's fields win;
what a record does not say comes from the node's own `astute` facts, as Fuel's astute writes
them (`nodes/<id>/values/astute.yaml`, its `overrides` on top): `fqdn`, `roles` (or Fuel's one
`role`) and `status`.

Parsing a large cluster's facts files whole takes seconds of a worker, so only the
lines of those top-level entries are parsed (`top_level_entries`; a file that is not a plain
block mapping is parsed whole), and rows are computed once and kept by immutable ids in caches
the Store owns (`RosterCaches`): a node's facts by the blob ids they were read from, so a
commit that changes one node's facts reads one file again, and the whole list by the ids of
the `nodes` and `inventory/nodes` trees, so a commit that touches neither (a global write)
reads nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitstore import yamlio
from gitstore.backend.cache import LRUCache
from gitstore.errors import GitstoreError
from gitstore.layout import INVENTORY_NODES, NODES_LEVEL
from gitstore.names import is_number
from gitstore.served import Served

if TYPE_CHECKING:
    from gitstore.backend.snapshot import Snapshot
    from gitstore.repositories import Repositories

#: The resource whose node-level documents hold a node's facts (Fuel's astute.yaml).
FACTS_RESOURCE = "astute"
#: The top-level entries of a node's facts that the roster reads.
FIELD_KEYS = (b"fqdn", b"role", b"roles", b"status")
#: The fields of a row besides `id` and `source`, as the inventory names them.
FIELDS = ("fqdn", "roles", "pending_roles", "status")


@dataclass
class RosterCaches:
    """The roster's caches: built by the Store, which owns, sizes and clears them."""

    #: (repository, `nodes` tree id, `inventory/nodes` tree id) -> the rows (a list, shared):
    #: the heads of a few environments and a few pinned versions.
    rows: LRUCache = field(default_factory=lambda: LRUCache(16, name="roster_rows"))
    #: (values blob id, overrides blob id) -> a node's facts summary (a small dict, shared):
    #: 20,000 nodes' worth.
    facts: LRUCache = field(default_factory=lambda: LRUCache(20_000, name="roster_facts"))


class Roster:
    """The node rows of an environment at a version."""

    def __init__(self, repos: Repositories, caches: RosterCaches) -> None:
        self._repos = repos
        self._caches = caches

    def rows(self, env_id: int, version: str | None = None) -> Served:
        """`[{id, fqdn, roles, pending_roles, status, source}]` in id order; `source` is
        `inventory` for a node with a record, else `facts`. Shared: never mutate it."""
        repo = self._repos.environment_repo(env_id)
        snapshot = repo.snapshot(version)
        key = (repo.path, snapshot.object_id(NODES_LEVEL), snapshot.object_id(INVENTORY_NODES))
        rows = self._caches.rows.get_or_compute(key, lambda: self._read(snapshot))
        return Served(rows, snapshot.commit_id, snapshot.version)

    def _read(self, snapshot: Snapshot) -> list[dict]:
        records = _records(snapshot)
        folders = {e.name for e in snapshot.list(NODES_LEVEL) if e.is_tree}
        rows = []
        for node_id in sorted(records.keys() | folders, key=id_order):
            record = records.get(node_id)
            row: dict[str, Any] = {"id": node_id, **{name: None for name in FIELDS}}
            if record is not None:
                row.update({name: record[name] for name in FIELDS if record.get(name) is not None})
            if node_id in folders and any(row[name] is None for name in FIELDS):
                facts = self._facts(snapshot, node_id)
                row.update({name: facts.get(name) for name in FIELDS if row[name] is None})
            row["roles"] = list(row["roles"] or [])
            row["pending_roles"] = list(row["pending_roles"] or [])
            row["source"] = "inventory" if record is not None else "facts"
            rows.append(row)
        return rows

    def _facts(self, snapshot: Snapshot, node_id: str) -> dict:
        folder = f"{NODES_LEVEL}/{node_id}"
        paths = [f"{folder}/{kind}/{FACTS_RESOURCE}.yaml" for kind in ("values", "overrides")]
        ids = tuple(snapshot.object_id(path) for path in paths)
        if ids == (None, None):
            return {}
        return self._caches.facts.get_or_compute(ids, lambda: _summary(snapshot, paths))


def id_order(node_id: str) -> tuple[int, str]:
    """Node ids in numeric order (digits without leading zeros sort by length first)."""
    return len(node_id), node_id


def _records(snapshot: Snapshot) -> dict[str, dict]:
    found = {}
    for entry in snapshot.list(INVENTORY_NODES):
        stem = entry.name.removesuffix(".yaml")
        if entry.is_tree or not entry.name.endswith(".yaml") or not is_number(stem):
            continue
        try:
            found[stem] = snapshot.read_mapping(f"{INVENTORY_NODES}/{entry.name}") or {}
        except GitstoreError:
            found[stem] = {}  # the gate refuses such a record; the list still names the node
    return found


def _summary(snapshot: Snapshot, paths: list[str]) -> dict:
    """fqdn, roles and status of a node's facts (overrides win); a broken file says nothing."""
    merged: dict = {}
    for path in paths:
        data = snapshot.read(path)
        if data is None:
            continue
        try:
            found = top_level_entries(data)
            merged.update(snapshot.read_mapping(path) or {} if found is None else found)
        except GitstoreError:
            continue
    roles = merged.get("roles")
    if not isinstance(roles, list):
        roles = [merged["role"]] if isinstance(merged.get("role"), str) else []
    return {
        "fqdn": _scalar(merged.get("fqdn")),
        "roles": [str(role) for role in roles if isinstance(role, str | int)],
        "status": _scalar(merged.get("status")),
    }


def top_level_entries(data: bytes) -> dict | None:
    """The top-level `fqdn`, `role`, `roles` and `status` entries of a facts file, parsed from
    their own lines (a fraction of the time of parsing the file whole); None when
    the file is not a block mapping whose keys start at column 0, as Fuel and YAML emitters
    write them, or those lines do not parse alone (an alias): the caller parses it whole."""
    if not _BLOCK_MAPPING.match(data):
        return None
    text, parts = b"\n" + data, []
    for spellings in _WANTED:
        # the last: YAML keeps a repeated key's last value
        start = max(text.rfind(spelling) for spelling in spellings)
        if start < 0:
            continue
        line_end = text.find(b"\n", start + 1)
        after = _NEXT_TOP.search(text, line_end + 1) if line_end >= 0 else None
        parts.append(text[start + 1 : after.start() if after else len(text)].rstrip(b"\n"))
    if not parts:
        return {}
    try:
        entries = yamlio.load(b"\n".join(parts) + b"\n", path="facts")
    except GitstoreError:
        return None
    return entries if isinstance(entries, dict) else None


#: A document that opens (after comments and `---`) with a plain key at column 0.
_BLOCK_MAPPING = re.compile(
    rb"\A(?:[ \t]*(?:#[^\n]*)?\r?\n)*(?:---[ \t]*\r?\n)?[A-Za-z_][\w./-]*:[ \r\n]"
)
#: The entries the roster reads, at column 0 (a nested key is indented) and followed by a
#: space or a line break (`role:` is not `roles:`).
_WANTED = [[b"\n" + key + b":" + end for end in (b" ", b"\n", b"\r")] for key in FIELD_KEYS]
#: The line after an entry's last: the next top-level key or a document marker (a `- item` at
#: column 0 belongs to the entry above, as PyYAML writes lists).
_NEXT_TOP = re.compile(rb"^(?:[^\s#-]|---|\.\.\.)", re.M)


def _scalar(value: Any) -> str | None:
    return None if value is None or isinstance(value, dict | list) else str(value)
