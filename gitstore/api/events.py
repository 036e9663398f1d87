"""`GET /api/v1/events?env=ID[&since=<commit>]`: an environment's commits as Server-Sent Events.

One `event: commit` per commit of `main`, oldest first, `id:` the commit id, so a client that
reconnects with `Last-Event-ID` (or `since`) is replayed what it missed from git history. The
stream is a generator parked between commits (a greenlet under the gevent worker), woken by the
ref watcher of gitstore/watch/heads.py.
"""

from __future__ import annotations

import json

from flask import Blueprint, Response, request, stream_with_context

from gitstore.api.http import app_store
from gitstore.errors import InvalidInput
from gitstore.names import is_number

bp = Blueprint("events", __name__, url_prefix="/api/v1")
#: A comment line this often keeps proxies from closing an idle stream.
KEEPALIVE_SECONDS = 15.0


def _env_arg() -> int:
    text = request.args.get("env")
    if text is None or not is_number(text.strip()):
        raise InvalidInput("query parameter 'env' must be an environment id", key="env")
    return int(text.strip())


def _since_arg() -> str | None:
    if "since" in request.args and not request.args["since"].strip():
        raise InvalidInput("query parameter 'since' is empty", key="since")
    since = request.args.get("since") or request.headers.get("Last-Event-ID")
    return since.strip() if since and since.strip() else None


@bp.get("/events")
def events():
    env_id, since = _env_arg(), _since_arg()
    watch = app_store().watch
    watch.commits_after(
        env_id, since
    )  # an unknown environment or `since`: 404/400 now, not mid-stream
    stream = watch.stream(env_id, since, KEEPALIVE_SECONDS)

    def lines():
        yield f": stream of environment {env_id}\n\n"
        for event in stream:
            if event is None:
                yield ": keepalive\n\n"
                continue
            data = json.dumps(event, sort_keys=False)
            yield f"event: commit\nid: {event['commit']}\ndata: {data}\n\n"

    response = Response(stream_with_context(lines()), mimetype="text/event-stream")
    response.call_on_close(stream.close)  # its slot, also when the stream never started
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Accel-Buffering"] = "no"
    return response
