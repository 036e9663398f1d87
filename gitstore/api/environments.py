"""`/api/v1/config/environments`, their hierarchy levels and the nodes each knows."""

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
)
from gitstore.api.paging import node_page
from gitstore.errors import InvalidInput
from gitstore.nodequery import NodeQuery

bp = Blueprint("environments", __name__, url_prefix="/api/v1/config/environments")


@bp.get("")
def list_environments():
    no_version("the environment list spans repositories", ONE_ENVIRONMENT)
    return served(app_store().environments.list())


@bp.post("")
def create_environment():
    return served(app_store().environments.create(json_body(), author()), status=201)


@bp.get("/<int:env_id>")
def get_environment(env_id: int):
    environments = app_store().environments
    return blocking_read(env_id, lambda version: environments.get(env_id, version))


@bp.route("/<int:env_id>", methods=["PUT", "PATCH"])
def update_environment(env_id: int):
    return served(app_store().environments.update(env_id, json_body(), author()))


@bp.delete("/<int:env_id>")
def delete_environment(env_id: int):
    app_store().environments.delete(env_id)
    return no_content()


@bp.get("/<int:env_id>/nodes")
def list_nodes(env_id: int):
    """Every node the environment knows, inventory records and facts-only nodes alike."""
    query = NodeQuery.parse(request.args)
    if query.tag is not None:
        raise InvalidInput(
            "tag filters the inventory's node list (/api/v1/clusters/<id>/nodes); this list "
            "has fqdn, roles and status only",
            key="tag",
        )
    return node_page(query, app_store().roster.rows(env_id, version_arg()))


@bp.get("/<int:env_id>/hierarchy_levels")
def list_levels(env_id: int):
    return served(app_store().environments.levels(env_id, version_arg()))


@bp.get("/<int:env_id>/hierarchy_levels/<name>")
def get_level(env_id: int, name: str):
    return served(app_store().environments.level(env_id, name, version_arg()))


@bp.put("/<int:env_id>/hierarchy_levels/<name>")
def rename_level(env_id: int, name: str):
    return served(app_store().environments.rename_level(env_id, name, json_body(), author()))
