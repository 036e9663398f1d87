"""A worker's request activity, so that its background work runs in its idle time.

A background task that only yields to ready requests still takes the CPU whenever the worker
waits on the network between two of them: with a stream of requests, about half of it. Work
that can wait (the warm-up of the gate's results) waits instead, in `Activity.give_way`, until
no request has started or ended for `QUIET` seconds. Requests that stay open (a blocking query
parked for minutes, an event stream) do not count as activity once they started: a worker
holding watchers is otherwise idle.
"""

from __future__ import annotations

import time

from gitstore.deadlines import let_requests_run

#: Seconds without a request starting or ending after which a worker counts as idle.
QUIET = 0.05


class Activity:
    """When a request last started or ended in one worker process."""

    def __init__(self, quiet: float = QUIET) -> None:
        self.quiet = quiet
        self._last = time.monotonic()

    def touch(self) -> None:
        """A request starts or ends (one float stored: safe from any thread)."""
        self._last = time.monotonic()

    def give_way(self) -> None:
        """Let the requests that arrived run, then wait until the worker has been idle for
        `quiet` s (`time.sleep`: a gevent worker's is patched to let its requests run
        meanwhile). A request that arrived has not touched the activity before it ran."""
        let_requests_run()
        while (idle := time.monotonic() - self._last) < self.quiet:
            time.sleep(self.quiet - idle)
