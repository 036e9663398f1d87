"""The limit of the server stack: a bare WSGI app returning cached bytes.

No Flask, no routing, no headers beyond gunicorn's own: what gunicorn itself costs to answer a
body of `BARE_WSGI_SIZE` bytes (a JSON string of that many bytes, built once per worker;
`bench/limit.py`). With `BARE_WSGI_BODY` (a file) and `BARE_WSGI_ETAG` it answers that file's
bytes with that ETag, and a 304 to a request whose `If-None-Match` names it: the floor of any
HTTP Hiera backend (`bench/hiera.py --floor`). Run as `gunicorn bare_wsgi:app` with `bench/`
on the Python path.
"""

from __future__ import annotations

import os

SIZE = int(os.environ.get("BARE_WSGI_SIZE", "10000"))
BODY_FILE = os.environ.get("BARE_WSGI_BODY")
ETAG = os.environ.get("BARE_WSGI_ETAG")
if BODY_FILE:
    with open(BODY_FILE, "rb") as file:
        BODY = file.read()
else:
    BODY = b'"' + b"x" * max(SIZE - 2, 0) + b'"'
HEADERS = [("Content-Type", "application/json"), ("Content-Length", str(len(BODY)))]
if ETAG:
    HEADERS.append(("ETag", ETAG))
NOT_MODIFIED = [("ETag", ETAG)]


def app(environ, start_response):
    if ETAG and environ.get("HTTP_IF_NONE_MATCH") == ETAG:
        start_response("304 Not Modified", NOT_MODIFIED)
        return [b""]
    start_response("200 OK", HEADERS)
    return [BODY]
