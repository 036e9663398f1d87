"""Benchmark: 1,000 parked blocking queries on one environment (docs/watch.md).

With `gitstore serve`'s defaults (gevent workers), WATCHERS blocking queries watch the effective
`bench` key of astute on 100 nodes (10 per node, `?index=<head>&wait=10m`), each on its own
connection from an asyncio client. Then:

- precision: a commit changing node 17's value must answer exactly node 17's watchers;
- latency: a commit changing the global value must answer all of them; p99 of (answer time -
  the write's acknowledgement) is reported (target <= 1 s);
- memory: RSS of the master and workers with the watchers parked / idle (target <= 1.5);
- lookups: the lookup rate (bench/lookup.py's path) with the watchers parked / without them
  (target >= 0.9).

    RATIO watch = lookup rate parked / lookup rate without watchers

Usage:
  .venv/bin/python bench/watch.py [--root STORE] [--watchers 1000] [--seconds 10]
  .venv/bin/python bench/watch.py --smoke       # CI: 20 nodes, 40 watchers, 1 s rounds
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours

VALUES = "/api/v1/config/environments/1/{scope}resources/astute/{kind}"
NODE = 17
P99_TARGET_S, RSS_TARGET, RATE_TARGET = 1.0, 1.5, 0.9


def _path(scope: str, kind: str) -> str:
    return VALUES.format(scope=scope, kind=kind)


def _watch_path(node: int, index: str) -> str:
    return _path(f"nodes/{node}/", "values") + f"?effective&key=bench&index={index}&wait=10m"


def _set(server: harness.Server, scope: str, value: int) -> tuple[str, float]:
    """Set `bench.<scope name>` in the overrides of `scope`; the commit and when it was acked."""
    field = "node" if scope else "global"
    body = json.dumps([["bench", field, value]]).encode()
    request = urllib.request.Request(
        server.url + _path(scope, "overrides") + "/keys/set",
        data=body,
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.headers["X-Gitstore-Commit"], time.monotonic()


async def _watch(port: int, node: int, index: str, done: dict) -> None:
    """One blocking query on its own connection; records when its answer arrived."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    path = _watch_path(node, index)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    answer = await reader.read()
    done[(node, id(reader))] = (time.monotonic(), answer.split(b"\r\n", 1)[0])
    writer.close()


class Watchers:
    """`count` parked watchers over `nodes` nodes, in an asyncio loop of the bench process."""

    def __init__(self, port: int, nodes: int, count: int) -> None:
        self.port, self.nodes, self.count = port, nodes, count
        self.done: dict = {}
        self.tasks: list[asyncio.Task] = []

    async def park(self, index: str) -> None:
        for number in range(self.count):
            node = number % self.nodes + 1
            self.tasks.append(asyncio.create_task(_watch(self.port, node, index, self.done)))
            if number % 50 == 49:
                await asyncio.sleep(0.05)  # do not flood the accept queue
        await asyncio.sleep(2.0)


def _rss(server: harness.Server) -> float:
    return sum(harness.rss_mb(pid) for pid in [server.process.pid, *server.workers()])


async def _run(server: harness.Server, nodes: int, count: int, seconds: float) -> bool:
    loop = asyncio.get_running_loop()
    lookup = harness.LOOKUP.format(node=NODE)
    _set(server, "", 0)
    server.warm([lookup, _path(f"nodes/{NODE}/", "values") + "?effective&key=bench"])
    _, _, headers = server.get(_path(f"nodes/{NODE}/", "values") + "?effective&key=bench")
    index = headers["X-Gitstore-Index"]
    idle_rss = _rss(server)

    def rate() -> harness.Load:
        return harness.measure(server, lookup, seconds, use_wrk=harness.has_wrk())

    without = await loop.run_in_executor(None, rate)
    watchers = Watchers(server.port, nodes, count)
    await watchers.park(index)
    early = len(watchers.done)
    parked_rss = _rss(server)
    parked = await loop.run_in_executor(None, rate)

    _, node_ack = await loop.run_in_executor(None, _set, server, f"nodes/{NODE}/", 1)
    await asyncio.sleep(3.0)
    woken = {node for node, _ in watchers.done}
    precise = woken == {NODE} and len(watchers.done) == count // nodes
    node_latency = [at - node_ack for at, _ in watchers.done.values()]

    before = dict(watchers.done)
    _, global_ack = await loop.run_in_executor(None, _set, server, "", 1)
    await asyncio.wait_for(asyncio.gather(*watchers.tasks, return_exceptions=True), 60)
    latency = sorted(at - global_ack for key, (at, _) in watchers.done.items() if key not in before)
    statuses = {status for _, status in watchers.done.values()}
    p99 = latency[min(len(latency) - 1, int(len(latency) * 0.99))] if latency else float("inf")
    ratio = parked.rate / without.rate
    rss_ratio = parked_rss / idle_rss
    ok = (
        precise
        and early == 0
        and len(watchers.done) == count
        and p99 <= P99_TARGET_S
        and rss_ratio <= RSS_TARGET
        and ratio >= RATE_TARGET
    )
    harness.report(
        "watch",
        ratio,
        f">= {RATE_TARGET}, p99 <= {P99_TARGET_S:g} s, RSS <= {RSS_TARGET}x, exact wake-up",
        ok,
        f"{count} watchers on {nodes} nodes; returned before any commit {early}; node commit "
        f"woke {len(before)} (nodes {sorted(woken)}), max {max(node_latency, default=0):.3f} s; "
        f"global commit woke {len(latency)}: p50 {statistics.median(latency or [0]):.3f} s "
        f"p99 {p99:.3f} s; statuses {sorted(s.decode() for s in statuses)}; RSS idle "
        f"{idle_rss:.0f} MB parked {parked_rss:.0f} MB ({rss_ratio:.2f}x); lookups without "
        f"{without.rate:.0f} req/s, parked {parked.rate:.0f} req/s; {harness.machine_load()}",
    )
    return ok


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__, timed=True)
    parser.add_argument("--root", type=Path, help="an existing store")
    parser.add_argument("--watchers", type=int, default=1000)
    args = parser.parse_args(argv)
    with harness.scratch("gitstore-watch-", args.workdir) as temp:
        root = harness.store_for(args, temp, (100, 20), smoke_sizes=(20, 10))
        nodes = 20 if args.smoke else 100
        count = 40 if args.smoke else args.watchers
        seconds = 1.0 if args.smoke else args.seconds
        workers = args.workers or (1 if args.smoke else None)
        with harness.Server(root, workers=workers, worker_class=args.worker_class) as server:
            ok = asyncio.run(_run(server, nodes, count, seconds))
        if not ok and not args.smoke:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
