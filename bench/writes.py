"""Benchmark: committed key writes per second from 8 concurrent clients on one environment.

Each client sends `PATCH .../nodes/<n>/resources/astute/overrides/keys/set` with one new key
(client, sequence number) on its own keep-alive connection, as fast as the answers come, into
the overrides of one node of environment 1, the clients taking the store's nodes in turn
(per-node facts and overrides are what many writers change at once: they race on the branch,
and only sometimes on one file). Afterwards every written key must be there with its value,
and main must have gained exactly one commit per write. The baseline is the same 8 clients on
the bench baseline endpoint (what a request costs the server at all):

    RATIO writes = committed writes/s / 200       (target >= 1)

Usage:
  .venv/bin/python bench/writes.py [--root STORE] [--seconds 10] [--clients 8]
  .venv/bin/python bench/writes.py --smoke       # CI: a tiny store, 1 s (a few seconds)
Without --root a store of 100 nodes and 100 commits is built in a temporary folder (writes
change it: do not point --root at a store you keep).
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours
import make_store  # noqa: E402

TARGET = 200.0
PATH = "/api/v1/config/environments/1/nodes/{node}/resources/astute/overrides"


def _client(server: harness.Server, number: int, deadline: float, done: list,
            failures: list, clients: int, nodes: int) -> None:
    """Write keys `w<number>_<seq>` = seq until the deadline; record what was acknowledged."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    seq = 0
    while time.perf_counter() < deadline:
        node = (number + clients * seq) % nodes + 1
        body = json.dumps([[f"w{number}_{seq}", seq]])
        conn.request("PATCH", PATH.format(node=node) + "/keys/set", body,
                     {"Content-Type": "application/json"})
        response = conn.getresponse()
        text = response.read()
        if response.status != 204:
            failures.append(f"{response.status} {text[:200]!r}")
            break
        done.append((node, f"w{number}_{seq}", seq))
        seq += 1
    conn.close()


def write_load(server: harness.Server, clients: int, seconds: float,
               nodes: int) -> tuple[list, list, float]:
    done: list = []
    failures: list = []
    started = time.perf_counter()
    threads = [threading.Thread(target=_client, args=(server, n, started + seconds, done,
                                                      failures, clients, nodes))
               for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done, failures, time.perf_counter() - started


def check(server: harness.Server, done: list) -> list[str]:
    """Every acknowledged write, read back from each node's overrides document."""
    problems = []
    for node in sorted({node for node, _, _ in done}):
        status, body, _ = server.get(PATH.format(node=node))
        document = json.loads(body) if status == 200 else {}
        problems += [f"node {node}: {key} missing or wrong" for n, key, value in done
                     if n == node and document.get(key) != value]
    return problems


def commits(server: harness.Server) -> int:
    _, _, headers = server.get(PATH.format(node=1).replace("/overrides", "/values"))
    return int(headers["X-Gitstore-Version"])


def run(root: Path, clients: int, seconds: float, workers: int | None) -> bool:
    from gitstore import Store

    nodes = len(Store(root).environment_repo(1).snapshot().list("nodes"))
    with harness.Server(root, workers=workers) as server:
        size = server.warm([PATH.format(node=n) for n in range(1, clients + 1)], rounds=2)
        baseline = harness.pyload(server.url, [harness.baseline_path(size)], seconds,
                                  processes=1, connections=clients)
        before = commits(server)
        cpu = harness.cpu_seconds(server.workers())
        done, failures, elapsed = write_load(server, clients, seconds, nodes)
        cpu = harness.cpu_seconds(server.workers()) - cpu
        problems = failures + check(server, done)
        gained = commits(server) - before
    if gained != len(done):
        problems.append(f"main gained {gained} commits for {len(done)} acknowledged writes")
    rate = len(done) / elapsed
    ok = rate >= TARGET and not problems
    harness.report("writes", rate / TARGET, f">= 1 ({TARGET:g} writes/s)", ok,
                   f"{rate:.0f} committed writes/s from {clients} clients ({len(done)} writes, "
                   f"all present: {not problems}; server CPU {cpu / elapsed:.2f} cores, "
                   f"{cpu / max(len(done), 1) * 1000:.1f} ms per write); baseline "
                   f"{baseline.rate:.0f} req/s on the same connections; {seconds:g}s; "
                   f"{harness.machine_load()}")
    for problem in problems[:10]:
        print("PROBLEM", problem)
    return not problems


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="a store to write into (it is changed)")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, help="gunicorn workers (default: serve's)")
    parser.add_argument("--smoke", action="store_true", help="tiny and quick, for CI")
    args = parser.parse_args(argv)
    temp = Path(tempfile.mkdtemp(prefix="gitstore-writes-"))
    try:
        root = args.root
        if root is None:
            root = temp / "store"
            make_store.build(root, *((10, 10) if args.smoke else (100, 100)), keys=100)
        seconds = 1.0 if args.smoke else args.seconds
        workers = args.workers or (1 if args.smoke else None)
        if not run(root, args.clients, seconds, workers):
            raise SystemExit(1)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
