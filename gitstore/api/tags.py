"""Tags of releases, plugins and clusters; per-node assignment; resolution and checks.

`/api/v1/{releases|plugins|clusters}/<id>/tags/[<name>]`,
`/api/v1/clusters/<id>/nodes/<node>/tags`, `/api/v1/clusters/<id>/roles`,
`/api/v1/clusters/<id>/resolved_tasks`, `/tags_check` and `/instances/<name>`.
"""

from __future__ import annotations

from flask import Blueprint, request

from gitstore.api.http import app_store, author, flag, json_body, served, version_arg, written
from gitstore.api.owners import each_owner

bp = Blueprint("tags", __name__, url_prefix="/api/v1")


def _tags():
    return app_store().tags


@each_owner(bp, "/tags", ["GET"])
def list_tags(owner: str, owner_id: int):
    return served(_tags().list(owner, owner_id, version_arg()))


@each_owner(bp, "/tags", ["POST"])
def create_tag(owner: str, owner_id: int):
    return served(_tags().create(owner, owner_id, json_body(), author()), status=201)


@each_owner(bp, "/tags/<name>", ["GET"])
def get_tag(owner: str, owner_id: int, name: str):
    return served(_tags().get(owner, owner_id, name, version_arg()))


@each_owner(bp, "/tags/<name>", ["PUT"])
def update_tag(owner: str, owner_id: int, name: str):
    return served(_tags().update(owner, owner_id, name, json_body(), author()))


@each_owner(bp, "/tags/<name>", ["DELETE"])
def delete_tag(owner: str, owner_id: int, name: str):
    return written(_tags().delete(owner, owner_id, name, author()))


# -- one cluster ------------------------------------------------------------------------------
@bp.post("/clusters/<int:env_id>/nodes/<node>/tags")
def assign_tags(env_id: int, node: str):
    return served(_tags().assign(env_id, node, json_body(), author()))


@bp.delete("/clusters/<int:env_id>/nodes/<node>/tags")
def unassign_tags(env_id: int, node: str):
    """Tags come in the JSON body `{"tags": [...]}` or as `?tags=a,b`."""
    given = request.args.get("tags")
    tags = given if given is not None else json_body()
    return written(_tags().unassign(env_id, node, tags, author()))


@bp.get("/clusters/<int:env_id>/roles")
def list_roles(env_id: int):
    return served(_tags().roles(env_id, version_arg()))


@bp.put("/clusters/<int:env_id>/roles")
def put_roles(env_id: int):
    return served(_tags().put_roles(env_id, json_body(), author()))


@bp.get("/clusters/<int:env_id>/resolved_tasks")
def resolved_tasks(env_id: int):
    graph_type = request.args.get("graph_type", "default")
    node = request.args.get("node")
    return served(_tags().resolved_tasks(env_id, graph_type, node, flag("all"), version_arg()))


@bp.get("/clusters/<int:env_id>/tags_check")
def tags_check(env_id: int):
    return served(_tags().check(env_id, version_arg()))


@bp.get("/clusters/<int:env_id>/instances/<name>")
def instances(env_id: int, name: str):
    return served(_tags().instances(env_id, name, version_arg()))
