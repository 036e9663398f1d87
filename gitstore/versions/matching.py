"""Which nodes of two environments are the same machine: every node of a commit by name
(its inventory fqdn, else its `nodes` level value), and the one node a comparison asks for.

Node ids are unique across the store, so one machine has another id in each environment (an
upgrade seed's nodes too); its fqdn is what stays. A facts-only node (a `nodes` level value
holding data, no inventory record) has no fqdn: its level value is its name.
"""

from __future__ import annotations

from gitstore.configdb.hiera import Node, find_node
from gitstore.errors import GitstoreError, NotFound
from gitstore.layout import INVENTORY_NODES, NODES_LEVEL, EnvironmentView

#: Names listed of the nodes one environment has alone; `count` says how many there are.
LISTED_ALONE = 1000


def read_nodes(view: EnvironmentView) -> dict[str, Node]:
    """Name -> node, for every inventory record and every value of the `nodes` level."""
    ids = {
        entry.name[: -len(".yaml")]
        for entry in view.snapshot.list(INVENTORY_NODES)
        if not entry.is_tree and entry.name.endswith(".yaml")
    }
    if NODES_LEVEL in view.hierarchy:
        ids.update(view.level_values(NODES_LEVEL))
    found: dict[str, Node] = {}
    for node_id in sorted(ids, key=lambda text: (len(text), text)):
        try:
            node = find_node(view, node_id)
        except GitstoreError:
            continue  # a record that names no valid level value: not a node to compare
        found.setdefault(node.fqdn or node.id, node)
    return found


def one_node(
    ref: str, env_a: int, env_b: int, nodes_a: dict[str, Node], nodes_b: dict[str, Node]
) -> tuple[list[str], list[str], list[str]]:
    """(matched, only a, only b) for the node `ref` (a name, or a node id of either side)."""
    name = next(
        (
            found
            for nodes in (nodes_a, nodes_b)
            for found, node in nodes.items()
            if ref in (found, node.id)
        ),
        None,
    )
    if name is None:
        raise NotFound(
            f"node {ref!r} is in neither environment {env_a} nor {env_b} (no inventory "
            f"fqdn or id, and no {NODES_LEVEL} level value, is {ref!r})",
            key="node",
        )
    in_a, in_b = name in nodes_a, name in nodes_b
    return (
        ([name] if in_a and in_b else []),
        ([name] if not in_b else []),
        ([name] if not in_a else []),
    )


def alone(names: list[str], nodes: dict[str, Node]) -> dict:
    """The nodes of `names` (listed up to LISTED_ALONE) and how many there are."""
    listed = [node_entity(nodes[name]) | {"name": name} for name in names[:LISTED_ALONE]]
    return {"count": len(names), "nodes": listed}


def node_entity(node: Node) -> dict:
    return {"node": node.id, "fqdn": node.fqdn, "levels": [list(pair) for pair in node.pairs]}
