"""Every request's deadline, and the turns heavy requests take (docs/operations.md, "Deadlines").

A request gets its deadline as it begins: a heavy route's own limit (`HEAVY`, the explain flag
of a values read) or `request_seconds`. Views hand `deadline()` to the operations whose steps
check it (`gitstore.deadlines`); a step past it raises `DeadlineExceeded`, answered here: 503,
`Retry-After`, the one JSON error shape naming the deadline and its limit, and a count in
`gitstore_deadline_exceeded_total` by route template.

A heavy request also waits for one of its worker's `heavy_requests` turns (within its deadline,
then 503): four history walks must not take every worker from the lookups Puppet depends on.
"""

from __future__ import annotations

import threading

from flask import Flask, Response, current_app, g, request

from gitstore import limits, metrics
from gitstore.api import errors
from gitstore.api.observe import UNMATCHED
from gitstore.deadlines import UNBOUNDED, Deadline
from gitstore.errors import DeadlineExceeded

#: Heavy routes by endpoint, with the limit of their deadline.
HEAVY = {
    "versions.history": "history_seconds",
    "console.key_history": "history_seconds",
    "versions.diff": "diff_seconds",
    "console.node_diff": "diff_seconds",
    "console.why": "explain_seconds",
    "console.commit": "console_seconds",
    "console.search": "console_seconds",
    "graphs.execute": "graph_execute_seconds",
}
#: A values read with `?explain` is heavy too (one route serves plain reads and explains).
EXPLAIN = ("values.read", "explain_seconds")
DEFAULT = "request_seconds"
_TURNS = "gitstore.heavy_turns"
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def register(app: Flask, bounds: limits.Limits) -> None:
    """Start each request's clock by `bounds`; registered early, so that its checks count from
    the start."""
    app.extensions[_TURNS] = _Turns(bounds)
    app.before_request(_begin)
    app.teardown_request(_end)
    app.register_error_handler(DeadlineExceeded, _cut)


def take_turns(app: Flask) -> None:
    """Make heavy requests wait for a turn; registered after the access check, so that only a
    caller who may ask waits."""
    app.before_request(_take_turn)


def deadline() -> Deadline:
    """The deadline of the current request."""
    return g.get("deadline", UNBOUNDED)


def _limit_name() -> str:
    endpoint = request.endpoint
    if endpoint in HEAVY:
        return HEAVY[endpoint]
    if endpoint == EXPLAIN[0] and "explain" in request.args:
        return EXPLAIN[1]
    return DEFAULT


def _begin() -> None:
    name = _limit_name()
    g.deadline = Deadline(getattr(current_app.extensions[_TURNS].bounds, name), name)


def _take_turn() -> None:
    if g.deadline.limit == DEFAULT:
        return
    turns: _Turns = current_app.extensions[_TURNS]
    turns.take(g.deadline)
    g.holds_turn = turns


def _end(exc: BaseException | None) -> None:
    turns = g.pop("holds_turn", None)
    if turns is not None:
        turns.give_back()


def _cut(exc: DeadlineExceeded) -> Response:
    rule = request.url_rule
    metrics.deadline_exceeded(rule.rule if rule is not None else UNMATCHED)
    if request.method not in _SAFE:
        exc.message += "; nothing was written (send it again)"
    return errors.answer(exc)


class _Turns:
    """The heavy requests one worker process runs at once (`heavy_requests` of `bounds`).

    The semaphore is made when the app is (in a gunicorn worker, after gevent patched
    `threading`), so a request waiting for a turn parks its green thread only.
    """

    def __init__(self, bounds: limits.Limits) -> None:
        self.bounds = bounds
        self.count = bounds.heavy_requests
        self._free = threading.BoundedSemaphore(self.count)

    def take(self, deadline: Deadline) -> None:
        """A turn, or DeadlineExceeded once none came in time (one that came as the deadline
        passed is handed on at once: its work would be cut at its first step)."""
        taken = self._free.acquire(timeout=deadline.remaining())
        if taken and deadline.remaining() > 0:
            return
        if taken:
            self._free.release()
        raise deadline.exceeded(
            f" waiting for a turn: a worker runs {self.count} heavy requests at a time "
            "(limit heavy_requests)"
        )

    def give_back(self) -> None:
        self._free.release()
