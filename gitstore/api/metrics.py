"""`GET /metrics`: the Prometheus text format, every gunicorn worker counted.

Under `gitstore serve` the workers share their counters through files in
`PROMETHEUS_MULTIPROC_DIR`, and every scrape sums them, whichever worker answers. Without that
directory (one process: tests, the development server) the process's own registry is served.
Open like `/healthz` unless the server was started with `--metrics-role`, which `auth.py`
enforces.
"""

from __future__ import annotations

from flask import Blueprint, Response

from gitstore import metrics

bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
def scrape():
    body, content_type = metrics.exposition()
    response = Response(body, content_type=content_type)
    response.headers["Cache-Control"] = "no-store"
    return response
