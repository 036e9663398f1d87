"""Heavy reads against lookups: deep-history walks on every worker while Puppet's lookups go on.

Issue 41's benchmark. A store of 20,000 commits (`make_store.py`: 20 nodes, 100 facts each),
served by `gitstore serve` with 2 gevent workers and `history_seconds` set to `--deadline`.
One client process runs warm lookups (a node's effective `astute` values and its Hiera node
document, alternately) in `--rounds` rounds of two phases of `--seconds` each: alone, then while
8 client processes loop deep-history requests (`?key=` of a key no commit changed: every walk
reads all 20,000 commits, then is cut by its deadline). The phases alternate so that the load
of a shared machine weighs on both alike. It prints:

- the lookup p50 and p99 alone and under the walks, and their ratio (targets: p99 ≤ 50 ms and
  ≤ 2x alone);
- the history answers by status, and how long after its deadline the latest 503 came (target:
  within 1 s);
- `WORKER TIMEOUT` lines in the server's log and worker restarts (targets: 0 and 0).

Usage: .venv/bin/python bench/deadlines.py [--seconds 10] [--rounds 3] [--deadline 5] [--smoke]
"""

from __future__ import annotations

import multiprocessing
import sys
import time
import urllib.error
import urllib.request
from http.client import HTTPConnection

import harness
import make_store

sys.path.insert(0, str(harness.PROJECT))

from gitstore import limits  # noqa: E402 - after the path set-up for running as a script

HISTORY = "/api/v1/config/environments/1/history?key=no_such_key&limit=10"
LOOKUPS = (
    harness.LOOKUP.format(node=1),
    "/api/v1/hiera/1/" + make_store.fqdn(1),
)
HISTORY_CLIENTS = 8
WORKERS = 2


def main() -> None:
    parser = harness.options(__doc__)
    parser.add_argument("--seconds", type=float, default=10.0, help="lookups per phase")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both phases")
    parser.add_argument("--deadline", type=float, default=5.0, help="history_seconds")
    parser.add_argument("--commits", type=int, default=20_000)
    args = parser.parse_args()
    commits, seconds = (2_000, 2.0) if args.smoke else (args.commits, args.seconds)
    with harness.scratch("bench-deadlines-", args.workdir) as folder:
        root = folder / "store"
        started = time.monotonic()
        make_store.build(root, nodes=20, commits=commits, keys=100)
        print(f"store: {commits} commits in {time.monotonic() - started:.0f}s")
        (root / limits.LIMITS_FILE).write_text(f"history_seconds: {args.deadline}\n")
        # No planned restarts (`--max-requests`): a restart counted is a worker that died.
        options = ("--max-requests", "0")
        with harness.Server(root, workers=WORKERS, worker_class="gevent", extra=options) as server:
            _run(server, seconds, 1 if args.smoke else args.rounds, args.deadline)


def _run(server: harness.Server, seconds: float, rounds: int, deadline: float) -> None:
    server.warm(list(LOOKUPS))
    workers = set(server.workers())
    results, stop, walking = (
        multiprocessing.Queue(),
        multiprocessing.Event(),
        multiprocessing.Event(),
    )
    walkers = [
        multiprocessing.Process(target=_walk, args=(server.port, stop, walking, results))
        for _ in range(HISTORY_CLIENTS)
    ]
    for walker in walkers:
        walker.start()
    alone: list[float] = []
    loaded: list[float] = []
    for _ in range(rounds):
        alone += _lookups(server.port, seconds)
        walking.set()
        time.sleep(2.0)  # every worker walks
        loaded += _lookups(server.port, seconds)
        walking.clear()
        time.sleep(deadline + 1.5)  # the walks under way end (cut at their deadline)
    stop.set()
    walking.set()
    answers = [item for _ in walkers for item in results.get()]
    for walker in walkers:
        walker.join()
    _report(alone, loaded, answers, deadline)
    log = server.log.read_text()
    print(f"WORKER TIMEOUT lines in the log: {log.count('WORKER TIMEOUT')}")
    restarts = len(set(server.workers()) - workers)
    print(f"worker restarts: {restarts}")
    if restarts:  # say why: the master's lines about its workers
        for line in log.splitlines():
            if "gunicorn.error" in line and ("orker" in line or "exit" in line):
                print("  " + line[:300])


def _lookups(port: int, seconds: float) -> list[float]:
    """Seconds of each warm lookup made one after the other on one connection."""
    connection = HTTPConnection("127.0.0.1", port, timeout=60)
    times = []
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        path = LOOKUPS[len(times) % len(LOOKUPS)]
        started = time.perf_counter()
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        times.append(time.perf_counter() - started)
        if response.status != 200:
            raise SystemExit(f"GET {path}: {response.status}")
    connection.close()
    return times


def _walk(port: int, stop, walking, results) -> None:
    """Deep-history requests one after the other while `walking`, until `stop`: (status,
    seconds) of each."""
    answers = []
    while not stop.is_set():
        walking.wait()
        started = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{HISTORY}", timeout=120) as r:
                r.read()
                status = r.status
        except urllib.error.HTTPError as exc:
            exc.read()
            status = exc.code
            if status == 503 and "Retry-After" not in exc.headers:
                status = -503  # the answer lacks what it must have
        answers.append((status, time.monotonic() - started))
    results.put(answers)


def _quantile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _report(alone: list[float], loaded: list[float], answers: list, deadline: float) -> None:
    for name, times in (("alone", alone), (f"{HISTORY_CLIENTS} history clients", loaded)):
        print(
            f"lookups, {name}: {len(times)}, p50 {_quantile(times, 0.5) * 1000:.1f} ms, "
            f"p99 {_quantile(times, 0.99) * 1000:.1f} ms"
        )
    ratio = _quantile(loaded, 0.99) / _quantile(alone, 0.99)
    print(f"lookup p99 under the walks / alone: {ratio:.2f}")
    statuses: dict[int, int] = {}
    for status, _ in answers:
        statuses[status] = statuses.get(status, 0) + 1
    print(f"history answers by status: {dict(sorted(statuses.items()))}")
    cut = [took for status, took in answers if status == 503]
    if cut:
        print(
            f"503 answers: {len(cut)}, the latest {max(cut) - deadline:+.2f} s after its "
            f"deadline of {deadline:g} s (median {_quantile(cut, 0.5) - deadline:+.2f} s)"
        )


if __name__ == "__main__":
    main()
