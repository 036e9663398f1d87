"""Benchmark: how long after a `git push` every gunicorn worker serves the pushed value.

An operator clones environment 1 over the server's git smart HTTP, changes one node's facts,
and pushes (through the push gate). From the moment `git push` returns, clients on fresh
connections keep reading that node's effective values; each response names its worker
(`X-Gitstore-Worker`, bench mode only), until every worker has served the pushed value. Each
worker had served (and cached) the old value first. The lag is when the last stale answer was
asked for (0 if none was); how long until the kernel had handed a connection to every worker
is printed beside it. The baseline is one lookup's round trip:

    RATIO push = lag / 1 s                          (target <= 1)

Usage:
  .venv/bin/python bench/push.py [--root STORE] [--pushes 5]
  .venv/bin/python bench/push.py --smoke          # CI: a tiny store, one push (a few seconds)
Without --root a store of 100 nodes and 100 commits is built in a temporary folder (pushes
change it).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours

NODE = 3
TARGET_S = 1.0
LAG_LIMIT_S = 10.0


def git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"git {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def served_by(server: harness.Server, path: str) -> tuple[str, dict]:
    """One lookup on a new connection: the worker that answered and the document."""
    with urllib.request.urlopen(server.url + path, timeout=30) as response:
        return response.headers["X-Gitstore-Worker"], json.load(response)


def watch(server: harness.Server, path: str, fresh, limit: float) -> tuple[float, float] | None:
    """Read until every worker has answered a `fresh` document (None if not within `limit`).

    Returns when the last stale answer was asked for, and when the last worker first answered
    fresh, both in seconds from the start. The first is the lag; the second also counts how
    long the kernel took to hand a connection to every worker.
    """
    started = time.perf_counter()
    pending = set(map(str, server.workers()))
    last_stale = 0.0
    while pending:
        asked = time.perf_counter() - started
        if asked > limit:
            return None
        worker, document = served_by(server, path)
        if fresh(document):
            pending.discard(worker)
        else:
            last_stale = asked
    return last_stale, time.perf_counter() - started


def push_once(server: harness.Server, clone: Path, revision: int) -> tuple[float, float | None]:
    """Change node NODE's facts in the clone and push: push time, then visibility lag."""
    facts = clone / f"nodes/{NODE}/values/astute.yaml"
    lines = [
        line
        for line in facts.read_text().splitlines(keepends=True)
        if not line.startswith("pushed_revision:")
    ]
    facts.write_text("".join(lines) + f"pushed_revision: {revision}\n")
    git("commit", "-qam", f"facts: node {NODE} revision {revision}", cwd=clone)
    started = time.perf_counter()
    git("push", "-q", "origin", "HEAD:main", cwd=clone)
    pushed = time.perf_counter() - started
    path = harness.LOOKUP.format(node=NODE)
    seen = watch(server, path, lambda doc: doc.get("pushed_revision") == revision, LAG_LIMIT_S)
    return pushed, seen


def run(root: Path, pushes: int, workers: int | None, work: Path) -> bool:
    path = harness.LOOKUP.format(node=NODE)
    with harness.Server(root, workers=workers) as server:
        if watch(server, path, lambda doc: "pushed_revision" not in doc, 30) is None:
            raise SystemExit("not every worker answered the lookup before the push")
        clone = work / "clone"
        git("clone", "-q", f"{server.url}/git/environments/1.git", str(clone), cwd=work)
        results = [push_once(server, clone, revision) for revision in range(1, pushes + 1)]
        round_trip = statistics.median(_round_trip(server, path) for _ in range(20))
        count = len(server.workers())
    if any(seen is None for _, seen in results):
        harness.report(
            "push",
            float("inf"),
            f"<= {TARGET_S:g} s",
            False,
            f"a worker still served the old value {LAG_LIMIT_S:g} s after the push",
        )
        return False
    lags = [seen[0] for _, seen in results]
    worst = max(lags)
    harness.report(
        "push",
        worst / TARGET_S,
        f"<= {TARGET_S:g} s",
        worst <= TARGET_S,
        f"last stale answer {worst * 1000:.0f} ms (worst), "
        f"{statistics.median(lags) * 1000:.0f} ms (median) after `git push` "
        f"returned; all {count} workers had served the push after "
        f"{max(seen[1] for _, seen in results) * 1000:.0f} ms (worst); push took "
        f"{statistics.median(p for p, _ in results) * 1000:.0f} ms; baseline: one "
        f"lookup round trip {round_trip * 1000:.1f} ms; {len(results)} pushes; "
        f"{harness.machine_load()}",
    )
    return True


def _round_trip(server: harness.Server, path: str) -> float:
    started = time.perf_counter()
    served_by(server, path)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__)
    parser.add_argument("--root", type=Path, help="a store to push into (it is changed)")
    parser.add_argument("--pushes", type=int, default=5)
    args = parser.parse_args(argv)
    with harness.scratch("gitstore-push-", args.workdir) as work:
        root = harness.store_for(args, work, (100, 100), smoke_sizes=(10, 10))
        pushes = 1 if args.smoke else args.pushes
        workers = args.workers or (2 if args.smoke else None)
        if not run(root, pushes, workers, work):
            raise SystemExit(1)


if __name__ == "__main__":
    main()
