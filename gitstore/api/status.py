"""`GET /api/v1/status`: per repository, the served commit, its damage and its mirror's state.

`?verify=1` reads every object of every served tree to find damage (costs a full read).
"""

from __future__ import annotations

from flask import Blueprint, jsonify

from gitstore.api.http import app_store, flag, no_version

bp = Blueprint("status", __name__, url_prefix="/api/v1")


@bp.get("/status")
def status():
    no_version("the status is the server's state now")
    return jsonify(app_store().gitops.status(verify=flag("verify")))
