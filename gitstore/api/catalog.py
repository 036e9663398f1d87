"""`/api/v1/config/components` and `/api/v1/config/resource_definitions`."""

from __future__ import annotations

from flask import Blueprint, request

from gitstore.api.http import app_store, author, json_body, served, version_arg, written
from gitstore.errors import NotFound
from gitstore.keypaths import KEY_OPS

bp = Blueprint("catalog", __name__, url_prefix="/api/v1/config")


@bp.get("/components")
def list_components():
    return served(app_store().components.list(version_arg()))


@bp.post("/components")
def create_component():
    return served(app_store().components.create(json_body(), author()), status=201)


@bp.get("/components/<int:component_id>")
def get_component(component_id: int):
    return served(app_store().components.get(component_id, version_arg()))


@bp.route("/components/<int:component_id>", methods=["PUT", "PATCH"])
def update_component(component_id: int):
    return served(app_store().components.update(component_id, json_body(), author()))


@bp.delete("/components/<int:component_id>")
def delete_component(component_id: int):
    return written(app_store().components.delete(component_id, author()))


@bp.get("/resource_definitions")
def list_definitions():
    component_id = request.args.get("component_id")
    return served(app_store().definitions.list(component_id, version_arg()))


@bp.post("/resource_definitions")
def create_definition():
    return served(app_store().definitions.create(json_body(), author()), status=201)


@bp.get("/resource_definitions/<int:definition_id>")
def get_definition(definition_id: int):
    return served(app_store().definitions.get(definition_id, version_arg()))


@bp.route("/resource_definitions/<int:definition_id>", methods=["PUT", "PATCH"])
def update_definition(definition_id: int):
    return served(app_store().definitions.update(definition_id, json_body(), author()))


@bp.delete("/resource_definitions/<int:definition_id>")
def delete_definition(definition_id: int):
    return written(app_store().definitions.delete(definition_id, author()))


@bp.route("/resource_definitions/<int:definition_id>/keys/<op>", methods=["PUT", "PATCH"])
def definition_keys(definition_id: int, op: str):
    if op not in KEY_OPS:
        raise NotFound(f"unknown key operation {op!r}; use set or delete")
    return written(app_store().definitions.update_keys(definition_id, op, json_body(), author()))
