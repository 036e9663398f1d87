"""`GET /healthz` (the process answers) and `GET /readyz` (the store can serve).

Neither needs credentials (probes of a load balancer or an orchestrator have none), and
neither may be cached. The checks themselves are `gitstore.ops.health`.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from gitstore.api.http import app_store
from gitstore.errors import InvalidInput
from gitstore.ops.health import DEFAULT_MIN_FREE_DISK, Readiness

bp = Blueprint("health", __name__)
MIN_FREE_DISK = "GITSTORE_MIN_FREE_DISK"
_CHECKER = "gitstore.readiness"
ROLES = ("primary", "replica")


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
    role = request.args.get("role")
    if role is not None:
        report = _with_role(report, role)
    return _no_store(jsonify(report), 200 if report["ready"] else 503)


def _with_role(report: dict, role: str) -> dict:
    """`?role=primary|replica` (a load balancer's check): ready only in that role. A single
    node is its own primary; a cluster member's role and lag come from its coordinator."""
    if role not in ROLES:
        raise InvalidInput(f"query parameter 'role' must be one of {', '.join(ROLES)}", key="role")
    member = app_store().cluster
    found = member.status() if member else {"role": "primary"}
    check = {"name": "role", "ok": found["role"] == role}
    if not check["ok"]:
        check["message"] = f"this node is {found['role']}, not {role}"
    elif member and role == "primary":  # from etcd, now: never the coordinator's word alone
        refused = member.leads()
        check = {"name": "role", "ok": refused is None}
        if refused:
            check["message"] = refused
    ready = report["ready"] and check["ok"]
    return {**report, "ready": ready, "checks": [*report["checks"], check], "cluster": found}


def _no_store(response, status: int):
    response.status_code = status
    response.headers["Cache-Control"] = "no-store"
    return response
