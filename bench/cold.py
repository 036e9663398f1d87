"""Benchmark: the first lookup of each node (no node's cache warm) through the real server.

A fresh `gitstore serve` (default workers) answers one effective-value lookup of every node of
the store, each node once (`.../nodes/<n>/resources/astute/values?effective`), over 8
keep-alive connections (wrk with `wrk_once.lua` when it is installed, else 2 Python client
processes x 4; `--no-wrk` forces those); before that, one lookup of node 1 on every worker, so
what is shared by all nodes (the global layer) is warm and each node's own work is not. The
same run then measures warm lookups of that one node (answered from the caches) as context:

    RATIO cold = cold lookups per second / 1,000      (target >= 1)

Each round starts a new server, so every round is cold; the median round counts. With
`--before DIR` (another checkout, e.g. `git archive <commit> | tar -x -C DIR`) each round also
serves DIR the same way, interleaved, and the line adds the cold rate's ratio to it.

Usage:
  .venv/bin/python bench/cold.py --root STORE [--rounds 3] [--before DIR] [--no-wrk]
  .venv/bin/python bench/cold.py --smoke        # CI: 200 nodes, 1 round
Without --root a store of 5,000 nodes and 1,000 commits is built first (about a minute).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours

TARGET = 1000.0
WARM_SECONDS = 3.0


def _nodes(root: Path) -> int:
    from gitstore import Store

    return len(Store(root).environment_repo(1).snapshot().list("nodes"))


class Round(NamedTuple):
    cold: float  # lookups/s
    warm: float
    cpu_ms: float  # the workers' CPU per cold lookup
    errors: int
    tool: str  # the load generator of the cold lookups


def one_round(root: Path, paths: list[str], args, code: Path | None) -> Round:
    """Cold then warm lookups of a fresh server."""
    with harness.Server(
        root, workers=args.workers, worker_class=args.worker_class, code=code
    ) as server:
        server.warm(paths[:1])
        pids = server.workers()
        cpu = harness.cpu_seconds(pids)
        cold = _each_once(server.url, paths, args)
        cpu = harness.cpu_seconds(pids) - cpu
        warm = harness.pyload(server.url, paths[:1], 1 if args.smoke else WARM_SECONDS)
    return Round(
        cold.rate, warm.rate, cpu / len(paths) * 1000, cold.errors + warm.errors, cold.tool
    )


def _each_once(url: str, paths: list[str], args) -> harness.Load:
    """Every path requested once over 8 keep-alive connections: by wrk when it is installed
    (its CPU is the server's loss on 2 shared CPUs: ~0.02 ms a request against the Python
    client's ~0.12), else by the Python client."""
    if harness.has_wrk() and not args.no_wrk:
        return harness.wrk_once(url, paths, connections=8, threads=2)
    return harness.pyload(url, paths, 0, processes=2, connections=4, total=len(paths))


def run(root: Path, args) -> bool:
    paths = [harness.LOOKUP.format(node=n) for n in range(1, _nodes(root) + 1)]
    now: list[Round] = []
    before: list[Round] = []
    for number in range(1 if args.smoke else args.rounds):
        now.append(one_round(root, paths, args, None))
        if args.before is not None:
            before.append(one_round(root, paths, args, args.before))
        print(f"round {number + 1}: {_describe(now[-1])}", end="", flush=True)
        print(f"; before: {_describe(before[-1])}" if before else "", flush=True)
    cold = statistics.median(r.cold for r in now)
    warm = statistics.median(r.warm for r in now)
    cpu = statistics.median(r.cpu_ms for r in now)
    details = (
        f"cold {cold:.0f} lookups/s of {len(paths)} nodes, each once ({now[0].tool}; rounds "
        f"{', '.join(f'{r.cold:.0f}' for r in now)}), workers' CPU {cpu:.2f} ms per cold "
        f"lookup; warm lookups of one node {warm:.0f}/s (cold/warm {cold / warm:.2f})"
    )
    if before:
        old = statistics.median(r.cold for r in before)
        old_cpu = statistics.median(r.cpu_ms for r in before)
        details += (
            f"; before: cold {old:.0f}/s, CPU {old_cpu:.2f} ms: rate {cold / old:.2f}x, "
            f"CPU {cpu / old_cpu:.2f}x"
        )
    errors = sum(r.errors for r in now + before)
    details += f"; errors {errors}; {harness.machine_load()}"
    harness.report("cold", cold / TARGET, f">= 1 ({TARGET:g}/s)", cold >= TARGET, details)
    return errors == 0


def _describe(result: Round) -> str:
    return f"cold {result.cold:.0f}/s ({result.cpu_ms:.2f} ms CPU each), warm {result.warm:.0f}/s"


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__)
    parser.add_argument("--root", type=Path, help="an existing store (bench/make_store.py)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout to serve, interleaved")
    parser.add_argument("--no-wrk", action="store_true", help="load from the Python client")
    args = parser.parse_args(argv)
    with harness.scratch("gitstore-cold-", args.workdir) as temp:
        root = harness.store_for(args, temp, (5000, 1000), smoke_sizes=(200, 10))
        if not run(root, args):
            raise SystemExit(1)


if __name__ == "__main__":
    main()
