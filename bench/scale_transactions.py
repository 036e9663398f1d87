"""Inventory and graph execution at 1,000 nodes, through `gitstore serve` (issues 35 and 40).

Builds a store with Fuel's Newton release and its default graph (tests/data/fuel/), serves it
and measures, over HTTP:

- inventory creation one node per `POST` into environment 1 (controllers, ceph-osd, cinder and
  compute nodes, as a Fuel cluster has them), once every worker has made a few creates in
  environment 3: total seconds, the median cost of the last 50
  creates over the first 50 (target: flat, ~1.0), and the same for the CPU time the workers
  spent on them (on a loaded shared machine the clock mostly measures the other processes);
- the same nodes as one list `POST` into environment 2: seconds and commits (target: one);
- a dry run of the Newton graph on environment 1's nodes (target: <= 30 s, recorded);
- one node's task statuses from that transaction (target: <= 50 ms);
- a dry run refused by size: a cluster graph whose every task waits for the one before it on
  every node (60 tasks at 1,000 nodes: 60,000 links in each node's record, 60 million in all,
  over the default `transaction_keys`); seconds to the 400, the limit it names and the largest
  growth of a worker's RSS (target: < 1 s, no growth). Up to 100 nodes even 500 such tasks fit
  the defaults, so there the bench lowers `document_keys` in the store's `limits.yaml` to half
  what one node's record would hold (Newton still fits).

`rows(nodes)` returns the table's rows for bench/scale.py; run it alone to print them:

    .venv/bin/python bench/scale_transactions.py               # 1,000 nodes (~3-4 min)
    .venv/bin/python bench/scale_transactions.py --nodes 200
    .venv/bin/python bench/scale_transactions.py --smoke       # 60 nodes, for CI
"""

from __future__ import annotations

import http.client
import json
import math
import re
import statistics
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import harness
import yaml

from gitstore import limits
from gitstore.store import Store

FUEL = harness.PROJECT / "tests" / "data" / "fuel"
RELEASE_FIELDS = ("name", "version", "operating_system", "state", "roles_metadata", "tags_metadata")
API = "/api/v1"
#: Links in one node's record of the `wide` graph (tasks times nodes, at most 500 tasks).
WIDE_LINKS = 60_000
#: How much dearer the last creates may be than the first and still count as flat.
FLAT = 1.2
#: The environment whose node creates warm every worker up before the first ones measured
#: (a worker's first writes cost several times more: imports, caches, templates).
WARM_UP = 3


def roles(number: int) -> list[str]:
    """A Fuel cluster's mix: three controllers, a tenth ceph-osd, a few cinder, the rest compute."""
    if number <= 3:
        return ["controller"]
    if number % 10 == 0:
        return ["ceph-osd"]
    if number % 25 == 1:
        return ["cinder"]
    return ["compute"]


def node_body(number: int, env_id: int) -> dict:
    return {
        "fqdn": f"node-{number}.env-{env_id}.example",
        "roles": roles(number),
        "status": "ready",
        "ip_addresses": {"mgmt": f"10.{env_id}.{number // 250}.{number % 250 + 1}"},
    }


def wide_tasks(nodes: int) -> int:
    """Tasks of the graph refused by size: each on every node, waiting for the previous one on
    every node (two links each, so within graph_links; at most graph_tasks)."""
    return max(2, min(500, -(-WIDE_LINKS // nodes)))


def build(root: Path, nodes: int) -> None:
    """Newton as release 1 with its default graph; environments 1, 2 and the warm-up one use
    it; environment 1 also has the `wide` graph, too big to record (see `wide_tasks`)."""
    release = yaml.safe_load((FUEL / "release-newton-10.0.yaml").read_text())
    store = Store.init(root)
    store.releases.create({k: release[k] for k in RELEASE_FIELDS})
    tasks = yaml.safe_load((FUEL / "release-graph-newton-10.0.yaml").read_text())
    store.graphs.create("release", 1, "default", {"tasks": tasks})
    for env_id in (1, 2, WARM_UP):
        store.environments.create({"id": env_id, "hierarchy_levels": ["nodes"], "release": 1})
    wide = [
        {
            "id": f"w{i}",
            "type": "shell",
            "version": "2.1.0",
            "roles": "*",
            **({"requires": [f"w{i - 1}"], "cross_depends": [{"name": f"w{i - 1}"}]} if i else {}),
        }
        for i in range(wide_tasks(nodes))
    ]
    store.graphs.create("cluster", 1, "wide", {"tasks": wide})
    per_node = wide_tasks(nodes) * nodes
    fits = per_node <= limits.DEFAULT.document_keys
    if fits and per_node * nodes <= limits.DEFAULT.transaction_keys:
        (root / "limits.yaml").write_text(f"document_keys: {per_node // 2}\n")


def request(server: harness.Server, method: str, path: str, body=None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    call = urllib.request.Request(
        server.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(call, timeout=600) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def peak_mb(pid: int) -> float:
    """The most memory process `pid` has held (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def commits(root: Path, env_id: int) -> int:
    repo = root / "environments" / f"{env_id}.git"
    out = subprocess.run(
        ["git", "--git-dir", str(repo), "rev-list", "--count", "main"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout)


def timed(server: harness.Server, method: str, path: str, body=None) -> tuple[float, int, dict]:
    started = time.perf_counter()
    status, answer = request(server, method, path, body)
    return time.perf_counter() - started, status, answer


def expect(status: int, wanted: int, answer: dict, what: str) -> None:
    if status != wanted:
        raise SystemExit(f"{what}: {status} {json.dumps(answer)[:500]}")


def rows(nodes: int = 1000, workdir: Path | None = None) -> list[tuple[str, str, str, bool | None]]:
    """(what, measured, target, met) for each row of the table; met is None for context."""
    found = []
    with harness.scratch("gitstore-scale-tx-", workdir) as folder:
        root = folder / "store"
        build(root, nodes)
        with harness.Server(root) as server:
            found += _inventory_rows(server, root, nodes)
            found += _execution_rows(server, nodes)
    return found


def _inventory_rows(server: harness.Server, root: Path, nodes: int) -> list[tuple]:
    costs = []
    window = min(50, nodes // 2)
    workers = server.workers()
    for number in range(1, 10 * len(workers) + 1):  # ids far above the measured ones
        body = {**node_body(number, WARM_UP), "id": 1_000_000 + number}
        status, answer = request(server, "POST", f"{API}/clusters/{WARM_UP}/nodes", body)
        expect(status, 201, answer, f"warming up with node {number}")
    cpu = {}  # the workers' CPU seconds at the edges of the first and the last window
    for number in range(1, nodes + 1):
        if number in (1, nodes - window + 1):
            cpu[number] = harness.cpu_seconds(workers)
        spent, status, answer = timed(
            server, "POST", f"{API}/clusters/1/nodes", node_body(number, 1)
        )
        expect(status, 201, answer, f"creating node {number}")
        costs.append(spent)
        if number in (window, nodes):
            cpu[number] = harness.cpu_seconds(workers)
    first, last = statistics.median(costs[:window]), statistics.median(costs[-window:])
    cpu_first = (cpu[window] - cpu[1]) / window
    cpu_last = (cpu[nodes] - cpu[nodes - window + 1]) / window
    before = commits(root, 2)
    bodies = [node_body(number, 2) for number in range(1, nodes + 1)]
    spent, status, answer = timed(server, "POST", f"{API}/clusters/2/nodes", bodies)
    expect(status, 201, answer, "creating the nodes in bulk")
    made = commits(root, 2) - before
    return [
        (f"create {nodes} nodes, one POST each", f"{sum(costs):.1f} s, {nodes} commits", "-", None),
        (
            f"  cost of the last {window} / the first {window}",
            f"{last * 1000:.1f} / {first * 1000:.1f} ms = {last / first:.2f}x",
            f"flat (<= {FLAT}x)",
            last / first <= FLAT,
        ),
        (
            f"  workers' CPU per create, the last {window} / the first {window}",
            f"{cpu_last * 1000:.1f} / {cpu_first * 1000:.1f} ms = {cpu_last / cpu_first:.2f}x",
            f"flat (<= {FLAT}x)",
            cpu_last / cpu_first <= FLAT,
        ),
        (
            f"create {nodes} nodes, one POST of a list",
            f"{spent:.2f} s, {made} commit",
            "one commit",
            made == 1,
        ),
    ]


def _execution_rows(server: harness.Server, nodes: int) -> list[tuple]:
    body = {"cluster": 1, "graphs": [{"type": "default"}], "dry_run": True}
    spent, status, answer = timed(server, "POST", f"{API}/graphs/execute", body)
    expect(status, 202, answer, "the dry run")
    peak = max(peak_mb(pid) for pid in server.workers())
    transaction = answer["id"]
    reads = []
    for node in range(nodes, max(nodes - 20, 0), -1):
        took, status, found = timed(server, "GET", f"{API}/transactions/{transaction}/nodes/{node}")
        expect(status, 200, found, f"node {node}'s statuses")
        reads.append(took)
    workers = server.workers()
    memory = {pid: harness.rss_mb(pid) for pid in workers}
    wide = {"cluster": 1, "graphs": [{"type": "wide"}], "dry_run": True}
    started = time.perf_counter()
    try:
        refused, status, answer = timed(server, "POST", f"{API}/graphs/execute", wide)
    except (OSError, http.client.HTTPException) as exc:  # the worker died: a row, not a crash
        refused, status = time.perf_counter() - started, 0
        answer = {"error": type(exc).__name__}
    if status:
        expect(status, 400, answer, "the refused dry run")
    alive = [pid for pid in workers if Path(f"/proc/{pid}").exists()]
    grown = max((harness.rss_mb(pid) - memory[pid] for pid in alive), default=math.inf)
    named = re.search(r"the limit (\w+)", answer.get("message", ""))
    outcome = (
        f"{refused:.2f} s ({named[1] if named else '?'}), worker RSS +{grown:.0f} MB"
        if status
        else f"no answer: the connection closed after {refused:.1f} s ({answer['error']})"
    )
    return [
        (
            f"dry run of Newton's graph on {nodes} nodes",
            f"{spent:.1f} s (recorded); worker peak {peak:.0f} MB",
            "<= 30 s",
            spent <= 30,
        ),
        (
            "one node's task statuses",
            f"{statistics.median(reads) * 1000:.1f} ms",
            "<= 50 ms",
            statistics.median(reads) <= 0.05,
        ),
        (
            f"dry run refused by size ({wide_tasks(nodes)} tasks, each waiting on {nodes} nodes)",
            outcome,
            "< 1 s",
            refused < 1,
        ),
    ]


def main() -> None:
    parser = harness.options(__doc__)
    parser.add_argument("--nodes", type=int, default=1000, help="nodes per environment")
    args = parser.parse_args()
    nodes = 60 if args.smoke else args.nodes
    table = rows(nodes, args.workdir)
    width = max(len(row[0]) for row in table)
    print(harness.machine_load())
    for what, measured, target, met in table:
        verdict = "" if met is None else ("yes" if met else "NO")
        print(f"{what:<{width}}  {measured:<44}  {target:<14}  {verdict}")


if __name__ == "__main__":
    main()
