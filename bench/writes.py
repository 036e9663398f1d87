"""Benchmark: committed key writes per second from 8 concurrent clients on one environment.

Each client sends `PATCH .../nodes/<n>/resources/astute/overrides/keys/set` with one new key
on its own keep-alive connection, as fast as the answers come, into the overrides of one node
of environment 1, the requests taking the store's nodes in turn (per-node facts and overrides
are what many writers change at once: they race on the branch, and only sometimes on one
file). The clients are two processes of four connections each (`harness.pyload_requests`:
raw sockets, light on the CPU the server needs). Afterwards every acknowledged key must be
there with its value, and main must have gained exactly one commit per write. The baseline is
the same 8 connections on the bench baseline endpoint (what a request costs the server at all):

    RATIO writes = median over rounds of committed writes/s / 300       (target >= 1)

Usage:
  .venv/bin/python bench/writes.py [--root STORE | --workdir DIR] [--seconds 10] [--rounds 3]
  .venv/bin/python bench/writes.py --smoke       # CI: a tiny store, 1 s (a few seconds)
  .venv/bin/python bench/writes.py --before DIR  # rounds alternated with DIR's code, same run
Without --root a store of 100 nodes and 100 commits is built in a new folder of --workdir (the
temp folder by default) and removed afterwards; writes change a store, so do not point --root
at one you keep. The rounds run one after the other on one server and store. The line also
gives how long creating a file took in the store's folder, because on this machine's disk that
varies thirty-fold with what was deleted nearby in the last minutes (docs/performance.md).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours

TARGET = 300.0
SLOW_DISK_US = 200.0
PATH = "/api/v1/config/environments/1/nodes/{node}/resources/astute/overrides"


class KeyWrites:
    """Request number n of a round: set key `<prefix>_<n>` = n in the overrides of node
    n mod nodes + 1, so consecutive requests take the nodes in turn."""

    def __init__(self, host: str, prefix: str, nodes: int) -> None:
        self.host, self.prefix, self.nodes = host, prefix, nodes

    def write(self, number: int) -> tuple[int, str, int]:
        """(node, key, value) of request `number`."""
        return number % self.nodes + 1, f"{self.prefix}_{number}", number

    def __call__(self, number: int) -> bytes:
        node, key, value = self.write(number)
        body = json.dumps([[key, value]]).encode()
        head = (
            f"PATCH {PATH.format(node=node)}/keys/set HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body


def write_load(
    server: harness.Server, clients: int, seconds: float, nodes: int
) -> tuple[list, int, float]:
    """`clients` connections writing for `seconds` from two processes: the writes
    acknowledged (node, key, value), the failed requests, and the time taken."""
    prefix = f"r{uuid.uuid4().hex[:6]}"  # new keys also on a store an earlier run wrote to
    writes = KeyWrites("127.0.0.1", prefix, nodes)
    processes = 2 if clients >= 2 else 1
    started = time.perf_counter()
    load = harness.pyload_requests(
        server.url, writes, seconds, processes=processes, connections=clients // processes
    )
    elapsed = time.perf_counter() - started
    return [writes.write(number) for number in load.answered], load.errors, elapsed


def check(server: harness.Server, done: list) -> list[str]:
    """Every acknowledged write, read back from each node's overrides document."""
    problems = []
    for node in sorted({node for node, _, _ in done}):
        status, body, _ = server.get(PATH.format(node=node))
        document = json.loads(body) if status == 200 else {}
        problems += [
            f"node {node}: {key} missing or wrong"
            for n, key, value in done
            if n == node and document.get(key) != value
        ]
    return problems


def commits(server: harness.Server) -> int:
    _, _, headers = server.get(PATH.format(node=1).replace("/overrides", "/values"))
    return int(headers["X-Gitstore-Version"])


@dataclass
class Round:
    rate: float
    writes: int
    cpu_ms: float  # server CPU per write
    problems: list[str]


def one_round(server: harness.Server, clients: int, seconds: float, nodes: int) -> Round:
    """Write for `seconds`; then check every acknowledged write and the commit count."""
    before = commits(server)
    cpu = harness.cpu_seconds(server.workers())
    done, failures, elapsed = write_load(server, clients, seconds, nodes)
    cpu = harness.cpu_seconds(server.workers()) - cpu
    problems = [f"{failures} requests failed"] if failures else []
    problems += check(server, done)
    gained = commits(server) - before
    if gained != len(done):
        problems.append(f"main gained {gained} commits for {len(done)} acknowledged writes")
    return Round(len(done) / elapsed, len(done), cpu / max(len(done), 1) * 1000, problems)


def run(root: Path, clients: int, seconds: float, rounds: int, workers: int | None) -> bool:
    from gitstore import Store

    nodes = len(Store(root).environment_repo(1).snapshot().list("nodes"))
    creation = harness.file_creation_us(root)
    with harness.Server(root, workers=workers) as server:
        size = server.warm([PATH.format(node=n) for n in range(1, clients + 1)], rounds=2)
        baseline = harness.pyload(
            server.url, [harness.baseline_path(size)], seconds, processes=1, connections=clients
        )
        ticks = harness.cpu_ticks()
        results = [one_round(server, clients, seconds, nodes) for _ in range(rounds)]
        stolen = harness.stolen_share(ticks, harness.cpu_ticks())
    problems = [problem for result in results for problem in result.problems]
    median = sorted(results, key=lambda result: result.rate)[len(results) // 2]
    ok = median.rate >= TARGET and not problems
    harness.report(
        "writes",
        median.rate / TARGET,
        f">= 1 ({TARGET:g} writes/s)",
        ok,
        f"{median.rate:.0f} committed writes/s from {clients} clients, median of "
        f"{rounds} rounds of {seconds:g}s (rounds: "
        f"{', '.join(f'{r.rate:.0f}' for r in results)} writes/s, server CPU "
        f"{', '.join(f'{r.cpu_ms:.1f}' for r in results)} ms per write; "
        f"{sum(r.writes for r in results)} writes, all present: {not problems}); "
        f"baseline {baseline.rate:.0f} "
        f"req/s on the same connections; creating a file in the store's folder "
        f"took {creation:.0f} us; the host took {stolen:.0%} of the CPUs (steal); "
        f"{harness.machine_load()}",
    )
    if creation > SLOW_DISK_US:
        print(
            f"WARNING creating a file took {creation:.0f} us (about 30 us on a quiet disk): "
            "many files were deleted near this folder recently; see docs/performance.md"
        )
    for problem in problems[:10]:
        print("PROBLEM", problem)
    return not problems


def compare_before(temp: Path, before: Path, clients: int, seconds: float, rounds: int) -> None:
    """Rounds on this code and on `before`'s (two stores, two servers), alternated, so the
    same neighbours slow both; every write checked as in `run`."""
    results: dict[str, list[Round]] = {"now": [], "before": []}
    for name in results:
        harness.make_store.build(temp / name, 100, 100, keys=100)
    with (
        harness.Server(temp / "now") as now,
        harness.Server(temp / "before", code=before) as old,
    ):
        for _ in range(rounds):
            for name, server in (("now", now), ("before", old)):
                results[name].append(one_round(server, clients, seconds, 100))
    rates = {}
    for name, done in results.items():
        rates[name] = statistics.median(r.rate for r in done)
        problems = [problem for r in done for problem in r.problems]
        print(
            f"{name}: {rates[name]:.0f} committed writes/s (rounds "
            f"{', '.join(f'{r.rate:.0f}' for r in done)}; server CPU "
            f"{', '.join(f'{r.cpu_ms:.1f}' for r in done)} ms per write); all present and one "
            f"commit each: {not problems}"
        )
    print(
        f"now / before: {rates['now'] / rates['before']:.2f} (alternated rounds of {seconds:g}s); "
        f"{harness.machine_load()}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__, timed=True)
    parser.add_argument("--root", type=Path, help="a store to write into (it is changed)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--before", type=Path, help="alternate rounds with this checkout's code (git archive)"
    )
    args = parser.parse_args(argv)
    with harness.scratch("gitstore-writes-", args.workdir) as temp:
        if args.before is not None:
            compare_before(temp, args.before, args.clients, args.seconds, args.rounds)
            return
        root = harness.store_for(args, temp, (100, 100), smoke_sizes=(10, 10))
        seconds, rounds = (1.0, 1) if args.smoke else (args.seconds, args.rounds)
        workers = args.workers or (1 if args.smoke else None)
        if not run(root, args.clients, seconds, rounds, workers):
            raise SystemExit(1)


if __name__ == "__main__":
    main()
