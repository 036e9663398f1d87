"""`/api/v1/releases`, `/api/v1/plugins`, `/api/v1/clusters` (an alias view of environments)
and the node inventory: `/api/v1/clusters/<id>/nodes/`, `/api/v1/nodes`."""

from __future__ import annotations

from flask import Blueprint, request

from gitstore.api.blocking import blocking_read
from gitstore.api.http import (
    ONE_ENVIRONMENT,
    app_store,
    author,
    json_body,
    no_content,
    no_version,
    served,
    version_arg,
    written,
)
from gitstore.api.paging import node_page
from gitstore.errors import InvalidInput
from gitstore.names import is_number
from gitstore.nodequery import NodeQuery

bp = Blueprint("clusters", __name__, url_prefix="/api/v1")

#: URL segment -> the store's service of that owner kind.
_OWNERS = {"releases": "releases", "plugins": "plugins"}


def _each_owner(rule: str, methods: list[str]):
    """Register a view for `/releases<rule>` and `/plugins<rule>` (literal paths, one per
    kind, so the OpenAPI document can name each); the view gets `owners` as an argument."""

    def register(view):
        for owners in _OWNERS:
            bp.add_url_rule(
                f"/{owners}{rule}",
                f"{view.__name__}_{owners}",
                view,
                methods=methods,
                defaults={"owners": owners},
            )
        return view

    return register


def _owners(owners: str):
    return getattr(app_store(), _OWNERS[owners])


# -- releases and plugins -------------------------------------------------------------------------
@_each_owner("", ["GET"])
def list_owners(owners: str):
    return served(_owners(owners).list(version_arg()))


@_each_owner("", ["POST"])
def create_owner(owners: str):
    return served(_owners(owners).create(json_body(), author()), status=201)


@_each_owner("/<int:owner_id>", ["GET"])
def get_owner(owners: str, owner_id: int):
    return served(_owners(owners).get(owner_id, version_arg()))


@_each_owner("/<int:owner_id>", ["PUT", "PATCH"])
def update_owner(owners: str, owner_id: int):
    return served(_owners(owners).update(owner_id, json_body(), author()))


@_each_owner("/<int:owner_id>", ["DELETE"])
def delete_owner(owners: str, owner_id: int):
    _owners(owners).delete(owner_id, author())
    return no_content()


# -- clusters: the environments under their Fuel name ----------------------------------------------
@bp.get("/clusters")
def list_clusters():
    no_version("the cluster list spans repositories", ONE_ENVIRONMENT)
    return served(app_store().environments.list())


@bp.get("/clusters/<int:env_id>")
def get_cluster(env_id: int):
    return served(app_store().environments.get(env_id, version_arg()))


# -- nodes ------------------------------------------------------------------------------------
@bp.get("/clusters/<int:env_id>/nodes")
def list_nodes(env_id: int):
    query, nodes = NodeQuery.parse(request.args), app_store().nodes
    return node_page(query, nodes.list(env_id, version_arg(), version_arg("catalog_version")))


@bp.post("/clusters/<int:env_id>/nodes")
def create_node(env_id: int):
    return served(app_store().nodes.create(env_id, json_body(), author()), status=201)


@bp.get("/clusters/<int:env_id>/nodes/<node>")
def get_node(env_id: int, node: str):
    nodes, catalog_version = app_store().nodes, version_arg("catalog_version")
    return blocking_read(env_id, lambda version: nodes.get(env_id, node, version, catalog_version))


@bp.route("/clusters/<int:env_id>/nodes/<node>", methods=["PUT", "PATCH"])
def update_node(env_id: int, node: str):
    return served(app_store().nodes.update(env_id, node, json_body(), author()))


@bp.delete("/clusters/<int:env_id>/nodes/<node>")
def delete_node(env_id: int, node: str):
    return written(app_store().nodes.delete(env_id, node, author()))


@bp.get("/nodes")
def find_nodes():
    no_version("a node search spans repositories", ONE_ENVIRONMENT)
    cluster = request.args.get("cluster_id")
    if cluster is not None and not is_number(cluster):
        raise InvalidInput(f"cluster_id {cluster!r} must be an integer", key="cluster_id")
    fqdn, query = request.args.get("fqdn"), NodeQuery.parse(request.args)
    return node_page(query, app_store().nodes.find(fqdn, int(cluster) if cluster else None))
