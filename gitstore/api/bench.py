"""Bench-only additions: a fixed body of N bytes (the baseline of `bench/lookup.py`) and the
worker's pid on every response (`bench/push.py` checks that each worker sees a push).

Registered only when `GITSTORE_BENCH_BASELINE=1` (config or environment): the baseline measures
what the server itself costs per request (gunicorn, Flask, the access check) with the same
settings as a real lookup, so that a lookup's rate can be stated as a ratio to it on a noisy
machine.
"""

from __future__ import annotations

import os
from typing import Any

from flask import Blueprint, Response

ENABLE = "GITSTORE_BENCH_BASELINE"
WORKER_HEADER = "X-Gitstore-Worker"
#: Bodies that the baseline must never build twice: they are "cached bytes", like a warm lookup.
MAX_SIZE = 4 * 1024 * 1024

bp = Blueprint("bench", __name__, url_prefix="/bench")
_BODIES: dict[int, bytes] = {}


def enabled(setting: Any) -> bool:
    """Whether the config value or environment variable switches the endpoint on."""
    return str(setting).strip().lower() in ("1", "true", "yes")


@bp.get("/baseline/<int:size>")
def baseline(size: int) -> Response:
    body = _BODIES.get(size)
    if body is None:
        body = _body(min(size, MAX_SIZE))
        if len(_BODIES) < 64:
            _BODIES[size] = body
    return Response(body, mimetype="application/json")


@bp.after_app_request
def _name_worker(response: Response) -> Response:
    response.headers[WORKER_HEADER] = str(os.getpid())
    return response


def _body(size: int) -> bytes:
    """A JSON string of exactly `size` bytes (two bytes are its quotes)."""
    if size < 2:
        return b"0"[:size]
    return b'"' + b"x" * (size - 2) + b'"'
