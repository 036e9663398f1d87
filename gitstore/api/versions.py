"""`/api/v1/config/environments/<id>/history|diff|revert|labels`: versions of an environment,
and `<a>/compare/<b>`: what differs between two environments.

Explain is a flag of the values read (`?effective&explain`), see `values.py`.
"""

from __future__ import annotations

from flask import Blueprint, request

from gitstore.api.deadlines import deadline
from gitstore.api.http import app_store, author, json_body, no_version, served, version_arg
from gitstore.api.offload import heavy_service
from gitstore.versions.compare import CompareQuery

bp = Blueprint("versions", __name__, url_prefix="/api/v1/config/environments")


def _versions():
    return app_store().versions


def _scope_arg() -> str | None:
    """The scope of a request: `path=nodes/1` or `levels=nodes=1` (both spellings work)."""
    return request.args.get("path") or request.args.get("levels")


@bp.get("/<int:env_id>/history")
def history(env_id: int):
    args = request.args
    return served(
        heavy_service("versions").history(
            env_id,
            path=_scope_arg(),
            resource=args.get("resource"),
            key=args.get("key"),
            limit=args.get("limit"),
            since=version_arg("since"),
            version=version_arg(),
            deadline=deadline(),
        )
    )


@bp.get("/<int:env_id>/diff")
def diff(env_id: int):
    scopes = request.args.getlist("levels") + request.args.getlist("path")
    return served(
        heavy_service("versions").diff(
            env_id,
            version_arg("from"),
            version_arg("to"),
            levels=scopes,
            resource=request.args.get("resource"),
            deadline=deadline(),
        )
    )


@bp.get("/<int:env_a>/compare/<int:env_b>")
def compare(env_a: int, env_b: int):
    no_version("a comparison reads two environments", "; give version_a= and version_b=")
    args = request.args
    query = CompareQuery(
        node=args.get("node"),
        resource=args.get("resource"),
        key=args.get("key"),
        version_a=version_arg("version_a"),
        version_b=version_arg("version_b"),
        offset=args.get("offset"),
        limit=args.get("limit"),
    )
    return served(app_store().comparisons.compare(env_a, env_b, query))


@bp.post("/<int:env_id>/revert")
def revert(env_id: int):
    result = _versions().revert(env_id, json_body(), author(), deadline=deadline())
    return served(result, status=201 if result.data["changed"] else 200)


@bp.get("/<int:env_id>/labels")
def list_labels(env_id: int):
    no_version("labels are names kept beside the history, not in a commit,")
    return served(_versions().labels(env_id))


@bp.post("/<int:env_id>/labels")
def create_label(env_id: int):
    return served(_versions().create_label(env_id, json_body(), author()), status=201)
