"""Benchmark: warm effective-value lookups against a baseline endpoint of the same size.

The lookup is `GET .../environments/1/nodes/<n>/resources/astute/values?effective` (the global
astute of a Fuel compute node merged with the node's facts, ~25 KB of JSON). The baseline is
`GET /bench/baseline/<bytes>` on the same server (same gunicorn settings, same access check)
returning a cached body of exactly as many bytes: what serving those bytes costs at all. Both
are loaded in alternating rounds from another process on loopback (8 connections); the rates'
medians give the ratio. The p99 target is checked on one connection, where a request waits for
no other (with 8, p99 mostly measures queueing behind the other 7 on 2 cores):

    RATIO lookup = lookup rate / baseline rate     (target >= 0.5; and lookup p99 <= 5 ms)

Usage:
  .venv/bin/python bench/lookup.py [--root STORE] [--seconds 10] [--rounds 3]
  .venv/bin/python bench/lookup.py --smoke      # CI: a tiny store, 1 s rounds (a few seconds)
Without --root a store of 100 nodes and 100 commits is built in a temporary folder.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours

NODE = 17
P99_TARGET_MS = 5.0
RATE_TARGET = 0.5


def compare(
    server: harness.Server, a: str, b: str, seconds: float, rounds: int, use_wrk: bool
) -> tuple[list[harness.Load], list[harness.Load]]:
    """Alternating load rounds on paths `a` and `b` (a first): a noisy neighbour hits both."""
    runs_a, runs_b = [], []
    for _ in range(rounds):
        runs_a.append(harness.measure(server, a, seconds, use_wrk=use_wrk))
        runs_b.append(harness.measure(server, b, seconds, use_wrk=use_wrk))
    return runs_a, runs_b


def median(runs: list[harness.Load], field: str) -> float:
    return statistics.median(getattr(run, field) for run in runs)


def run(
    root: Path,
    seconds: float,
    rounds: int,
    use_wrk: bool,
    workers: int | None,
    worker_class: str | None = None,
) -> bool:
    lookup = harness.LOOKUP.format(node=NODE)
    with harness.Server(root, workers=workers, worker_class=worker_class) as server:
        size = server.warm([lookup])
        baseline = harness.baseline_path(size)
        server.warm([baseline])
        base_runs, lookup_runs = compare(server, baseline, lookup, seconds, rounds, use_wrk)
        single = [
            harness.measure(server, lookup, seconds, use_wrk=use_wrk, connections=1)
            for _ in range(rounds)
        ]
        base_single = harness.measure(server, baseline, seconds, use_wrk=use_wrk, connections=1)
    errors = sum(r.errors for r in base_runs + lookup_runs + single + [base_single])
    base_rate, rate = median(base_runs, "rate"), median(lookup_runs, "rate")
    p99 = median(single, "p99_ms")
    ratio = rate / base_rate
    ok = ratio >= RATE_TARGET and p99 <= P99_TARGET_MS and errors == 0
    harness.report(
        "lookup",
        ratio,
        f">= {RATE_TARGET}, p99 <= {P99_TARGET_MS:g} ms",
        ok,
        f"8 connections: lookup {rate:.0f} req/s p50 "
        f"{median(lookup_runs, 'p50_ms'):.2f} ms p99 "
        f"{median(lookup_runs, 'p99_ms'):.2f} ms, baseline {base_rate:.0f} req/s "
        f"p99 {median(base_runs, 'p99_ms'):.2f} ms; 1 connection: lookup p50 "
        f"{median(single, 'p50_ms'):.2f} ms p99 {p99:.2f} ms, baseline p99 "
        f"{base_single.p99_ms:.2f} ms; {size} bytes; errors {errors}; "
        f"{lookup_runs[0].tool}, {rounds}x{seconds:g}s; {harness.machine_load()}",
    )
    return errors == 0


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__, timed=True)
    parser.add_argument("--root", type=Path, help="an existing store (bench/make_store.py)")
    args = parser.parse_args(argv)
    with harness.scratch("gitstore-lookup-", args.workdir) as temp:
        root = harness.store_for(args, temp, (100, 100), smoke_sizes=(20, 10))
        seconds, rounds = (1.0, 1) if args.smoke else (args.seconds, args.rounds)
        use_wrk = harness.has_wrk() and not (args.smoke or args.no_wrk)
        workers = args.workers or (1 if args.smoke else None)
        if not run(root, seconds, rounds, use_wrk, workers, args.worker_class):
            raise SystemExit(1)


if __name__ == "__main__":
    main()
