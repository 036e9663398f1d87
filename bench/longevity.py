"""Benchmark: a store that lives long: many REST writes into one environment, with gitstore's
git maintenance running (store A) and without it (store B), then what history costs at depth.

Two identical stores (bench/make_store.py: 20 nodes of 100 facts) are served at once by two
`gitstore serve`s, A with its background maintenance and B with `--no-maintenance`. 8 clients
(two processes) set new keys in the overrides of nodes 2-20 (`PATCH .../keys/set`), in rounds
alternated between A and B until each took `--writes`; node 1 is never written. Reported, with
the issue's targets (issue 38):

- disk size of A's environment vs the same repository after `git gc --aggressive` (<= 2x);
- loose objects in A, sampled every 0.5 s during the writes (<= 10,000 at any time);
- write rate of A (maintenance running) vs B (<= none): median of rounds (>= 0.8x);
- explain of one key of node 1 and its key history, at depth vs after the first 100 writes
  (<= 2x), each the median of requests at 15 distinct versions (answers are cached per commit);
  the same on B (no maintenance, so no index: the walk), and the key history of a written node,
  for contrast;
- `?version=N` reads vs head reads (<= 1.2x): first reads (no answer kept yet) in a fresh
  process, medians; and the rates of repeated reads over HTTP;
- `gitstore backup` of A (<= 60 s);
- `gitstore maintenance --env 1` on A SIGKILLed at a random moment, `--kills` times: no object
  reachable before is missing, and `git fsck --strict` is clean.

With `--rate-at STORE` only the write rate is measured, on two copies of a store kept by
`--keep` (at its depth: 100,000 commits take an hour to write), A and B as above.

With `--first-reads N` only the first reads are measured, quicker: a store of N commits made
by key writes through the Store (each lands as a pack, as a REST write does), then one
maintenance run (packs, main's index), then first reads in fresh processes, alternated `--rounds`
times between the checkouts named by `--code` (default: this one), so a change is compared with
the code before it in the same run.

`--before DIR` serves B with the gitstore of another checkout (the code before a change): every
round of writes lands as a pack, which B, without maintenance, keeps, so B's own rate falls as
its packs pile up; B as served by a checkout that wrote loose objects is the reference without
that cost.

Usage:
  .venv/bin/python bench/longevity.py [--writes 20000] [--kills 50] [--workdir DIR] [--before DIR]
                                      [--keep DIR]  # store A, copied once at rest
  .venv/bin/python bench/longevity.py --smoke        # 600 writes, 5 kills (about a minute)
  .venv/bin/python bench/longevity.py --first-reads 10000 --code /work/main --code .
  .venv/bin/python bench/longevity.py --first-reads 0 --root STORE --code ...  # a store kept
  .venv/bin/python bench/longevity.py --rate-at STORE --before DIR --rounds 8  # at its depth
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402 - bench/ is not a package: scripts import their neighbours
import make_store  # noqa: E402

from gitstore import Store  # noqa: E402
from gitstore.ops import maintenance  # noqa: E402

NODES = 20
ENV = "/api/v1/config/environments/1"
NODE = ENV + "/nodes/{node}/resources/astute/{kind}"
KEY = "fact_0001"  # a fact of node 1 nobody writes
CLIENTS = 8
#: Seconds the bench waits, after the writes, for maintenance's idle full repack: at 100,000
#: commits written without a pause it takes ~22 minutes on 2 vCPUs.
REST_WITHIN = 2400.0
#: Seconds into a maintenance run within which the kill loop's SIGKILLs land: a full repack
#: at 100,000 commits takes ~22 min, and 50 kills spread over whole runs would take hours.
KILL_WINDOW = 60.0
#: Writes per round of `--rate-at`.
RATE_ROUND = 2000


class Writes:
    """Request n: set key w<n> = n in the overrides of node 2 + n mod 19."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, number: int) -> bytes:
        node = 2 + number % (NODES - 1)
        body = json.dumps([[f"{self.prefix}{number}", number]]).encode()
        return (
            f"PATCH {NODE.format(node=node, kind='overrides')}/keys/set HTTP/1.1\r\n"
            f"Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body


class LooseSampler(threading.Thread):
    """The most loose objects and packs a repository held, sampled every half second."""

    def __init__(self, repo: Path) -> None:
        super().__init__(daemon=True)
        self.repo, self.most, self.most_packs, self.stop = repo, 0, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            found = maintenance.usage(self.repo)
            self.most = max(self.most, found.loose)
            self.most_packs = max(self.most_packs, found.packs)


def write_round(server: harness.Server, count: int, prefix: str) -> tuple[float, int]:
    """`count` writes from 8 clients; (writes/s, failures)."""
    started = time.perf_counter()
    load = harness.pyload_requests(
        server.url, Writes(prefix), 600, processes=2, connections=CLIENTS // 2, total=count
    )
    elapsed = time.perf_counter() - started
    return len(load.answered) / elapsed, load.errors


def head_version(server: harness.Server) -> int:
    _, _, headers = server.get(NODE.format(node=1, kind="values"))
    return int(headers["X-Gitstore-Version"])


def median_ms(server: harness.Server, paths: list[str], required: bool = True) -> float:
    """Median ms of reading `paths`; one that is not a 200 ends the run, unless not
    `required` (a contrast row): then the median is inf and the answer is printed."""
    took = []
    for path in paths:
        started = time.perf_counter()
        status, body, _ = server.get(path)
        took.append((time.perf_counter() - started) * 1000)
        if status != 200:
            message = f"{path}: {status} {body[:200]!r}"
            if required:
                raise SystemExit(message)
            print(f"  (contrast only) {message}", flush=True)
            return math.inf
    return statistics.median(took)


def depth_costs(server: harness.Server, required: bool = True) -> dict[str, float]:
    """Median ms of explain and key histories at 15 versions below the head (a written node's
    at 3: at 100,000 commits one takes over 10 s); not `required`: contrast rows."""
    top = head_version(server)
    versions = range(top - 15, top)
    explain = NODE.format(node=1, kind="values") + f"?effective&explain&key={KEY}&version="
    history = ENV + "/history?path=nodes/{node}&resource=astute&key={key}&version="
    return {
        "explain": median_ms(server, [explain + str(v) for v in versions], required),
        "history": median_ms(
            server, [history.format(node=1, key=KEY) + str(v) for v in versions], required
        ),
        "history_written": median_ms(
            server, [history.format(node=2, key=KEY) + str(v) for v in versions[-3:]], False
        ),
    }


def version_ratio(server: harness.Server, seconds: float) -> tuple[float, float]:
    """(head reads/s, reads/s at 200 versions) of node 1's values over HTTP, each path read
    once on every worker first (the server keeps a repeated answer, a head's or a version's)."""
    top = head_version(server)
    rng = random.Random(38)
    path = NODE.format(node=1, kind="values")
    at_versions = [f"{path}?version={rng.randrange(1, top)}" for _ in range(200)]
    server.warm([path] + at_versions)
    head = harness.pyload(server.url, [path], seconds, processes=1, connections=4)
    versions = harness.pyload(server.url, at_versions, seconds, processes=1, connections=4)
    return head.rate, versions.rate


def cold_reads(root: Path) -> dict[str, float]:
    """Median ms of a first read (no answer kept yet) in a fresh process: at the head (400
    distinct keys of nodes 1-5) and at 400 distinct versions (the first builds main's view),
    alternated; wall time (`head`, `version`) and the process's CPU time (`*_cpu`), which other
    processes on a busy machine do not lengthen."""
    from gitstore.api import create_app

    client = create_app({"TESTING": True}, store=Store(root)).test_client()
    top = int(client.get(NODE.format(node=1, kind="values")).headers["X-Gitstore-Version"])
    heads = [
        NODE.format(node=node, kind="values") + f"?key=fact_{key:04d}"
        for node in range(1, 6)
        for key in range(80)
    ]
    rng = random.Random(41)
    first = make_store.FACADE_COMMITS + 1  # the first version holding node 1's facts
    versions = [
        NODE.format(node=1, kind="values") + f"?key=fact_0001&version={v}"
        for v in rng.sample(range(first, top), min(400, top - first))
    ]

    took: dict[str, list[float]] = {"head": [], "version": [], "head_cpu": [], "version_cpu": []}

    def timed(path: str, name: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        assert client.get(path).status_code == 200, path
        took[name + "_cpu"].append((time.process_time() - cpu) * 1000)
        took[name].append((time.perf_counter() - wall) * 1000)

    # alternated, so a load change hits both alike; as many heads as versions (a short history)
    for head, version in zip(heads, versions, strict=False):
        timed(head, "head")
        timed(version, "version")
    return {name: statistics.median(values) for name, values in took.items()}


def written_store(root: Path, commits: int) -> None:
    """A store whose environment 1 holds `commits` commits, most of them one key set each in
    the overrides of nodes 2-20 (as `Writes` sets them over HTTP), then maintained once."""
    store = make_store.build(root, NODES, make_store.FACADE_COMMITS + 1, keys=100)
    repo = store.environment_repo(make_store.ENV_ID)
    done = repo.depth(repo.head() or "")
    for number in range(commits - done):
        pairs = [("nodes", str(2 + number % (NODES - 1)))]
        change = [[f"w{number}", number]]
        store.config.update_keys(1, pairs, "astute", "overrides", "set", change, make_store.AUTHOR)
        if number % 2000 == 1999:
            print(f"  {done + number + 1} commits", flush=True)
    maintenance.maintain_store(root, force=True)


#: One process's `cold_reads` with the gitstore of a given checkout: imported before this
#: script's neighbours, since `make_store` puts its own checkout first on the import path.
_COLD_READS = """
import json, sys
from pathlib import Path
code, bench, root = sys.argv[1:]
sys.path.insert(0, code)
import gitstore
sys.path.insert(0, bench)
import longevity
print(json.dumps({"code": gitstore.__file__, **longevity.cold_reads(Path(root))}))
"""


def fresh_first_reads(root: Path, code: Path) -> dict[str, float]:
    """`cold_reads` in a new process that imports gitstore from the checkout `code`."""
    bench = Path(__file__).resolve().parent
    command = [sys.executable, "-c", _COLD_READS, str(code.resolve()), str(bench), str(root)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = json.loads(done.stdout.splitlines()[-1])
    if not found.pop("code").startswith(str(code.resolve()) + os.sep):
        raise SystemExit(f"the process did not import gitstore from {code}")
    return found


def first_reads(
    scratch: Path, commits: int, codes: list[Path], rounds: int, root: Path | None = None
) -> None:
    """Print, per checkout, the medians over `rounds` fresh processes of first reads at the
    head and at versions, and their ratio (the target: <= 1.2); on the store at `root` (one
    `--first-reads` built before), or on a new one of `commits` commits."""
    if root is None:
        root = scratch / "store"
        started = time.perf_counter()
        written_store(root, commits)
        took = time.perf_counter() - started
        print(f"  a store of {commits} commits in {took:.0f} s", flush=True)
    commits = Store(root).environment_repo(make_store.ENV_ID).snapshot().version or 0
    found: dict[Path, list[dict[str, float]]] = {code: [] for code in codes}
    for _ in range(rounds):
        for code in codes:
            found[code].append(fresh_first_reads(root, code))
    print(f"first reads at {commits} commits, {harness.machine_load()}")
    for code, runs in found.items():
        ms = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
        print(
            f"  {code}: version=N {ms['version']:.3f} ms, head {ms['head']:.3f} ms: "
            f"{ms['version'] / ms['head']:.2f}x (target <= 1.2); CPU time "
            f"{ms['version_cpu']:.3f} vs {ms['head_cpu']:.3f} ms: "
            f"{ms['version_cpu'] / ms['head_cpu']:.2f}x (medians of {rounds} processes of "
            f"up to 400 reads of each kind)"
        )


def at_rest(repo: Path, limit: float) -> float:
    """Seconds until the background maintenance made the full repack of the repository left
    idle."""
    started = time.monotonic()
    while not maintenance.at_rest(repo):
        if time.monotonic() - started > limit:
            break
        time.sleep(2)
    return time.monotonic() - started


def disk_bytes(folder: Path) -> int:
    done = subprocess.run(["du", "-s", "-B1", str(folder)], capture_output=True, text=True)
    return int(done.stdout.split()[0])


def git(repo: Path, *args: str, stdin: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", "--git-dir", str(repo), *args],
        input=stdin, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def aggressive_size(repo: Path, scratch: Path) -> tuple[int, float]:
    copy = scratch / "aggressive.git"
    shutil.copytree(repo, copy)
    started = time.perf_counter()
    git(copy, "gc", "--aggressive", "--prune=now", "--quiet")
    took = time.perf_counter() - started
    size = disk_bytes(copy / "objects")
    shutil.rmtree(copy)
    return size, took


def backup_seconds(root: Path, scratch: Path) -> float:
    target = scratch / "backup"
    started = time.perf_counter()
    subprocess.run(
        [str(Path(sys.executable).with_name("gitstore")), "backup", "--root", str(root),
         "--to", str(target)],
        check=True, capture_output=True,
    )  # fmt: skip
    took = time.perf_counter() - started
    shutil.rmtree(target)
    return took


def kill_loop(root: Path, repo: Path, kills: int) -> tuple[int, str]:
    """SIGKILL `gitstore maintenance --env 1` at random moments; (missing objects, fsck)."""
    reachable = {
        line.split()[0] for line in git(repo, "rev-list", "--objects", "--all").split("\n") if line
    }
    command = [str(Path(sys.executable).with_name("gitstore")), "maintenance", "--root", str(root),
               "--env", "1"]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    whole = min(time.perf_counter() - started, KILL_WINDOW)
    rng = random.Random(38)
    for _ in range(kills):
        run = subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, whole * 1.2))
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    out = git(repo, "cat-file", "--batch-check", stdin="\n".join(sorted(reachable)) + "\n")
    missing = sum(1 for line in out.splitlines() if line.endswith("missing"))
    fsck = subprocess.run(
        ["git", "--git-dir", str(repo), "fsck", "--strict"], capture_output=True, text=True
    )
    return missing, "clean" if fsck.returncode == 0 else fsck.stderr.strip()[-300:]


@contextlib.contextmanager
def serving(roots: dict[str, Path], before: Path | None) -> Iterator[dict[str, harness.Server]]:
    """Store A served with its maintenance, B without (by `before`'s gitstore when given)."""
    with (
        harness.Server(roots["a"], workers=2) as a,
        harness.Server(roots["b"], workers=2, code=before, extra=("--no-maintenance",)) as b,
    ):
        yield {"a": a, "b": b}


def alternated_round(
    servers: dict[str, harness.Server], turn: int, count: int, tag: str, rates: dict
) -> int:
    """`count` writes into each store, B first at odd turns (a load change hits both alike);
    each store's rate is appended to `rates`; the failed requests."""
    failures = 0
    for name in ("a", "b") if turn % 2 == 0 else ("b", "a"):
        rate, failed = write_round(servers[name], count, f"{name}{tag}")
        rates[name].append(rate)
        failures += failed
    return failures


def rates_at(scratch: Path, store: Path, before: Path | None, rounds: int) -> None:
    """The write-rate row on copies of a kept store (`--keep`): A served with maintenance, B
    without (by `before`'s gitstore), `rounds` alternated rounds of `RATE_ROUND` writes each."""
    roots = {name: scratch / name for name in ("a", "b")}
    for root in roots.values():
        shutil.copytree(store, root)
    rates: dict[str, list[float]] = {"a": [], "b": []}
    with serving(roots, before) as servers:
        for number in range(rounds):
            if failed := alternated_round(servers, number, RATE_ROUND, f"r{number}_", rates):
                raise SystemExit(f"{failed} writes failed")
    commits = Store(roots["a"]).environment_repo(make_store.ENV_ID).snapshot().version
    took = {name: sum(RATE_ROUND / rate for rate in found) for name, found in rates.items()}
    median = {name: statistics.median(found) for name, found in rates.items()}
    print(
        f"write rate at {commits} commits, {harness.machine_load()}: with maintenance vs "
        f"without {median['a'] / median['b']:.2f} (target >= 0.8; medians of {rounds} "
        f"alternated rounds of {RATE_ROUND}: A {median['a']:.0f}/s, B {median['b']:.0f}/s); "
        f"by total time {took['b'] / took['a']:.2f}"
    )


def run(
    scratch: Path,
    writes: int,
    kills: int,
    smoke: bool,
    before: Path | None = None,
    keep: Path | None = None,
) -> bool:
    roots = {name: scratch / name for name in ("a", "b")}
    for root in roots.values():
        make_store.build(root, NODES, make_store.FACADE_COMMITS + 1, keys=100)
    repo_a = roots["a"] / "environments" / "1.git"
    chunk = max(100, min(2000, writes // 10))
    rates: dict[str, list[float]] = {"a": [], "b": []}
    failures = 0
    with serving(roots, before) as servers:
        a, b = servers["a"], servers["b"]
        for name, server in servers.items():  # the first 100 writes, then the costs at 100
            failures += write_round(server, 100, f"{name}w")[1]
        time.sleep(4)  # the background maintenance extends A's index every second
        shallow = depth_costs(a)
        sampler = LooseSampler(repo_a)
        sampler.start()
        done = 100
        while done < writes:
            count = min(chunk, writes - done)
            failures += alternated_round(servers, done // chunk, count, f"{done}_", rates)
            done += count
            print(
                f"  {done} writes each; in A at most {sampler.most} loose objects, "
                f"{sampler.most_packs} packs",
                flush=True,
            )
        time.sleep(4)
        deep, deep_b = depth_costs(a), depth_costs(b, required=False)
        head_rate, version_rate = version_ratio(a, 3 if smoke else 10)
        depth = head_version(a)
        size_after = disk_bytes(repo_a)
        rest = at_rest(repo_a, REST_WITHIN)
        sampler.stop.set()
    repo_b = roots["b"] / "environments" / "1.git"
    size_a, size_b = disk_bytes(repo_a), disk_bytes(repo_b)
    packs_b = maintenance.usage(repo_b).packs
    objects_a = disk_bytes(repo_a / "objects")
    # in fresh processes: the bench's own, an hour old and large, lengthened version reads most
    colds = [fresh_first_reads(roots["a"], Path(__file__).resolve().parents[1]) for _ in range(3)]
    cold_head = statistics.median(cold["head"] for cold in colds)
    cold_version = statistics.median(cold["version"] for cold in colds)
    aggressive, gc_seconds = aggressive_size(repo_a, scratch)
    backup = backup_seconds(roots["a"], scratch)
    rate_a, rate_b = statistics.median(rates["a"]), statistics.median(rates["b"])
    rows = [
        ("disk size vs git gc --aggressive", size_a / aggressive, "<= 2",
         f"A {size_a / 1e6:.1f} MB at rest (its objects/ {objects_a / aggressive:.2f}x; "
         f"full repack {rest:.0f} s after the last write), "
         f"{size_after / 1e6:.1f} MB right after the writes ({size_after / aggressive:.2f}x); "
         f"aggressive {aggressive / 1e6:.1f} MB ({gc_seconds:.0f} s); "
         f"B (no maintenance) {size_b / 1e6:.1f} MB"),
        ("loose objects at any time", sampler.most / 10_000, "<= 1",
         f"at most {sampler.most} loose objects and {sampler.most_packs} packs in A "
         f"(sampled every 0.5 s)"),
        ("write rate with maintenance vs without", rate_a / rate_b, ">= 0.8",
         f"A {rate_a:.0f} writes/s, B {rate_b:.0f} writes/s (medians of "
         f"{len(rates['a'])} alternated rounds of {chunk}); {failures} failed requests; "
         f"B {'served by ' + str(before) + ', ' if before else ''}holds {packs_b} packs "
         f"(without maintenance they pile up: each one slows its reads)"),
        ("explain of one key at depth vs at 100", deep["explain"] / shallow["explain"], "<= 2",
         f"{deep['explain']:.1f} ms at {depth} commits, {shallow['explain']:.1f} ms at ~100; "
         f"without an index (B) {deep_b['explain']:.1f} ms"),
        ("key history at depth vs at 100", deep["history"] / shallow["history"], "<= 2",
         f"{deep['history']:.1f} ms vs {shallow['history']:.1f} ms; without an index (B) "
         f"{deep_b['history']:.1f} ms; a key of a written node {deep['history_written']:.1f} ms "
         f"vs {shallow['history_written']:.1f} ms"),
        ("version=N read vs head read, first reads", cold_version / cold_head, "<= 1.2",
         f"{cold_version:.2f} ms at 400 versions, {cold_head:.2f} ms at the head (medians, "
         f"3 fresh processes); repeated over HTTP: {head_rate:.0f} head reads/s, "
         f"{version_rate:.0f} reads/s at 200 versions ({head_rate / version_rate:.2f}x)"),
        ("backup", backup / 60, "<= 1", f"{backup:.1f} s for {depth} commits"),
    ]  # fmt: skip
    if keep is not None:  # for `--first-reads 0 --root KEEP` on a store written over HTTP
        shutil.copytree(roots["a"], keep)
    print(f"longevity: {writes} REST writes into one environment, {harness.machine_load()}")
    for name, ratio, target, details in rows:  # before the kill loop, which takes long
        print(f"  {name}: {ratio:.2f} (target {target}): {details}", flush=True)
    missing, fsck = kill_loop(roots["a"], repo_a, kills)
    print(
        f"  maintenance SIGKILLed: {missing} (target = 0): {kills} kills: {missing} reachable "
        f"objects missing, fsck --strict {fsck}"
    )
    return failures == 0 and missing == 0 and fsck == "clean"


def main(argv: list[str] | None = None) -> None:
    parser = harness.options(__doc__)
    parser.add_argument("--writes", type=int, default=20_000, help="REST writes per store")
    parser.add_argument("--kills", type=int, default=50, help="maintenance runs SIGKILLed")
    parser.add_argument(
        "--first-reads", type=int, metavar="COMMITS", help="only the first reads, at COMMITS"
    )
    parser.add_argument(
        "--code", type=Path, action="append", help="a checkout to measure (--first-reads)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="processes per checkout (--first-reads); write rounds (--rate-at)",
    )
    parser.add_argument("--root", type=Path, help="--first-reads on this store, kept as it is")
    parser.add_argument(
        "--before", type=Path, help="serve store B with the gitstore of this checkout instead"
    )
    parser.add_argument("--keep", type=Path, help="copy store A here once at rest")
    parser.add_argument(
        "--rate-at", type=Path, metavar="STORE", help="only the write-rate row, on a kept store"
    )
    args = parser.parse_args(argv)
    if args.first_reads is not None:
        codes = args.code or [Path(__file__).resolve().parents[1]]
        with harness.scratch("gitstore-first-reads-", args.workdir) as scratch:
            first_reads(scratch, args.first_reads, codes, args.rounds, args.root)
        return
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # servers stopped on the way out
    if args.rate_at is not None:
        with harness.scratch("gitstore-rates-", args.workdir) as scratch:
            rates_at(scratch, args.rate_at, args.before, args.rounds)
        return
    writes, kills = (600, 5) if args.smoke else (args.writes, args.kills)
    with harness.scratch("gitstore-longevity-", args.workdir) as scratch:
        ok = run(scratch, max(writes, 200), kills, args.smoke, args.before, args.keep)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
