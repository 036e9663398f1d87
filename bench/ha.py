"""High availability under primary kills: a 3-node cluster (etcd, `gitstore serve` x3, HAProxy;
tests/cluster_harness.py) with writers and readers through HAProxy, the primary SIGKILLed
again and again. With `--faults`, the primary is instead frozen (SIGSTOP of its process
group), blackholed (every packet dropped: tests/netns_harness.py, needs root) or killed, each
`--runs` times, on hosts of their own (network namespaces, a 3-member etcd).

Prints, each measured in this one run:
- acknowledged writes lost (target 0): every acknowledged key is read back from every node;
- kill -> first acknowledged write on the new primary, p50 / p99 (targets 5 s / 10 s);
- read errors through HAProxy during the kills (target <= 0.1 %);
- replica lag, write acknowledged -> every replica serves it, p99 (target 1 s);
- the cluster's write rate against one node's, same writers, same machine (target >= 0.5).

    .venv/bin/python bench/ha.py                 # 100 kills (~20 min)
    .venv/bin/python bench/ha.py --kills 20      # fewer
    .venv/bin/python bench/ha.py --smoke         # 2 kills, short rounds
    .venv/bin/python bench/ha.py --rate-only     # only the write rates and their ratio
    .venv/bin/python bench/ha.py --faults freeze,blackhole,kill --runs 20   # as root
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from http.client import HTTPException
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from background import Background  # noqa: E402
from cluster_harness import Cluster, PrimarySampler, http  # noqa: E402
from harness import Server  # noqa: E402

from gitstore import Store  # noqa: E402

VALUES = "/api/v1/config/environments/1/resources/astute/values"
JSON = {"Content-Type": "application/json"}


def seed(root: Path) -> Path:
    store = Store.init(root)
    store.components.create({"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    return root


def set_key(base: str, key: str, value, timeout: float = 15) -> tuple[int | None, str | None]:
    try:
        code, _, headers = http(
            "PUT", base + VALUES + "/keys/set", json.dumps([[key, value]]).encode(), timeout, **JSON
        )
    except (OSError, HTTPException):
        return None, None
    return code, headers.get("X-Gitstore-Commit") if code == 204 else None


class Load(Background):
    """Writers (a key each) and readers through one URL; what was acknowledged, and when."""

    def __init__(self, url: str, writers: int, readers: int = 0, tag: str = "w") -> None:
        super().__init__()
        self.url, self.tag = url, tag
        self.acked: dict[str, int] = {}
        self.ack_times: list[float] = []
        self.reads = self.read_errors = 0
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._write, args=(i,)) for i in range(writers)]
        self.threads += [threading.Thread(target=self._read) for _ in range(readers)]

    def _write(self, writer: int) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            code, _ = set_key(self.url, f"{self.tag}{writer}-{n}", n)
            with self._lock:
                if code == 204:
                    self.acked[f"{self.tag}{writer}-{n}"] = n
                    self.ack_times.append(time.monotonic())
            if code != 204:
                time.sleep(0.05)

    def _read(self) -> None:
        while not self.stop.is_set():
            try:
                code = http("GET", self.url + VALUES, timeout=15)[0]
            except (OSError, HTTPException):  # refused, reset, or cut mid-body
                code = None
            with self._lock:
                self.reads += 1
                self.read_errors += code != 200


def write_rate(url: str, writers: int, seconds: float, tag: str) -> float:
    with Load(url, writers, tag=tag) as load:
        time.sleep(seconds)
    return len(load.acked) / seconds


def replica_lags(cluster: Cluster, samples: int) -> list[float]:
    """Seconds from a write's acknowledgement to every replica serving it (`?index=` waits
    on a replica until its main holds the commit)."""
    lags = []
    for i in range(samples):
        code, commit = set_key(cluster.url, "lag-probe", i)
        acked = time.monotonic()
        if code != 204:
            continue
        primary = cluster.primary()
        slowest = 0.0
        for name, node in cluster.nodes.items():
            if name != primary and node.alive():
                http("GET", node.url + VALUES + f"?index={commit}&wait=0s", timeout=15)
                slowest = max(slowest, time.monotonic() - acked)
                if slowest > 1.0:
                    print(f"slow replica {name}: {slowest:.2f} s, primary {primary}, "
                          f"{cluster.status(name)}", flush=True)  # fmt: skip
        lags.append(slowest)
        time.sleep(0.05)
    return lags


def kills(cluster: Cluster, count: int, writers: int, readers: int) -> tuple[list[float], Load]:
    recoveries = []
    with Load(cluster.url, writers, readers, tag="k") as load:
        for _ in range(count):
            primary = cluster.wait_for_primary(timeout=60)
            time.sleep(1.0)
            killed = time.monotonic()
            cluster.kill(primary)
            while not any(t > killed for t in load.ack_times[-writers * 4 :]):
                if time.monotonic() - killed > 120:
                    raise SystemExit("no write was acknowledged for 120 s after a kill")
                time.sleep(0.02)
            recoveries.append(min(t for t in load.ack_times if t > killed) - killed)
            cluster.start_node(primary)
    return recoveries, load


def inflict(cluster: Cluster, fault: str, primary: str):
    """Do `fault` to member `primary`; the function that undoes it."""
    if fault == "kill":
        cluster.kill(primary)
        return lambda: cluster.start_node(primary)
    if fault == "freeze":
        group = cluster.nodes[primary].process.pid
        os.killpg(group, signal.SIGSTOP)
        return lambda: os.killpg(group, signal.SIGCONT)
    cluster.network.drop(primary)
    return lambda: cluster.network.heal(primary)


def fault_runs(cluster: Cluster, fault: str, runs: int, writers: int):
    """(seconds from each fault to the first acknowledged write, the load, the most members
    ready as primary at once over the whole case)."""
    recoveries = []
    with PrimarySampler(cluster) as sampler, Load(cluster.url, writers, tag=fault[0]) as load:
        for _ in range(runs):
            primary = cluster.wait_for_primary(timeout=60)
            time.sleep(1.0)
            started = time.monotonic()
            undo = inflict(cluster, fault, primary)
            recoveries.append(first_write(cluster, load, started, fault) - started)
            undo()
            deadline = time.monotonic() + 60
            while (cluster.status(primary) or {}).get("role") != "replica":
                if time.monotonic() > deadline:
                    raise SystemExit(f"{primary} did not become a replica after the {fault}")
                time.sleep(0.1)
    return recoveries, load, sampler.most


def first_write(cluster: Cluster, load: Load, started: float, fault: str) -> float:
    """When the first write after `started` was acknowledged: a probe writing with a 2 s
    timeout, as a client that retries would (the load's writers wait out their 15 s timeout
    on a frozen or blackholed primary), or any writer of the load."""
    probe = 0
    while time.monotonic() - started < 120:
        probe += 1
        code, commit = set_key(cluster.url, f"probe-{fault}-{probe}", probe, timeout=2)
        if code == 204:
            load.acked[f"probe-{fault}-{probe}"] = probe
            return min([time.monotonic(), *(t for t in load.ack_times if t > started)])
        time.sleep(0.05)
    raise SystemExit(f"no write was acknowledged for 120 s after a {fault}")


def faults_main(args, workdir: Path, seeded: Path) -> None:
    from netns_harness import NetnsCluster, available

    why = available()
    if why:
        raise SystemExit(f"--faults needs network namespaces: {why}")
    rows = []
    with NetnsCluster(workdir / "netns", seeded) as cluster:
        lags = replica_lags(cluster, 20 if args.smoke else 200)
        for fault in args.faults.split(","):
            recoveries, load, most = fault_runs(cluster, fault, args.runs, args.writers)
            cluster.wait_for_primary(timeout=60)
            lost = lost_writes(cluster, load.acked)
            rows.append(
                f"| primary {fault} | {len(recoveries)} | {statistics.median(recoveries):.2f} s "
                f"| {percentile(recoveries, 0.99):.2f} s | {most} | {len(lost)} of "
                f"{len(load.acked)} |"
            )
            print(rows[-1], flush=True)
    print("| case | runs | first write p50 | p99 | most primaries at once | lost |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(
        f"replica lag (quiet, {len(lags)} writes): p50 {statistics.median(lags) * 1000:.0f} ms, "
        f"p99 {percentile(lags, 0.99) * 1000:.0f} ms (target 500 ms)"
    )


def lost_writes(cluster: Cluster, acked: dict[str, int]) -> dict[str, int]:
    """Acknowledged keys some node does not serve, once every node follows etcd."""
    deadline = time.monotonic() + 60
    lost = dict(acked)
    while time.monotonic() < deadline and lost:
        lost = {}
        for node in cluster.nodes.values():
            _, body, _ = http("GET", node.url + VALUES)
            document = json.loads(body)
            lost.update({k: v for k, v in acked.items() if document.get(k) != v})
        time.sleep(0.5)
    return lost


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=15.0, help="length of a rate round")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--rate-only", action="store_true", help="no lag probes, no kills")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--faults", help="comma-separated: freeze, blackhole, kill (as root)")
    parser.add_argument("--runs", type=int, default=20, help="runs of each --faults case")
    args = parser.parse_args()
    # SIGTERM unwinds like Ctrl-C, so the cluster's processes are stopped, never orphaned
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.smoke:
        args.kills, args.seconds = 2, 3.0
    workdir = Path(tempfile.mkdtemp(prefix="gitstore-ha-", dir=args.workdir))
    seeded = seed(workdir / "seed")
    if args.faults:
        faults_main(args, workdir, seeded)
        __import__("shutil").rmtree(workdir, ignore_errors=True)
        return
    single_root = workdir / "single"
    __import__("shutil").copytree(seeded, single_root)
    with Server(single_root, workers=2) as single:
        single_rate = write_rate(single.url, args.writers, args.seconds, "s")
    with Cluster(workdir / "cluster", seeded) as cluster:
        cluster_rate = write_rate(cluster.url, args.writers, args.seconds, "c")
        if not args.rate_only:
            lags = replica_lags(cluster, 20 if args.smoke else 200)
            recoveries, load = kills(cluster, args.kills, args.writers, args.readers)
            cluster.wait_for_primary(timeout=60)
            lost = lost_writes(cluster, load.acked)
    if args.rate_only:
        print(ratio_line(args, single_rate, cluster_rate))
    else:
        report(args, single_rate, cluster_rate, lags, recoveries, load, lost)
    __import__("shutil").rmtree(workdir, ignore_errors=True)


def report(args, single_rate, cluster_rate, lags, recoveries, load, lost) -> None:
    error_share = load.read_errors / max(1, load.reads)
    lines = [
        f"kills {len(recoveries)}, writers {args.writers}, readers {args.readers}",
        f"acknowledged writes during the kills: {len(load.acked)}; lost: {len(lost)} (target 0)",
        f"kill -> first acknowledged write: p50 {statistics.median(recoveries):.2f} s, "
        f"p99 {percentile(recoveries, 0.99):.2f} s (targets 5 s, 10 s)",
        f"reads through HAProxy: {load.reads}, errors {load.read_errors} "
        f"({100 * error_share:.3f} %, target <= 0.1 %)",
        f"replica lag p50 {statistics.median(lags) * 1000:.0f} ms, "
        f"p99 {percentile(lags, 0.99) * 1000:.0f} ms (target 1 s)",
    ]
    lines.append(ratio_line(args, single_rate, cluster_rate))
    print("\n".join(lines))


def ratio_line(args, single_rate: float, cluster_rate: float) -> str:
    ratio = cluster_rate / single_rate if single_rate else float("nan")
    met = "met" if ratio >= 0.5 else "MISSED"
    return (
        f"RATIO ha_write_rate {ratio:.2f} (target >= 0.5: {met}) cluster {cluster_rate:.1f}/s "
        f"vs one node {single_rate:.1f}/s, {args.writers} writers"
    )


if __name__ == "__main__":
    main()
