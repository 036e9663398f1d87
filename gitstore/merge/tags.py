"""Role decomposition, pure: merged role/tag metadata, node tags, primaries and the resolver.

Vocabulary (docs/tags.md):
- a *role* (`controller`) produces the *tags* listed in its `roles_metadata[role].tags`; every
  role name is also an implicit tag of the nodes holding it;
- a node's tags are its roles' tags and role names, plus `tags_added`, minus `tags_removed`
  (role names cannot be removed); a node that is primary for tag `t` also carries `primary-t`;
- an *instance tag* `name:N` (`mysql:1`) groups nodes into instances of one service;
- a *selector* (a task's `tags`, else `roles`, else `groups`) names nodes: `*`, `master`, a
  tag, `/regex/` or a list of those.

Nothing here reads or writes storage; inputs are never mutated (they may come from a shared
parse cache).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ALL = "*"
MASTER = "master"
PRIMARY_PREFIX = "primary-"
POLICY_ANY = "any"
#: Node statuses that count as deployed when electing primaries and in the default filter.
READY = "ready"
DEFAULT_FILTER_STATUSES = frozenset({"ready", "provisioned", "stopped"})
#: Task types placed on the sync point (no node) rather than resolved by selector.
SYNC_TYPES = frozenset({"stage"})
GROUP_TYPE = "group"

TAG_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
_INSTANCE = re.compile(r"^([a-zA-Z0-9_-]+):([0-9]+)$")


# -- metadata ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Metadata:
    """One owner's `roles_metadata` and `tags_metadata` (a release, a plugin or a cluster)."""

    roles: Mapping[str, Any] = field(default_factory=dict)
    tags: Mapping[str, Any] = field(default_factory=dict)
    #: A plugin's roles without `tags` produce `[role]` and an implicit tag entry.
    implicit_role_tags: bool = False


def merge_metadata(owners: Sequence[Metadata]) -> Metadata:
    """The cluster view: later owners win role by role and tag by tag (release ← cluster ←
    plugins)."""
    roles: dict[str, Any] = {}
    tags: dict[str, Any] = {}
    for owner in owners:
        for name, role in (owner.roles or {}).items():
            role = dict(role) if isinstance(role, Mapping) else {}
            if owner.implicit_role_tags and "tags" not in role:
                role["tags"] = [name]
                if name not in (owner.tags or {}):
                    tags[name] = {"has_primary": bool(role.get("has_primary", False))}
            roles[name] = role
        for name, meta in (owner.tags or {}).items():
            tags[name] = dict(meta) if isinstance(meta, Mapping) else {}
    return Metadata(roles, tags)


def role_tags(role_name: str, roles: Mapping[str, Any]) -> list[str]:
    """The tags a role produces (its name first: the implicit role-name tag)."""
    role = roles.get(role_name)
    declared = role.get("tags") if isinstance(role, Mapping) else None
    if not isinstance(declared, list):
        declared = []
    return _unique([role_name, *(t for t in declared if isinstance(t, str))])


def missing_role_tags(roles: Mapping[str, Any], tags: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(role, tag) pairs where a role names a tag that `tags` does not define.

    The role's own name needs no entry: it is the implicit role-name tag.
    """
    missing = []
    for name, role in roles.items():
        for tag in (role or {}).get("tags") or []:
            if tag != name and tag not in tags:
                missing.append((name, tag))
    return missing


def has_primary(tag: str, tags: Mapping[str, Any]) -> bool:
    meta = tags.get(tag)
    return isinstance(meta, Mapping) and bool(meta.get("has_primary"))


def split_instance(tag: str) -> tuple[str, int] | None:
    """`("mysql", 1)` for the instance tag `mysql:1`, else None."""
    match = _INSTANCE.match(tag)
    return (match.group(1), int(match.group(2))) if match else None


def known_tag(tag: str, meta: Metadata) -> bool:
    """A tag defined in tags_metadata, a role name, or an instance `name:N` of one of them."""
    instance = split_instance(tag)
    base = instance[0] if instance else tag
    return base in meta.tags or base in meta.roles


# -- node tags --------------------------------------------------------------------------------
def node_roles(node: Mapping[str, Any]) -> list[str]:
    """Assigned and pending roles: both count for tags and deployment."""
    return _unique([*(node.get("roles") or []), *(node.get("pending_roles") or [])])


def base_tags(node: Mapping[str, Any], roles: Mapping[str, Any]) -> list[str]:
    """A node's tags without the `primary-` ones, in a stable order."""
    names = node_roles(node)
    produced = _unique([t for name in names for t in role_tags(name, roles)])
    removed = set(node.get("tags_removed") or []) - set(names)
    kept = [t for t in produced if t not in removed]
    return _unique([*kept, *(t for t in node.get("tags_added") or [] if t not in removed)])


def node_tags(node: Mapping[str, Any], meta: Metadata) -> list[str]:
    """A node's tags: base tags plus `primary-t` for each tag t it is primary for."""
    tags = base_tags(node, meta.roles)
    primaries = [f"{PRIMARY_PREFIX}{t}" for t in valid_primaries(node, tags, meta.tags)]
    return [*tags, *primaries]


def valid_primaries(
    node: Mapping[str, Any], carried: Iterable[str], tags: Mapping[str, Any]
) -> list[str]:
    """The node's recorded primary tags that still make sense (carried, has_primary)."""
    carried = set(carried)
    return [t for t in node.get("primary_tags") or [] if t in carried and has_primary(t, tags)]


# -- primary election -------------------------------------------------------------------------
def elect_primaries(nodes: Iterable[Mapping[str, Any]], meta: Metadata) -> dict[int, list[str]]:
    """New `primary_tags` per node id after an election over one cluster's nodes, for the
    nodes that may carry a tag with has_primary or whose `primary_tags` are not `[]`; every
    other node's are `[]` and stay so.

    For each tag with has_primary: a holder that is not pending deletion is kept (the lowest id
    if several claim it); otherwise the lowest-id ready candidate wins, else the lowest-id
    candidate (candidates carry the tag and are not pending deletion). With no candidate, a
    pending-deletion holder keeps the tag until it leaves the cluster.
    """
    ordered = sorted(_contenders(nodes, meta), key=lambda n: int(n["id"]))
    carried = _carried(ordered, meta)
    result: dict[int, list[str]] = {int(n["id"]): [] for n in ordered}
    distinct = {id(ts): ts for ts in carried.values()}.values()  # shared by equal nodes
    tags = sorted({t for ts in distinct for t in ts if has_primary(t, meta.tags)})
    for tag in tags:
        winner = _primary_for(tag, ordered, carried)
        if winner is not None:
            result[winner].append(tag)
    return result


def _contenders(nodes: Iterable[Mapping[str, Any]], meta: Metadata) -> list[Mapping[str, Any]]:
    """The nodes an election may change: those with a role or an added tag that can carry a
    tag with has_primary, and those whose `primary_tags` are not `[]`. A cluster of 1,000
    nodes has a few controllers; the test of each node is plain, so that a node create costs
    the same in any cluster (the write path elects on every write)."""
    primary = {t for t in meta.tags if has_primary(t, meta.tags)}
    electing = primary | {
        name for name in meta.roles if not primary.isdisjoint(role_tags(name, meta.roles))
    }
    return [
        n
        for n in nodes
        if n.get("primary_tags") != []
        or not electing.isdisjoint(n.get("roles") or ())
        or not electing.isdisjoint(n.get("pending_roles") or ())
        or not primary.isdisjoint(n.get("tags_added") or ())
    ]


#: The node fields its base tags depend on.
_TAG_FIELDS = ("roles", "pending_roles", "tags_added", "tags_removed")


def _carried(nodes: Sequence[Mapping[str, Any]], meta: Metadata) -> dict[int, set[str]]:
    """Each node's base tags, worked out once per combination of roles and tags (a large
    cluster has a handful)."""
    found: dict[tuple[Any, ...], set[str]] = {}
    carried = {}
    for node in nodes:
        key = tuple(tuple(node.get(k) or ()) for k in _TAG_FIELDS)
        if key not in found:
            found[key] = set(base_tags(node, meta.roles))
        carried[int(node["id"])] = found[key]
    return carried


def _primary_for(
    tag: str, ordered: Sequence[Mapping[str, Any]], carried: Mapping[int, set[str]]
) -> int | None:
    holders = [
        n for n in ordered if tag in carried[int(n["id"])] and tag in (n.get("primary_tags") or [])
    ]
    staying = [n for n in holders if not n.get("pending_deletion")]
    if staying:
        return int(staying[0]["id"])
    candidates = [
        n for n in ordered if tag in carried[int(n["id"])] and not n.get("pending_deletion")
    ]
    ready = [n for n in candidates if n.get("status") == READY]
    pool = ready or candidates or holders
    return int(pool[0]["id"]) if pool else None


# -- the resolver -----------------------------------------------------------------------------
def task_selector(task: Mapping[str, Any]) -> Any:
    """A task's selector: `tags`, else `roles` (or its alias `role`), else `groups`."""
    for key in ("tags", "roles", "role", "groups"):
        if task.get(key) is not None:
            return task[key]
    return None


def resolve(
    selector: Any, tags_by_node: Mapping[Any, Iterable[str]], policy: str | None = None
) -> list[Any]:
    """Node ids (sorted) that `selector` names; `"master"` if it names the master node.

    Instance tags (`mysql:1`) match only an exact name or a regex that mentions `:`; a selector
    of any other shape resolves to nothing; policy `any` keeps one node (the lowest id).
    """
    found = _resolve(selector, tags_by_node)
    nodes = sorted((n for n in found if n != MASTER), key=_id_order)
    result = ([MASTER] if MASTER in found else []) + nodes
    if policy == POLICY_ANY and result:
        return nodes[:1] if nodes else result[:1]
    return result


def _resolve(selector: Any, tags_by_node: Mapping[Any, Iterable[str]]) -> set[Any]:
    if selector == ALL:
        return set(tags_by_node)
    if selector == MASTER:
        return {MASTER}
    if isinstance(selector, str):
        matcher = _matcher(selector)
        return {node for node, tags in tags_by_node.items() if any(map(matcher, tags))}
    if isinstance(selector, list | tuple):
        found: set[Any] = set()
        for item in selector:
            if isinstance(item, str):
                found |= _resolve(item, tags_by_node)
        return found
    return set()


def _matcher(selector: str) -> Callable[[str], bool]:
    if len(selector) > 1 and selector.startswith("/") and selector.endswith("/"):
        source = selector[1:-1]
        try:
            pattern = re.compile(source)
        except re.error:
            return lambda tag: False
        explicit = ":" in source
        return lambda tag: (explicit or ":" not in tag) and pattern.match(tag) is not None
    return lambda tag: tag == selector


def _id_order(node: Any) -> tuple[Any, ...]:
    text = str(node)
    return (0, int(text), text) if text.isascii() and text.isdigit() else (1, 0, text)


def resolve_tasks(
    tasks: Sequence[Mapping[str, Any]], tags_by_node: Mapping[Any, Iterable[str]]
) -> dict[str, Any]:
    """Where each task runs: `{"nodes": {id: [task ids]}, "master": [...], "sync": [...]}`.

    `stage` tasks and tasks without a selector go to the sync point (Nailgun's `null` node); a
    `group` task places its member `tasks` on the group's nodes and is not placed itself.
    Task order within a node follows the input order.
    """
    placement: dict[str, list[Any]] = {}
    for task in tasks:
        if task.get("type") == GROUP_TYPE:
            for member in task.get("tasks") or []:
                _place(placement, str(member), resolve(task_selector(task), tags_by_node))
            continue
        selector = task_selector(task)
        if task.get("type") in SYNC_TYPES or selector is None:
            targets = [None]
        else:
            targets = resolve(selector, tags_by_node)
        _place(placement, str(task.get("id")), targets)
    return _placement_answer(tasks, placement, tags_by_node)


def _place(placement: dict[str, list[Any]], task_id: str, targets: Iterable[Any]) -> None:
    for target in targets:
        placement.setdefault(task_id, [])
        if target not in placement[task_id]:
            placement[task_id].append(target)


def _placement_answer(
    tasks: Sequence[Mapping[str, Any]],
    placement: dict[str, list[Any]],
    tags_by_node: Mapping[Any, Iterable[str]],
) -> dict[str, Any]:
    order = _unique([str(t.get("id")) for t in tasks] + list(placement))
    nodes: dict[str, list[str]] = {str(n): [] for n in sorted(tags_by_node, key=_id_order)}
    answer: dict[str, Any] = {"nodes": nodes, "master": [], "sync": []}
    for task_id in order:
        for target in placement.get(task_id, []):
            if target is None:
                answer["sync"].append(task_id)
            elif target == MASTER:
                answer["master"].append(task_id)
            else:
                nodes[str(target)].append(task_id)
    return answer


# -- node filters and instances ---------------------------------------------------------------
def default_node_filter(node: Mapping[str, Any]) -> bool:
    """Nodes a graph runs on by default: deployed, and not being added or removed."""
    return (
        not node.get("pending_addition")
        and not node.get("pending_deletion")
        and node.get("status") in DEFAULT_FILTER_STATUSES
    )


def instances(tags_by_node: Mapping[Any, Iterable[str]], name: str) -> dict[str, list[Any]]:
    """`{"1": [node ids], "2": [...]}`: the nodes of each instance `name:N`."""
    return all_instances(tags_by_node).get(name, {})


def all_instances(tags_by_node: Mapping[Any, Iterable[str]]) -> dict[str, dict[str, list[Any]]]:
    """Every instance tag's grouping: `{"mysql": {"1": [1, 2], "2": [3]}}` (sorted)."""
    grouped: dict[str, dict[int, list[Any]]] = {}
    for node in sorted(tags_by_node, key=_id_order):
        for tag in tags_by_node[node]:
            parsed = split_instance(tag)
            if parsed:
                grouped.setdefault(parsed[0], {}).setdefault(parsed[1], []).append(node)
    return {
        name: {str(number): members for number, members in sorted(groups.items())}
        for name, groups in sorted(grouped.items())
    }


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
