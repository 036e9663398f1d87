"""A cluster member's routes (docs/ha.md): writes that reach a replica are redirected to the
primary, never applied; `POST /cluster/v1/replicate` lets the primary hand a commit to this
node before etcd accepts it, `POST /cluster/v1/label` a new label before it is acknowledged;
`GET /cluster/v1/labels` gives the digests of this node's labels (a member gathering labels
fetches only where its own differ); `GET /cluster/v1/status` says what this node is. Only members
reach these routes: `auth.py` refuses a call without the cluster secret's signature (401).

On a single node (`store.cluster` is None) nothing here changes a request and the routes
answer 404.
"""

from __future__ import annotations

from flask import Blueprint, Flask, jsonify, redirect, request

from gitstore.api.errors import error_response
from gitstore.api.http import app_store, json_body, request_body
from gitstore.errors import InvalidInput, NotFound

bp = Blueprint("membership", __name__)

_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
RECEIVE_PACK = "git-receive-pack"


def register(app: Flask) -> None:
    app.before_request(_redirect_writes)


def is_write(method: str, path: str, services: list[str]) -> bool:
    """Whether a request may change the store: a write method, or any part of a git push
    (its advertisement is a GET); a fetch's POST and this blueprint's routes are not."""
    if path.startswith("/cluster/"):
        return False
    if path.startswith("/git/"):
        return RECEIVE_PACK in path.split("/") or RECEIVE_PACK in services
    return method in _WRITES


def _redirect_writes():
    member = app_store().cluster
    if member is None or not is_write(
        request.method, request.path, request.args.getlist("service")
    ):
        return None
    current = member.state()
    if current.is_primary():
        return None
    if not current.primary or current.primary == current.node or not current.primary_url:
        return error_response(
            503,
            f"node {current.node} is not the primary and no primary is known yet; retry",
            headers={"Retry-After": "1"},
        )
    query = request.query_string.decode("latin-1")
    target = current.primary_url + request.path + (f"?{query}" if query else "")
    return redirect(target, code=307)  # 307 keeps the method and the body


@bp.post("/cluster/v1/replicate")
def replicate():
    body = json_body()
    if not isinstance(body, dict):
        raise InvalidInput("the body must be an object: {repository, commit, source}")
    _member().receive(body.get("repository"), body.get("commit"), body.get("source"))
    return "", 204


@bp.post("/cluster/v1/objects")
def objects():
    args = request.args
    body = request_body(cache=False)
    _member().receive_objects(args.get("repository"), args.get("commit"), args.get("parent"), body)
    return "", 204


@bp.post("/cluster/v1/label")
def label():
    body = json_body()
    if not isinstance(body, dict):
        raise InvalidInput("the body must be an object: {repository, ref, tag, source}")
    _member().receive_label(
        body.get("repository"), body.get("ref"), body.get("tag"), body.get("source")
    )
    return "", 204


@bp.get("/cluster/v1/labels")
def labels():
    return jsonify({"repositories": _member().label_digests()})


@bp.get("/cluster/v1/status")
def status():
    return jsonify(_member().status())


def _member():
    member = app_store().cluster
    if member is None:
        raise NotFound("this node is not a cluster member (gitstore serve --cluster)")
    return member
