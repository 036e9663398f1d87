"""How big a plan's record will be, estimated before the plan is built, pure.

A plan grows with the nodes twice over (Newton's graph links every compute node to every other
one through selector-less `cross_depends`), so building it to find out it is too big held a
worker for as long as a real run and as much memory. Nodes that carry the same tags get the same
tasks and the same kinds of links, so the plan of two representatives of each such class, with
each link to another class's representative standing for that class's nodes, gives each node's
share closely enough to refuse a record that would be too big, at the cost of a plan on a
handful of nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gitstore.merge import execution

#: Values a stored task entry adds besides its links: the entry and its id, type and requires
#: (and fail_on_error when skipped).
ENTRY_VALUES = 5
#: Values one history entry adds (the entry; task_name, node_id, status, time_start,
#: time_end, message, exit_code, output).
HISTORY_VALUES = 9
_PER_CLASS = 2


def node_values(
    tasks: Sequence[Mapping[str, Any]],
    tags_by_node: Mapping[Any, Iterable[str]],
    selected: Sequence[str] | None = None,
) -> dict[str, float]:
    """Estimated values (keys and list items) of each node key's record for one graph: its
    entries, one stored item per `requires` link, and one history entry per entry. Keys of
    nodes are node ids as strings, plus `null` (sync points) and `master`."""
    members: dict[frozenset[Any], list[Any]] = {}
    for node, tags in tags_by_node.items():
        members.setdefault(frozenset(tags), []).append(node)
    chosen = {node: tags_by_node[node] for nodes in members.values() for node in nodes[:_PER_CLASS]}
    plan = execution.serialize(tasks, chosen, selected)["tasks_graph"]
    stand_for = _stand_for(members)
    per_class: dict[str, float] = {}
    for key, entries in plan.items():
        per_class[key] = sum(
            ENTRY_VALUES + HISTORY_VALUES + sum(_weight(key, r, stand_for) for r in e["requires"])
            for e in entries
        )
    found = {key: per_class[key] for key in (execution.SYNC, execution.MASTER) if key in plan}
    for nodes in members.values():
        found.update(dict.fromkeys((str(n) for n in nodes), per_class.get(str(nodes[0]), 0)))
        if len(nodes) > 1:  # the second representative may carry more (primary tags differ)
            worst = max(per_class.get(str(nodes[0]), 0), per_class.get(str(nodes[1]), 0))
            found.update(dict.fromkeys((str(n) for n in nodes), worst))
    return found


def _stand_for(members: Mapping[frozenset[Any], list[Any]]) -> dict[str, tuple[int, float, float]]:
    """Representative -> (its class, the nodes a link to it from another class stands for,
    the nodes a link to it from its sibling representative stands for)."""
    weights = {}
    for index, nodes in enumerate(members.values()):
        shown = nodes[:_PER_CLASS]
        sibling = (len(nodes) - 1) / (len(shown) - 1) if len(shown) > 1 else 0
        for node in shown:
            weights[str(node)] = (index, len(nodes) / len(shown), sibling)
    return weights


def _weight(
    key: str, require: Mapping[str, Any], stand_for: Mapping[str, tuple[int, float, float]]
) -> float:
    node = require.get("node_id")
    if node is None or node == key or node not in stand_for:
        return 1  # the same node, a sync point or the master: one link
    if key in stand_for and stand_for[key][0] == stand_for[node][0]:
        return stand_for[node][2]
    return stand_for[node][1]
