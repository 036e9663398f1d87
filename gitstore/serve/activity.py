"""The server's request activity, so that background work runs in its idle time.

A background task that only yields to ready requests still takes the CPU whenever the worker
waits on the network between two of them: with a stream of requests, about half of it. Work
that can wait (the warm-up of the gate's results) waits instead, in `Activity.give_way`, until
no request has started or ended for `QUIET` seconds. Requests that stay open (a blocking query
parked for minutes, an event stream) do not count as activity once they started: a worker
holding watchers is otherwise idle.

The workers of one server share the CPUs, so they share one `Activity`, made in the arbiter
before it forks them: a worker whose connections went quiet while another still served a
stream of cold lookups warmed up on the CPU those lookups needed (1.3x their CPU,
docs/performance.md).
"""

from __future__ import annotations

import time
from multiprocessing.sharedctypes import RawValue

from gitstore.deadlines import let_requests_run

#: Seconds without a request starting or ending after which the server counts as idle.
QUIET = 0.05


class Activity:
    """When a request last started or ended in the processes that share it: the process that
    made it and those it forked later (one server's workers)."""

    def __init__(self, quiet: float = QUIET) -> None:
        self.quiet = quiet
        #: the host's monotonic clock at the last start or end, in memory shared across a fork
        #: (8 bytes, no lock: a double is stored and loaded whole)
        self._stamp = RawValue("d", time.monotonic())

    @property
    def _last(self) -> float:
        return float(self._stamp.value)

    def touch(self) -> None:
        """A request starts or ends (one float stored: safe from any thread or worker)."""
        self._stamp.value = time.monotonic()

    def give_way(self) -> None:
        """Let the requests that arrived run, then wait until every process sharing this
        activity has been idle for `quiet` s (`time.sleep`: a gevent worker's is patched to let
        its requests run meanwhile). A request that arrived has not touched the activity before
        it ran."""
        let_requests_run()
        while (idle := time.monotonic() - self._last) < self.quiet:
            time.sleep(self.quiet - idle)
