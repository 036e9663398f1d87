"""Commits that arrive from outside: pushed objects in quarantine, fetches, fast-forwards.

The push gate and mirror mode (GitOps) need a few things the write path does not: to see the
objects of a push before git accepts them, to ask whether one commit descends from another, to
run the real `git fetch`, and to move `main` to a commit someone else made.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pygit2

from gitstore.backend import packfile, refs, revisions
from gitstore.backend.changes import ChangeSet, Graft
from gitstore.backend.newobjects import durable, land
from gitstore.backend.repository import COMMITTER, MAIN, Repository
from gitstore.backend.snapshot import commit_of
from gitstore.backend.trees import build_tree
from gitstore.errors import Conflict, Unavailable

ZERO = "0" * 40
FETCH_TIMEOUT_SECONDS = 120
QUARANTINE_PREFIX = "tmp_objdir-incoming-"
STALE_QUARANTINE_SECONDS = 60.0


def include_quarantine(repo: Repository) -> None:
    """Make the objects of a push under way visible to this thread's handle of `repo`.

    In a pre-receive hook git keeps pushed objects in a quarantine folder that libgit2 does not
    look in by itself (shared/FACTS.md); outside a hook this does nothing.
    """
    quarantine = os.environ.get("GIT_QUARANTINE_PATH")
    if quarantine and Path(quarantine).resolve().is_relative_to(repo.path.resolve()):
        repo.git.odb.add_disk_alternate(quarantine)


def is_ancestor(repo: Repository, ancestor: str, descendant: str) -> bool:
    """Whether `descendant` is `ancestor` or has it in its history."""
    if ancestor == descendant:
        return True
    return bool(repo.git.descendant_of(pygit2.Oid(hex=descendant), pygit2.Oid(hex=ancestor)))


def merge_base(repo: Repository, one: str, other: str) -> str | None:
    """The best common ancestor of two commits, or None when their histories are unrelated."""
    base = repo.git.merge_base(pygit2.Oid(hex=one), pygit2.Oid(hex=other))
    return str(base) if base is not None else None


def commits_between(repo: Repository, old: str | None, new: str) -> int:
    """How many commits `new` has that `old` (None or ZERO: nothing) has not."""
    walker = repo.git.walk(pygit2.Oid(hex=new), pygit2.enums.SortMode.NONE)
    if old and old != ZERO:
        walker.hide(pygit2.Oid(hex=old))
    return sum(1 for _ in walker)


def has_commit(repo: Repository, commit_id: str) -> bool:
    try:
        return isinstance(repo.git[commit_id], pygit2.Commit)
    except (KeyError, ValueError):
        return False


def read_ref(repo: Repository, ref: str) -> str | None:
    return refs.read_ref(repo.path, ref)


def fast_forward(repo: Repository, expected: str | None, new: str) -> bool:
    """Move `main` from `expected` to `new` by compare-and-swap; False if main moved meanwhile.

    In a cluster the repository's replication is asked first (`CommitQueue.accepts`: it
    replicates `new` and records it in etcd, or refuses); call this with the repository's write
    lock held.
    """
    if not repo.commits.accepts(expected, new):
        return False
    return refs.compare_and_swap(repo.path, MAIN, expected, new)


def follow(repo: Repository, expected: str | None, new: str) -> bool:
    """Move `main` to a commit the cluster already accepted (no guard: etcd holds it)."""
    return refs.compare_and_swap(repo.path, MAIN, expected, new)


class FetchTimedOut(Unavailable):
    """The remote did not finish within the fetch's deadline (hung, or its packets dropped)."""


def fetch(
    repo: Repository,
    url: str,
    refspecs: Sequence[str],
    extra_env: dict[str, str] | None = None,
    timeout: float = FETCH_TIMEOUT_SECONDS,
) -> None:
    """Run the real `git fetch` of `refspecs` from `url` into `repo` (never touching `main`).

    Raises Unavailable naming the remote when git fails (unreachable, unknown branch, auth).
    `extra_env` adds to git's environment (a cluster member's credentials, kept off the
    command line). FetchTimedOut after `timeout` seconds (git is killed).
    """
    for spec in refspecs:
        if spec.lstrip("+").split(":")[-1] == MAIN:
            raise ValueError("a fetch never writes main; fetch into a quarantine ref")
    command = [
        "git",
        "-c",
        "fetch.unpackLimit=1",  # what is fetched stays the pack it came in, never loose files
        "--git-dir",
        str(repo.path),
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--",
        url,
        *refspecs,
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="true", **(extra_env or {}))
    try:
        done = subprocess.run(
            command,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise FetchTimedOut(f"git fetch from {redact(url)} timed out after {timeout:g}s") from exc
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise Unavailable(f"git fetch from {redact(url)} failed: {detail[0]}")


def redact(url: str) -> str:
    """`url` without credentials (`https://user:token@host/x` -> `https://***@host/x`)."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest.split("/", 1)[0]:
        return url
    return f"{scheme}://***@{rest.split('@', 1)[1]}"


def ref_names(repo: Repository, prefix: str) -> set[str]:
    """Names below `prefix` of every ref of `repo` (`refs/tags/` -> {"v1", ...})."""
    return {name[len(prefix) :] for name in repo.git.references if name.startswith(prefix)}


def refs_under(repo: Repository, prefix: str) -> dict[str, str]:
    """{ref: object id} of every ref of `repo` below `prefix` (`refs/tags/`: its labels)."""
    return {
        ref.name: str(ref.target)
        for ref in repo.git.references.iterator()
        if ref.name.startswith(prefix)
    }


def peeled_commit(repo: Repository, object_id: str) -> str | None:
    """The commit an object (a commit, or a tag of one) names; None for anything else."""
    try:
        return str(repo.git[object_id].peel(pygit2.Commit).id)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None


def recover_from_killed_pushes(repo: Repository, pushed_refs: Sequence[str]) -> list[str]:
    """Remove what a killed push leaves and git never cleans: ref lock files nobody owns
    (`refs.recover_stale_locks`) and quarantine folders nobody owns. Returns what was removed.

    A quarantine (`objects/tmp_objdir-incoming-*`) holds the objects of a push until its gate
    accepts it; git deletes it unless killed. One is removed only when it is not this push's
    own, is older than `STALE_QUARANTINE_SECONDS`, and no other process works in the
    repository (a live push always does: receive-pack runs inside it).
    """
    # git also locks HEAD when it moves main (HEAD is a symbolic ref to it)
    removed = refs.recover_stale_locks(repo.path, ["HEAD", MAIN, *pushed_refs])
    own = os.environ.get("GIT_QUARANTINE_PATH")
    stale = [
        folder
        for folder in (repo.path / "objects").glob(QUARANTINE_PREFIX + "*")
        if folder.is_dir()
        and not (own and folder.resolve() == Path(own).resolve())
        and time.time() - _newest_mtime(folder) > STALE_QUARANTINE_SECONDS
    ]
    if stale and not refs.others_in(repo.path):
        for folder in stale:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
    return removed


def _newest_mtime(folder: Path) -> float:
    """The newest mtime of a folder and its direct entries (objects land in sub-folders)."""
    stamps = [folder.stat().st_mtime]
    with contextlib.suppress(OSError):
        stamps += [entry.stat().st_mtime for entry in folder.iterdir()]
    return max(stamps)


def merge_pushed(repo: Repository, pushed: str, onto: str) -> str:
    """`pushed` landed on `onto`: `onto` itself when it already holds `pushed`, `pushed` when
    it descends from `onto`, else a commit of `onto`'s tree plus the files `pushed` changed
    since the two diverged, with parents `onto` (first: the served chain stays first-parent)
    and `pushed` (the pusher's history stays reachable). Conflict naming the files both sides
    changed differently, or when they share no history. Nothing is moved.
    """
    if is_ancestor(repo, pushed, onto):
        return onto
    if is_ancestor(repo, onto, pushed):
        return pushed
    base = merge_base(repo, pushed, onto)
    if base is None:
        raise Conflict(f"{repo.name}: the pushed commit {pushed[:12]} shares no history with main")
    git = repo.git
    base_tree = git[base].tree
    theirs = revisions.compare(base_tree, git[pushed].tree)
    ours = {change.path: change.new for change in revisions.compare(base_tree, git[onto].tree)}
    clash = sorted(c.path for c in theirs if c.path in ours and ours[c.path] != c.new)
    if clash:
        raise Conflict(
            f"{repo.name}: main moved since the push's base {base[:12]} and changed "
            f"{', '.join(clash[:5])} too; fetch, merge and push again",
            path=clash[0],
        )
    changes = ChangeSet()
    for change in theirs:
        if change.new is None:
            changes.delete(change.path)
        else:
            changes.graft(change.path, Graft(change.new, is_tree=False))
    tree_id = build_tree(git, git[onto].tree, changes.entries)
    committer = pygit2.Signature(*COMMITTER)
    message = (
        f"gitstore: merge push {pushed[:12]} onto main\n\nmain moved from the push's base "
        f"{base[:12]} to {onto[:12]} while it was under way; the changed files do not overlap.\n"
    )
    parents = [pygit2.Oid(hex=onto), pygit2.Oid(hex=pushed)]
    author = git[pushed].author
    return str(git.create_commit(None, author, committer, message, tree_id, parents))


def settled_head(repo: Repository, head: str, seconds: float, limit: int = 20_000) -> str:
    """The newest commit of `head`'s first-parent chain that someone else than gitstore made
    (a pushed commit: its committer is not `COMMITTER`), or that is at least `seconds` old; the
    oldest one within `limit` steps otherwise."""
    commit = commit_of(repo.git, head)
    cutoff = time.time() - seconds
    for _ in range(limit):
        ours = commit.committer.email == COMMITTER[1]
        if not ours or commit.commit_time <= cutoff or not commit.parent_ids:
            break
        commit = commit_of(repo.git, commit.parent_ids[0])
    return str(commit.id)


def set_ref(repo: Repository, ref: str, commit_id: str) -> None:
    """Point `ref` (never main) at `commit_id`, whatever it held (a ref only its writer uses)."""
    if ref == MAIN:
        raise ValueError("main moves only by compare-and-swap")
    try:
        repo.git.references.create(ref, pygit2.Oid(hex=commit_id), force=True)
    except pygit2.GitError as exc:
        raise Unavailable(f"{repo.name}: {ref} could not be set ({exc})") from exc


def init_bare(path: Path, name: str) -> Repository:
    """An empty bare repository at `path` whose HEAD is main (to be filled by fetches)."""
    pygit2.init_repository(str(path), bare=True, initial_head="main")
    return Repository(path, name)


def delete_ref(repo: Repository, ref: str) -> None:
    """Remove `ref` if it exists (a ref only its writer uses, such as a staging ref)."""
    with contextlib.suppress(KeyError):
        repo.git.references.delete(ref)


def new_objects(repo: Repository, old: str, new: str) -> list[tuple[int, bytes]]:
    """(type, raw data) of every object `new` adds to its only parent `old`: the commit, the
    trees and blobs that differ. A peer that holds `old` holds `new` once it writes these (a
    cluster's fast path; a commit with other parents goes by `git fetch`)."""
    git = repo.git
    commit = commit_of(git, new)
    if [str(p) for p in commit.parent_ids] != [old]:
        raise ValueError(f"{new[:12]} is not a child of {old[:12]} alone")
    found = [_raw(git, commit.id)]
    _tree_changes(git, commit_of(git, old).tree, commit.tree, found)
    return found


def _tree_changes(
    git: pygit2.Repository,
    old: pygit2.Tree | None,
    new: pygit2.Tree,
    found: list[tuple[int, bytes]],
) -> None:
    if old is not None and old.id == new.id:
        return
    found.append(_raw(git, new.id))
    before = {entry.name: entry for entry in old} if old is not None else {}
    for entry in new:
        previous = before.get(entry.name)
        if previous is not None and previous.id == entry.id:
            continue
        if entry.type_str == "tree":
            earlier = (
                git[previous.id].peel(pygit2.Tree)
                if previous is not None and previous.type_str == "tree"
                else None
            )
            _tree_changes(git, earlier, git[entry.id].peel(pygit2.Tree), found)
        elif entry.type_str == "blob":
            found.append(_raw(git, entry.id))


def _raw(git: pygit2.Repository, oid: pygit2.Oid) -> tuple[int, bytes]:
    kind, data = git.odb.read(oid)
    return int(kind), data


def add_objects(repo: Repository, objects: list[tuple[int, bytes]]) -> None:
    """Write raw objects (`new_objects` of another member) into `repo`'s object store as one
    pack, as the member that made them wrote them (`newobjects.land`): a pack counts once its
    index is in, so a member killed half-way holds all of them or none. Past the packs
    maintenance has not rolled up they are written loose, the last first: a commit lands after
    its trees, a tree after its entries, so no commit's history is ever incomplete."""
    distinct = {packfile.object_id(kind, data): (kind, data) for kind, data in objects}
    try:
        land(repo.path, list(reversed(distinct.values())), durable=durable(repo.git))
    except (pygit2.GitError, ValueError, OSError) as exc:
        raise Unavailable(f"{repo.name}: objects could not be written ({exc})") from exc
