"""gunicorn's own answers, in gitstore's one JSON error shape.

A request gunicorn cannot parse (a request line or headers over its limits, a malformed
header or chunk) never reaches the app: gunicorn answers it with an HTML page of its own
(`gunicorn.util.write_error`), the one error of the API that was not `{"status", "message"}`.
A serving worker puts `write_error` here in its place (`install`, from `workers.py`):
the same status line and `Connection: close`, with a JSON body.
"""

from __future__ import annotations

import json
from typing import Any

from gunicorn import util


def write_error(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """What gunicorn's `util.write_error` sends, with the message as the JSON error shape."""
    message = f"{reason}: {mesg}" if mesg else reason
    body = json.dumps({"status": status_int, "message": message}, separators=(",", ":"))
    head = (
        f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body.encode())}\r\n\r\n"
    )
    util.write_nonblock(sock, head.encode("latin-1") + body.encode())


def install() -> None:
    """Make this process's gunicorn answer its own errors with `write_error` (its workers
    look the function up on `gunicorn.util` at each error)."""
    util.write_error = write_error
