"""The limit of the server stack: a bare WSGI app returning cached bytes (`bench/limit.py`).

No Flask, no routing, no headers beyond gunicorn's own: what gunicorn itself costs to answer a
body of `BARE_WSGI_SIZE` bytes (a JSON string of that many bytes, built once per worker). Run as
`gunicorn bare_wsgi:app` with `bench/` on the Python path.
"""

from __future__ import annotations

import os

SIZE = int(os.environ.get("BARE_WSGI_SIZE", "10000"))
BODY = b'"' + b"x" * max(SIZE - 2, 0) + b'"'
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]


def app(environ, start_response):
    start_response("200 OK", HEADERS)
    return [BODY]
