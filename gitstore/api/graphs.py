"""Deployment graphs, merged tasks, DOT, execution and transactions (docs/graphs.md).

`/api/v1/{releases|plugins|clusters}/<id>/deployment_graphs/[<type>]`, `/api/v1/graphs/`,
`/api/v1/clusters/<id>/deployment_tasks/[own|plugins|release]`,
`/api/v1/releases/<id>/deployment_tasks/`, `/api/v1/clusters/<id>/deploy_tasks/graph.gv`,
`/api/v1/clusters/<id>/deployment_graphs/<type>/check`, `/api/v1/graphs/execute/`,
`/api/v1/transactions/[<id>[/nodes/<node>]]`.

Reads take `version` (the environment repository) and `catalog_version` (the catalog; for a
release or plugin, `version` names the catalog when `catalog_version` is not given). Answers
name both commits: `X-Gitstore-Commit` and `X-Gitstore-Catalog-Commit`.
"""

from __future__ import annotations

import hashlib

from flask import Blueprint, Response, request

from gitstore.api.blocking import blocking_read
from gitstore.api.deadlines import deadline
from gitstore.api.http import (
    MOVING,
    ONE_ENVIRONMENT,
    app_store,
    author,
    flag,
    json_body,
    no_content,
    no_version,
    served,
    version_arg,
)
from gitstore.api.owners import each_owner
from gitstore.deployment.graphs import Answer
from gitstore.errors import InvalidInput
from gitstore.merge.graphs import DEFAULT_TYPE
from gitstore.names import is_commit_id, is_number

bp = Blueprint("graphs", __name__, url_prefix="/api/v1")

CATALOG_COMMIT = "X-Gitstore-Catalog-Commit"


def _versions() -> dict:
    return {"version": version_arg(), "catalog_version": version_arg("catalog_version")}


def _answer(result: Answer, status: int = 200, *, catalog_only: bool = False) -> Response:
    """`served` plus the catalog commit, cached for good only when both inputs are pinned."""
    response = served(result, status)
    return _provenance(response, result, catalog_only)


def _provenance(response: Response, result: Answer, catalog_only: bool) -> Response:
    if result.catalog_commit:
        response.headers[CATALOG_COMMIT] = result.catalog_commit
    args = request.args
    pins = (
        [args.get("catalog_version") or args.get("version")]
        if catalog_only
        else [args.get("version"), args.get("catalog_version")]
    )
    if "Cache-Control" in response.headers and not all(
        is_commit_id((pin or "").strip()) for pin in pins
    ):
        response.headers["Cache-Control"] = MOVING
    return response


def _names(name: str) -> list[str]:
    """A comma-separated (or repeated) query parameter as a list of names."""
    return [
        part.strip()
        for raw in request.args.getlist(name)
        for part in raw.split(",")
        if part.strip()
    ]


def _ids(name: str) -> list[int]:
    names = _names(name)
    bad = [n for n in names if not is_number(n)]
    if bad:
        raise InvalidInput(f"{name}: {bad[0]!r} is not an id", key=name)
    return [int(n) for n in names]


def _graph_type() -> str:
    return request.args.get("graph_type") or DEFAULT_TYPE


def _legacy() -> dict:
    return {
        "start": request.args.get("start") or None,
        "end": request.args.get("end") or None,
        "include": _names("include"),
    }


# -- one owner's graphs -------------------------------------------------------------------------
@each_owner(bp, "/deployment_graphs", ["GET"])
def list_graphs(owner: str, owner_id: int):
    result = app_store().graphs.list(owner, owner_id, **_versions())
    return _answer(result, catalog_only=owner != "cluster")


@each_owner(bp, "/deployment_graphs/<graph_type>", ["GET"])
def get_graph(owner: str, owner_id: int, graph_type: str):
    result = app_store().graphs.get(owner, owner_id, graph_type, **_versions())
    return _answer(result, catalog_only=owner != "cluster")


@each_owner(bp, "/deployment_graphs/<graph_type>", ["POST"])
def create_graph(owner: str, owner_id: int, graph_type: str):
    result = app_store().graphs.create(owner, owner_id, graph_type, json_body(), author())
    return _answer(result, 201)


@each_owner(bp, "/deployment_graphs/<graph_type>", ["PUT"])
def replace_graph(owner: str, owner_id: int, graph_type: str):
    result = app_store().graphs.replace(owner, owner_id, graph_type, json_body(), author())
    return _answer(result)


@each_owner(bp, "/deployment_graphs/<graph_type>", ["PATCH"])
def patch_graph(owner: str, owner_id: int, graph_type: str):
    result = app_store().graphs.patch(owner, owner_id, graph_type, json_body(), author())
    return _answer(result)


@each_owner(bp, "/deployment_graphs/<graph_type>", ["DELETE"])
def delete_graph(owner: str, owner_id: int, graph_type: str):
    app_store().graphs.delete(owner, owner_id, graph_type, author())
    return no_content()


@bp.get("/graphs")
def search_graphs():
    result = app_store().graphs.search(
        clusters=_ids("clusters_ids"),
        plugins=_ids("plugins_ids"),
        releases=_ids("releases_ids"),
        types=_names("graph_types"),
        related=flag("fetch_related"),
        **_versions(),
    )
    return _answer(result)


# -- a cluster's tasks ---------------------------------------------------------------------------
@bp.get("/clusters/<int:env_id>/deployment_tasks")
def merged_tasks(env_id: int):
    graphs, graph_type, legacy = app_store().graphs, _graph_type(), _legacy()
    catalog_version = version_arg("catalog_version")

    def read_at(version: str | None) -> Answer:
        return graphs.tasks(
            env_id, graph_type, version=version, catalog_version=catalog_version, **legacy
        )

    return blocking_read(env_id, read_at, _answer)


@bp.get("/clusters/<int:env_id>/deployment_tasks/<any(own, plugins, release):view>")
def tasks_view(env_id: int, view: str):
    result = app_store().graphs.tasks(env_id, _graph_type(), view, **_versions(), **_legacy())
    return _answer(result)


@bp.put("/clusters/<int:env_id>/deployment_tasks")
def put_cluster_tasks(env_id: int):
    result = app_store().graphs.put_cluster_tasks(env_id, _graph_type(), json_body(), author())
    return _answer(result)


@bp.get("/releases/<int:release_id>/deployment_tasks")
def release_tasks(release_id: int):
    result = app_store().graphs.release_tasks(
        release_id,
        _graph_type(),
        version=version_arg("catalog_version") or version_arg(),
        **_legacy(),
    )
    return _answer(result, catalog_only=True)


@bp.get("/clusters/<int:env_id>/deploy_tasks/graph.gv")
def graph_dot(env_id: int):
    result = app_store().graphs.dot(
        env_id,
        _graph_type(),
        only=_names("tasks"),
        parents_for=request.args.get("parents_for") or None,
        remove=_names("remove"),
        **_versions(),
    )
    body = result.data.encode("utf-8")
    response = Response(body, mimetype="text/vnd.graphviz")
    response.headers["X-Gitstore-Commit"] = result.commit or ""
    response.set_etag(hashlib.sha256(repr((request.full_path, body)).encode()).hexdigest()[:32])
    response.headers["Cache-Control"] = MOVING
    _provenance(response, result, catalog_only=False)
    return response.make_conditional(request)


@bp.get("/clusters/<int:env_id>/deployment_graphs/<graph_type>/check")
def check_graph(env_id: int, graph_type: str):
    return _answer(app_store().graphs.check(env_id, graph_type, **_versions()))


# -- execution -------------------------------------------------------------------------------------
@bp.post("/graphs/execute")
def execute():
    result = app_store().transactions.execute(json_body(), author(), deadline=deadline())
    response = served(result, status=202)
    response.headers[CATALOG_COMMIT] = result.data["source"]["catalog_commit"]
    return response


@bp.get("/transactions")
def list_transactions():
    no_version("the transaction list spans repositories", ONE_ENVIRONMENT)
    cluster = request.args.get("cluster_id")
    if cluster is not None and not is_number(cluster):
        raise InvalidInput(f"cluster_id {cluster!r} must be an integer", key="cluster_id")
    return served(app_store().transactions.list(int(cluster) if cluster else None))


@bp.get("/transactions/<int:transaction_id>")
def get_transaction(transaction_id: int):
    return served(app_store().transactions.get(transaction_id))


@bp.get("/transactions/<int:transaction_id>/nodes/<node>")
def get_transaction_node(transaction_id: int, node: str):
    return served(app_store().transactions.node(transaction_id, node))
