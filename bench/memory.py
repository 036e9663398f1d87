"""Benchmark: worker memory after 100,000 lookups across every node of a 5,000-node store.

The server (`gitstore serve`, default workers) answers effective-value lookups of every node
in turn (`.../nodes/<n>/resources/astute/values?effective`), so every cache of every worker
fills to its bound. The largest worker's resident set size (VmRSS) is then compared with the
target; the baseline is the same worker's RSS after its first lookup:

    RATIO memory = largest worker RSS / 300 MB      (target <= 1)

Usage:
  .venv/bin/python bench/memory.py --root STORE [--lookups 100000]
  .venv/bin/python bench/memory.py --smoke        # CI: 200 nodes, 2,000 lookups
Without --root a store of 5,000 nodes and 1,000 commits is built first (about a minute);
bench/make_store.py builds the 10,000-commit one.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours

TARGET_MB = 300.0


def _nodes(root: Path) -> int:
    from gitstore import Store

    return len(Store(root).environment_repo(1).snapshot().list("nodes"))


def run(root: Path, lookups: int, workers: int | None) -> bool:
    paths = [harness.LOOKUP.format(node=n) for n in range(1, _nodes(root) + 1)]
    with harness.Server(root, workers=workers) as server:
        server.warm(paths[:1])
        pids = server.workers()
        before = {pid: harness.rss_mb(pid) for pid in pids}
        load = harness.pyload(server.url, paths, 0, processes=2, connections=4, total=lookups)
        after = {pid: harness.rss_mb(pid) for pid in pids}
    largest = max(after, key=after.get)
    ok = after[largest] <= TARGET_MB and load.errors == 0
    harness.report(
        "memory",
        after[largest] / TARGET_MB,
        f"<= 1 ({TARGET_MB:g} MB)",
        ok,
        f"largest worker {after[largest]:.0f} MB after {load.requests} lookups of "
        f"{len(paths)} nodes (workers: "
        f"{', '.join(f'{after[p]:.0f}' for p in pids)} MB); baseline: that worker "
        f"after one lookup {before[largest]:.0f} MB; {load.rate:.0f} lookups/s; "
        f"errors {load.errors}; {harness.machine_load()}",
    )
    return load.errors == 0


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__)
    parser.add_argument("--root", type=Path, help="an existing store (bench/make_store.py)")
    parser.add_argument("--lookups", type=int, default=100_000)
    args = parser.parse_args(argv)
    with harness.scratch("gitstore-memory-", args.workdir) as temp:
        root = harness.store_for(args, temp, (5000, 1000), smoke_sizes=(200, 10))
        lookups = 2000 if args.smoke else args.lookups
        workers = args.workers or (1 if args.smoke else None)
        if not run(root, lookups, workers):
            raise SystemExit(1)


if __name__ == "__main__":
    main()
