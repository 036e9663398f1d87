"""Execution plans, pure: a merged graph placed on nodes, as Nailgun's task-based serializer
shaped it, and the order an executor runs it in.

A plan of one graph is `{"tasks_graph": {node: [task entries]}, "tasks_directory": {task:
data}}`. Node keys are node ids as strings, `"master"` for tasks on the master node and `"null"`
for sync points (stages and tasks without a selector). An entry is `{id, type, requires: [{name,
node_id}]}`: `node_id` is a node key, or None for a sync point. A task not chosen for the run
becomes `{id, type: skipped, fail_on_error: false, requires}`, so the order still flows through
it.

Same-node links come from `requires`, `required_for`, group members and legacy `groups`; where a
linked task is not placed on the node, the link goes through that task's own dependencies (to a
sync point, the master node, or further up). Cross-node links come from `cross_depends` and
`cross_depended_by` (`role`/`tags` select the nodes, `self` means the same node, policy `any`
keeps one). YAQL `condition`s are recorded in the directory, not evaluated.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from gitstore.errors import InvalidInput, ValidationFailed
from gitstore.merge import tags as tagging
from gitstore.merge.graphs import (
    CROSS_FIELDS,
    LOCAL_FIELDS,
    dependency_edges,
    ranked_order,
    resolve_name,
    topological_order,
)

SYNC = "null"
MASTER = tagging.MASTER
SKIPPED = "skipped"
#: Dependency and selector fields: in the entries of tasks_graph, not in the directory.
_LINK_FIELDS = (
    "id",
    "requires",
    "required_for",
    "cross_depends",
    "cross_depended_by",
    "roles",
    "groups",
    "tags",
    "tasks",
)

Vertex = tuple[str, str]  # (task id, node key)


def serialize(
    tasks: Sequence[Mapping[str, Any]],
    tags_by_node: Mapping[Any, Iterable[str]],
    selected: Sequence[str] | None = None,
    checkpoint: Callable[[], None] = lambda: None,
) -> dict[str, Any]:
    """The plan of `tasks` (a merged, valid graph) on the nodes of `tags_by_node`.

    `selected` names the tasks to run (None: all); the others are skipped. An unknown name in
    `selected` is InvalidInput. `checkpoint` is called between the steps (a task on a node) of
    a plan whose size grows with the nodes twice over: a request's deadline check.
    """
    by_id = {task["id"]: task for task in tasks}
    unknown = [name for name in selected or () if name not in by_id]
    if unknown:
        raise InvalidInput(f"tasks {', '.join(unknown)} are not in the graph", key="tasks")
    ordered = [by_id[task_id] for task_id in topological_order(tasks)]
    placed = _placement(tagging.resolve_tasks(ordered, tags_by_node))
    links = _Links(ordered, placed, tags_by_node, checkpoint)
    tasks_graph: dict[str, list[dict[str, Any]]] = {
        key: [] for key in _node_keys(placed, tags_by_node)
    }
    for task in ordered:
        for node in placed.get(task["id"], ()):
            checkpoint()
            tasks_graph[node].append(_entry(task, links.requires((task["id"], node)), selected))
    directory = {task["id"]: _directory_entry(task) for task in ordered if task["id"] in placed}
    return {"tasks_graph": tasks_graph, "tasks_directory": directory}


def _placement(resolved: Mapping[str, Any]) -> dict[str, list[str]]:
    """Task id -> node keys, from the resolver's `{nodes, master, sync}` answer."""
    placed: dict[str, list[str]] = {}
    for task_id in resolved["sync"]:
        placed.setdefault(task_id, []).append(SYNC)
    for task_id in resolved["master"]:
        placed.setdefault(task_id, []).append(MASTER)
    for node, task_ids in resolved["nodes"].items():
        for task_id in task_ids:
            placed.setdefault(task_id, []).append(str(node))
    return placed


def _node_keys(placed: Mapping[str, list[str]], tags_by_node: Mapping[Any, Any]) -> list[str]:
    used = {node for nodes in placed.values() for node in nodes}
    keys = [key for key in (SYNC, MASTER) if key in used]
    return keys + sorted((str(n) for n in tags_by_node), key=_node_rank)


def _node_rank(key: str) -> tuple[Any, ...]:
    return (0, int(key), key) if key.isascii() and key.isdigit() else (1, 0, key)


def _entry(
    task: Mapping[str, Any], requires: list[dict[str, Any]], selected: Collection[str] | None
) -> dict[str, Any]:
    if selected is not None and task["id"] not in selected:
        return {"id": task["id"], "type": SKIPPED, "fail_on_error": False, "requires": requires}
    return {"id": task["id"], "type": task["type"], "requires": requires}


def _directory_entry(task: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in task.items() if key not in _LINK_FIELDS}


class _Links:
    """The predecessors of every placed (task, node) vertex."""

    def __init__(
        self,
        tasks: Sequence[Mapping[str, Any]],
        placed: Mapping[str, list[str]],
        tags_by_node: Mapping[Any, Iterable[str]],
        checkpoint: Callable[[], None],
    ) -> None:
        self.placed = placed
        self.tags_by_node = tags_by_node
        self.ids = [task["id"] for task in tasks]
        self.local: dict[str, list[str]] = {task_id: [] for task_id in self.ids}
        for before, later in dependency_edges(tasks, LOCAL_FIELDS):
            self.local[later].append(before)
        self.cross: dict[Vertex, list[Vertex]] = {}
        # A graph names a few selectors and task names; a plan on many nodes resolves each
        # once per node without these. A link to one vertex is one shared (read-only) dict.
        self._chosen: dict[str, set[Any] | None] = {}
        self._named: dict[str, list[str]] = {}
        self._links: dict[Vertex, dict[str, Any]] = {}
        for task in tasks:
            for node in placed.get(task["id"], ()):
                checkpoint()
                self._add_cross(task, node)

    def requires(self, vertex: Vertex) -> list[dict[str, Any]]:
        found = self._local(vertex) + [v for v in self.cross.get(vertex, []) if v != vertex]
        return [self._link(v) for v in dict.fromkeys(found)]

    def _link(self, vertex: Vertex) -> dict[str, Any]:
        link = self._links.get(vertex)
        if link is None:
            task_id, node = vertex
            link = {"name": task_id, "node_id": None if node == SYNC else node}
            self._links[vertex] = link
        return link

    def _local(self, vertex: Vertex) -> list[Vertex]:
        """Same-node predecessors, walking through tasks that are not placed on the node."""
        task_id, node = vertex
        found: list[Vertex] = []
        walk, seen = list(self.local[task_id]), set()
        while walk:
            other = walk.pop(0)
            if other in seen:
                continue
            seen.add(other)
            hits = self._linked(other, node)
            if hits:
                found += hits
            else:
                walk += self.local[other]
        return found

    def _linked(self, other: str, node: str) -> list[Vertex]:
        """Where task `other` satisfies a same-node link of a task on `node`: on that node, at
        a sync point or on the master (a sync point waits for every placement)."""
        nodes = self.placed.get(other, [])
        if node == SYNC:
            return [(other, n) for n in nodes]
        return next(([(other, c)] for c in (node, SYNC, MASTER) if c in nodes), [])

    def _add_cross(self, task: Mapping[str, Any], node: str) -> None:
        for field in CROSS_FIELDS:
            items = task.get(field)
            if not isinstance(items, list):
                continue  # a {yaql_exp} is evaluated per node by a real orchestrator
            for item in items:
                for other in self._targets(item, node):
                    later, before = (
                        ((task["id"], node), other)
                        if field == "cross_depends"
                        else (other, (task["id"], node))
                    )
                    self.cross.setdefault(later, []).append(before)

    def _targets(self, item: Mapping[str, Any], node: str) -> list[Vertex]:
        """The vertices a cross dependency of a task on `node` names."""
        selector = item.get("tags", item.get("role"))
        if selector is None:
            chosen = None  # every node that runs the named task
        elif selector == "self":
            chosen = {node}
        else:
            chosen = self._selected(selector)
        found = []
        if item["name"] not in self._named:
            self._named[item["name"]] = resolve_name(item["name"], self.ids)
        for other in self._named[item["name"]]:
            nodes = self.placed.get(other, [])
            if chosen is not None:
                nodes = [n for n in nodes if n in chosen]
            if item.get("policy") == tagging.POLICY_ANY:
                nodes = nodes[:1]
            found += [(other, n) for n in nodes]
        return found

    def _selected(self, selector: Any) -> set[Any] | None:
        key = repr(selector)
        if key not in self._chosen:
            self._chosen[key] = {str(n) for n in tagging.resolve(selector, self.tags_by_node)}
        return self._chosen[key]


# -- running order ----------------------------------------------------------------------------
def execution_order(
    tasks_graph: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[tuple[str, Mapping[str, Any]]]:
    """(node key, entry) pairs in an order that respects every `requires` and each node's own
    order; ties go to the earlier place in a node's list, then to the lower node."""
    nodes = sorted(tasks_graph, key=lambda k: (k != SYNC, k != MASTER, _node_rank(k)))
    entries: dict[Vertex, Mapping[str, Any]] = {}
    rank: dict[Vertex, tuple[Any, ...]] = {}
    before: dict[Vertex, set[Vertex]] = {}
    for node_index, node in enumerate(nodes):
        previous = None
        for position, entry in enumerate(tasks_graph[node]):
            vertex = (entry["id"], node)
            entries[vertex], rank[vertex] = entry, (position, node_index)
            before[vertex] = {
                (r["name"], SYNC if r.get("node_id") is None else str(r["node_id"]))
                for r in entry.get("requires") or []
            }
            if previous is not None:
                before[vertex].add(previous)
            previous = vertex
    return [(vertex[1], entries[vertex]) for vertex in _kahn(before, rank)]


def _kahn(
    before: Mapping[Vertex, set[Vertex]], rank: Mapping[Vertex, tuple[Any, ...]]
) -> list[Vertex]:
    after: dict[Vertex, list[Vertex]] = {vertex: [] for vertex in before}
    for vertex, needs in before.items():
        for need in needs:
            if need in before:
                after[need].append(vertex)
    order = ranked_order(after, rank)
    if len(order) < len(before):
        stuck = sorted(f"{task}@{node}" for (task, node) in set(before) - set(order))
        raise ValidationFailed(
            f"the plan cannot be ordered: tasks {', '.join(stuck[:5])} wait on each other"
        )
    return order
