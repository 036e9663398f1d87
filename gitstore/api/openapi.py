"""`GET /api/v1/openapi.json`: the OpenAPI document of this API, for generated clients and
Swagger UI.

The document is `docs/openapi.yaml` (`openapi.yaml` here is a link to it, packaged with the
code), read and encoded once per worker. Open like the probes: it describes routes, it holds
no data.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from flask import Blueprint, Response

from gitstore import yamlio

bp = Blueprint("openapi", __name__)

SPEC = Path(__file__).with_name("openapi.yaml")


@functools.cache
def _encoded() -> bytes:
    return json.dumps(yamlio.load(SPEC.read_bytes(), path=str(SPEC))).encode()


@bp.get("/api/v1/openapi.json")
def openapi_json():
    return Response(_encoded(), mimetype="application/json")
