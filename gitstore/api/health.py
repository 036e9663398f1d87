"""`GET /healthz` (the process answers) and `GET /readyz` (the store can serve).

Neither needs credentials (probes of a load balancer or an orchestrator have none), and
neither may be cached. The checks themselves are `gitstore.ops.health`.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify

from gitstore import DEFAULT_MIN_FREE_DISK, Readiness
from gitstore.api.http import app_store

bp = Blueprint("health", __name__)
MIN_FREE_DISK = "GITSTORE_MIN_FREE_DISK"
_CHECKER = "gitstore.readiness"


@bp.get("/healthz")
def healthz():
    return _no_store(jsonify({"status": "ok"}), 200)


@bp.get("/readyz")
def readyz():
    checker = current_app.extensions.get(_CHECKER)
    if checker is None:
        root = app_store().root
        minimum = int(current_app.config.get(MIN_FREE_DISK) or DEFAULT_MIN_FREE_DISK)
        checker = current_app.extensions[_CHECKER] = Readiness(root, minimum)
    report = checker.report()
    return _no_store(jsonify(report), 200 if report["ready"] else 503)


def _no_store(response, status: int):
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response
