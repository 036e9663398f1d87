"""Objects between members, over the git smart HTTP every member serves (`/git/...`).

Only refs below `refs/gitstore/cluster/` are written here, never main: main moves to a commit
only once etcd accepted it (`member.py` on the primary, `follower.py` on the others).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from gitstore.backend import remote
from gitstore.backend.repository import Repository
from gitstore.errors import GitstoreError, Unavailable

#: Where the primary puts a commit its peers must fetch before etcd is asked to accept it.
CANDIDATE = "refs/gitstore/cluster/candidate"
#: Where a member keeps a peer's main it fetched.
PEER_MAIN = "refs/gitstore/cluster/peer-main"

log = logging.getLogger("gitstore.cluster")


def git_url(base: str, repository: str) -> str:
    return f"{base}/git/{repository}"


def fetch_candidate(repo: Repository, base_url: str, repository: str, commit: str) -> None:
    """Fetch the candidate commit a peer offers; Unavailable unless we then hold `commit`."""
    remote.fetch(repo, git_url(base_url, repository), [f"+{CANDIDATE}:{CANDIDATE}"])
    if not remote.has_commit(repo, commit):
        raise Unavailable(f"{base_url} no longer offers {commit[:12]} of {repository}")


def fetch_missing(repo: Repository, repository: str, commit: str, bases: Iterable[str]) -> None:
    """Make `commit` (with its history) present in `repo`, from the first peer that has it
    as its main or its candidate; Unavailable when none does."""
    if remote.has_commit(repo, commit):
        return
    failures = []
    for base in bases:
        for ref, local in (("refs/heads/main", PEER_MAIN), (CANDIDATE, CANDIDATE)):
            try:
                remote.fetch(repo, git_url(base, repository), [f"+{ref}:{local}"])
            except GitstoreError as exc:
                failures.append(exc.message)
                continue
            if remote.has_commit(repo, commit):
                return
    raise Unavailable(
        f"no member offers commit {commit[:12]} of {repository}"
        + (f" ({failures[-1]})" if failures else "")
    )
