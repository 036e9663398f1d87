"""Benchmark: an environment of 1,000 real-shaped Fuel nodes against one of 3 (issues 35, 40).

Builds two stores from the sample's real facts (`scale_store.py`: distinct ids, fqdns and
addresses, ~1,600 keys of each node's own, every node's file listing every node as Fuel writes
it): the big one by ONE bulk upload of every node through the real server (`gitstore serve`,
then `gitstore --url ... facts upload --dir`), the small one (3 nodes) the same way. Then each
row of `ROWS` measures one thing and prints a line of the table:

    what | measured | target | ok

Rows are functions of the `Scale` built here (`Row` lists): another bench adds its rows by
appending to `ROWS` before `main()`, or runs `main(rows=[...])` with its own list, so one run
builds the environments once and prints one table.

Usage:
  .venv/bin/python bench/scale.py [--nodes 1000] [--workdir DIR]
  .venv/bin/python bench/scale.py --smoke        # CI: 12 nodes, a few seconds of work
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours
import scale_blast  # noqa: E402
import scale_console  # noqa: E402
import scale_store  # noqa: E402
import scale_transactions  # noqa: E402

SMALL = 3
ASTUTE = "/api/v1/config/environments/1/nodes/{node}/resources/astute/values?effective"
KEY = ASTUTE + "&key=fqdn"
HIERA = "/api/v1/hiera/1/{node}"
GLOBAL_KEY = "/api/v1/config/environments/1/resources/{resource}/values/keys/set"
WARM_SAMPLES = 20
COLD_SAMPLES = 10
WRITES = 5


@dataclass
class Env:
    """One environment of the bench: its store root, its nodes and its serving server."""

    root: Path
    nodes: list[scale_store.Node]
    server: harness.Server
    facts: Path  # the folder uploaded: one sub-folder of files per node
    upload: dict = field(default_factory=dict)


@dataclass
class Scale:
    """What every row measures against: the big environment and the small one."""

    big: Env
    small: Env
    smoke: bool


@dataclass
class Row:
    what: str
    measured: str
    target: str
    ok: bool | None  # None: context, no target


# -- building --------------------------------------------------------------------------------
def gitstore(*args: str, url: str | None = None) -> list[str]:
    command = [str(Path(sys.executable).with_name("gitstore"))]
    return [*command, *(["--url", url] if url else []), *args]


def build(folder: Path, count: int, workers: int | None) -> Env:
    """Facts files of `count` nodes, a store, its server, and the bulk upload into it (timed)."""
    facts = folder / "facts"
    nodes = scale_store.write_cluster(facts, count)
    root = folder / "store"
    subprocess.run(gitstore("--root", str(root), "init"), check=True, capture_output=True)
    server = harness.Server(root, workers=workers).__enter__()
    env = Env(root, nodes, server, facts)
    env.upload = bulk_upload(env, facts)
    return env


def bulk_upload(env: Env, facts: Path) -> dict:
    """`gitstore facts upload --dir` through the server: seconds, commits, peak memory of the
    client and of the busiest worker (sampled)."""
    peak = {"worker": 0.0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for pid in env.server.workers():
                with contextlib.suppress(OSError):  # a worker that just exited
                    peak["worker"] = max(peak["worker"], harness.rss_mb(pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    command = ["/usr/bin/time", "-f", "MAXRSS %M"] + gitstore(
        "facts", "upload", "--env", "1", "--dir", str(facts), url=env.server.url
    )
    done_process = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    if done_process.returncode != 0:
        raise SystemExit(f"bulk upload failed: {done_process.stderr[-2000:]}")
    client_kb = int(done_process.stderr.rsplit("MAXRSS ", 1)[1].split()[0])
    return {
        "seconds": seconds,
        "commits": _facts_commits(env),
        "client_mb": client_kb / 1024,
        "worker_mb": peak["worker"],
    }


def _facts_commits(env: Env) -> int:
    """Commits the upload made (the environment's and component's creation aside)."""
    log = subprocess.run(
        ["git", "--git-dir", str(env.root / "environments" / "1.git"), "log", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sum(line.startswith("facts: upload") for line in log.splitlines())


# -- measuring -------------------------------------------------------------------------------
def _ms(server: harness.Server, path: str) -> float:
    started = time.perf_counter()
    status, body, _ = server.get(path)
    took = (time.perf_counter() - started) * 1000
    if status != 200:
        raise SystemExit(f"GET {path}: {status} {body[:300]!r}")
    return took


def lookups(env: Env, template: str) -> tuple[float, float]:
    """Median ms of a first (cold) read of distinct nodes, and of a warm read of one node."""
    ids = [node.id for node in env.nodes]
    _ms(env.server, template.format(node=ids[0]))  # what all nodes share is warm
    cold = [_ms(env.server, template.format(node=node)) for node in ids[1 : 1 + COLD_SAMPLES]]
    warm_path = template.format(node=ids[-1])
    env.server.warm([warm_path])
    warm = [_ms(env.server, warm_path) for _ in range(WARM_SAMPLES)]
    return statistics.median(cold), statistics.median(warm)


def _compare(what: str, big: float, small: float, target: float) -> Row:
    ratio = big / small
    measured = f"{big:.1f} vs {small:.1f} ms = {ratio:.2f}x"
    return Row(what, measured, f"<= {target}x", ratio <= target)


def row_bulk_upload(scale: Scale) -> list[Row]:
    done = scale.big.upload
    nodes = len(scale.big.nodes)
    peak = max(done["client_mb"], done["worker_mb"])
    return [
        Row(
            f"bulk upload of {nodes} real-size nodes (s, commits, peak MB client/worker)",
            f"{done['seconds']:.1f} s, {done['commits']} commit, "
            f"{done['client_mb']:.0f}/{done['worker_mb']:.0f} MB",
            "<= 60 s, 1 commit, <= 1024 MB",
            done["seconds"] <= 60 and done["commits"] == 1 and peak <= 1024,
        )
    ]


def _lookup_rows(scale: Scale, label: str, template: str) -> list[Row]:
    big_cold, big_warm = lookups(scale.big, template)
    small_cold, small_warm = lookups(scale.small, template)
    nodes = len(scale.big.nodes)
    return [
        _compare(f"{label}, {nodes} vs {SMALL} nodes, cold", big_cold, small_cold, 1.2),
        _compare(f"{label}, {nodes} vs {SMALL} nodes, warm", big_warm, small_warm, 1.2),
    ]


def row_lookup(scale: Scale) -> list[Row]:
    return _lookup_rows(scale, "effective lookup of one node (astute)", ASTUTE)


def row_lookup_key(scale: Scale) -> list[Row]:
    return _lookup_rows(scale, "effective lookup of one key (astute fqdn)", KEY)


def row_hiera(scale: Scale) -> list[Row]:
    return _lookup_rows(scale, "Hiera node document", HIERA)


def _put(server: harness.Server, path: str, body: dict) -> float:
    request = urllib.request.Request(
        server.url + path,
        data=json.dumps(body).encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()
    return (time.perf_counter() - started) * 1000


def row_global_write(scale: Scale) -> list[Row]:
    """A key written at the global level: into `astute`, whose global document holds the
    cluster's lists, and into `globals`, which holds none."""

    def median_write(env: Env, resource: str) -> float:
        path = GLOBAL_KEY.format(resource=resource)
        took = [_put(env.server, path, [["bench_scale", number]]) for number in range(WRITES + 1)]
        return statistics.median(took[1:])

    nodes = len(scale.big.nodes)
    rows = []
    for resource, note in (("globals", ""), ("astute", ", the document with the cluster's lists")):
        big, small = median_write(scale.big, resource), median_write(scale.small, resource)
        what = f"a global key write ({resource}{note}), {nodes} vs {SMALL} nodes"
        rows.append(_compare(what, big, small, 1.2))
    return rows


def row_worker_memory(scale: Scale) -> list[Row]:
    server = scale.big.server
    for node in scale.big.nodes[: 5 * COLD_SAMPLES]:
        _ms(server, ASTUTE.format(node=node.id))
        _ms(server, HIERA.format(node=node.id))
    largest = max(harness.rss_mb(pid) for pid in server.workers())
    return [
        Row(
            f"memory per worker serving the {len(scale.big.nodes)}-node environment",
            f"{largest:.0f} MB",
            "<= 300 MB",
            largest <= 300,
        )
    ]


def _git(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com"}
    env.update(GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.com")
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if check and done.returncode:
        raise SystemExit(f"git {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done


def row_push_gate(scale: Scale) -> list[Row]:
    """A push changing every node's file, the last one with a secret in plain text: the
    gate must read them all and refuse it."""
    env = scale.big
    work = env.root.parent / "push"
    work.mkdir()
    _git("clone", "-q", f"{env.server.url}/git/environments/1.git", "clone", cwd=work)
    clone = work / "clone"
    files = sorted((clone / "nodes").glob("*/values/astute.yaml"))
    for path in files:
        with path.open("a") as out:
            out.write("bench_push: 1\n")
    text = files[-1].read_text()
    files[-1].write_text(re.sub(r"password: ENC\[[^]]*\]", "password: plain", text, count=1))
    _git("commit", "-qam", f"change {len(files)} nodes", cwd=clone)
    started = time.perf_counter()
    done = _git("push", "-q", "origin", "HEAD:main", cwd=clone, check=False)
    seconds = time.perf_counter() - started
    refused = done.returncode != 0 and "plain text" in done.stderr
    return [
        Row(
            f"the push gate over a {len(files)}-file push (refusing a plain-text secret)",
            f"{seconds:.1f} s, {'refused' if refused else 'NOT refused'}",
            "<= 30 s, refused",
            seconds <= 30 and refused,
        )
    ]


def row_blast_radius(scale: Scale) -> list[Row]:
    """`scale_blast.py`'s REST diff, commit page and edit preview of a global write, in the
    environments built here (the big one against the small one)."""
    found = scale_blast.measure_pair(
        scale.big.server.url, scale.small.server.url, 1, 1, runs=1 if scale.smoke else 3
    )
    return [Row(**row) for row in scale_blast.table_rows(found)]


def row_console(scale: Scale) -> list[Row]:
    """`scale_console.py`'s pages, on the big environment's server (its nodes known by their
    facts only); the node page is the primary controller's. Chromium only in a full run."""
    controller = next(node.id for node in scale.big.nodes if "controller" in node.role)
    found = scale_console.measure_server(
        scale.big.server, 3 if scale.smoke else 10, None if scale.smoke else 5, controller
    )
    return [
        Row(f"console: {what}", measured, target, None if _context(target, measured) else met)
        for what, measured, target, met in found
    ]


def _context(target: str, measured: str) -> bool:
    """A row with no target, or one not measured in this run (Chromium under --smoke)."""
    return target == "-" or measured.startswith("not measured")


def row_transactions(scale: Scale) -> list[Row]:
    """`scale_transactions.py`'s inventory and graph execution rows: a store of its own (Fuel's
    Newton release and graph, inventory nodes), as many nodes as the big environment (at least
    24 under --smoke, the fewest its refused-size row is built for)."""
    nodes = max(len(scale.big.nodes), 24) if scale.smoke else len(scale.big.nodes)
    found = scale_transactions.rows(nodes, scale.big.root.parent.parent)
    return [Row(what.strip(), measured, target, met) for what, measured, target, met in found]


#: The rows of the table, in order (every row of issues 35 and 40). Other benches may append.
ROWS: list[Callable[[Scale], list[Row]]] = [
    row_bulk_upload,
    row_lookup,
    row_lookup_key,
    row_hiera,
    row_global_write,
    row_push_gate,
    row_blast_radius,
    row_console,
    row_worker_memory,
    row_transactions,
]


def table(scale: Scale, rows: list[Callable[[Scale], list[Row]]]) -> list[Row]:
    """Run every row function; print the table as it grows (a long run shows progress)."""
    print("| what | measured | target | ok |")
    print("|---|---|---|---|")
    found = []
    for make in rows:
        for row in make(scale):
            verdict = "-" if row.ok is None else ("yes" if row.ok else "NO")
            print(f"| {row.what} | {row.measured} | {row.target} | {verdict} |", flush=True)
            found.append(row)
    return found


def main(rows: list[Callable[[Scale], list[Row]]] | None = None) -> None:
    """Build both environments, print the table of `rows` (default `ROWS`)."""
    parser = harness.options(__doc__)
    parser.add_argument("--nodes", type=int, default=1000, help="nodes of the big environment")
    args = parser.parse_args()
    count = 12 if args.smoke else args.nodes
    with harness.scratch("scale-", args.workdir) as folder:
        started = time.perf_counter()
        big = build(folder / "big", count, args.workers or 2)
        built = time.perf_counter() - started
        small = build(folder / "small", SMALL, args.workers or 2)
        try:
            print(f"built {count} nodes in {built:.0f} s (target <= 300 s)", flush=True)
            found = table(Scale(big, small, args.smoke), ROWS if rows is None else rows)
        finally:
            for env in (big, small):
                env.server.__exit__(None, None, None)
    failed = [row.what for row in found if row.ok is False]
    print(f"RATIO scale = {len(failed)} rows over target / {len(found)}")
    if os.environ.get("GITSTORE_BENCH_STRICT") and failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
