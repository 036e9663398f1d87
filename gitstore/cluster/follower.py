"""A member's repositories follow what etcd accepted: main moves to etcd's commit (fetched from
the primary or any peer first), a repository etcd names is created, an archived one archived.
Labels come along: a repository that catches up (it lacked the commit) or is created fetches
the primary's, and `gather_labels` fetches every peer's (a new primary, a member that starts)
where the peer's label digests differ from this member's.

Main only ever moves to a commit etcd holds, so no member serves a commit etcd never accepted.

Every fetch ends within the call deadline (`ClusterSettings.call_timeout`); a peer that timed
out (or did not give its label digests) is skipped for the rest of the round (`unanswering`,
cleared by `new_round`): a hung peer costs one deadline per round, not one per repository,
and is asked again in the next round.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from gitstore.backend import remote
from gitstore.backend.hooks import install_hooks
from gitstore.backend.remote import FetchTimedOut
from gitstore.backend.repository import WRITE_LOCK, Repository
from gitstore.cluster.member import TOMBSTONE, incoming_repository
from gitstore.cluster.secret import ClusterSecret
from gitstore.cluster.transfer import (
    ALL_LABELS,
    fetch_labels,
    fetch_missing,
    label_digest,
    peer_label_digests,
    repositories_of,
)
from gitstore.errors import GitstoreError
from gitstore.files import exclusive_lock
from gitstore.repositories import Repositories

log = logging.getLogger("gitstore.cluster")


class Follower:
    """Brings the repositories of one store root to the commits etcd names."""

    def __init__(self, repos: Repositories, secret: ClusterSecret, timeout: float) -> None:
        self._repos = repos
        self._secret = secret  # the fetches from peers are a member's calls
        self._timeout = timeout
        self.root = repos.root
        #: Peers that did not answer a fetch in time this round.
        self.unanswering: set[str] = set()

    def new_round(self) -> None:
        self.unanswering.clear()

    def local_heads(self) -> dict[str, str | None]:
        """{repository: head} of every repository of the root."""
        return {name: repo.head() for name, repo in repositories_of(self._repos).items()}

    def sync(self, wanted: Mapping[str, str], sources: Iterable[str]) -> list[str]:
        """Bring each repository to its commit in `wanted`; the names still behind."""
        sources = list(sources)
        behind = []
        for name, commit in sorted(wanted.items()):
            try:
                self.sync_one(name, commit, sources)
            except (GitstoreError, OSError) as exc:
                log.warning("cluster: %s stays behind etcd (%s)", name, exc)
                behind.append(name)
        return behind

    def sync_one(self, name: str, commit: str, sources: list[str]) -> None:
        path = self.root / name
        exists = (path / "HEAD").exists()
        if commit == TOMBSTONE:
            if exists:
                self._archive(name)
            return
        if not exists:
            self._create(name, path, commit, sources)
            return
        repo = Repository(path, name)
        if repo.head() == commit:
            return
        # Lacking the commit (not handed over by the primary) means this node was behind:
        # it may lack labels too. Not otherwise: a fetch per followed commit costs too much.
        was_behind = not remote.has_commit(repo, commit)
        self._fetch_missing(repo, name, commit, sources)
        with exclusive_lock(path / WRITE_LOCK, 0o644):
            remote.follow(repo, repo.head(), commit)
        how = "fetched from a peer" if was_behind else "handed over by the primary"
        log.info("cluster: %s follows etcd to %s (%s)", name, commit[:12], how)
        if was_behind:
            self._gather_labels(name, repo, sources[:1])

    def gather_labels(self, sources: Iterable[str]) -> list[str]:
        """Fetch the labels this node lacks from every one of `sources` (a new primary: each
        acknowledged label is on some peer; a restarted member: the primary has them all),
        from each only in the repositories where its label digests differ from ours (all of
        them from a member that offers no digests); the sources that answered."""
        sources = list(sources)
        local = repositories_of(self._repos)
        mine: dict[str, str] | None = None
        for base in sources:
            if base in self.unanswering:
                continue
            try:
                theirs = peer_label_digests(base, self._secret, self._timeout)
            except GitstoreError as exc:
                self.unanswering.add(base)
                log.warning("cluster: %s skipped this round (%s)", base, exc.message)
                continue
            if theirs is not None and mine is None:
                mine = {name: label_digest(repo) for name, repo in local.items()}
            for name, repo in local.items():
                if theirs is None or mine is None or theirs.get(name, mine[name]) != mine[name]:
                    self._gather_labels(name, repo, [base])
                    if mine is not None:
                        mine[name] = label_digest(repo)
        return [base for base in sources if base not in self.unanswering]

    def _gather_labels(self, name: str, repo: Repository, sources: list[str]) -> None:
        for base in sources:
            if base in self.unanswering:
                continue
            try:
                fetch_labels(repo, base, name, ALL_LABELS, self._secret, self._timeout)
            except FetchTimedOut as exc:
                self.unanswering.add(base)
                log.warning("cluster: %s skipped this round (%s)", base, exc.message)
            except GitstoreError as exc:  # one unreachable peer must not stop the others
                log.warning("cluster: labels of %s not fetched (%s)", name, exc.message)

    def _fetch_missing(self, repo: Repository, name: str, commit: str, sources: list[str]) -> None:
        fetch_missing(repo, name, commit, sources, self._secret, self._timeout, self.unanswering)

    def _create(self, name: str, path: Path, commit: str, sources: list[str]) -> None:
        incoming = incoming_repository(self.root, name)
        self._fetch_missing(incoming, name, commit, sources)
        remote.follow(incoming, incoming.head(), commit)
        self._gather_labels(name, incoming, sources[:1])
        install_hooks(incoming.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.rename(incoming.path, path)
        log.info("cluster: %s created at %s", name, commit[:12])

    def _archive(self, name: str) -> None:
        env_id = int(name.removeprefix("environments/").removesuffix(".git"))
        self._repos.archive_environment(env_id)
        log.info("cluster: %s archived", name)
