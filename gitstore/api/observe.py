"""Request hooks for operations: the request id, the per-request log line and the metrics.

Registered before the access check, so even a refused request has an id, a line and a count.
- `X-Request-Id`: taken from the request when it matches `[A-Za-z0-9._-]{1,128}` (a proxy's or
  the client's id), else made here; returned in every answer and on every log line.
- One line per request on logger `gitstore.requests`: method, route (the rule's template,
  never the raw path), status, duration_ms, env, commit, user, request_id.
- `X-Gitstore-Client: cli` (sent by the gitstore CLI) makes the commits of the request count
  with `source="cli"` in `gitstore_commits_total`.
"""

from __future__ import annotations

import logging
import os
import re
import time

from flask import Flask, Response, g, request

from gitstore import logs, metrics
from gitstore.api import request_state

log = logging.getLogger("gitstore.requests")

REQUEST_ID = "X-Request-Id"
CLIENT = "X-Gitstore-Client"
#: The two headers as WSGI names them (read from the environ: a missing header's lookup
#: through `request.headers` raises and catches a KeyError).
_REQUEST_ID_KEY, _CLIENT_KEY = "HTTP_X_REQUEST_ID", "HTTP_X_GITSTORE_CLIENT"
_VALID_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
UNMATCHED = "<unmatched>"


def register(app: Flask) -> None:
    app.before_request(_start)
    app.after_request(_finish)


def _start() -> None:
    environ = request.environ
    g.started = time.perf_counter()
    g.request_id = request_id = new_request_id(environ.get(_REQUEST_ID_KEY, ""))
    logs.request_id.set(request_id)
    metrics.commit_source.set("cli" if environ.get(_CLIENT_KEY) == "cli" else "rest")


def _finish(response: Response) -> Response:
    # one proxy lookup each (Flask types `request` as the Request, not its LocalProxy)
    state, this = g._get_current_object(), request._get_current_object()  # type: ignore[attr-defined]
    request_id = state.get("request_id") or new_request_id("")
    response.headers[REQUEST_ID] = request_id
    seconds = time.perf_counter() - state.get("started", time.perf_counter())
    route = this.url_rule.rule if this.url_rule is not None else UNMATCHED
    env = (this.view_args or {}).get("env_id")
    user = state.get("user")
    commit = response.headers.get("X-Gitstore-Commit")
    answered(this.method, route, response.status_code, seconds, request_id, env, commit, user)
    state = request_state.of(this.environ)
    if state is not None:
        state.answered = (route, env, user)  # what the fast path (fastpath.py) repeats
    logs.request_id.set(None)
    return response


#: The request lines made so far, by (method, route, status, env, commit, user): a warm
#: lookup's line differs from the last one of its kind only by its id, time and duration.
_LINES: dict[tuple, logs.FieldsLine] = {}
_MAX_LINES = 4096


def _line(method: str, route: str, status: int, env, commit, user) -> logs.FieldsLine:
    key = (method, route, status, env, commit, user)
    line = _LINES.get(key)
    if line is None:
        if len(_LINES) >= _MAX_LINES:
            _LINES.clear()  # new commits make new lines; the current ones come back at once
        fields = _fields(method, route, status, None, None, env, commit, user)
        line = logs.FieldsLine(log, f"{method} {route} {status}", fields, _VARYING)
        _LINES[key] = line
    return line


def _fields(method, route, status, request_id, duration_ms, env, commit, user) -> dict:
    """The fields of a request's line, in the order every line has them."""
    return {
        "request_id": request_id,
        "method": method,
        "route": route,
        "status": status,
        "duration_ms": duration_ms,
        "env": env,
        "commit": commit,
        "user": user,
    }


_VARYING = ("request_id", "duration_ms")


def new_request_id(given: str) -> str:
    """The request's own id when it is a valid one (a proxy's or the client's), else a new one."""
    if given and _VALID_ID.match(given):
        return given
    return os.urandom(16).hex()  # random like uuid4's, at a fraction of its cost


def answered(
    method: str,
    route: str,
    status: int,
    seconds: float,
    request_id: str,
    env: int | None,
    commit: str | None,
    user: str | None,
) -> None:
    """The metrics and the log line of one answered request (also of the fast path's)."""
    metrics.request_answered(route, method, status, seconds)
    stream = logs.plain_json_stream(log)
    if stream is not None:
        line = _line(method, route, status, env, commit, user)
        line.write(stream, time.time(), (request_id, round(seconds * 1000, 3)))
        return
    log.info(
        "%s %s %s",
        method,
        route,
        status,
        extra={
            "fields": _fields(
                method, route, status, request_id, round(seconds * 1000, 3), env, commit, user
            )
        },
    )
