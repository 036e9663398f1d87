"""Git maintenance of a store's repositories: roll up packs and loose objects, keep a
commit-graph.

Every round of REST writes lands as a small pack (`gitstore.backend.newobjects`), pushes and
replicas may leave loose objects, and git rolls up nothing that gitstore wrote, so gitstore does
it, with git's own thresholds and commands (the `git maintenance` incremental strategy):

- `pack`: when a repository holds `PACK_LIMIT` packs (git's `gc.autoPackLimit`: libgit2
  searches every pack for an object, and scans them all again when one is missing) or
  `PACK_AT` loose objects (half of git's `gc.auto`, 6,700: git packs synchronously after its
  own commands, while this pack runs beside the writers that keep adding objects, so it starts
  early enough to stay below git's mark), or, an hour after its last run, more than
  `PACKS_HOURLY` packs or `LOOSE_HOURLY` loose objects (git's `maintenance.*.auto`),
  `gitstore.ops.rollup`: loose objects go into a new pack, and small packs are rolled up so
  that each pack holds at least twice the objects of all smaller ones together (`git repack
  --geometric=2`'s choice, copied by object list without its walk: a few packs, each object
  rewritten a logarithmic number of times). The server's handles on the
  repository are then opened again (`gitstore.backend.handles.mark_repacked`). No deltas are
  searched for (`--window=0`): that search was most of the CPU maintenance took from the
  writers it runs beside; the full repacks below (weekly, and once a repository is idle) find
  them. Nothing is deleted but loose copies of packed objects and packs whose every object is
  in the new pack.
- `commit-graph`: hourly when main moved, `git commit-graph write --reachable
  --changed-paths --split`: generation numbers and changed-path Bloom filters for git itself
  (`git log -- path`, backups, fsck).
- `index`: main's first-parent index (`gitstore.backend.chainindex`: version -> commit, and
  where each path changed), extended by the commits main gained, every second by the server's
  process, and by every run that writes the commit-graph: history, explain and `version=N`
  read it instead of walking the chain.
- `cruft`: weekly, and a minute after the writes to a repository stopped once it gained an
  eighth of the objects of its last full repack, `git repack -d -l -f --window=250 --depth=20
  --cruft --cruft-expiration=2.weeks.ago`: one pack of what is reachable, with the delta window
  of `git gc --aggressive` (git's default window of 10 objects finds few deltas here: the
  files of all nodes share a name, `astute.yaml`, so the window sorted by name and size holds
  other nodes' files of the same size, not the earlier versions of the same file), in chains
  of at most `FULL_DEPTH` deltas; at low
  priority, stopped after `FULL_SECONDS` (twice that at the next try, and so on, up to 8
  hours, until one fits), and as soon as writers left `PACK_AT` loose objects
  (it holds the lock the packs of loose objects need). Unreachable objects (lost races) go to
  a cruft pack and are dropped only once older than git's grace period (`gc.pruneExpire`), so
  a pushed but not yet referenced pack stays.

Writes never wait for it: git writes new packs under temporary names and renames them, and
removes an old file only once its objects are elsewhere; libgit2 readers in other processes
re-scan the pack folder when an object is not where they last saw it. Two runs on one
repository never overlap (a `flock` on `gitstore-maintenance.lock`, across processes).
A run killed at any point leaves at worst a temporary file (`tmp_pack_*`), never a lost object;
such files, and those of killed writers, are removed by a later run (`_clear_temporaries`).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gitstore import metrics
from gitstore.backend import chainindex, packfile
from gitstore.backend.handles import mark_repacked
from gitstore.backend.repository import Repository
from gitstore.errors import GitstoreError
from gitstore.ops.health import repository_paths
from gitstore.ops.rollup import roll_up

#: git's `gc.auto`: the loose objects git itself would pack at.
LOOSE_AUTO = 6700
#: Loose objects that make a pack due at once (see the module's docstring).
PACK_AT = LOOSE_AUTO // 2
#: git's `gc.autoPackLimit`: packs that make a pack (a roll-up of the small ones) due at once.
PACK_LIMIT = 50
#: How often the server's maintenance counts each repository's packs and loose objects for
#: `BUSY_SECONDS` after one was due: a round of writes lands a pack, so under load packs pass
#: `PACK_LIMIT` by the tens within a second (idle, once a second is enough).
CROWDED_SECONDS = 0.25
BUSY_SECONDS = 10.0
#: Packs above which the hourly run rolls them up (git's `maintenance.incremental-repack.auto`).
PACKS_HOURLY = 10
#: git's `maintenance.loose-objects.auto`: loose objects packed by the hourly run.
LOOSE_HOURLY = 100
HOUR = 3600.0
WEEK = 7 * 24 * HOUR
#: The delta search of the full repack: git's `gc.aggressiveWindow`, and chains of at most
#: 20 deltas, not `gc.aggressiveDepth`'s 50: a read at an old version (`version=N`) applies
#: each delta of its trees' chains, and at 50 that cost a fifth of a first read's time (docs/
#: performance.md); the pack is a few percent larger.
FULL_WINDOW = 250
FULL_DEPTH = 20
#: An idle repository gets a full repack once it gained 1/REGROW of the objects its last one
#: packed: each object is then searched for deltas a bounded number of times in all.
REGROW = 8
#: A full repack running longer is stopped (nothing is lost; the next idle moment retries,
#: allowed twice as long each time up to `FULL_SECONDS_MOST`: one of 100,000 commits took
#: ~22 minutes on 2 vCPUs, and a limit it never fits in would have it begun every idle minute
#: and stopped every half hour, for ever).
FULL_SECONDS = 30 * 60
FULL_SECONDS_MOST = 8 * 3600
#: Temporary files in the pack folder this old, and open in no process, were left by a killed
#: writer (`_clear_temporaries`).
TEMPORARY_SECONDS = HOUR
#: git's `gc.pruneExpire`: unreachable objects younger than this are kept.
GRACE = "2.weeks.ago"
LOCK = "gitstore-maintenance.lock"
STATE = "gitstore-maintenance.json"
TASKS = ("pack", "commit-graph", "cruft", "index")


@dataclass(frozen=True)
class Usage:
    """What a repository holds on disk."""

    loose: int
    packs: int
    size: int  # bytes of objects/ (loose files, packs, indexes, commit-graph)
    objects: int = 0  # loose objects and those of packs other than cruft packs


@dataclass
class State:
    """What the last runs did (`gitstore-maintenance.json` in the repository)."""

    last_run: float = 0.0
    last_cruft: float = 0.0
    graph_head: str | None = None
    full_objects: int = 0  # `Usage.objects` right after the last full repack
    full_seconds: float = 0.0  # what the next full repack may take, past `FULL_SECONDS`


@dataclass
class Report:
    """One repository's run: the tasks it runs (none in a dry run) and those its thresholds
    made due, usage before and after."""

    name: str
    tasks: list[str]
    before: Usage
    due: list[str] = field(default_factory=list)
    after: Usage | None = None
    skipped: str | None = None  # why nothing ran (another run holds the lock)
    deferred: list[str] = field(default_factory=list)  # full repacks that yielded to writes
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def usage(repo: Path) -> Usage:
    """Loose objects, packs and bytes of a repository's object store."""
    objects = Path(repo) / "objects"
    loose = size = packs = packed = 0
    for entry in _files(objects):
        size += entry.stat(follow_symlinks=False).st_size
        parent = os.path.basename(os.path.dirname(entry.path))
        if len(parent) == 2 and len(entry.name) == 38:
            loose += 1
        elif parent == "pack" and entry.name.endswith(".pack"):
            packs += 1
        elif parent == "pack" and entry.name.endswith(".idx"):
            packed += _indexed(Path(entry.path))
    return Usage(loose, packs, size, loose + packed)


def _indexed(idx: Path) -> int:
    """Objects of a pack other than a cruft pack (0 for one replaced meanwhile)."""
    if idx.with_suffix(".mtimes").exists():
        return 0  # a cruft pack: unreachable objects, not growth
    return packfile.indexed_count(idx)


def _files(folder: Path) -> Iterator[os.DirEntry]:
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith("incoming-"):  # a push's quarantine: not ours yet
                    yield from _files(Path(entry.path))
            else:
                with contextlib.suppress(FileNotFoundError):
                    entry.stat(follow_symlinks=False)
                    yield entry


def due(repo: Path, found: Usage, state: State, now: float) -> list[str]:
    """The tasks a run at `now` should do, in order."""
    hourly = now - state.last_run >= HOUR
    tasks = []
    crowded = found.loose >= PACK_AT or found.packs >= PACK_LIMIT
    if crowded or (hourly and (found.loose >= LOOSE_HOURLY or found.packs > PACKS_HOURLY)):
        tasks.append("pack")
    if now - state.last_cruft >= WEEK and (found.packs > 1 or found.loose):
        tasks.append("cruft")
    if hourly and _head(repo) != state.graph_head:
        tasks += ["commit-graph", "index"]
    return tasks


def regrown(found: Usage, state: State) -> bool:
    """Whether a repository gained enough objects since its last full repack for an idle
    moment to make one (a busy time's packs have no deltas: see the module's docstring)."""
    grown = found.objects - state.full_objects
    return grown >= max(LOOSE_HOURLY, state.full_objects // REGROW)


def maintain(
    repo: Path,
    name: str,
    *,
    dry_run: bool = False,
    force: bool = False,
    extra: Sequence[str] = (),
) -> Report:
    """Run the tasks due in one repository, and those of `extra` (every task with `force`);
    a dry run only names those due. Skipped while another run holds the repository's lock."""
    started = time.monotonic()
    repo = Path(repo)
    state = _load_state(repo)
    before = usage(repo)
    due_now = due(repo, before, state, time.time())
    wanted = TASKS if force else [t for t in TASKS if t in due_now or t in extra]
    tasks = [] if dry_run else list(wanted)
    report = Report(name, tasks, before, due_now)
    if not tasks:
        report.after = before
        return report
    with _held(repo) as held:
        if not held:
            report.skipped = "another maintenance run holds " + LOCK
            return report
        _run_tasks(repo, tasks, state, report)
    report.after = usage(repo)
    report.seconds = round(time.monotonic() - started, 3)
    metrics.maintenance_ran(name, asdict(report.after), time.time(), report.errors)
    return report


def maintain_store(
    root: Path, *, only: str | None = None, dry_run: bool = False, force: bool = False
) -> list[Report]:
    """`maintain` every repository of the store at `root` (or only the one named `only`)."""
    return [
        maintain(path, name, dry_run=dry_run, force=force)
        for name, path in repository_paths(Path(root))
        if only is None or name == only
    ]


def observe_store(root: Path) -> None:
    """Publish every repository's usage as metrics (without maintaining it)."""
    for name, path in repository_paths(Path(root)):
        metrics.repository_usage(name, asdict(usage(path)), _load_state(path).last_run)


def _run_tasks(repo: Path, tasks: list[str], state: State, report: Report) -> None:
    now = time.time()
    _clear_stale_locks(repo)
    _clear_temporaries(repo)
    for task in tasks:
        if task == "index":
            error = _index(repo, report.name)
        elif task == "cruft":
            # Stopped once writers made a pack due: it holds the lock the roll-up needs, for
            # minutes on a long history (every read searches each pack meanwhile). Stopped, it
            # loses nothing and is due again at the next idle minute.
            due = functools.partial(pack_due, repo)
            seconds = max(FULL_SECONDS, state.full_seconds)
            error = _git(repo, *_COMMANDS[task], nice=True, seconds=seconds, until=due)
            state.full_seconds = _next_limit(seconds, error, state.full_seconds)
        elif task == "pack":
            error = roll_up(repo)
        else:
            error = _git(repo, *_COMMANDS[task])
        if task in ("pack", "cruft"):
            mark_repacked(repo)  # even a failed or stopped one may have deleted packs
        if error == YIELDED:
            report.deferred.append(task)
            continue
        if error:
            report.errors.append(f"{task}: {error}")
            continue
        if task == "cruft":
            state.last_cruft = now
            state.full_objects = usage(repo).objects
        if task == "commit-graph":
            state.graph_head = _head(repo)
    state.last_run = now
    _save_state(repo, state)


def _next_limit(seconds: float, error: str | None, grown: float) -> float:
    """What the next full repack may take after one that was allowed `seconds` ended with
    `error`: the default again (0) once one fitted, twice as long if it was stopped for its
    time, and the `grown` limit still when it yielded to writers or failed (neither says
    whether it fits)."""
    if error is None:
        return 0.0
    if error.startswith(STOPPED):
        return min(2 * seconds, FULL_SECONDS_MOST)
    return grown


_COMMANDS = {
    "cruft": (
        "repack",
        "-d",
        "-l",
        "-q",
        "-f",  # deltas searched again: the busy-time packs have none (`--window=0`)
        f"--window={FULL_WINDOW}",
        f"--depth={FULL_DEPTH}",
        "--cruft",
        f"--cruft-expiration={GRACE}",
        "--no-write-bitmap-index",
    ),
    "commit-graph": (
        "commit-graph",
        "write",
        "--reachable",
        "--changed-paths",
        "--split",
        "--no-progress",
    ),
}


#: What `_git` answers when it stopped git because `until` came true.
YIELDED = "yielded to writes"
STOPPED = "stopped after"  # its time, followed by the seconds it was allowed
#: How often a full repack looks whether it must yield.
YIELD_POLL = 0.5


def _git(
    repo: Path,
    *args: str,
    nice: bool = False,
    seconds: float | None = None,
    until: Callable[[], bool] | None = None,
) -> str | None:
    """Run git on `repo`, stopped (with its children) after `seconds`, or as soon as `until()`
    is true (then `YIELDED`); its last line of error output, None on success."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    # One thread: a repack must leave the other core to the writers it runs beside. Only the
    # full repack runs at low priority: a pack of loose objects must keep up with the
    # writers (at `nice 10` beside busy workers it got too little CPU, and loose objects
    # piled up).
    command = ["git", "-c", "pack.threads=1", "--git-dir", str(repo), *args]
    command = ["nice", "-n", "10", *command] if nice else command
    # Same process group as ours: whoever stops maintenance stops its git too.
    with subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    ) as run:
        deadline = time.monotonic() + (math.inf if seconds is None else seconds)
        while True:
            try:
                _, errors = run.communicate(
                    timeout=max(0.0, min(YIELD_POLL, deadline - time.monotonic()))
                )
                break
            except subprocess.TimeoutExpired:
                stopped = _why_stop(deadline, seconds, until)
                if stopped:
                    _kill_tree(run.pid)
                    run.communicate()
                    return stopped
    if run.returncode == 0:
        return None
    return (errors.strip().splitlines() or [f"exit status {run.returncode}"])[-1]


def _why_stop(deadline: float, seconds: float | None, until: Callable[[], bool] | None) -> str:
    """Why a running git must stop now (`until` came true, or its time is up); "" to go on."""
    if until is not None and until():
        return YIELDED
    if time.monotonic() >= deadline:
        return f"{STOPPED} {seconds:.0f} s"
    return ""


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and its descendants (git repack runs git pack-objects)."""
    children = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            children += [int(c) for c in (task / "children").read_text().split()]
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)  # first: it starts no child after this
    for child in children:
        _kill_tree(child)


#: Lock files of the git commands maintenance runs: a run killed mid-way leaves them, and git
#: then skips the commit-graph for good, without an error.
_GIT_LOCKS = ("objects/info/commit-graphs/*.lock", "objects/info/*.lock", "objects/pack/*.lock")


def _clear_stale_locks(repo: Path) -> None:
    """Remove the lock files of a killed run (we hold the maintenance lock, and git's own gc
    is off: none is in use unless a process has it open, e.g. an operator's `git gc`)."""
    found = [path for pattern in _GIT_LOCKS for path in repo.glob(pattern)]
    _remove_unused(found)


def _clear_temporaries(repo: Path) -> None:
    """Remove what killed writers left in the pack folder (a write's pack, whose temporary
    files or index never landed: `gitstore.backend.packfile`; git's own repack and
    index-pack), once older than `TEMPORARY_SECONDS` and open in no process. Nothing there
    was acknowledged: a write names its objects only once their pack and index landed."""
    cutoff = time.time() - TEMPORARY_SECONDS
    found = [
        Path(entry.path)
        for entry in _files(repo / "objects" / "pack")
        if _temporary(entry) and entry.stat(follow_symlinks=False).st_mtime < cutoff
    ]
    _remove_unused(found)


def _remove_unused(found: list[Path]) -> None:
    """Remove those of `found` no process has open."""
    if not found:
        return
    in_use = _open_files()
    for path in found:
        if str(path) not in in_use:
            path.unlink(missing_ok=True)


def _temporary(entry: os.DirEntry) -> bool:
    name = entry.name
    if name.startswith(("tmp_", ".tmp-")):
        return True
    return name.endswith(".pack") and not os.path.exists(entry.path[: -len(".pack")] + ".idx")


def _open_files() -> set[str]:
    """Every file some process has open now (Linux `/proc`)."""
    found: set[str] = set()
    for fd_dir in Path("/proc").glob("[0-9]*/fd"):
        with contextlib.suppress(OSError):  # a process that ended, or one we may not see
            for fd in list(fd_dir.iterdir()):
                with contextlib.suppress(OSError):  # closed meanwhile (the listing's own)
                    found.add(os.readlink(fd))
    return found


def _index(repo: Path, name: str) -> str | None:
    """Extend main's index; what went wrong, None on success."""
    try:
        Repository(repo, name).update_index()
    except (GitstoreError, chainindex.Error, OSError) as exc:
        return str(exc)
    return None


def _head(repo: Path) -> str | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run(
        ["git", "--git-dir", str(repo), "rev-parse", "--verify", "-q", "refs/heads/main"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or None


@contextlib.contextmanager
def _held(repo: Path) -> Iterator[bool]:
    """The repository's maintenance lock if free (True), else False at once."""
    fd = os.open(repo / LOCK, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # drops the flock


def _load_state(repo: Path) -> State:
    try:
        data = json.loads((repo / STATE).read_text())
        return State(**{k: data[k] for k in asdict(State()) if k in data})
    except (OSError, ValueError, TypeError):
        return State()  # none yet, or torn by a crash: every task is then due


def _save_state(repo: Path, state: State) -> None:
    temporary = repo / f"{STATE}.tmp"
    temporary.write_text(json.dumps(asdict(state)))
    os.replace(temporary, repo / STATE)


def loose_estimate(repo: Path) -> int:
    """Loose objects of a repository estimated from one of its 256 folders, as `git gc --auto`
    does (`objects/17`): one `scandir`, so it can be asked several times a second."""
    try:
        return 256 * sum(1 for _ in os.scandir(Path(repo) / "objects" / "17"))
    except FileNotFoundError:
        return 0


def pack_due(repo: Path) -> bool:
    """Whether writers left a pack's worth of loose objects or `PACK_LIMIT` packs (both asked
    cheaply enough for every second)."""
    return loose_estimate(repo) >= PACK_AT or pack_count(repo) >= PACK_LIMIT


def pack_count(repo: Path) -> int:
    """Packs of a repository: one `scandir` of its pack folder, which `PACK_LIMIT` keeps
    short, so it can be asked several times a second."""
    return packfile.count(Path(repo) / "objects" / "pack")


def run_forever(root: Path, seconds: float = 1.0, parent: int | None = None) -> None:
    """The server's background maintenance (`gitstore serve`): every `seconds`, pack the
    repositories whose packs reached `PACK_LIMIT` or whose loose objects passed `PACK_AT`
    (looked at every `CROWDED_SECONDS` while writes keep making a pack due); every minute,
    every task due, a full repack (`cruft`, with deltas) of a repository left idle that
    `regrown` (no new objects for a minute: its writers are done, its loose files and the
    undeltified packs of busy times need not wait), and the metrics of every repository.
    Meanwhile a thread of its own extends each repository's index every `seconds`: reads walk
    only what main gained since, and a full repack of a long history takes minutes. It ends
    when `parent` is gone."""

    def alive() -> bool:
        return parent is None or _alive(parent)

    indexes = threading.Thread(
        target=_keep_indexes, args=(root, seconds, alive), name="indexes", daemon=True
    )
    indexes.start()
    last_full = busy_until = 0.0
    idle: dict[str, int] = {}  # objects of each repository at the last minute's pass
    while alive():
        full = time.monotonic() - last_full >= 60
        for name, path in repository_paths(Path(root)):
            if full:
                found = usage(path)
                settled = idle.get(name) == found.objects and regrown(found, _load_state(path))
                extra = ("cruft", "commit-graph", "index") if settled else ()
                _logged(maintain(path, name, extra=extra))
                idle[name] = usage(path).objects
            elif pack_due(path):
                _logged(maintain(path, name))
                busy_until = time.monotonic() + BUSY_SECONDS
        if full:
            observe_store(root)
            last_full = time.monotonic()
        time.sleep(CROWDED_SECONDS if time.monotonic() < busy_until else seconds)
    indexes.join()


def _keep_indexes(root: Path, seconds: float, alive: Callable[[], bool]) -> None:
    """Extend every repository's index every `seconds` while `alive()`."""
    while alive():
        for name, path in repository_paths(Path(root)):
            _index(path, name)
        time.sleep(seconds)


def at_rest(repo: Path) -> bool:
    """Whether an idle repository has no full repack due (`run_forever`)."""
    return not regrown(usage(repo), _load_state(Path(repo)))


def _logged(report: Report) -> None:
    if report.errors:
        metrics.log.warning("maintenance of %s failed: %s", report.name, "; ".join(report.errors))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start_detached(root: Path, parent: int) -> None:
    """Start `run_forever` for `root` in a new process that is not our child (a fork, a fork
    again, then exec at once, so no lock of ours is inherited), so that gunicorn's arbiter
    counts only its workers as children. It ignores SIGINT (a Ctrl-C reaches our whole
    process group, and would interrupt it mid-import with a traceback) and ends by itself
    once `parent` is gone."""
    command = [sys.executable, "-m", "gitstore.ops.maintenance", str(root), str(parent)]
    child = os.fork()
    if child == 0:
        try:
            if os.fork() == 0:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # kept across exec
                os.execv(sys.executable, command)
        finally:
            os._exit(0)
    os.waitpid(child, 0)


def _main(argv: list[str]) -> None:
    from gitstore import logs

    logs.configure(logs.default_format())
    with contextlib.suppress(KeyboardInterrupt):
        run_forever(Path(argv[0]), parent=int(argv[1]))


if __name__ == "__main__":
    _main(sys.argv[1:])
