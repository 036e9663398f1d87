"""Benchmark: the cost of a warm lookup does not grow with history or with the number of nodes.

Two stores, two servers with the same settings: a small one (10 nodes, 10 commits) and a large
one (5,000 nodes, 10,000 commits; `--big` names one made by bench/make_store.py, else it is
built, which takes minutes). The same lookup (node 7's effective astute values) is loaded on
each in alternating rounds; time per request is the inverse of the rate:

    RATIO flat = time per lookup on the large store / on the small store   (target <= 1.2)

Usage:
  .venv/bin/python bench/flat.py --big STORE [--seconds 10] [--rounds 3]
  .venv/bin/python bench/flat.py --smoke          # CI: 10 vs 100 nodes and commits, 1 s rounds
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours
import make_store  # noqa: E402

NODE = 7
TARGET = 1.2


def run(
    small: Path, big: Path, seconds: float, rounds: int, use_wrk: bool, workers: int | None
) -> bool:
    path = harness.LOOKUP.format(node=NODE)
    with harness.Server(small, workers=workers) as one, harness.Server(big, workers=workers) as two:
        sizes = {one.warm([path]), two.warm([path])}
        runs: dict[str, list[harness.Load]] = {"small": [], "big": []}
        for _ in range(rounds):
            runs["small"].append(harness.measure(one, path, seconds, use_wrk=use_wrk))
            runs["big"].append(harness.measure(two, path, seconds, use_wrk=use_wrk))
    rate = {name: statistics.median(r.rate for r in loads) for name, loads in runs.items()}
    p50 = {name: statistics.median(r.p50_ms for r in loads) for name, loads in runs.items()}
    errors = sum(r.errors for loads in runs.values() for r in loads)
    ratio = rate["small"] / rate["big"]
    harness.report(
        "flat",
        ratio,
        f"<= {TARGET:g}",
        ratio <= TARGET and errors == 0,
        f"large store {rate['big']:.0f} req/s p50 {p50['big']:.2f} ms; small store "
        f"{rate['small']:.0f} req/s p50 {p50['small']:.2f} ms; body sizes "
        f"{sorted(sizes)} bytes; errors {errors}; {runs['big'][0].tool}, "
        f"{rounds}x{seconds:g}s; {harness.machine_load()}",
    )
    return errors == 0


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__, timed=True)
    parser.add_argument("--big", type=Path, help="the large store (bench/make_store.py)")
    args = parser.parse_args(argv)
    with harness.scratch("gitstore-flat-", args.workdir) as temp:
        small = temp / "small"
        make_store.build(small, 10, 10, keys=100)
        big = args.big
        if big is None:
            big = temp / "big"
            make_store.build(big, *((100, 100) if args.smoke else (5000, 10_000)), keys=100)
        seconds, rounds = (1.0, 1) if args.smoke else (args.seconds, args.rounds)
        use_wrk = harness.has_wrk() and not (args.smoke or args.no_wrk)
        workers = args.workers or (1 if args.smoke else None)
        if not run(small, big, seconds, rounds, use_wrk, workers):
            raise SystemExit(1)


if __name__ == "__main__":
    main()
