"""Objects between members, over the git smart HTTP every member serves (`/git/...`).

Only refs below `refs/gitstore/cluster/` are written here, never main: main moves to a commit
only once etcd accepted it (`member.py` on the primary, `follower.py` on the others). Labels
(`refs/tags/*`) are the exception: they never move once made, so a member fetches a peer's
without force (a label it holds already is never changed).

Before fetching a peer's labels, a member asks it for a digest of each repository's labels
(`GET /cluster/v1/labels`, one call for the whole store) and fetches only where the digests
differ: a fetch per repository and peer would cost a new primary of a store of hundreds of
environments far more than the rest of its takeover.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path

from gitstore.backend import remote
from gitstore.backend.repository import Repository
from gitstore.cluster.secret import ClusterSecret
from gitstore.errors import GitstoreError, InvalidInput, Unavailable
from gitstore.layout import CATALOG
from gitstore.repositories import Repositories

#: Where the primary puts a commit its peers must fetch before etcd is asked to accept it.
CANDIDATE = "refs/gitstore/cluster/candidate"
#: Where a member keeps a peer's main it fetched.
PEER_MAIN = "refs/gitstore/cluster/peer-main"
#: Every label of a repository, as a refspec that never moves one (no `+`).
ALL_LABELS = "refs/tags/*:refs/tags/*"
LABELS = "refs/tags/"
#: Where a member offers the digests of its repositories' labels.
LABELS_PATH = "/cluster/v1/labels"
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


def repositories_of(repos: Repositories) -> dict[str, Repository]:
    """{`catalog.git` or `environments/<id>.git`: its repository} of every repository of a
    root."""
    paths = [repos.root / CATALOG]
    paths += [repos.environment_path(i) for i in repos.environment_ids()]
    return {repos.served_as(path): Repository(path, path.name) for path in paths}


def label_digest(repo: Repository) -> str:
    """A digest of a repository's labels, names and tag objects: two members whose digests of
    a repository agree hold the same labels in it."""
    lines = sorted(f"{ref} {target}\n" for ref, target in remote.refs_under(repo, LABELS).items())
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def label_digests(repos: Repositories) -> dict[str, str]:
    """{repository: `label_digest`} of every repository of a root (`GET /cluster/v1/labels`)."""
    return {name: label_digest(repo) for name, repo in repositories_of(repos).items()}


def peer_label_digests(base_url: str, secret: ClusterSecret, timeout: float) -> dict | None:
    """Peer `base_url`'s `label_digests`; None when it does not offer them (a member of an
    earlier version answers 404: fetch every repository's labels from it). Unavailable when it
    gives no other answer within `timeout` seconds."""
    request = urllib.request.Request(base_url + LABELS_PATH, headers=secret.headers())
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            digests = json.loads(answer.read())["repositories"]
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise Unavailable(f"{base_url}{LABELS_PATH} answered {exc.code}") from exc
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise Unavailable(f"{base_url}{LABELS_PATH} gave no answer ({exc})") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise Unavailable(f"{base_url}{LABELS_PATH} answered no digests ({exc})") from exc
    if not isinstance(digests, dict):
        raise Unavailable(f"{base_url}{LABELS_PATH} answered no digests")
    return digests


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
