"""The gunicorn worker classes of `gitstore serve`: gunicorn's own, stopped once, by the master.

Ctrl-C in a terminal signals the whole foreground process group, so every worker got SIGINT
from the terminal and SIGQUIT from the master, each a quit. A gevent worker runs each quit in
a greenlet that ends in `sys.exit`; the second one, run by gevent's patched interpreter
shutdown, left the worker waiting on a lock until the master's SIGKILL 30 s later ("Perhaps
out of memory?"), about one stop in five when the signal came while workers were loading.
So a worker ignores SIGINT (the master decides when workers stop) and acts on one quit only.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import gevent
from gunicorn import glogging
from gunicorn.workers.ggevent import GeventWorker as _GunicornGevent
from gunicorn.workers.gthread import ThreadWorker as _GunicornThreads

from gitstore import metrics
from gitstore.serve import wire_errors
from gitstore.serve.activity import Activity


def _leave_at_once(sig: int, frame: Any) -> None:
    os._exit(0)  # nothing is served yet: there is nothing to finish


#: What the master sends its workers to stop them (TERM, or QUIT for a quick stop).
_STOPS = frozenset({signal.SIGTERM, signal.SIGQUIT})


def post_fork(server: Any, worker: Any, activity: Activity | None = None) -> None:
    """gunicorn's `post_fork` hook, run in the new worker: it keeps the master's signal queue
    as the fork copied it, to look into once its own handlers are in (`init_process`), and
    hands the worker the server's `activity`, made by the master (`serve.activity`); without
    one, the worker's background work waits for its own requests only."""
    worker.inherited_signals = server.SIG_QUEUE
    worker.activity = activity or Activity()


def worker_exit(server: Any, worker: Any) -> None:
    """gunicorn's `worker_exit` hook, run in the worker as it ends: end the process here, with
    the exit code it was leaving with. Python's own finalization in a gevent worker runs
    logging's handler callbacks after `threading` was torn down (`TypeError: 'NoneType' object
    is not callable` printed once per handler at every stop); nothing else is left to run."""
    leaving = sys.exc_info()[1]
    if not isinstance(leaving, SystemExit):
        return  # an unexpected error: let Python report it
    code = leaving.code if isinstance(leaving.code, int) else int(leaving.code is not None)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _stopped_before_its_handlers(signals: Any) -> bool:
    """Whether a stop reached the worker between the fork and its own handlers: the master's
    handlers, inherited, put it into the copy of the master's queue, where nobody reads it, and
    the master waited its graceful timeout (30 s) before SIGKILL (a Ctrl-C right at start).
    What the copy held at the fork counts too: a stop the master had not handled yet."""
    if signals is None:
        return False
    if isinstance(signals, list):  # gunicorn before 27
        return any(sig in _STOPS for sig in signals)
    found = False
    while True:
        try:
            found = signals.get_nowait() in _STOPS or found
        except queue.Empty:
            return found


def _store_of(app: Any) -> Any:
    """The Store of the worker's app (None while the app is loading).

    A stop signal may arrive while the worker still imports the app: nothing is imported
    here then (an import from inside the signal handler would meet flask half-imported, and
    the worker would exit as if it had failed to boot, taking the arbiter down)."""
    if app is None:
        return None
    from gitstore.api.http import STORE  # noqa: PLC0415 - the app is loaded by now

    return getattr(app, "extensions", {}).get(STORE)


def keep_warm(app: Any, activity: Activity) -> None:
    """Check each environment's main as the worker's first edit preview would, and again
    whenever it moves (`gitstore.gitops.warmup`): run in the background once the app is
    loaded, in steps taken while the server has no requests (`activity`), for as long as the
    worker runs."""
    store = _store_of(app)
    warmer = None if store is None else store.previews.warmer()
    if warmer is not None:
        warmer.follow(give_way=activity.give_way)


def _flush_counts() -> None:
    """Write the requests this worker counted since its last flush (metrics._Buffer)."""
    try:
        metrics.flush()
    except Exception:  # never hide why the worker stops; the counts are lost, not the reason
        logging.getLogger("gitstore.serve").exception("cannot write the last request counts")


#: Container allocations (net of frees) between two young collections; Python's default is 700.
#: A cold lookup holds thousands of new objects at once (the node's parsed facts, the merged
#: document): with 700, about one young collection per lookup promoted them all, and the full
#: collections that followed walked every cached document of the worker, a large share of a
#: cold lookup in a worker holding many nodes (docs/performance.md). At 10,000 the temporaries
#: are freed by their reference counts before a collection sees them, and full collections
#: become rare. Cyclic garbage still goes within 10,000 allocations.
YOUNG_THRESHOLD = 10_000


def settle_collector() -> None:
    """Set the cyclic garbage collector up for a worker whose app is loaded.

    What is alive now (modules, the app, the store's handles) lives as long as the worker:
    frozen, full collections no longer walk it. Later objects, caches included, are still
    collected as before.
    """
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


if TYPE_CHECKING:  # the mixin extends what a gunicorn worker does
    from gunicorn.workers.base import Worker as _Mixed
else:
    _Mixed = object


class _StopsOnce(_Mixed):
    """Mixed into a gunicorn worker class, before it."""

    _quitting = False
    activity: Activity  # handed over by `post_fork`

    def load_wsgi(self) -> None:
        super().load_wsgi()
        settle_collector()
        app = self.wsgi
        self.in_background(lambda: keep_warm(app, self.activity))

    def handle_request(self, *args: Any) -> Any:
        """gunicorn's handling of one request (its arguments differ by worker class), marked
        in the worker's activity at its start and end."""
        self.activity.touch()
        try:
            return super().handle_request(*args)  # type: ignore[misc] # each worker class has one
        finally:
            self.activity.touch()

    def init_process(self) -> None:
        # Until gunicorn installs the worker's handlers, the master's inherited ones would
        # queue a stop in the master's (copied) queue, where nobody reads it.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGQUIT, _leave_at_once)
        signal.signal(signal.SIGTERM, _leave_at_once)
        if _stopped_before_its_handlers(getattr(self, "inherited_signals", None)):
            _leave_at_once(signal.SIGQUIT, None)
        wire_errors.install()
        try:
            super().init_process()
        finally:
            _flush_counts()

    def init_signals(self) -> None:
        super().init_signals()
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    def handle_quit(self, sig: int, frame: Any) -> None:
        if self._quitting:
            return
        self._quitting = True
        self._release_watchers()
        super().handle_quit(sig, frame)

    def handle_exit(self, sig: int, frame: Any) -> None:
        self._release_watchers()
        super().handle_exit(sig, frame)

    def _release_watchers(self) -> None:
        """End the blocking queries and event streams the worker holds, which would hold a
        graceful stop for its whole timeout (30 s): they answer or end now, and their clients
        ask again with their index or Last-Event-ID. Not in the signal handler itself, which
        must not take the waiters' locks."""
        store = _store_of(getattr(self, "wsgi", None))
        watch = None if store is None else store.watch
        if watch is not None:
            self.in_background(watch.close)

    def in_background(self, call: Callable[[], Any]) -> None:
        raise NotImplementedError


class GeventWorker(_StopsOnce, _GunicornGevent):
    """gunicorn's gevent worker (`--worker-class gevent`)."""

    def in_background(self, call: Callable[[], Any]) -> None:
        gevent.spawn(call)  # a signal arrives in an event-loop callback, which must not block


class ThreadWorker(_StopsOnce, _GunicornThreads):
    """gunicorn's gthread worker (`--worker-class gthread`)."""

    def in_background(self, call: Callable[[], Any]) -> None:
        threading.Thread(target=call, name="gitstore-background", daemon=True).start()


#: `--worker-class` choice -> class.
BY_NAME = {"gevent": GeventWorker, "gthread": ThreadWorker}


class Logger(glogging.Logger):
    """gunicorn's logger, which builds an access line only when one is logged.

    gunicorn decides before it applies a logging config, and with any config given (ours
    always is) it built every request's access line for a logger set to drop it, a visible
    share of what a warm lookup costs (docs/performance.md).
    """

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        self._access_log_enabled = self.access_log.isEnabledFor(logging.INFO)
