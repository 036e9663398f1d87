"""`/ui/`: what changed. A node's effective values between two versions, the history of one key
at one node, and a commit's page with its blast radius: which nodes' effective values it
changed, and how.

Every answer is the REST one rendered (`GET .../diff`, `GET .../history`): secrets come masked
from there. Registered on the console's blueprint (imported where it is registered).
"""

from __future__ import annotations

from flask import render_template

from gitstore.api.console.blueprint import bp, pinned
from gitstore.api.console.shared import (
    NodeChain,
    attached_resources,
    known_nodes,
    node_chain,
)
from gitstore.api.deadlines import deadline
from gitstore.api.offload import heavy_service
from gitstore.errors import InvalidInput, NotFound
from gitstore.names import is_number

#: How many commits the history of one key lists at most.
KEY_HISTORY = 200
#: How many nodes of a blast radius one commit page lists, with their changes (`?page=N` for
#: the next ones; the REST diff has them all).
RADIUS_PAGE = 50


@bp.get("/environments/<int:env_id>/nodes/<node>/diff")
def node_diff(env_id: int, node: str):
    """The node's effective values at `from` against `to` (default: the pinned version)."""
    source, target = pinned("from"), pinned("to") or pinned()
    chain = node_chain(env_id, node, target)
    changes = None
    if source is not None:
        answer = (
            heavy_service("versions")
            .diff(env_id, source, target, levels=[chain.path], deadline=deadline())
            .data
        )
        changes = answer["scopes"].get(chain.scope, {})
    return render_template(
        "console/node_diff.html",
        env_id=env_id,
        chain=chain,
        source=source,
        target=target,
        changes=changes,
        version=pinned(),
    )


@bp.get("/environments/<int:env_id>/nodes/<node>/history")
def key_history(env_id: int, node: str):
    """Every commit that changed the effective value of `key` of `resource` at the node."""
    version = pinned()
    chain = node_chain(env_id, node, version)
    resource, key = pinned("resource"), pinned("key")
    return render_template(
        "console/key_history.html",
        env_id=env_id,
        chain=chain,
        resource=resource,
        key=key,
        entries=_key_entries(env_id, chain, resource, key, version),
        resources=[d["name"] for d in attached_resources(env_id, version)],
        version=version,
    )


def _key_entries(
    env_id: int, chain: NodeChain, resource: str | None, key: str | None, version: str | None
) -> list[dict] | None:
    """The REST history of the key at the node's chain; None until the form names both."""
    if not resource and not key:
        return None
    if not resource or not key:
        missing = "key" if resource else "resource"
        raise InvalidInput(
            f"the history of a key needs resource= and key=; {missing}= is empty", key=missing
        )
    return (
        heavy_service("versions")
        .history(
            env_id,
            path=chain.path,
            resource=resource,
            key=key,
            limit=KEY_HISTORY,
            version=version,
            deadline=deadline(),
        )
        .data["entries"]
    )


@bp.get("/environments/<int:env_id>/commits/<rev>")
def commit(env_id: int, rev: str):
    """One commit: who, when, why, the files it changed, and the nodes whose effective values
    it changed (its blast radius: their count, and one page of them with their changes); a
    writer gets its revert control (`edit.revert`)."""
    versions = heavy_service("versions")
    entry = versions.history(env_id, limit=1, version=rev, deadline=deadline()).data["entries"][0]
    page = _page_number(pinned("page"))
    radius = _blast_radius(env_id, entry["commit"], page) if entry["version"] > 1 else None
    return render_template(
        "console/commit.html",
        env_id=env_id,
        entry=entry,
        radius=radius,
        version=pinned(),
    )


def _page_number(text: str | None) -> int:
    if text is None:
        return 1
    if not is_number(text) or not 1 <= int(text) <= MAX_PAGE:
        raise InvalidInput(f"page {text!r} must be an integer from 1 to {MAX_PAGE}", key="page")
    return int(text)


#: The largest `?page=` (a bound on the number a request may name, not on the nodes).
MAX_PAGE = 100_000


def _blast_radius(env_id: int, commit: str, page: int = 1) -> dict:
    """The effective values the commit changed, globally and at each node known before or
    after it (a node's chain is read at the commit, or before it for a node the commit
    removed): `{"global": changes, "count": nodes changed, "nodes": [(chain, changes)] of
    page `page`, "page", "pages", "first": the position of the page's first node}`."""
    parent = f"{commit}~1"
    chains = []
    for node in _nodes(env_id, commit, parent):
        deadline().check()
        chains.append(_chain_then(env_id, node, commit, parent))
    scopes = ["/", *(chain.path for chain in chains)]
    changed = (
        heavy_service("versions").diff(env_id, parent, commit, levels=scopes, deadline=deadline())
    ).data["scopes"]
    nodes = [(chain, changed[chain.scope]) for chain in chains if chain.scope in changed]
    pages = max(1, -(-len(nodes) // RADIUS_PAGE))
    if page > pages:
        raise InvalidInput(
            f"page {page} is past the last page ({pages}) of this commit's blast radius",
            key="page",
        )
    first = (page - 1) * RADIUS_PAGE
    return {
        "global": changed.get("/", {}),
        "count": len(nodes),
        "nodes": nodes[first : first + RADIUS_PAGE],
        "page": page,
        "pages": pages,
        "first": first + 1,
    }


def _nodes(env_id: int, commit: str, parent: str) -> list[str]:
    both = set(known_nodes(env_id, commit)) | set(known_nodes(env_id, parent))
    return sorted(both, key=lambda text: (len(text), text))


def _chain_then(env_id: int, node: str, commit: str, parent: str) -> NodeChain:
    try:
        return node_chain(env_id, node, commit)
    except NotFound:
        return node_chain(env_id, node, parent)
