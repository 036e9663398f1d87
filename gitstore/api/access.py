"""`/api/v1/access/...`: who am I, and the admin's view of users and tokens.

Users and tokens are created on the server's host (`gitstore user`, `gitstore token`, which
work on the store root); over REST an admin can list them and revoke a token, e.g. right after
a leak. No answer ever holds a password, a hash, a token or a token digest. The roles each
route needs are decided in `gitstore.api.auth` with every other route's.
"""

from __future__ import annotations

from flask import Blueprint, g, jsonify, request

from gitstore.api.http import app_store, no_content

bp = Blueprint("access", __name__, url_prefix="/api/v1/access")


def _access():
    return app_store().access


@bp.get("/whoami")
def whoami():
    identity = g.identity
    if identity is None:
        return jsonify(user=None, roles=[], via=None, access_control=_access().exists())
    return jsonify(
        user=identity.name,
        roles=[str(grant) for grant in identity.grants],
        via=identity.via,
        access_control=True,
    )


@bp.get("/users")
def list_users():
    return jsonify(_access().users())


@bp.get("/tokens")
def list_tokens():
    return jsonify(_access().tokens(request.args.get("user")))


@bp.delete("/tokens/<token_id>")
def revoke_token(token_id: str):
    _access().revoke_token(token_id)
    return no_content()
