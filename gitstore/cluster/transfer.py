"""Objects between members, over the git smart HTTP every member serves (`/git/...`).

Only refs below `refs/gitstore/cluster/` are written here, never main: main moves to a commit
only once etcd accepted it (`member.py` on the primary, `follower.py` on the others). Labels
(`refs/tags/*`) are the exception: they never move once made, so a member fetches a peer's
without force (a label it holds already is never changed).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable
from pathlib import Path

from gitstore.backend import remote
from gitstore.backend.repository import Repository
from gitstore.cluster.secret import ClusterSecret
from gitstore.errors import GitstoreError, InvalidInput, Unavailable

#: Where the primary puts a commit its peers must fetch before etcd is asked to accept it.
CANDIDATE = "refs/gitstore/cluster/candidate"
#: Where a member keeps a peer's main it fetched.
PEER_MAIN = "refs/gitstore/cluster/peer-main"
#: Every label of a repository, as a refspec that never moves one (no `+`).
ALL_LABELS = "refs/tags/*:refs/tags/*"
#: A ref lock file this old was left by a killed fetch (git never breaks one; a live fetch
#: here holds it for milliseconds).
STALE_LOCK_SECONDS = 10.0

log = logging.getLogger("gitstore.cluster")


def git_url(base: str, repository: str) -> str:
    return f"{base}/git/{repository}"


def fetch_candidate(
    repo: Repository,
    base_url: str,
    repository: str,
    commit: str,
    secret: ClusterSecret,
    timeout: float,
) -> None:
    """Fetch the candidate commit a peer offers; Unavailable unless we then hold `commit`."""
    _fetch(repo, git_url(base_url, repository), CANDIDATE, CANDIDATE, secret, timeout)
    if not remote.has_commit(repo, commit):
        raise Unavailable(f"{base_url} no longer offers {commit[:12]} of {repository}")


def fetch_missing(
    repo: Repository,
    repository: str,
    commit: str,
    bases: Iterable[str],
    secret: ClusterSecret,
    timeout: float,
    unanswering: set[str] | None = None,
) -> None:
    """Make `commit` (with its history) present in `repo`, from the first peer that has it
    as its main or its candidate; Unavailable when none does.

    Each fetch ends within `timeout` seconds. A peer that timed out is added to `unanswering`
    and skipped while it is there (a hung peer costs one timeout per round, not one per
    repository)."""
    if remote.has_commit(repo, commit):
        return
    unanswering = set() if unanswering is None else unanswering
    failures = []
    for base in bases:
        for ref, local in (("refs/heads/main", PEER_MAIN), (CANDIDATE, CANDIDATE)):
            if base in unanswering:
                break
            try:
                _fetch(repo, git_url(base, repository), ref, local, secret, timeout)
            except remote.FetchTimedOut as exc:
                unanswering.add(base)
                failures.append(exc.message)
                continue
            except GitstoreError as exc:
                failures.append(exc.message)
                continue
            if remote.has_commit(repo, commit):
                return
    raise Unavailable(
        f"no member offers commit {commit[:12]} of {repository}"
        + (f" ({failures[-1]})" if failures else "")
    )


def fetch_labels(
    repo: Repository,
    base_url: str,
    repository: str,
    refspec: str,
    secret: ClusterSecret,
    timeout: float,
) -> None:
    """Fetch labels (with the commits they name) from a peer; Unavailable when git fails
    (unreachable, or a label here names another tag object than the peer's), FetchTimedOut
    after `timeout` seconds."""
    url = git_url(base_url, repository)
    remote.fetch(repo, url, [refspec], extra_env=secret.git_env(), timeout=timeout)


def _fetch(
    repo: Repository, url: str, ref: str, local: str, secret: ClusterSecret, timeout: float
) -> None:
    _clear_stale_lock(repo.path / (local + ".lock"))
    remote.fetch(repo, url, [f"+{ref}:{local}"], extra_env=secret.git_env(), timeout=timeout)


def _clear_stale_lock(lock: Path) -> None:
    """A killed member leaves its fetch's ref lock; every later fetch would fail on it."""
    with contextlib.suppress(OSError):
        if time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
            lock.unlink()
            log.warning("cluster: removed the stale lock %s", lock)


def encode_objects(objects: list[tuple[int, bytes]]) -> bytes:
    """Raw objects as one body: `<type> <size>\\n<data>` each."""
    return b"".join(b"%d %d\n" % (kind, len(data)) + data for kind, data in objects)


def decode_objects(body: bytes) -> list[tuple[int, bytes]]:
    """The objects of `encode_objects`; InvalidInput when the body is not that."""
    objects, pos = [], 0
    while pos < len(body):
        end = body.find(b"\n", pos, pos + 32)
        try:
            kind, size = (int(part) for part in body[pos:end].split(b" "))
        except ValueError:
            kind, size = 0, -1
        if end < 0 or kind not in (1, 2, 3, 4) or not 0 <= size <= len(body) - end - 1:
            raise InvalidInput(f"the object stream is malformed at byte {pos}")
        objects.append((kind, body[end + 1 : end + 1 + size]))
        pos = end + 1 + size
    return objects
