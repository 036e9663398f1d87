"""Failed-authentication limits shared by every worker process of a server.

More than `limit` failures from one address within `window` seconds block that address until
enough of them are older than the window. The failures live in one small JSON file under the
store root, read and written under `flock`, because gunicorn's workers share no memory: a
guesser spread over workers must meet the same count.

The common case costs one `stat`: a file untouched for a whole window holds no live failure.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

FAILURES_FILE = "access-failures.json"
LIMIT = 20
WINDOW_SECONDS = 60.0


class FailureLog:
    """Recent authentication failures per client address."""

    def __init__(
        self, root: str | os.PathLike, *, limit: int = LIMIT, window: float = WINDOW_SECONDS
    ) -> None:
        self.path = Path(root) / FAILURES_FILE
        self.limit = limit
        self.window = window

    def blocked_for(self, address: str) -> int:
        """Seconds until `address` may try again; 0 when it is not blocked."""
        now = time.time()
        try:
            if os.stat(self.path).st_mtime < now - self.window:
                return 0
        except FileNotFoundError:
            return 0
        with self._open(fcntl.LOCK_SH) as handle:
            recent = _recent(_load(handle).get(address, []), now, self.window)
        if len(recent) <= self.limit:
            return 0
        # unblocked once only `limit` failures remain inside the window
        return max(1, math.ceil(recent[-self.limit - 1] + self.window - now))

    def record(self, address: str) -> None:
        """Count one failed authentication from `address`."""
        now = time.time()
        with self._open(fcntl.LOCK_EX) as handle:
            data = {
                addr: kept
                for addr, times in _load(handle).items()
                if (kept := _recent(times, now, self.window))
            }
            # more than `limit + 1` entries never change the answer
            data[address] = [*data.get(address, []), now][-(self.limit + 1) :]
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(data).encode())
            handle.flush()

    @contextlib.contextmanager
    def _open(self, mode: int) -> Iterator:
        fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        with os.fdopen(fd, "r+b") as handle:
            fcntl.flock(handle, mode)
            yield handle


def _load(handle) -> dict[str, list[float]]:
    handle.seek(0)
    try:
        data = json.loads(handle.read() or b"{}")
    except ValueError:
        return {}  # a torn or foreign file: start counting afresh rather than fail every login
    return data if isinstance(data, dict) else {}


def _recent(times: list, now: float, window: float) -> list[float]:
    return sorted(t for t in times if isinstance(t, int | float) and t > now - window)
