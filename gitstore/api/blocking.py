"""`?index=&wait=`: blocking queries on the reads that name a commit (docs/watch.md).

A view hands `blocking_read` a function reading its answer at a given version; without `index`
it is an ordinary read. With `index` and `wait` the request is held (a parked greenlet in
gunicorn's gevent worker, not a thread) until the answer differs from the one at `index` or
`wait` runs out. With `index` alone it is a read of one's own write: answered at once when
`main` holds `index` (on a cluster's replica, once it does: docs/ha.md). Every answer names
the head it was read at in `X-Gitstore-Index`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flask import Response, request

from gitstore.api.http import app_store, served, version_arg
from gitstore.errors import InvalidInput
from gitstore.served import Served

INDEX_HEADER = "X-Gitstore-Index"
#: The query parameters of a blocking query: left out of the ETag, which must not change
#: with the index a client happened to send.
PARAMETERS = ("index", "wait")
_DURATION = re.compile(r"^([0-9]{1,9})(ms|s|m|h)?$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
DEFAULT_WAIT_SECONDS = 300.0
MAX_WAIT_SECONDS = 600.0


def parse_wait(text: str | None) -> float:
    """Seconds of `wait` (`30s`, `5m`, `1500ms`, bare seconds); clamped to ten minutes."""
    if text is None:
        return DEFAULT_WAIT_SECONDS
    match = _DURATION.match(text.strip())
    if match is None:
        raise InvalidInput(
            f"query parameter 'wait' {text!r} is not a duration such as 30s, 5m or 1500ms",
            key="wait",
        )
    return min(int(match.group(1)) * _UNITS[match.group(2)], MAX_WAIT_SECONDS)


def _index() -> str | None:
    text = request.args.get("index")
    if text is not None and not text.strip():
        raise InvalidInput("query parameter 'index' is empty", key="index")
    return text.strip() if text is not None else None


def blocking_read(
    env_id: int,
    read: Callable[[str | None], Served],
    respond: Callable[[Any], Response] = served,  # takes what `read` answers
    *,
    head: str | None = None,
) -> Response:
    """Answer with `read(version)`, held as a blocking query when `index` or `wait` is given.

    `head`: main's head that `read` reads at, when the view has one for this request (the
    fast path's): a read at a version names it in `X-Gitstore-Index` without reading the ref
    again.
    """
    index, wait_text = _index(), request.args.get("wait")
    watch = app_store().watch
    if index is None and wait_text is None:
        version = version_arg()
        result = read(version)
        if version is None and result.commit:
            head = result.commit
        elif head is None:
            head = watch.heads.head(env_id)
    elif version_arg() is not None:
        raise InvalidInput("index and wait watch the head; they take no version", key="version")
    elif wait_text is None and index is not None:  # read one's own write: once main holds it
        watch.index_commit(env_id, index)
        result = read(None)
        head = result.commit or watch.heads.head(env_id)
    else:
        result, head = watch.hold(env_id, index, parse_wait(wait_text), read)
    response = respond(result)
    if head:
        response.headers[INDEX_HEADER] = head
    return response
