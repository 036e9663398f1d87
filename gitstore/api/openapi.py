"""`GET /api/v1/openapi.json`: the OpenAPI document of this API, for generated clients and
Swagger UI.

The document is `docs/openapi.yaml` (`openapi.yaml` here is a link to it, packaged with the
code), read and encoded once per app (kept in its `extensions`). Open like the probes: it
describes routes, it holds no data.
"""

from __future__ import annotations

import json
from pathlib import Path

from flask import Blueprint, Response, current_app

from gitstore import yamlio

bp = Blueprint("openapi", __name__)

SPEC = Path(__file__).with_name("openapi.yaml")


_ENCODED = "gitstore.openapi"


def _encoded() -> bytes:
    found = current_app.extensions.get(_ENCODED)
    if found is None:
        found = json.dumps(yamlio.load(SPEC.read_bytes(), path=str(SPEC))).encode()
        current_app.extensions[_ENCODED] = found
    return found


@bp.get("/api/v1/openapi.json")
def openapi_json():
    return Response(_encoded(), mimetype="application/json")
