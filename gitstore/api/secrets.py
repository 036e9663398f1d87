"""`/api/v1/config/environments/<id>/secrets/...`: server-side sealing and the rules in force.

`POST .../secrets/encrypt {path, document}` answers the document with its secret leaves sealed
for `path` of that environment (nothing is written; needs `writer`), so a GitOps user can seal
values without holding the keyring. `GET .../secrets/rules` lists which keys are secret.
"""

from __future__ import annotations

from flask import Blueprint

from gitstore.api.http import app_store, json_body, served, version_arg
from gitstore.bodies import Body

#: `POST .../secrets/encrypt`: the document to seal, and the file it is meant for.
ENCRYPT_BODY = Body("encrypt", ("path", "document"), required=("path", "document"))

bp = Blueprint("secrets", __name__, url_prefix="/api/v1/config/environments")


def _secrets():
    return app_store().secrets


@bp.post("/<int:env_id>/secrets/encrypt")
def encrypt(env_id: int):
    body = ENCRYPT_BODY.check(json_body())
    return served(_secrets().encrypt(env_id, body.get("path"), body.get("document")))


@bp.get("/<int:env_id>/secrets/rules")
def rules(env_id: int):
    return served(_secrets().rules(env_id, version_arg()))
