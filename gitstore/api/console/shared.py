"""What the console's later pages share: the version pin, a node's chain of levels, flat keys.

The first pages live in `console.py`; the diff, history, commit, search and graph pages live in
modules of their own that register on the same blueprint (`console.bp`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from flask import g, request, url_for

from gitstore.api.console.render import MAX_FILTER
from gitstore.api.http import app_store
from gitstore.errors import InvalidInput


@dataclass(frozen=True)
class NodeChain:
    """A node as the console addresses it: its id, fqdn and level pairs (least specific
    first), as the Hiera node document of that node names them."""

    node: str
    fqdn: str | None
    pairs: tuple[tuple[str, str], ...]

    @property
    def scope(self) -> str:
        """The scope key of diffs and the `path=` of histories: `/l1/v1/.../`."""
        return "/" + "".join(f"{level}/{value}/" for level, value in self.pairs)

    @property
    def path(self) -> str:
        """The chain as a REST `path=` / `levels=` argument (`role/compute/nodes/1`)."""
        return "/".join(f"{level}/{value}" for level, value in self.pairs) or "/"


def node_chain(env_id: int, node: str, version: str | None) -> NodeChain:
    """The chain of `node` at `version` (NotFound when the node is unknown then)."""
    document = (
        app_store().hiera.node_document(env_id, node, version, resources=[], who=g.get("user")).data
    )
    pairs = tuple((str(level), str(value)) for level, value in document["levels"])
    return NodeChain(str(document["node"]), document.get("fqdn"), pairs)


def leaves(value: Any, path: tuple = ()) -> Iterator[tuple[str, Any]]:
    """`(dotted key, value)` of every leaf: mappings are entered, lists and scalars are values
    (the granularity at which values merge); an empty mapping is a leaf."""
    if isinstance(value, dict) and value:
        for key, child in value.items():
            yield from leaves(child, (*path, key))
    elif path:
        yield ".".join(str(segment) for segment in path), value


def attached_resources(env_id: int, version: str | None) -> list[dict]:
    """`{name, id, component}` of each resource definition of the environment's components at
    `version` (definitions from the catalog's head, as the Hiera node document reads them)."""
    store = app_store()
    attached = set(store.environments.get(env_id, version).data.get("components") or [])
    names = {c["id"]: c["name"] for c in store.components.list().data if c["id"] in attached}
    found = [
        {"name": d["name"], "id": d["id"], "component": names[d["component_id"]]}
        for d in store.definitions.list().data
        if d.get("component_id") in names
    ]
    return sorted(found, key=lambda definition: definition["name"])


def known_nodes(env_id: int, version: str | None) -> list[str]:
    """Nodes with an inventory record or a folder at the `nodes` level, in id order."""
    store = app_store()
    found = {str(n["id"]) for n in store.nodes.list(env_id, version).data if "id" in n}
    for level in store.environments.levels(env_id, version).data:
        if level["name"] == "nodes":
            found.update(str(value) for value in level["values"])
    return sorted(found, key=lambda text: (len(text), text))


def query_arg(name: str, required: bool = False) -> str | None:
    """Query parameter `name`, stripped; None when absent or blank (a 400 naming it when
    `required`)."""
    value = (request.args.get(name) or "").strip()
    if not value and required:
        raise InvalidInput(f"{name} is required", key=name)
    return value or None


def wanted_filter() -> str:
    """The node view's `?filter=` text, stripped and cut to `MAX_FILTER` characters."""
    return (request.args.get("filter") or "").strip()[:MAX_FILTER]


def fold_url(env_id: int, document: dict, resource: str, wanted: str, reveal: bool) -> str:
    """The URL of a folded subtree of `resource` in the node view of `document` (the Hiera node
    document), less its `&key=`: pinned to the document's commit, so a subtree opened later
    is read at the same revision, and with the page's filter and reveal."""
    return url_for(
        "console.subtree",
        env_id=env_id,
        node=document["node"],
        resource=resource,
        version=document["commit"],
        filter=wanted or None,
        reveal=1 if reveal else None,
    )
