"""The Prometheus counters of gitstore, and the one call per event that feeds them.

The library calls these functions where an event happens (a commit made, a push refused, a
cache looked up, a secret revealed, an authentication failed); nothing else touches
`prometheus_client`. The metrics are built on first use, not at import: a process learns only
then whether it is one of several gunicorn workers (`PROMETHEUS_MULTIPROC_DIR` set by
`gitstore serve` before it forks), and `prometheus_client` picks its storage at that moment.

Commits and refusals are also logged here (logger `gitstore.events`), so each event has one
door: the counter and the log line can never disagree.
"""

from __future__ import annotations

import bisect
import contextvars
import logging
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: Where a commit made through the library comes from: the request hooks set `cli` for calls of
#: the gitstore CLI; `push` and `mirror` commits arrive through git and are counted there.
SOURCES = ("rest", "push", "mirror", "cli")
#: A metrics label only: no code decides anything by it, so it may stay a contextvar (the
#: one beside `logs.request_id`; request state the library acts on travels in signatures).
commit_source: contextvars.ContextVar[str] = contextvars.ContextVar(
    "gitstore_commit_source", default="rest"
)

log = logging.getLogger("gitstore.events")
_lock = threading.Lock()
_built: dict[str, Any] = {}
_pending = threading.local()
#: Seconds; the defaults of prometheus_client stop at 10 s, which a long push can pass.
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
#: A thread's cache lookups: (cache name, hit) -> count.
CacheCounts = dict[tuple[str, bool], int]


def _metrics() -> dict[str, Any]:
    """The metric objects of this process, built once (after any fork)."""
    if _built:
        return _built
    with _lock:
        if not _built:
            _built.update(_build())
    return _built


def _build() -> dict[str, Any]:
    from prometheus_client import Counter, Gauge, Histogram, values

    # The storage class is chosen from the environment now, not when the module was imported
    # (the gunicorn arbiter imports it before `gitstore serve` sets the directory).
    values.ValueClass = values.get_value_class()
    return {
        "requests": Counter(
            "gitstore_http_requests",
            "HTTP requests answered, by route template, method and status.",
            ["route", "method", "status"],
        ),
        "duration": Histogram(
            "gitstore_http_request_duration_seconds",
            "Time to answer an HTTP request, by route template and method.",
            ["route", "method"],
            buckets=_DURATION_BUCKETS,
        ),
        "commits": Counter(
            "gitstore_commits", "Commits that reached a served main, by source.", ["source"]
        ),
        "refusals": Counter(
            "gitstore_gate_refusals", "Changes the push gate refused, by rule.", ["rule"]
        ),
        "cache": Counter(
            "gitstore_cache_requests", "Cache lookups, by cache and result.", ["cache", "result"]
        ),
        "reveals": Counter("gitstore_secret_reveals", "Requests that revealed secret values."),
        "auth": Counter("gitstore_auth_failures", "Failed authentications, by reason.", ["reason"]),
        "objects": Counter(
            "gitstore_git_objects_written", "Git objects (blobs, trees, commits) written."
        ),
        "deadlines": Counter(
            "gitstore_deadline_exceeded",
            "Requests answered 503 because they passed their deadline, by route template.",
            ["route"],
        ),
        **_repository_metrics(Gauge, Counter),
    }


def _repository_metrics(gauge: Any, counter: Any) -> dict[str, Any]:
    """Per repository, as the maintenance process last saw it (gitstore.ops.maintenance)."""

    def build(name: str, text: str) -> Any:
        return gauge(name, text, ["repository"], multiprocess_mode="mostrecent")

    return {
        "loose": build("gitstore_repository_loose_objects", "Loose objects of a repository."),
        "packs": build("gitstore_repository_packs", "Pack files of a repository."),
        "size": build("gitstore_repository_size_bytes", "Bytes of a repository's objects."),
        "maintained": build(
            "gitstore_repository_last_maintenance_timestamp_seconds",
            "When maintenance last ran on a repository (0: never).",
        ),
        "maintenance_errors": counter(
            "gitstore_maintenance_errors", "Maintenance tasks that failed.", ["repository"]
        ),
    }


def multiprocess_dir() -> str | None:
    """The directory several processes share their counters through, if any."""
    return os.environ.get(MULTIPROC_ENV) or None


# -- events ------------------------------------------------------------------------------------
def request_answered(route: str, method: str, status: int, seconds: float) -> None:
    """Count a request in this process; the counts reach the shared counters by `flush`."""
    cache = getattr(_pending, "cache", None)
    if cache:
        _pending.cache = {}
    _buffer.add(route, method, str(status), seconds, cache)


def commit_made(repository: str, commit: str, message: str, paths: Iterable[str]) -> None:
    """A commit the library made and moved main to (REST, CLI over HTTP, local CLI)."""
    paths = sorted(paths)
    _metrics()["commits"].labels(commit_source.get()).inc()
    _metrics()["objects"].inc(_objects_of(paths))
    log.info(
        "commit %s to %s: %s",
        commit[:12],
        repository,
        message.strip().splitlines()[0] if message.strip() else "",
        extra={
            "fields": {
                "event": "commit",
                "repository": repository,
                "commit": commit,
                "files": paths,
            }
        },
    )


def _objects_of(paths: list[str]) -> int:
    """Objects a commit of `paths` writes: the commit, a blob per file, a tree per folder on
    their way (the root included). Deleted files count a blob too: close enough for a rate."""
    folders = {""}
    for path in paths:
        parts = path.split("/")[:-1]
        folders.update("/".join(parts[: depth + 1]) for depth in range(len(parts)))
    return 1 + len(paths) + len(folders)


def commits_arrived(source: str, repository: str, old: str, new: str, count: int) -> None:
    """`count` commits that reached main through git (`push` or `mirror`)."""
    _metrics()["commits"].labels(source).inc(count)
    log.info(
        "%s moved main of %s from %s to %s (%d commits)",
        source,
        repository,
        old[:12],
        new[:12],
        count,
        extra={"fields": {"event": source, "repository": repository, "commit": new}},
    )


def gate_refused(repository: str, rule: str, message: str) -> None:
    _metrics()["refusals"].labels(rule).inc()
    log.warning(
        "gate refused a change to %s (rule %s): %s",
        repository,
        rule,
        message,
        extra={"fields": {"event": "refusal", "repository": repository, "rule": rule}},
    )


def refusal_rule(error: Any) -> str:
    """The gate rule an error of `GitOps.check_push` (or a failed sync) stands for."""
    explicit = getattr(error, "rule", None)
    if explicit:
        return str(explicit)
    if getattr(error, "errors", None):
        return "valid_tree"
    message = str(getattr(error, "message", error))
    for needle, rule in _RULES_BY_MESSAGE:
        if needle in message:
            return rule
    return "other"


#: Until the gate's rules carry names of their own, the refusal text tells them apart.
_RULES_BY_MESSAGE = (
    ("deleting main", "no_delete_main"),
    ("non-fast-forward", "fast_forward_only"),
    ("does not contain the served commit", "fast_forward_only"),
    ("mirrors ", "mirror_mode"),
    ("is invalid", "valid_tree"),
)


def cache_lookup(cache: str, hit: bool) -> None:
    """Count a lookup in this thread; the request's end hands the counts to `_buffer`.

    A request makes tens of lookups, and one shared increment costs a lock and a write to the
    mapped file in multiprocess mode: a dict of this thread costs far less.
    """
    try:
        counts = _pending.cache
    except AttributeError:
        counts = _pending.cache = {}
    key = (cache, hit)
    counts[key] = counts.get(key, 0) + 1


class _Buffer:
    """The request and cache counts of this process since the last flush, in plain numbers.

    Counting a request in the shared counters (three labelled samples, each a lock and a write
    to a mapped file in multiprocess mode) cost more than the rest of a warm lookup's
    own work. So a request adds to these dicts (one lock), and `flush` adds them to the shared
    counters: every `FLUSH_SECONDS` (a timer of the process), before this process answers a
    scrape, and when a worker exits. A scrape answered by another worker may therefore miss
    the last `FLUSH_SECONDS` of this one's requests (docs/operations.md).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # held for a few dict updates, never for a write
        self._flushing = threading.Lock()  # one flush at a time, so a scrape waits for it
        self.started_in: int | None = None  # the process whose locks and timer these are
        self._reset()

    def _reset(self) -> None:
        self.requests: dict[tuple[str, str, str], int] = {}  # (route, method, status) -> count
        self.durations: dict[tuple[str, str], list[Any]] = {}  # (route, method) -> [buckets, sum]
        self.cache: dict[tuple[str, bool], int] = {}  # (cache, hit) -> count

    def add(
        self, route: str, method: str, status: str, seconds: float, cache: CacheCounts | None
    ) -> None:
        if self.started_in != os.getpid():
            self._start()
        key = (route, method, status)
        slot = bisect.bisect_left(_DURATION_BUCKETS, seconds)  # the first bound >= seconds
        with self._lock:
            self.requests[key] = self.requests.get(key, 0) + 1
            timing = self.durations.get(key[:2])
            if timing is None:
                timing = self.durations[key[:2]] = [[0] * (len(_DURATION_BUCKETS) + 1), 0.0]
            timing[0][slot] += 1
            timing[1] += seconds
            if cache:
                self._count_cache(cache)

    def add_cache(self, cache: CacheCounts) -> None:
        if self.started_in != os.getpid():
            self._start()
        with self._lock:
            self._count_cache(cache)

    def _count_cache(self, cache: CacheCounts) -> None:
        """Add a thread's cache counts (`_lock` held)."""
        for name, count in cache.items():
            self.cache[name] = self.cache.get(name, 0) + count

    def take(
        self,
    ) -> tuple[dict[tuple[str, str, str], int], dict[tuple[str, str], list[Any]], CacheCounts]:
        """The counts so far, leaving none."""
        with self._lock:
            taken = self.requests, self.durations, self.cache
            self._reset()
        return taken

    def flush(self) -> None:
        if self.started_in != os.getpid():
            self._start()
        with self._flushing:
            requests, durations, cache = self.take()
            if not (requests or durations or cache):
                return
            metrics = _metrics()
            for labels, count in requests.items():
                metrics["requests"].labels(*labels).inc(count)
            for route_method, (buckets, total) in durations.items():
                _observed(metrics["duration"].labels(*route_method), buckets, total)
            for (name, hit), count in cache.items():
                metrics["cache"].labels(name, "hit" if hit else "miss").inc(count)

    def _start(self) -> None:
        """At the first count or flush of this process: its locks and its timer, a daemon
        thread flushing every `FLUSH_SECONDS`. Made now, not at import or fork, so that in a
        gevent worker they are gevent's (patched after the fork): a real lock held by one
        greenlet would block the whole worker."""
        with _starting[0]:  # the module's: held for no I/O, never across a greenlet switch
            if self.started_in == os.getpid():
                return
            self._lock = threading.Lock()
            self._flushing = threading.Lock()
            self.started_in = os.getpid()
        _metrics()  # the process's counter files exist from its first request on
        threading.Thread(target=self._every_interval, name="metrics-flush", daemon=True).start()

    def _every_interval(self) -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            try:
                self.flush()
            except Exception:  # a full disk must not stop the counting: try again next time
                log.exception("cannot write the request counters")

    def after_fork(self) -> None:
        """In a child: the parent's counts are the parent's to flush, and its timer is gone
        (`add` starts this process's own)."""
        self._reset()


def _observed(child: Any, buckets: list[int], total: float) -> None:
    """Add `buckets` (counts per bucket, not cumulative: the last one past every bound) and
    their sum `total` to a histogram's child, as that many `observe` calls would."""
    child._sum.inc(total)
    for slot, count in enumerate(buckets):
        if count:
            child._buckets[slot].inc(count)


#: How often a worker adds its request counts to the shared counters (seconds; tests set it).
FLUSH_ENV = "GITSTORE_METRICS_FLUSH_SECONDS"
FLUSH_SECONDS = float(os.environ.get(FLUSH_ENV) or 1.0)
_starting = [threading.Lock()]
_buffer = _Buffer()


def _after_fork() -> None:
    _starting[0] = threading.Lock()  # another thread of the parent may have held it
    _buffer.after_fork()


os.register_at_fork(after_in_child=_after_fork)


def flush() -> None:
    """Add this process's buffered counts (and this thread's pending cache counts) to the
    shared counters: before a scrape is answered, and when a worker exits."""
    cache = getattr(_pending, "cache", None)
    if cache:
        _pending.cache = {}
        _buffer.add_cache(cache)
    _buffer.flush()


def deadline_exceeded(route: str) -> None:
    """A request cut by its deadline (`gitstore.deadlines`); also logged, as a warning."""
    _metrics()["deadlines"].labels(route).inc()
    log.warning(
        "a request to %s passed its deadline",
        route,
        extra={"fields": {"event": "deadline", "route": route}},
    )


def secret_revealed() -> None:
    _metrics()["reveals"].inc()


def auth_failed(reason: str) -> None:
    _metrics()["auth"].labels(reason).inc()


def repository_usage(repository: str, usage: dict[str, int], maintained: float) -> None:
    """A repository's loose objects, packs and size, and when maintenance last ran on it."""
    found = _metrics()
    found["loose"].labels(repository).set(usage["loose"])
    found["packs"].labels(repository).set(usage["packs"])
    found["size"].labels(repository).set(usage["size"])
    found["maintained"].labels(repository).set(maintained)


def maintenance_ran(repository: str, usage: dict[str, int], when: float, errors: list[str]) -> None:
    """A maintenance run of a repository finished (gitstore.ops.maintenance)."""
    repository_usage(repository, usage, when)
    if errors:
        _metrics()["maintenance_errors"].labels(repository).inc(len(errors))
    log.info(
        "maintenance of %s: %d loose objects, %d packs",
        repository,
        usage["loose"],
        usage["packs"],
        extra={"fields": {"event": "maintenance", "repository": repository, **usage}},
    )


def sync_refused(repository: str, failure: dict[str, Any] | None) -> None:
    """After a mirror sync: count the gate refusal it met, if any."""
    if failure is None:
        return
    rule = "valid_tree" if failure.get("errors") else refusal_rule(failure.get("message", ""))
    if rule != "other":  # "main moved during the sync" is a race, not a refusal
        gate_refused(repository, rule, failure.get("message", ""))


def exposition() -> tuple[bytes, str]:
    """The current values in the Prometheus text format, and its content type."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    flush()  # so that a scrape lists every metric, even before its first event
    _metrics()
    shared = multiprocess_dir()
    if shared is None:
        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=shared)
    return generate_latest(registry), CONTENT_TYPE_LATEST


def prepare_multiprocess_dir(path: str) -> None:
    """Make `path` the shared directory of this process and the ones it forks, emptied of the
    files of an earlier run (their counts would be added to this one's)."""
    from pathlib import Path

    folder = Path(path)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink()
    os.environ[MULTIPROC_ENV] = str(folder)


def process_exited(pid: int) -> None:
    """gunicorn's `child_exit`: drop a dead worker's live gauges (its counters stay summed)."""
    if multiprocess_dir() is not None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
