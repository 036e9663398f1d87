"""`/ui/`: the read-only web console, server-rendered HTML readable without JavaScript.

Pages: the environments, one environment (levels, nodes, resources, labels, recent commits)
and one node (every resource's effective values as a tree, each key with the level that won,
its file and line, and the commit that set it). Every page takes `?version=` (a version
number, commit or label) and carries it in its links: the whole console travels in time.
Access is the REST reads' (`auth.needed` maps `/ui/environments/<id>` to that environment);
an unknown environment or node is the usual JSON error (404); a blank `?version=`
(the form left empty) is the head. `?reveal=1` on a node page opens secret values for a
holder of the `secrets` role. The writes (sign-in, edit, revert) are in `edit.py`.
"""

from __future__ import annotations

from typing import Any

from flask import g, render_template

from gitstore.api.console.blueprint import bp, pinned
from gitstore.api.console.render import provenance
from gitstore.api.console.shared import attached_resources, known_nodes
from gitstore.api.deadlines import deadline
from gitstore.api.http import app_store, flag
from gitstore.api.offload import heavy_service

#: How many commits the environment page lists.
RECENT = 10
#: How many commits back the node page looks for the messages of the commits explain names.
HISTORY = 500


@bp.get("/")
def environments():
    store = app_store()
    rows = []
    for entity in store.environments.list().data:
        env_id = entity["id"]
        last = store.versions.history(env_id, limit=1).data["entries"]
        rows.append(
            {
                "entity": entity,
                "nodes": len(known_nodes(env_id, None)),
                "last": last[0] if last else None,
            }
        )
    return render_template("console/environments.html", rows=rows, version=pinned())


@bp.get("/environments/<int:env_id>")
def environment(env_id: int):
    store, version = app_store(), pinned()
    entity = store.environments.get(env_id, version)
    return render_template(
        "console/environment.html",
        env=entity.data,
        commit=entity.commit,
        levels=store.environments.levels(env_id, version).data,
        nodes=known_nodes(env_id, version),
        resources=_resources(env_id, version),
        labels=store.versions.labels(env_id).data,
        commits=store.versions.history(env_id, limit=RECENT, version=version).data["entries"],
        version=version,
    )


@bp.get("/environments/<int:env_id>/nodes/<node>")
def node(env_id: int, node: str):
    store, version = app_store(), pinned()
    reveal = flag("reveal")  # auth.py lets it through only with the secrets role
    who = g.get("user")
    document = store.hiera.node_document(env_id, node, version, reveal=reveal, who=who).data
    pairs = [tuple(pair) for pair in document["levels"]]
    messages = _messages(env_id, version)
    resources = []
    for name, values in document["resources"].items():
        explained = (
            heavy_service("versions")
            .explain(
                env_id,
                pairs,
                name,
                None,
                version,
                effective=True,
                reveal=reveal,
                who=who,
                deadline=deadline(),
            )
            .data
        )
        resources.append({"name": name, "tree": _tree(values, _by_path(explained), messages, ())})
    return render_template(
        "console/node.html",
        env_id=env_id,
        node=document,
        resources=resources,
        version=version,
        reveal=reveal,
        at_head=version is None,  # edits (edit.py) start from the head only
    )


def _resources(env_id: int, version: str | None) -> list[str]:
    """The resources the components attached at `version` define."""
    return [definition["name"] for definition in attached_resources(env_id, version)]


def _messages(env_id: int, version: str | None) -> dict[str, str]:
    """Commit id to message, for the provenance of keys (explain names commits only)."""
    history = (
        heavy_service("versions")
        .history(env_id, limit=HISTORY, version=version, deadline=deadline())
        .data
    )
    return {entry["commit"]: entry["message"] for entry in history["entries"]}


def _by_path(explained: Any) -> dict[str, dict]:
    return {item["path"]: item for item in explained["keys"]}


def _tree(value: Any, explained: dict, messages: dict, path: tuple) -> dict:
    """A node of the values tree: a mapping has children, anything else is a leaf whose
    provenance is the explain entry of its dotted path."""
    dotted = ".".join(str(segment) for segment in path)
    if isinstance(value, dict) and value and dotted not in explained:
        children = [_tree(child, explained, messages, (*path, key)) for key, child in value.items()]
        return {"key": path[-1] if path else "", "path": dotted, "children": children}
    why = explained.get(dotted)  # None for an empty mapping: explain lists leaves only
    winner = why["layers"][why["winner"]] if why and why["winner"] is not None else None
    message = messages.get(why["commit"] or "", "") if why else ""
    return {
        "key": path[-1] if path else "",
        "path": dotted,
        "value": value,
        "winner": winner,
        "why": why,
        "message": message,
        "provenance": provenance(why, winner, message) if why else "",
    }
