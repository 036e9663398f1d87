"""Heat templates, roles and deployment plans under `/api/v1`.

`/templates`, `/roles` (named, versioned Heat templates), `/plans` (compose roles into a master
template and an environment), `/plans/<uuid>/templates` (the export Heat needs). Every GET takes
`version=` on the catalog repository; `?reveal=1` (which needs the `secrets` role, see
`gitstore.api.auth`) shows hidden parameter values.
"""

from __future__ import annotations

from flask import Blueprint, g

from gitstore.api.http import app_store, author, flag, json_body, served, version_arg, written

bp = Blueprint("plans", __name__, url_prefix="/api/v1")


def _plans():
    return app_store().plans


# -- templates and roles ------------------------------------------------------------------------
def _family_routes(family: str) -> None:
    """GET|POST /<family>, GET|PUT /<family>/<uuid> for one versioned store."""

    def list_versions():
        return served(_plans().list_versions(family, flag("only_latest"), version_arg()))

    def create_version():
        return served(_plans().create_version(family, json_body(), author()), status=201)

    def get_version(uuid: str):
        return served(_plans().get_version(family, uuid, version_arg()))

    def update_version(uuid: str):
        result, created = _plans().update_version(family, uuid, json_body(), author())
        return served(result, status=201 if created else 200)

    bp.add_url_rule(f"/{family}", f"list_{family}", list_versions, methods=["GET"])
    bp.add_url_rule(f"/{family}", f"create_{family}", create_version, methods=["POST"])
    bp.add_url_rule(f"/{family}/<uuid>", f"get_{family}", get_version, methods=["GET"])
    bp.add_url_rule(f"/{family}/<uuid>", f"update_{family}", update_version, methods=["PUT"])


for _family in ("templates", "roles"):
    _family_routes(_family)


# -- plans ----------------------------------------------------------------------------------------
@bp.get("/plans")
def list_plans():
    return served(_plans().list_plans(version_arg(), flag("reveal"), g.get("user")))


@bp.post("/plans")
def create_plan():
    return served(_plans().create_plan(json_body(), author()), status=201)


@bp.get("/plans/<uuid>")
def get_plan(uuid: str):
    return served(_plans().get_plan(uuid, version_arg(), flag("reveal"), g.get("user")))


@bp.patch("/plans/<uuid>")
def set_values(uuid: str):
    return served(_plans().set_values(uuid, json_body(), author()))


@bp.delete("/plans/<uuid>")
def delete_plan(uuid: str):
    return written(_plans().delete_plan(uuid, author()))


@bp.post("/plans/<uuid>/roles")
def add_role(uuid: str):
    return served(_plans().add_role(uuid, json_body(), author()), status=201)


@bp.delete("/plans/<uuid>/roles/<role_uuid>")
def remove_role(uuid: str, role_uuid: str):
    return served(_plans().remove_role(uuid, role_uuid, author()))


@bp.get("/plans/<uuid>/templates")
def export(uuid: str):
    return served(_plans().export(uuid, version_arg(), flag("reveal"), g.get("user")))
