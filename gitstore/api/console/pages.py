"""`/ui/`: the read-only web console, server-rendered HTML readable without JavaScript.

Pages: the environments, one environment (levels, a page of its nodes, resources, labels,
recent commits), one node (every resource's effective values as a tree, large subtrees folded:
`subtrees.py` serves them) and a key's provenance at a node (the level that won, its file and
line, the commit that set it), which the node page fetches when a key is opened rather than
carrying it for every key. Every page takes `?version=` (a version number, commit or label)
and carries it in its links: the whole console travels in time.
Access is the REST reads' (`auth.needed` maps `/ui/environments/<id>` to that environment);
an unknown environment or node is the usual JSON error (404); a blank `?version=`
(the form left empty) is the head. `?reveal=1` on a node page opens secret values for a
holder of the `secrets` role. The writes (sign-in, edit, revert) are in `edit.py`.
"""

from __future__ import annotations

from flask import g, render_template, url_for

from gitstore.api.console.blueprint import bp, pinned
from gitstore.api.console.nodelist import node_page
from gitstore.api.console.render import matching, provenance, values_tree
from gitstore.api.console.shared import (
    attached_resources,
    fold_url,
    node_chain,
    query_arg,
    wanted_filter,
)
from gitstore.api.deadlines import deadline
from gitstore.api.http import app_store, flag
from gitstore.api.offload import heavy_service
from gitstore.errors import NotFound

#: How many commits the environment page lists.
RECENT = 10


@bp.get("/")
def environments():
    store = app_store()
    rows = []
    for entity in store.environments.list().data:
        env_id = entity["id"]
        last = store.versions.commits(env_id, limit=1).data["entries"]
        rows.append(
            {
                "entity": entity,
                "nodes": len(store.roster.rows(env_id).data),
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
        nodes=node_page(store.roster.rows(env_id, version).data),
        resources=_resources(env_id, version),
        labels=store.versions.labels(env_id).data,
        commits=store.versions.commits(env_id, limit=RECENT, version=version).data["entries"],
        version=version,
    )


@bp.get("/environments/<int:env_id>/nodes/<node>")
def node(env_id: int, node: str):
    store, version = app_store(), pinned()
    reveal = flag("reveal")  # auth.py lets it through only with the secrets role
    document = store.hiera.node_document(
        env_id, node, version, reveal=reveal, who=g.get("user")
    ).data
    wanted = wanted_filter()
    resources = []
    for name, values in document["resources"].items():
        shown = matching(values, wanted.casefold())
        tree = values_tree(shown, fold_url(env_id, document, name, wanted, reveal))
        resources.append({"name": name, "tree": tree, "shown": len(shown)})
    return render_template(
        "console/node.html",
        env_id=env_id,
        node=document,
        resources=resources,
        filter=wanted,
        version=version,
        reveal=reveal,
        at_head=version is None,  # edits (edit.py) start from the head only
    )


@bp.get("/environments/<int:env_id>/nodes/<node>/why")
def why(env_id: int, node: str):
    """The provenance of one key at the node (`?resource=&key=`): what a key of the node page
    shows when opened. `?fragment=1` answers that part alone, which the page's script fetches;
    the whole page, with a form to pick the key, serves a browser without JavaScript."""
    version, fragment = pinned(), flag("fragment")
    reveal = flag("reveal")
    resource, key = query_arg("resource", fragment), query_arg("key", fragment)
    chain = node_chain(env_id, node, version)
    shown = None
    if resource and key:
        explained = (
            heavy_service("versions")
            .explain(
                env_id,
                list(chain.pairs),
                resource,
                key,
                version,
                reveal=reveal,
                who=g.get("user"),
                deadline=deadline(),
            )
            .data
        )
        found = next((item for item in explained["keys"] if item["path"] == key), None)
        if found is None:
            raise NotFound(f"node {chain.node} has no key {key!r} in {resource}", key="key")
        winner = found["layers"][found["winner"]] if found["winner"] is not None else None
        commit = found["commit"]
        url = (
            url_for("console.commit", env_id=env_id, rev=commit, version=version)
            if commit
            else None
        )
        shown = provenance(found, winner, _message(env_id, commit), url)
    return render_template(
        "console/why_fragment.html" if fragment else "console/why.html",
        env_id=env_id,
        node=chain,
        resource=resource,
        key=key,
        resources=_resources(env_id, version),
        provenance=shown,
        version=version,
        reveal=reveal,
        at_head=version is None,
    )


def _resources(env_id: int, version: str | None) -> list[str]:
    """The resources the components attached at `version` define."""
    return [definition["name"] for definition in attached_resources(env_id, version)]


def _message(env_id: int, commit: str | None) -> str:
    """The message of the commit that set a key (explain names the commit only)."""
    if not commit:
        return ""
    entries = app_store().versions.commits(env_id, limit=1, version=commit).data["entries"]
    return entries[0]["message"] if entries else ""
