"""A cluster that lives long (issue 38's two cluster rows): a replica's catch-up after it was
offline during many writes, and a takeover in a store of many environments.

Real processes on loopback, as bench/ha.py: etcd, three `gitstore serve --cluster` members
(2 workers each) and HAProxy (tests/cluster_harness.py).

**Catch-up** (`--catchup-writes`, target <= 60 s). A store of `--catchup-envs` environments;
one replica is taken offline, `--writers` clients send the writes through HAProxy (so to the
primary; each writer keeps to one environment), then the replica comes back. Timed from its
return until it serves every environment at etcd's head (`?index=<head>` answered with that
commit). Two ways to be offline (`--offline`):
- `frozen`: SIGSTOP of the replica's process group, SIGCONT to return (a hung host that comes
  back with its processes and their state, the lease long expired);
- `restarted`: SIGTERM, as an init system stops a service, then `gitstore serve` again (the
  replica returns with nothing in memory).
How the commits arrived is read from the replica's log after its return: its coordinator's
moves of main on a commit fetched from a peer (one `git fetch` of the primary's main per
repository: a pack) or handed over by the primary (object by object), and the stale hand-over
calls of the primary it still answered.

**Takeover** (`--takeover-envs`, target <= 10 s). A store of that many environments, each
with nodes, a few commits and a label; the cluster waits until both replicas caught up and
gathered their labels, then the primary is SIGKILLed. Timed from the kill to the first write
acknowledged through HAProxy (a probe with a 2 s client timeout), split into: the lease's
expiry (etcd deletes the leader key), the election (a new leader key), the new primary's
catch-up with etcd and its gathering of the peers' labels (its coordinator logs both), and the
rest (publishing the word "primary", HAProxy's next check, the write).

Each row prints its figures with the target and `met` / `not met`.

    .venv/bin/python bench/ha_longevity.py                        # both rows, both offline kinds
    .venv/bin/python bench/ha_longevity.py --only takeover --runs 3
    .venv/bin/python bench/ha_longevity.py --only catchup --offline frozen
    .venv/bin/python bench/ha_longevity.py --smoke                # 600 writes, 20 environments
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from http.client import HTTPException
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from cluster_harness import Cluster, http  # noqa: E402

from gitstore import Store  # noqa: E402

JSON = {"Content-Type": "application/json"}
CATCHUP_TARGET = 60.0
TAKEOVER_TARGET = 10.0
ENV = "/api/v1/config/environments/{env}"
VALUES = ENV + "/resources/astute/values"


# -- stores ----------------------------------------------------------------------------------
def seed(root: Path, environments: int, nodes: int = 0, commits: int = 0) -> Path:
    """Component `fuel` and environments 1..`environments`; each with `nodes` nodes written
    `commits` times in all, and a label (when `commits`)."""
    store = Store.init(root)
    store.components.create({"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    for env in range(1, environments + 1):
        store.environments.create(
            {"id": env, "components": ["fuel"], "hierarchy_levels": ["nodes"]}
        )
        for n in range(commits):
            node = str(n % nodes + 1) if nodes else None
            levels = [("nodes", node)] if node else []
            store.config.put(env, levels, "astute", "values", {"n": n, "env": env})
        if commits:
            store.versions.create_label(env, {"name": "seeded"})
    return root


def set_key(base: str, env: int, key: str, value, timeout: float = 15) -> str | None:
    """The commit a key write was acknowledged with, or None."""
    try:
        code, _, headers = http(
            "PUT",
            base + VALUES.format(env=env) + "/keys/set",
            json.dumps([[key, value]]).encode(),
            timeout,
            **JSON,
        )
    except (OSError, HTTPException):
        return None
    return headers.get("X-Gitstore-Commit") if code == 204 else None


def write_many(url: str, total: int, writers: int, environments: int) -> tuple[int, float]:
    """`total` acknowledged writes by `writers` threads (writer i into environment
    i mod `environments` + 1); (failed attempts, seconds)."""
    left = [total]
    failed = [0]
    lock = threading.Lock()

    def writer(index: int) -> None:
        env = index % environments + 1
        n = 0
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            n += 1
            while set_key(url, env, f"w{index}-{n}", n) is None:
                with lock:
                    failed[0] += 1
                time.sleep(0.05)

    started = time.monotonic()
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failed[0], time.monotonic() - started


# -- catch-up --------------------------------------------------------------------------------
def arrivals(log: Path, offset: int) -> dict[str, int]:
    """How the commits reached a member, from its log after `offset` bytes: its coordinator's
    moves of main (`fetched` from a peer, or the commit `handed` over by the primary before)
    and the primary's hand-over calls it answered (`objects`, `replicate`)."""
    counts = dict.fromkeys(("fetched", "handed", "objects", "replicate"), 0)
    with log.open("rb") as lines:
        lines.seek(offset)
        for line in lines:
            if b"follows etcd" in line:
                counts["fetched" if b"fetched from a peer" in line else "handed"] += 1
            elif b"POST /cluster/v1/objects" in line:
                counts["objects"] += 1
            elif b"POST /cluster/v1/replicate" in line:
                counts["replicate"] += 1
    return counts


def serves_head(url: str, env: int, head: str, deadline: float) -> None:
    """Return once the member at `url` answers a read of `env` at `head`."""
    while time.monotonic() < deadline:
        try:
            read = url + VALUES.format(env=env) + f"?index={head}"
            code, _, headers = http("GET", read, None, 15)
        except (OSError, HTTPException):
            code, headers = None, {}
        if code == 200 and headers.get("X-Gitstore-Commit") == head:
            return
        time.sleep(0.05)
    raise SystemExit(f"{url} did not serve environment {env} at {head[:12]} in time")


def catch_up(args, workdir: Path, seeded: Path, offline: str) -> dict:
    with Cluster(workdir / f"catchup-{offline}", seeded) as cluster:
        primary = cluster.wait_for_primary(timeout=60)
        replica = next(name for name in cluster.nodes if name != primary)
        node = cluster.nodes[replica]
        group = node.process.pid
        if offline == "frozen":
            os.killpg(group, signal.SIGSTOP)
        else:
            cluster.terminate(replica)
        failed, seconds = write_many(
            cluster.url, args.catchup_writes, args.writers, args.catchup_envs
        )
        heads = cluster.etcd_heads()
        offset = node.log.stat().st_size
        returned = time.monotonic()
        if offline == "frozen":
            os.killpg(group, signal.SIGCONT)
        else:
            cluster.start_node(replica)
        serving = time.monotonic() - returned  # `/healthz` answers (a restart's start)
        deadline = returned + 10 * CATCHUP_TARGET
        for env in range(1, args.catchup_envs + 1):
            serves_head(node.url, env, heads[f"environments/{env}.git"], deadline)
        caught_up = time.monotonic() - returned
        how = arrivals(node.log, offset)
    return {
        "offline": offline,
        "writes": args.catchup_writes,
        "write_seconds": seconds,
        "failed": failed,
        "seconds": caught_up,
        "serving": serving,
        "how": how,
    }


def catchup_line(row: dict) -> str:
    met = "met" if row["seconds"] <= CATCHUP_TARGET else "not met"
    how = row["how"]
    return (
        f"catch-up ({row['offline']}): {row['seconds']:.1f} s after {row['writes']} writes "
        f"(target <= {CATCHUP_TARGET:g} s: {met}), of which {row['serving']:.1f} s until it "
        f"served again; the writes took {row['write_seconds']:.0f} s "
        f"({row['writes'] / row['write_seconds']:.0f}/s, {row['failed']} refused or failed); "
        f"then main moved {how['fetched']} times on a fetch from a peer and {how['handed']} "
        f"times to a commit handed over, and it answered {how['objects']} stale object "
        f"hand-overs and {how['replicate']} stale fetch requests of the primary"
    )


# -- takeover --------------------------------------------------------------------------------
def takeover(args, workdir: Path, seeded: Path, run: int) -> dict:
    cluster = Cluster(workdir / f"takeover-{run}", seeded, primary_timeout=600)
    with cluster:
        primary = cluster.wait_for_primary(timeout=600)
        settled(cluster, timeout=600)
        before = log_size(cluster)
        killed = time.monotonic()
        cluster.kill(primary)
        expired = leader_change(cluster, killed, present=False)
        elected = leader_change(cluster, killed, present=True)
        first = first_write(cluster, killed)
        winner = cluster.wait_for_primary(timeout=60)
        phases = takeover_log(cluster.nodes[winner].log, before[winner])
    return {
        "expiry": expired - killed,
        "election": elected - expired,
        "catch_up": phases.get("caught_up_seconds", float("nan")),
        "labels": phases.get("labels_seconds", float("nan")),
        "total": first - killed,
    }


def settled(cluster: Cluster, timeout: float) -> None:
    """Wait until every member is caught up with etcd and says who the primary is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = [cluster.status(name) for name in cluster.nodes]
        if all(s and s["primary"] and not s["behind"] for s in states):
            return
        time.sleep(0.5)
    raise SystemExit("the cluster did not settle in time")


def log_size(cluster: Cluster) -> dict[str, int]:
    return {name: node.log.stat().st_size for name, node in cluster.nodes.items()}


def leader_change(cluster: Cluster, since: float, present: bool) -> float:
    """When the leader key was (first seen) gone, or back."""
    import base64

    key = base64.b64encode(b"/gitstore/leader").decode()
    while time.monotonic() - since < 60:
        _, body, _ = http(
            "POST", cluster.etcd_url + "/v3/kv/range", json.dumps({"key": key}).encode()
        )
        if bool(json.loads(body).get("kvs")) == present:
            return time.monotonic()
        time.sleep(0.01)
    raise SystemExit("the leader key did not change in 60 s")


def first_write(cluster: Cluster, since: float) -> float:
    probe = 0
    while time.monotonic() - since < 120:
        probe += 1
        if set_key(cluster.url, 1, "probe", probe, timeout=2):
            return time.monotonic()
        time.sleep(0.02)
    raise SystemExit("no write was acknowledged for 120 s after the kill")


def takeover_log(log: Path, offset: int) -> dict:
    """The fields of the new primary's takeover line (its coordinator logs how long each part
    took)."""
    with log.open("rb") as lines:
        lines.seek(offset)
        for line in lines:
            if b"took over" in line:
                try:
                    return json.loads(line).get("fields", json.loads(line))
                except ValueError:
                    continue
    return {}


def takeover_line(rows: list[dict]) -> str:
    worst = max(row["total"] for row in rows)
    met = "met" if worst <= TAKEOVER_TARGET else "not met"
    parts = "; ".join(
        f"{r['total']:.2f} s = expiry {r['expiry']:.2f} + election {r['election']:.2f} + "
        f"catch-up {r['catch_up']:.2f} + labels {r['labels']:.2f} + ready "
        f"{r['total'] - r['expiry'] - r['election'] - r['catch_up'] - r['labels']:.2f}"
        for r in rows
    )
    return f"takeover, {len(rows)} runs: {parts} (target <= {TAKEOVER_TARGET:g} s: {met})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catchup-writes", type=int, default=10_000)
    parser.add_argument("--catchup-envs", type=int, default=4)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--offline", default="frozen,restarted", help="frozen, restarted")
    parser.add_argument("--takeover-envs", type=int, default=200)
    parser.add_argument("--takeover-commits", type=int, default=6, help="per environment")
    parser.add_argument("--runs", type=int, default=1, help="takeovers")
    parser.add_argument("--only", choices=("catchup", "takeover"))
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.smoke:
        args.catchup_writes, args.takeover_envs = 600, 20
    workdir = Path(tempfile.mkdtemp(prefix="gitstore-ha-long-", dir=args.workdir))
    lines = []
    try:
        if args.only != "takeover":
            seeded = seed(workdir / "seed-catchup", args.catchup_envs)
            for offline in args.offline.split(","):
                lines.append(catchup_line(catch_up(args, workdir, seeded, offline)))
                print(lines[-1], flush=True)
        if args.only != "catchup":
            seeded = seed(workdir / "seed-takeover", args.takeover_envs, 3, args.takeover_commits)
            rows = []
            for run in range(args.runs):
                rows.append(takeover(args, workdir, seeded, run))
                print(rows[-1], flush=True)
            lines.append(takeover_line(rows))
    finally:
        __import__("shutil").rmtree(workdir, ignore_errors=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
