"""Which nodes of an environment commit a write must look at, kept per commit.

Every inventory write re-runs the primary election and drops unknown tags (`inventory._settle`).
Only a few nodes can take part: those that hold primary tags or carry added or removed tags
(`marked`), and those whose roles can carry a tag with has_primary (a cluster's controllers).
Looking at every node on every write made a node create cost more the more nodes there were,
so the ids are kept grouped by what decides this, with the commit's node records
(`inventory.NodeIndex`), and a write updates them for the nodes it changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gitstore.merge import tags as tagging
from gitstore.merge.tags import Metadata

RoleSet = tuple[str, ...]


@dataclass(frozen=True)
class Electorate:
    """A commit's node ids: the `marked` ones, and the others by their roles and pending
    roles. Never mutated: a write makes a new one (`updated`)."""

    marked: frozenset[int]
    by_roles: Mapping[RoleSet, frozenset[int]]

    @classmethod
    def of(cls, nodes: Mapping[int, Mapping[str, Any]]) -> Electorate:
        """The electorate of `nodes` (one look at each)."""
        return EMPTY.updated(nodes, nodes)

    def updated(self, nodes: Mapping[int, Mapping[str, Any]], ids: Iterable[int]) -> Electorate:
        """This electorate with the nodes `ids` as `nodes` holds them (an id it lacks: gone)."""
        ids = set(ids)
        marked = set(self.marked) - ids
        groups = {key: members - ids for key, members in self.by_roles.items()}
        for node_id in ids:
            node = nodes.get(node_id)
            if node is None:
                continue
            key = _role_set(node)
            if key is None or _marked(node):
                marked.add(node_id)
            else:
                groups[key] = groups.get(key, frozenset()) | {node_id}
        return Electorate(frozenset(marked), {k: v for k, v in groups.items() if v})

    def contenders(self, meta: Metadata) -> set[int]:
        """The ids an election under `meta` may change or read, and every marked one."""
        primary = {t for t in meta.tags if tagging.has_primary(t, meta.tags)}
        found = set(self.marked)
        for roles, members in self.by_roles.items():
            produced = {t for role in roles for t in tagging.role_tags(role, meta.roles)}
            if not primary.isdisjoint(produced):
                found |= members
        return found


EMPTY = Electorate(frozenset(), {})


def _role_set(node: Mapping[str, Any]) -> RoleSet | None:
    """The roles and pending roles of a node, None when they are not lists of names."""
    roles, pending = node.get("roles", []), node.get("pending_roles", [])
    if not isinstance(roles, list) or not isinstance(pending, list):
        return None
    if not all(isinstance(name, str) for name in roles + pending):
        return None
    return tuple(sorted(set(roles + pending)))


def _marked(node: Mapping[str, Any]) -> bool:
    """Whether a node holds primary tags or has tags added or removed (or lacks the fields)."""
    return any(node.get(key, None) != [] for key in ("primary_tags", "tags_added", "tags_removed"))
