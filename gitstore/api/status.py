"""`GET /api/v1/status`: per repository, the served commit and the state of its mirror."""

from __future__ import annotations

from flask import Blueprint, jsonify

from gitstore.api.http import app_store

bp = Blueprint("status", __name__, url_prefix="/api/v1")


@bp.get("/status")
def status():
    return jsonify(app_store().gitops.status())
