"""Benchmark: does a key write cost what the document costs? One large and one small document.

Part 1 (one client): a new key set in node 1's astute values, which hold Fuel's controller.yaml
(27 KB, ~1,600 keys and leaves), alternating with a new key set in node 2's, which hold 10
keys; each write is `PATCH .../keys/set` answered 204 before the next is sent. The medians of
the two latencies give

    RATIO docwrites = median write into the large document / into the small one  (target <= 1.3)

Part 2 (8 clients): every client sets new keys in the one global astute values document (Fuel's
compute.yaml to start with, growing by a key per write) for `--seconds`; every acknowledged key
must be there afterwards, and main must have gained one commit per write:

    RATIO global-writes = committed writes/s / 200                                (target >= 1)

Usage:
  .venv/bin/python bench/docwrites.py [--workdir DIR] [--writes 200] [--seconds 10] [--rounds 3]
  .venv/bin/python bench/docwrites.py --smoke     # CI: a few writes and one short round
"""

from __future__ import annotations

import http.client
import json
import statistics
import sys
import time
import uuid
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours

FUEL = harness.PROJECT / "tests" / "data" / "fuel" / "astute"
NODE_VALUES = "/api/v1/config/environments/1/nodes/{node}/resources/astute/values"
GLOBAL_VALUES = "/api/v1/config/environments/1/resources/astute/values"
RATIO_TARGET = 1.3
RATE_TARGET = 200.0


def build(root: Path) -> None:
    from gitstore import Store
    from gitstore.backend.repository import Author

    author = Author("bench", "bench@example.com")
    store = Store.init(root)
    store.components.create({"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    documents = {
        ((), "astute", "values"): yaml.safe_load((FUEL / "compute.yaml").read_text()),
        ((("nodes", "1"),), "astute", "values"): yaml.safe_load(
            (FUEL / "controller.yaml").read_text()
        ),
        ((("nodes", "2"),), "astute", "values"): {f"fact_{i}": i for i in range(10)},
    }
    store.config.write_many(1, documents, "bench: a large and a small node document", author)


class Client:
    """One keep-alive connection sending key writes."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=30)

    def set_key(self, path: str, key: str, value: int) -> float:
        body = json.dumps([[key, value]])
        started = time.perf_counter()
        self.connection.request(
            "PATCH", path + "/keys/set", body, {"Content-Type": "application/json"}
        )
        response = self.connection.getresponse()
        response.read()
        took = time.perf_counter() - started
        if response.status != 204:
            raise SystemExit(f"PATCH {path}: {response.status}")
        return took


def latencies(server: harness.Server, writes: int) -> tuple[list[float], list[float]]:
    client = Client(server.url)
    prefix = f"k{uuid.uuid4().hex[:6]}"
    large, small = [], []
    for number in range(writes):
        large.append(client.set_key(NODE_VALUES.format(node=1), f"{prefix}_{number}", number))
        small.append(client.set_key(NODE_VALUES.format(node=2), f"{prefix}_{number}", number))
    return large, small


class GlobalWrites:
    """Request n: set key `<prefix>_<n>` = n in the global astute values."""

    def __init__(self, host: str, prefix: str) -> None:
        self.host, self.prefix = host, prefix

    def __call__(self, number: int) -> bytes:
        body = json.dumps([[f"{self.prefix}_{number}", number]]).encode()
        head = (
            f"PATCH {GLOBAL_VALUES}/keys/set HTTP/1.1\r\nHost: {self.host}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        return head.encode() + body


def global_round(server: harness.Server, seconds: float) -> tuple[float, int, list[str]]:
    """8 clients on the global document for `seconds`: writes/s, writes, problems."""
    before = _version(server)
    prefix = f"g{uuid.uuid4().hex[:6]}"
    started = time.perf_counter()
    load = harness.pyload_requests(
        server.url, GlobalWrites("127.0.0.1", prefix), seconds, processes=2, connections=4
    )
    elapsed = time.perf_counter() - started
    _, body, _ = server.get(GLOBAL_VALUES)
    document = json.loads(body)
    problems = [f"{load.errors} requests failed"] if load.errors else []
    missing = [n for n in load.answered if document.get(f"{prefix}_{n}") != n]
    if missing:
        problems.append(f"{len(missing)} acknowledged writes missing, e.g. {missing[:3]}")
    gained = _version(server) - before
    if gained != len(load.answered):
        problems.append(f"main gained {gained} commits for {len(load.answered)} writes")
    return len(load.answered) / elapsed, len(load.answered), problems


def _version(server: harness.Server) -> int:
    _, _, headers = server.get(GLOBAL_VALUES)
    return int(headers["X-Gitstore-Version"])


def compare_before(root: Path, before: Path, writes: int, workers: int | None) -> None:
    """Part 1 on this code and on `before`'s (two stores, two servers), in alternating blocks of
    ten writes per document, so the same neighbours slow both."""
    build(root / "now")
    build(root / "before")
    with (
        harness.Server(root / "now", workers=workers) as now,
        harness.Server(root / "before", workers=workers, code=before) as old,
    ):
        runs: dict[str, tuple[list, list]] = {"now": ([], []), "before": ([], [])}
        for _ in range(max(writes // 10, 1)):
            for name, server in (("now", now), ("before", old)):
                large, small = latencies(server, 10)
                runs[name][0].extend(large)
                runs[name][1].extend(small)
    for name, (large, small) in runs.items():
        print(
            f"{name}: one key into 1,600 keys {statistics.median(large) * 1000:.2f} ms, into 10 "
            f"keys {statistics.median(small) * 1000:.2f} ms, ratio "
            f"{statistics.median(large) / statistics.median(small):.3f}"
        )


def run(root: Path, writes: int, seconds: float, rounds: int, workers: int | None) -> bool:
    build(root)
    with harness.Server(root, workers=workers) as server:
        latencies(server, 5)  # every worker has parsed both documents once
        large, small = latencies(server, writes)
        ratio = statistics.median(large) / statistics.median(small)
        harness.report(
            "docwrites",
            ratio,
            f"<= {RATIO_TARGET}",
            ratio <= RATIO_TARGET,
            f"one key into 1,600 keys: median {statistics.median(large) * 1000:.2f} ms, "
            f"into 10 keys: {statistics.median(small) * 1000:.2f} ms ({writes} each, "
            f"alternating, one client); {harness.machine_load()}",
        )
        results = [global_round(server, seconds) for _ in range(rounds)]
    problems = [problem for _, _, found in results for problem in found]
    rate = statistics.median(rate for rate, _, _ in results)
    harness.report(
        "global-writes",
        rate / RATE_TARGET,
        f">= 1 ({RATE_TARGET:g} writes/s)",
        rate >= RATE_TARGET and not problems,
        f"{rate:.0f} committed writes/s from 8 clients into one global document, median of "
        f"{rounds} rounds of {seconds:g}s (rounds: "
        f"{', '.join(f'{r:.0f}' for r, _, _ in results)}); "
        f"{sum(n for _, n, _ in results)} writes, all present: {not problems}; "
        f"{harness.machine_load()}",
    )
    for problem in problems[:10]:
        print("PROBLEM", problem)
    return not problems


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__, timed=True)
    parser.add_argument("--writes", type=int, default=200, help="writes into each document")
    parser.add_argument(
        "--before", type=Path, help="compare part 1 with this checkout's code (git archive)"
    )
    args = parser.parse_args(argv)
    with harness.scratch("gitstore-docwrites-", args.workdir) as temp:
        if args.before is not None:
            compare_before(temp, args.before, args.writes, args.workers)
            return
        writes, seconds, rounds = (
            (5, 1.0, 1) if args.smoke else (args.writes, args.seconds, args.rounds)
        )
        workers = args.workers or (1 if args.smoke else None)
        if not run(temp / "store", writes, seconds, rounds, workers):
            raise SystemExit(1)


if __name__ == "__main__":
    main()
