"""A request's deadline, and the checkpoint the steps of a long operation call.

A server worker (gunicorn's gevent worker) runs one green thread at a time: a walk down 20,000
commits that never yields holds every other request of its worker until it ends, lookups
included, and past gunicorn's timeout the worker is killed with no answer sent. So a long loop
(history, explain, diff, a console page, a graph run) calls `Deadline.check()` between its
steps. It yields to the worker's other requests once `SLICE` has passed since its last yield,
and once the deadline has passed it raises `DeadlineExceeded` (a 503 naming the limit to
raise). The object travels in the signatures of the operations that check it; `UNBOUNDED` (the
CLI's, a local store's, a background thread's) never expires.

A write checks its deadline only before its commit (`Repository.update`): cut, it has written
nothing; past that point it completes, and its answer names its commit as usual.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable

from gitstore.errors import DeadlineExceeded

#: Seconds a checkpoint lets pass before it yields to the worker's other requests: a lookup
#: that arrives during a walk waits at most about this long for its turn. A yield with nothing
#: else to run (`gevent.idle()`) costs a small share of a slice, so a walk pays little for it.
SLICE = 0.001
_HOW = "raise it in <root>/limits.yaml, see docs/operations.md"


class Deadline:
    """When an operation must have ended: `seconds` after it began, set by the limit `limit`
    (None: never)."""

    __slots__ = ("limit", "seconds", "ends", "_next_yield", "_yield")

    def __init__(
        self,
        seconds: float | None,
        limit: str = "",
        *,
        began: float | None = None,
        give_way: Callable[[], None] | None = None,
    ):
        """`give_way` replaces the yield between steps: background work that must wait for the
        worker's requests to be done, not only let them run first, waits in it."""
        self.limit = limit
        self.seconds = seconds
        began = time.monotonic() if began is None else began
        self.ends = math.inf if seconds is None else began + seconds
        self._next_yield = began + SLICE
        self._yield = give_way or let_requests_run

    def remaining(self) -> float:
        """Seconds left (never negative; `math.inf` without a deadline)."""
        return max(self.ends - time.monotonic(), 0.0)

    def check(self) -> None:
        """Between two steps of a long operation: yield to the worker's other requests if this
        one has run for `SLICE`, and raise `DeadlineExceeded` once the deadline has passed."""
        now = time.monotonic()
        if now >= self._next_yield:
            self._yield()
            now = time.monotonic()
            self._next_yield = now + SLICE
        if now >= self.ends:
            raise self.exceeded()

    def exceeded(self, why: str = "") -> DeadlineExceeded:
        """The error of this deadline, passed (`why`: what it was waiting for, if anything)."""
        seconds = self.seconds or 0.0
        return DeadlineExceeded(
            f"the request passed its deadline of {seconds:g} s{why} (limit {self.limit}; {_HOW})",
            limit=self.limit,
            seconds=seconds,
            retry_after=max(1, math.ceil(seconds)),
        )


def let_requests_run() -> None:
    """Let the other requests of this worker run.

    In a gevent worker, wait until its event loop is idle: every request that is ready (a
    lookup's socket, a reply) runs first. Not `sleep(0)`: gevent runs its queue of callbacks,
    where a `sleep(0)` puts the walk again at once, checking the time only every 50 callbacks,
    so sockets were polled once per 50 steps (a warm lookup waited behind whole walks).
    Elsewhere nothing: threads take turns on their own (the interpreter's switch interval).
    """
    monkey = sys.modules.get("gevent.monkey")
    if monkey is not None and monkey.is_module_patched("time"):
        sys.modules["gevent"].idle()


#: No deadline: the checkpoints still yield, and never raise.
UNBOUNDED = Deadline(None, "none")
