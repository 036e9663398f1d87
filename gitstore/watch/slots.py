"""The slots of the requests a process holds waiting (blocking queries, event streams).

A waiting request keeps its connection, and gunicorn's gevent worker accepts a bounded number
of them (1,000): once every one was a parked watcher, the worker accepted nothing else and every
other request hung. Here a waiter takes a slot first and is refused (`Busy`, 503 with
Retry-After) when the limit `waiting_requests` is reached (docs/watch.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from gitstore.errors import Busy

#: What a refused waiter is told to wait before asking again, in seconds.
RETRY_AFTER = 5


class Slots:
    """A count of held slots, bounded by `limit()` (read at each take: limits.yaml)."""

    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        return self._held

    def take(self) -> Slot:
        """A slot, released by `Slot.release`; Busy when all are held."""
        limit = self._limit()
        with self._lock:
            if self._held >= limit:
                raise Busy(
                    f"this server process already holds {limit} waiting requests (blocking "
                    "queries and event streams, the limit waiting_requests); retry later",
                    retry_after=RETRY_AFTER,
                )
            self._held += 1
        return Slot(self)

    def _release(self) -> None:
        with self._lock:
            self._held -= 1


class Slot:
    """One held slot; releasing it twice releases it once (a stream ends, then is closed)."""

    def __init__(self, slots: Slots) -> None:
        self._slots: Slots | None = slots

    def release(self) -> None:
        slots, self._slots = self._slots, None
        if slots is not None:
            slots._release()

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
