"""Git maintenance (gitstore.ops.maintenance) against real repositories, real `git`, real
pygit2 readers in other processes, and runs killed with SIGKILL."""

from __future__ import annotations

import fcntl
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import requests
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore.backend.handles import REPACKED
from gitstore.ops import maintenance

PROJECT = Path(__file__).resolve().parents[2]
OLD = time.time() - 2 * maintenance.TEMPORARY_SECONDS


def _write(store, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        store.config.put(1, [("nodes", str(i % 7))], "astute", "values", {"n": i, "m": {"k": i}})


def _git(repo: Path, *args: str, stdin: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", "--git-dir", str(repo), *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _reachable(repo: Path) -> set[str]:
    return {line.split()[0] for line in _git(repo, "rev-list", "--objects", "--all").splitlines()}


def _missing(repo: Path, ids: set[str]) -> list[str]:
    out = _git(repo, "cat-file", "--batch-check", stdin="\n".join(sorted(ids)) + "\n")
    return [line.split()[0] for line in out.splitlines() if line.endswith("missing")]


@pytest.fixture
def env_repo(fuel_store) -> Path:
    return fuel_store.environment_path(1)


def test_a_pack_is_due_past_the_threshold_and_rolls_up_packs_and_loose_objects(
    fuel_store, env_repo
):
    _write(fuel_store, 30)  # each write lands as a pack of its own
    loose = [_git(env_repo, "hash-object", "-w", "--stdin", stdin=f"pushed {n}\n") for n in "ab"]
    before = maintenance.usage(env_repo)
    assert before.loose == 2 and before.packs > maintenance.PACKS_HOURLY
    reachable = _reachable(env_repo)
    report = maintenance.maintain(env_repo, "environments/1.git")
    assert report.tasks[0] == "pack" and "commit-graph" in report.tasks and not report.errors
    assert report.after.loose == 0 and report.after.packs <= 2  # geometric: a few packs
    assert (env_repo / "objects/info/commit-graphs/commit-graph-chain").exists()
    assert not _missing(env_repo, reachable | {oid.strip() for oid in loose})
    _git(env_repo, "fsck", "--strict")
    assert fuel_store.config.read(1, [("nodes", "1")], "astute", "values").data["n"] == 29
    again = maintenance.maintain(env_repo, "environments/1.git")
    assert again.tasks == []  # nothing is due right after a run


def test_packs_past_the_limit_make_a_pack_due_at_once(env_repo):
    state = maintenance.State(last_run=time.time(), last_cruft=time.time())
    below = maintenance.Usage(loose=0, packs=maintenance.PACK_LIMIT - 1, size=0)
    at = maintenance.Usage(loose=0, packs=maintenance.PACK_LIMIT, size=0)
    assert "pack" not in maintenance.due(env_repo, below, state, time.time())
    assert "pack" in maintenance.due(env_repo, at, state, time.time())
    assert "pack" in maintenance.due(env_repo, below, state, time.time() + maintenance.HOUR)


def test_a_repack_makes_the_servers_open_their_handles_again(fuel_store, env_repo):
    _write(fuel_store, 3)
    marker = env_repo / REPACKED
    assert not marker.exists()
    maintenance.maintain(env_repo, "environments/1.git", extra=("pack",))
    stamp = marker.stat().st_ino
    maintenance.maintain(env_repo, "environments/1.git", extra=("pack",))
    assert marker.stat().st_ino != stamp


def test_what_killed_writers_left_is_removed_once_old_and_unused(env_repo):
    folder = env_repo / "objects" / "pack"
    left = [folder / "tmp_pack_a1", folder / "tmp_idx_a1", folder / ".tmp-7-pack-b.pack"]
    left.append(folder / "pack-0123.pack")  # landed, its index never did
    young, held = folder / "tmp_pack_young", folder / "tmp_idx_held"
    for path in [*left, young, held]:
        path.write_bytes(b"")
        if path != young:
            os.utime(path, (OLD, OLD))
    with held.open("rb"):  # a live writer's (or git's) file is never removed
        maintenance.maintain(env_repo, "environments/1.git", extra=("pack",))
    assert not [path for path in left if path.exists()]
    assert young.exists() and held.exists()
    assert all(index.with_suffix(".pack").exists() for index in folder.glob("*.idx"))
    _git(env_repo, "fsck", "--strict")


def test_a_dry_run_names_what_is_due_and_changes_nothing(fuel_store, env_repo):
    _write(fuel_store, 30)
    before = maintenance.usage(env_repo)
    report = maintenance.maintain(env_repo, "environments/1.git", dry_run=True)
    assert report.tasks == [] and "pack" in report.due
    assert maintenance.usage(env_repo) == before


def test_a_killed_run_s_commit_graph_lock_is_cleared(fuel_store, env_repo):
    _write(fuel_store, 5)
    maintenance.maintain(env_repo, "environments/1.git", force=True)
    graphs = env_repo / "objects/info/commit-graphs"
    (graphs / "commit-graph-chain.lock").write_text("")  # what a SIGKILLed git leaves
    chain = (graphs / "commit-graph-chain").read_text()
    _write(fuel_store, 5, start=10)
    assert not maintenance.maintain(env_repo, "environments/1.git", force=True).errors
    assert (graphs / "commit-graph-chain").read_text() != chain  # the new commits are in
    assert not (graphs / "commit-graph-chain.lock").exists()


def test_a_run_is_skipped_while_another_holds_the_lock(fuel_store, env_repo):
    _write(fuel_store, 30)
    fd = os.open(env_repo / maintenance.LOCK, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        report = maintenance.maintain(env_repo, "environments/1.git", force=True)
    finally:
        os.close(fd)
    assert report.skipped and "gitstore-maintenance.lock" in report.skipped
    assert maintenance.usage(env_repo).loose == report.before.loose


def test_young_unreachable_objects_and_an_unreferenced_pack_stay(fuel_store, env_repo, tmp_path):
    _write(fuel_store, 5)
    loose = _git(env_repo, "hash-object", "-w", "--stdin", stdin="not referenced yet\n").strip()
    other = tmp_path / "other.git"
    subprocess.run(["git", "init", "-q", "--bare", str(other)], check=True)
    pushed = _git(other, "hash-object", "-w", "--stdin", stdin="pushed, no ref yet\n").strip()
    subprocess.run(  # a pack that arrived, whose ref is not there yet
        f"git --git-dir {other} pack-objects -q --stdout <<< {pushed} | "
        f"git --git-dir {env_repo} index-pack --stdin >/dev/null",
        shell=True,
        executable="/bin/bash",
        check=True,
    )
    maintenance.maintain(env_repo, "environments/1.git", force=True)
    assert not _missing(env_repo, {loose, pushed})
    _git(env_repo, "fsck", "--strict")


_READER = textwrap.dedent(
    """
    import sys, time, pygit2
    repo = pygit2.Repository(sys.argv[1])
    until = time.monotonic() + float(sys.argv[2])
    seen, reads, errors = set(), 0, []

    def walk(tree):
        global reads
        for entry in tree:
            obj = repo[entry.id]
            reads += 1
            if isinstance(obj, pygit2.Tree):
                walk(obj)
            else:
                assert obj.data is not None

    while time.monotonic() < until:
        try:
            commit = repo[repo.references["refs/heads/main"].resolve().target]
            for _ in range(40):
                seen.add(commit.id)
                walk(commit.tree)
                if not commit.parent_ids:
                    break
                commit = repo[commit.parent_ids[0]]
            for oid in list(seen)[:200]:  # old commits, whose packs get replaced
                walk(repo[oid].tree)
        except Exception as exc:
            errors.append(repr(exc))
    print(reads, len(errors), errors[:3])
    """
)


def test_pygit2_readers_in_other_processes_survive_packs_being_replaced(fuel_store, env_repo):
    _write(fuel_store, 20)
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", _READER, str(env_repo), "6"], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    for round_ in range(6):
        _write(fuel_store, 25, start=100 * round_)
        report = maintenance.maintain(env_repo, "environments/1.git", force=True)
        assert not report.errors
    for reader in readers:
        out, _ = reader.communicate(timeout=60)
        reads, errors, sample = out.split(" ", 2)
        assert int(reads) > 0
        assert int(errors) == 0, sample


def test_a_run_killed_at_any_point_loses_nothing(fuel_store, env_repo):
    """SIGKILL the run (and its git processes) after a random delay, round after round."""
    script = (
        "import sys; from gitstore.ops.maintenance import maintain; "
        "maintain(sys.argv[1], 'environments/1.git', force=True)"
    )
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    rng = random.Random(38)
    reachable: set[str] = set()
    for round_ in range(8):
        _write(fuel_store, 20, start=100 * round_)
        reachable |= _reachable(env_repo)
        run = subprocess.Popen(
            [sys.executable, "-c", script, str(env_repo)], env=env, start_new_session=True
        )
        time.sleep(rng.uniform(0.1, 0.5))
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        assert not _missing(env_repo, reachable), f"round {round_}"
    _git(env_repo, "fsck", "--strict")
    assert not _missing(env_repo, reachable)
    after = maintenance.maintain(env_repo, "environments/1.git", force=True)
    assert after.errors == [], after
    assert not list(env_repo.glob("objects/info/commit-graphs/*.lock"))
    _git(env_repo, "fsck", "--strict")
    assert fuel_store.config.read(1, [("nodes", "0")], "astute", "values").data["n"] == 714


def test_the_server_maintains_its_repositories_and_reports_them(fuel_store, tmp_path):
    _write(fuel_store, 30)
    repo = fuel_store.environment_path(1)
    port = free_port()
    log = tmp_path / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(fuel_store.root), "--port", str(port)]
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*args, "--workers", "1"], stdout=out, stderr=subprocess.STDOUT,
            env=isolated_env(tmp_path),
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_answers(server, url, log, probe="/healthz")
        deadline = time.monotonic() + 30
        while maintenance.usage(repo).loose and time.monotonic() < deadline:
            time.sleep(0.2)
        assert maintenance.usage(repo).loose == 0, log.read_text()[-2000:]
        while time.monotonic() < deadline:
            text = requests.get(url + "/metrics", timeout=10).text
            if 'gitstore_repository_packs{repository="environments/1.git"} 1.0' in text:
                break
            time.sleep(0.2)
        assert 'gitstore_repository_loose_objects{repository="environments/1.git"} 0.0' in text
        assert "gitstore_repository_last_maintenance_timestamp_seconds{" in text
    finally:
        stop_process(server)


def _grow(store, rounds: int, nodes: int = 16) -> None:
    """Every node's document gains a key per round: versions of files that share one name."""
    for round_ in range(rounds):
        for node in range(nodes):
            doc = {f"key_{node}_{i}": f"value {i} of node {node}" for i in range(round_ * 8 + 8)}
            store.config.put(1, [("nodes", str(node))], "astute", "values", doc)


def _pack_bytes(repo: Path) -> int:
    return sum(p.stat().st_size for p in repo.glob("objects/pack/*.pack"))


def test_the_full_repack_finds_the_deltas_of_git_gc_aggressive(fuel_store, env_repo, tmp_path):
    _grow(fuel_store, 12)
    copy = tmp_path / "aggressive.git"
    subprocess.run(["cp", "-a", str(env_repo), str(copy)], check=True)
    _git(copy, "gc", "--aggressive", "--prune=now", "-q")
    report = maintenance.maintain(env_repo, "environments/1.git", extra=("pack", "cruft"))
    assert not report.errors
    reachable = {
        p for p in env_repo.glob("objects/pack/*.pack") if not p.with_suffix(".mtimes").exists()
    }
    assert sum(p.stat().st_size for p in reachable) <= 1.25 * _pack_bytes(copy)
    _git(env_repo, "fsck", "--strict")


def test_an_idle_repository_is_at_rest_only_after_a_full_repack(fuel_store, env_repo):
    maintenance.maintain(env_repo, "environments/1.git", force=True)
    assert maintenance.at_rest(env_repo)
    _write(fuel_store, 30)
    assert not maintenance.at_rest(env_repo)
    maintenance.maintain(env_repo, "environments/1.git", extra=("pack",))
    assert maintenance.usage(env_repo).loose == 0
    assert not maintenance.at_rest(env_repo)  # packed without deltas: the full repack is due
    maintenance.maintain(env_repo, "environments/1.git", extra=("cruft",))
    assert maintenance.at_rest(env_repo)
    _write(fuel_store, 3, start=100)
    assert maintenance.at_rest(env_repo)  # a few writes: less than an eighth more objects


def test_a_full_repack_stopped_by_its_time_limit_loses_nothing(fuel_store, env_repo):
    _grow(fuel_store, 6)  # enough objects that the repack takes several times the limit
    reachable = _reachable(env_repo)
    error = maintenance._git(env_repo, *maintenance._COMMANDS["cruft"], seconds=0.02)
    assert error == "stopped after 0 s"
    assert not _git_children(os.getpid())  # git and its pack-objects are gone
    assert not _missing(env_repo, reachable)
    _git(env_repo, "fsck", "--strict")
    assert not maintenance.maintain(env_repo, "environments/1.git", force=True).errors
    assert not _missing(env_repo, reachable)


def test_a_full_repack_stopped_by_its_time_is_allowed_twice_as_long_next_time(
    fuel_store, env_repo, monkeypatch
):
    """A limit the full repack never fits in (a long history on a slow host) would have it
    begun at every idle minute and stopped at every limit, for ever."""
    _grow(fuel_store, 6)
    monkeypatch.setattr(maintenance, "FULL_SECONDS", 0.001)  # git cannot even start
    monkeypatch.setattr(maintenance, "FULL_SECONDS_MOST", 0.003)
    report = maintenance.maintain(env_repo, "environments/1.git", extra=("cruft",))
    assert report.errors == ["cruft: stopped after 0 s"]
    assert maintenance._load_state(env_repo).full_seconds == 0.002
    maintenance.maintain(env_repo, "environments/1.git", extra=("cruft",))
    assert maintenance._load_state(env_repo).full_seconds == 0.003  # never past the most
    assert not maintenance.at_rest(env_repo)
    monkeypatch.setattr(maintenance, "FULL_SECONDS", 600.0)
    assert not maintenance.maintain(env_repo, "environments/1.git", extra=("cruft",)).errors
    assert maintenance._load_state(env_repo).full_seconds == 0.0  # one fitted: the default
    assert maintenance.at_rest(env_repo)


def _git_children(pid: int) -> list[str]:
    """The git processes among `pid`'s children (other tests' servers may be children too)."""
    out = subprocess.run(["ps", "-o", "comm=,args=", "--ppid", str(pid)], capture_output=True)
    lines = out.stdout.decode().splitlines()
    return [line for line in lines if line.split()[0] == "git" or line.startswith("git-")]


def _loose_in_folder_17(repo: Path, count: int) -> None:
    """Write `count` loose blobs whose ids start with 17: the folder `loose_estimate` counts
    (as `git gc --auto` does), so the repository looks like `count * 256` loose objects."""
    import pygit2

    git = pygit2.Repository(str(repo))
    found = 0
    for i in range(100_000):
        data = f"loose {i}".encode()
        if str(pygit2.hash(data)).startswith("17"):
            git.create_blob(data)
            found += 1
            if found == count:
                return


def test_a_full_repack_yields_to_writers_that_left_a_pack_s_worth_of_loose_objects(
    fuel_store, env_repo, monkeypatch
):
    _grow(fuel_store, 4)
    maintenance.maintain(env_repo, "environments/1.git", extra=("pack",))
    reachable = _reachable(env_repo)
    last_full = maintenance._load_state(env_repo).last_cruft
    _loose_in_folder_17(env_repo, maintenance.PACK_AT // 256 + 1)
    monkeypatch.setattr(maintenance, "YIELD_POLL", 0.01)  # asked before git can finish
    report = maintenance.maintain(env_repo, "environments/1.git", extra=("cruft",))
    assert report.deferred == ["cruft"] and not report.errors
    assert not _git_children(os.getpid())
    assert maintenance._load_state(env_repo).last_cruft == last_full  # due again when idle
    assert not _missing(env_repo, reachable)
    _git(env_repo, "fsck", "--strict")
    assert not maintenance.maintain(env_repo, "environments/1.git", extra=("pack",)).errors
    assert maintenance.usage(env_repo).loose == 0


def test_the_index_keeps_up_while_a_full_repack_runs(fuel_store, env_repo, monkeypatch):
    """A full repack of a long history takes minutes; reads walk what the index lacks."""
    import threading

    from gitstore.backend import chainindex

    repacking, done = threading.Event(), threading.Event()
    real_maintain = maintenance.maintain

    def long_repack(*args, **kwargs):  # the real run, after minutes of repacking
        repacking.set()
        done.wait(30)
        return real_maintain(*args, **kwargs)

    assert maintenance._index(env_repo, "environments/1.git") is None  # up to date now
    monkeypatch.setattr(maintenance, "maintain", long_repack)
    parent = subprocess.Popen(["sleep", "60"])  # run_forever ends once its parent is gone
    loop = threading.Thread(
        target=maintenance.run_forever, args=(fuel_store.root, 0.05, parent.pid), daemon=True
    )
    loop.start()
    try:
        assert repacking.wait(10)
        _write(fuel_store, 5)
        head = _git(env_repo, "rev-parse", "refs/heads/main").strip()
        index = chainindex.ChainIndex(env_repo)
        deadline = time.monotonic() + 10
        while index.version_of(head) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert index.version_of(head) is not None
    finally:
        done.set()
        parent.kill()
        parent.wait()
        loop.join(10)
    assert not loop.is_alive()
