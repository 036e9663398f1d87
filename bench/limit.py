"""Benchmark: a warm effective-value lookup against the limit of the server stack.

The lookup (`GET .../nodes/17/resources/astute/values?effective`: 24.5 KB of JSON on the bench
store; `--key network_metadata` makes it 5.7 KB) is served by `gitstore serve` with 2 workers;
the baselines are a bare WSGI app returning the same number of cached bytes
(`bench/bare_wsgi.py`: no Flask, no routing) on the same gunicorn with the same worker count,
once with gthread workers (4 threads) and once with sync workers. gitstore runs under each
worker class asked for (`--classes`, gevent and gthread by default) side by side. Every round
loads each server in turn for `--seconds` with wrk (8 connections), so a noisy neighbour hits
them all; the medians give the ratio:

    RATIO limit = gitstore rate (first class) / the better bare baseline    (target >= 0.7)

and the p99 of gitstore's lookup at 1 connection (target <= 2 ms). With `--token`, the store
gets an access file and every lookup sends `Authorization: Bearer <token>` of a reader.

Usage:
  .venv/bin/python bench/limit.py [--root STORE] [--token] [--seconds 5] [--rounds 5]
  .venv/bin/python bench/limit.py --smoke     # CI: tiny store, 1 s rounds, the Python client
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours

NODE = 17
RATE_TARGET = 0.7
P99_TARGET_MS = 2.0
WORKERS = 2
BARE_CLASSES = ("gthread", "sync")


class Bare:
    """gunicorn serving `bare_wsgi:app` (`size` bytes) with `worker_class`; a context manager."""

    def __init__(self, worker_class: str, size: int, workers: int) -> None:
        self.port = harness._free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [
            str(Path(sys.executable).with_name("gunicorn")),
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(workers),
            "--worker-class",
            worker_class,
            "--chdir",
            str(Path(__file__).resolve().parent),
            "bare_wsgi:app",
        ]
        if worker_class == "gthread":
            self.args[1:1] = ["--threads", "4"]
        self.size = size
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Bare:
        env = {**os.environ, "BARE_WSGI_SIZE": str(self.size)}
        self.process = subprocess.Popen(
            self.args,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(self.url + "/", timeout=5).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"bare gunicorn did not start: {self.args}")

    def __exit__(self, *exc) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=20)


def add_reader_token(root: Path) -> str:
    """A user `bench` with role reader and a token of it (an access file turns access on)."""
    from gitstore.access.policy import AccessFile, parse_grants

    access = AccessFile(root)
    access.add_user("bench", parse_grants(["reader"]), None)
    return access.create_token("bench", "bench")[1]


def load(url: str, seconds: float, connections: int, headers: dict, use_wrk: bool):
    if use_wrk:
        return harness.wrk(url, seconds, connections=connections, headers=headers)
    parts = urllib.parse.urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return harness.pyload(
        f"http://{parts.netloc}",
        [path],
        seconds,
        processes=1,
        connections=connections,
        headers=headers,
    )


def run(args, root: Path) -> bool:
    use_wrk = harness.has_wrk() and not (args.smoke or args.no_wrk)
    seconds, rounds = (1.0, 1) if args.smoke else (args.seconds, args.rounds)
    headers = {"Authorization": f"Bearer {add_reader_token(root)}"} if args.token else {}
    lookup = harness.LOOKUP.format(node=NODE) + (f"&key={args.key}" if args.key else "")
    targets: dict[str, str] = {}
    with _servers(root, args.classes, args.before) as servers:
        first = servers[f"gitstore-{args.classes[0]}"]
        size = _warm(first.url + lookup, headers, servers)
        with Bare("gthread", size, WORKERS) as bare_threads, Bare("sync", size, WORKERS) as sync:
            for name, server in servers.items():
                targets[name] = server.url + lookup
            targets["bare-gthread"] = bare_threads.url + "/"
            if use_wrk:  # sync workers close every connection: the Python client cannot follow
                targets["bare-sync"] = sync.url + "/"
            results = {name: [] for name in targets}
            for _ in range(rounds):
                for name, url in targets.items():
                    results[name].append(load(url, seconds, 8, headers, use_wrk))
            single = [
                load(targets[f"gitstore-{args.classes[0]}"], seconds, 1, headers, use_wrk)
                for _ in range(rounds)
            ]
    rates = {name: statistics.median(r.rate for r in runs) for name, runs in results.items()}
    bare = [name for name in results if name.startswith("bare-")]
    best_bare = max(rates[name] for name in bare)
    ratio = rates[f"gitstore-{args.classes[0]}"] / best_bare
    per_round = [
        run_.rate / max(results[name][i].rate for name in bare)
        for i, run_ in enumerate(results[f"gitstore-{args.classes[0]}"])
    ]
    p99 = statistics.median(r.p99_ms for r in single)
    errors = sum(r.errors for runs in results.values() for r in runs) + sum(
        r.errors for r in single
    )
    ok = ratio >= RATE_TARGET and p99 <= P99_TARGET_MS and errors == 0
    details = "; ".join(
        f"{name} {rates[name]:.0f} req/s ({', '.join(f'{r.rate:.0f}' for r in runs)})"
        for name, runs in results.items()
    )
    harness.report(
        "limit" + ("-token" if args.token else ""),
        ratio,
        f">= {RATE_TARGET}, p99 <= {P99_TARGET_MS:g} ms",
        ok,
        f"{details}; per-round ratios {', '.join(f'{r:.2f}' for r in per_round)}; "
        f"1 connection: p50 {statistics.median(r.p50_ms for r in single):.2f} ms p99 "
        f"{p99:.2f} ms; {size} bytes; {WORKERS} workers; errors {errors}; "
        f"{results[next(iter(results))][0].tool}, {rounds}x{seconds:g}s; {harness.machine_load()}",
    )
    return errors == 0


class _servers:
    """One `gitstore serve` per worker class, all on `root`; with `before`, also the code of
    that checkout under the first class (the same measurement before a change)."""

    def __init__(self, root: Path, classes: list[str], before: Path | None = None) -> None:
        self.servers = {
            f"gitstore-{name}": harness.Server(root, workers=WORKERS, worker_class=name)
            for name in classes
        }
        if before is not None:
            self.servers["before-" + classes[0]] = harness.Server(
                root, workers=WORKERS, worker_class=classes[0], code=before
            )

    def __enter__(self) -> dict[str, harness.Server]:
        for server in self.servers.values():
            server.__enter__()
        return self.servers

    def __exit__(self, *exc) -> None:
        for server in self.servers.values():
            server.__exit__(*exc)


def _warm(url: str, headers: dict, servers: dict) -> int:
    """GET the lookup often enough on every server that each worker has it; its size."""
    size = 0
    path = url.split("127.0.0.1:", 1)[1].split("/", 1)[1]
    for server in servers.values():
        for _ in range(8 * WORKERS):
            request = urllib.request.Request(f"{server.url}/{path}", headers=headers)
            with urllib.request.urlopen(request, timeout=30) as response:
                size = len(response.read())
    return size


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__, timed=True)
    parser.add_argument("--root", type=Path, help="an existing store (bench/make_store.py)")
    parser.add_argument("--token", action="store_true", help="access control, bearer token")
    parser.add_argument("--key", help="look up this key of the effective document only")
    parser.add_argument(
        "--before", type=Path, help="a checkout of gitstore to serve side by side (git archive)"
    )
    parser.add_argument(
        "--classes",
        default="gevent,gthread",
        type=lambda text: text.split(","),
        help="gitstore worker classes to run (the first one's ratio counts)",
    )
    args = parser.parse_args(argv)
    with harness.scratch("gitstore-limit-", args.workdir) as temp:
        if args.root is not None and args.token:
            raise SystemExit("--token adds an access file: use a store of its own, not --root")
        root = harness.store_for(args, temp, (100, 100), smoke_sizes=(20, 10))
        if not run(args, root):
            raise SystemExit(1)


if __name__ == "__main__":
    main()
