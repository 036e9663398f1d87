"""`GET /api/v1/status`: per repository, the served commit and the state of its mirror."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify

bp = Blueprint("status", __name__, url_prefix="/api/v1")


@bp.get("/status")
def status():
    return jsonify(current_app.extensions["gitstore"].gitops.status())
