"""This node as its gunicorn workers see it: where writes go, and the replication that every
commit, creation and archiving of a repository goes through (`Repositories.replication`).

On the primary a commit is acknowledged only after (docs/ha.md):
1. its objects are on at least `min_replicas` peers: each peer is sent the objects the commit
   adds to its parent (`POST /cluster/v1/objects`); one that lacks the parent, or a commit
   with other parents (a merged push, a new repository), is put on the candidate ref and the
   peer asked (`POST /cluster/v1/replicate`) to fetch it over git smart HTTP;
2. one etcd transaction moved the repository's key from the old commit to the new one, on the
   condition that the leader key is still the one this node created (its *term*): a node whose
   lease expired cannot commit (fencing);
and only then does the local main move (the caller's compare-and-swap, under the write lock).

A new label (`refs/tags/<name>`, never moved once made) is acknowledged likewise once
`min_replicas` peers hold it (`POST /cluster/v1/label`: the peer fetches that one tag); no etcd
transaction is needed. A new primary gathers its peers' labels, a restarted member the
primary's, and a member catching up fetches the labels along with the commits (follower.py).

The backend hands over a round of writers at once (group commit): `new` is then the tip of a
chain of commits on `old`, one per writer, and both steps are done once for all of them.
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FuturesTimeout
from pathlib import Path
from typing import Any

from gitstore.backend import remote
from gitstore.backend.repository import Repository
from gitstore.backend.snapshot import commit_of
from gitstore.cluster import state
from gitstore.cluster.etcd import Compare, Etcd
from gitstore.cluster.secret import ClusterSecret
from gitstore.cluster.settings import ClusterSettings
from gitstore.cluster.silences import Silences
from gitstore.cluster.transfer import (
    CANDIDATE,
    decode_objects,
    encode_objects,
    fetch_candidate,
    fetch_labels,
    fetch_missing,
    label_digests,
)
from gitstore.errors import Conflict, InvalidInput, NotFound, Unavailable
from gitstore.layout import parse_repository_name
from gitstore.repositories import Repositories

#: The etcd value of an archived repository (its id may be used again).
TOMBSTONE = "-"
#: The longest chain of commits (one round of writers) sent as objects; longer ones are fetched.
MAX_CHAIN = 64
REPLICATE_PATH = "/cluster/v1/replicate"
OBJECTS_PATH = "/cluster/v1/objects"
LABEL_PATH = "/cluster/v1/label"
BINARY = "application/octet-stream"
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_LABEL_REF = re.compile(r"^refs/tags/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")

log = logging.getLogger("gitstore.cluster")


class Member:
    """A cluster member's side of the commits of its gunicorn workers."""

    def __init__(self, settings: ClusterSettings, root: Path, etcd: Etcd | None = None) -> None:
        self.settings = settings
        self.root = Path(root)
        #: Signs this node's calls to its peers and checks theirs (api/auth.py).
        self.secret = ClusterSecret.load(settings.secret_file)
        self._etcd = etcd or Etcd(
            settings.etcd_host, settings.etcd_port, timeout=settings.call_timeout
        )
        self._pool = ThreadPoolExecutor(max_workers=max(1, 2 * len(settings.others)))
        #: Peers left out of hand-overs for a while after a call got no answer.
        self.silences = Silences(pause=settings.lease_ttl)
        self._candidate_lock = threading.Lock()
        self._handles: dict[str, Repository] = {}
        self._repos = Repositories(self.root)  # this node's repositories, for their labels

    # -- the coordinator's word ------------------------------------------------------------
    def state(self) -> state.NodeState:
        return state.read(self.root, self.settings.node, max_age=2.0 * self.settings.lease_ttl)

    def status(self) -> dict[str, Any]:
        """This node's role, its primary, the repositories it lags behind etcd on. "primary"
        only until the lease's end the coordinator last saw (a frozen coordinator's word
        lapses within one TTL)."""
        current = self.state()
        role = current.role
        if role == state.PRIMARY and not current.is_primary():
            role = state.UNKNOWN
        return {
            "node": self.settings.node,
            "role": role,
            "primary": current.primary,
            "behind": current.behind,
            "state_age_seconds": round(current.age(), 3) if current.updated else None,
        }

    # -- Replication (gitstore.repositories) ------------------------------------------------
    def commit(self, name: str, repo: Repository, old: str | None, new: str) -> bool:
        term = self._require_primary()
        self._replicate(name, repo, new, objects_of(repo, old, new))
        expected = Compare(self._key(name), "VALUE", old) if old else self._absent(name)
        if self._etcd.transaction([self._term(term), expected], {self._key(name): new}):
            return True
        self._catch_up(name, repo, term)
        return False

    def created(self, name: str, repo: Repository) -> None:
        term = self._require_primary()
        head = repo.head()
        assert head is not None  # a repository is created with its first commit
        self._replicate(name, repo, head, None)
        if not self._etcd.transaction(
            [self._term(term), self._absent(name)], {self._key(name): head}
        ):
            self._check_term(term)
            raise Conflict(f"{name} already exists in the cluster")

    def archiving(self, name: str, repo: Repository) -> None:
        term = self._require_primary()
        head = repo.head()
        assert head is not None  # a served repository has commits
        current = Compare(self._key(name), "VALUE", head)
        if not self._etcd.transaction([self._term(term), current], {self._key(name): TOMBSTONE}):
            self._check_term(term)
            raise Conflict(f"{name} moved in the cluster meanwhile; try again")

    def labelled(self, name: str, repo: Repository, ref: str, tag: str) -> None:
        self._require_primary()
        body = json.dumps(
            {"repository": name, "ref": ref, "tag": tag, "source": self.settings.node}
        ).encode()
        self._on_peers(
            name,
            f"{ref} ({tag[:12]})",
            lambda base: self._post(base + LABEL_PATH, body, "application/json"),
        )

    def _hand_over(
        self,
        base: str,
        name: str,
        repo: Repository,
        commit: str,
        objects: tuple[str, bytes] | None,
    ) -> str | None:
        """Make peer `base` hold `commit`; None when it does, else why not. PeerSilent when
        the peer does not answer (not asked to fetch then: it would not answer that either)."""
        if objects is not None:
            query = urllib.parse.urlencode(
                {"repository": name, "commit": commit, "parent": objects[0]}
            )
            if self._post(f"{base}{OBJECTS_PATH}?{query}", objects[1], BINARY) is None:
                return None
        try:
            with self._candidate_lock:  # one ref writer at a time (the peers are asked at once)
                remote.set_ref(repo, CANDIDATE, commit)  # what the peer fetches
        except Unavailable as exc:
            return exc.message
        body = json.dumps({"repository": name, "commit": commit, "source": self.settings.node})
        return self._post(base + REPLICATE_PATH, body.encode(), "application/json")

    # -- a peer's side of `_replicate` -------------------------------------------------------
    def receive_objects(self, repository: str, commit: str, parent: str, body: bytes) -> None:
        """Write the objects commit `commit` adds to `parent`; Conflict when this node lacks
        `parent` (the primary then has it fetch the commit instead)."""
        _check_names(repository, commit)
        _check_names(repository, parent)
        repo = self._peer_repository(repository)
        if repo is None:
            raise Conflict(f"{repository} does not exist here yet")
        if not remote.has_commit(repo, parent):
            raise Conflict(f"{repository}: this node lacks {parent[:12]}")
        remote.add_objects(repo, decode_objects(body))
        if not remote.has_commit(repo, commit):
            raise InvalidInput(f"the objects sent hold no commit {commit[:12]}", key="commit")

    def receive(self, repository: str, commit: str, source: str) -> None:
        """Fetch commit `commit` of `repository` from member `source` (its candidate ref)."""
        _check_names(repository, commit)
        base = self.settings.others.get(str(source))
        if base is None:
            raise InvalidInput(f"source {str(source)[:40]!r} is not a peer", key="source")
        path = self.root / repository
        if (path / "HEAD").exists():
            repo = Repository(path, repository)
        else:  # a repository being created: kept aside until etcd names it (follower.py)
            repo = incoming_repository(self.root, repository)
        fetch_candidate(repo, base, repository, commit, self.secret, self.settings.call_timeout)

    def receive_label(self, repository: str, ref: str, tag: str, source: str) -> None:
        """Fetch label `ref` (tag object `tag`) of `repository` from member `source`; Conflict
        when this node holds another label of that name, or lacks the repository."""
        _check_names(repository, tag)
        if not _LABEL_REF.match(str(ref)):
            raise InvalidInput(f"ref {str(ref)[:60]!r} is not a label", key="ref")
        base = self.settings.others.get(str(source))
        if base is None:
            raise InvalidInput(f"source {str(source)[:40]!r} is not a peer", key="source")
        repo = self._peer_repository(repository)
        if repo is None:
            raise Conflict(f"{repository} does not exist here yet")
        held = remote.read_ref(repo, ref)
        if held is None:
            fetch_labels(
                repo, base, repository, f"{ref}:{ref}", self.secret, self.settings.call_timeout
            )
            held = remote.read_ref(repo, ref)
        if held != tag:
            raise Conflict(f"{repository}: {ref} is {str(held)[:12]} here, not {tag[:12]}")

    def label_digests(self) -> dict[str, str]:
        """{repository: digest of its labels} of this node: a member gathering labels fetches
        them only where its own digests differ."""
        return label_digests(self._repos)

    def _peer_repository(self, repository: str) -> Repository | None:
        """A handle on one of this node's repositories (kept: opening one costs a millisecond
        per replicated commit); None when it does not exist (any more)."""
        path = self.root / repository
        if not (path / "HEAD").exists():
            self._handles.pop(repository, None)
            return None
        known = self._handles.get(repository)
        if known is None:
            known = self._handles[repository] = Repository(path, repository)
        return known

    # -- helpers ---------------------------------------------------------------------------
    def _post(self, url: str, body: bytes, content_type: str) -> str | None:
        return post(url, body, content_type, self.secret, self.settings.call_timeout)

    def _key(self, name: str) -> str:
        return self.settings.key_of(name)

    def _term(self, term: int) -> Compare:
        return Compare(self.settings.leader_key, "CREATE", term)

    def _absent(self, name: str) -> Compare:
        """The key of `name` does not exist yet, or names an archived repository."""
        _, entries = self._etcd.get(self._key(name))
        entry = entries.get(self._key(name))
        if entry is None:
            return Compare(self._key(name), "VERSION", 0)
        if entry.value == TOMBSTONE:
            return Compare(self._key(name), "MOD", entry.mod_revision)
        raise Conflict(f"{name} is recorded in the cluster already (at {entry.value[:12]})")

    def leads(self) -> str | None:
        """None while this node is the primary as etcd says now (the leader key is this node's,
        at the term the coordinator opened writes in, and the lease has not reached its end);
        else why not. What `/readyz?role=primary` answers: never the state file alone."""
        current = self.state()
        if not current.is_primary():
            return f"this node is {current.role if current.role != state.PRIMARY else 'unknown'}"
        try:
            _, entries = self._etcd.get(self.settings.leader_key)
        except Unavailable as exc:
            return exc.message
        leader = entries.get(self.settings.leader_key)
        if leader is None or leader.create_revision != current.term:
            return f"this node no longer holds the leader lease of term {current.term}"
        return None

    def _require_primary(self) -> int:
        current = self.state()
        if not current.is_primary():
            where = f"; the primary is {current.primary}" if current.primary else ""
            raise Unavailable(f"node {self.settings.node} is not the primary{where}")
        return current.term

    def _check_term(self, term: int) -> None:
        _, entries = self._etcd.get(self.settings.leader_key)
        leader = entries.get(self.settings.leader_key)
        if leader is None or leader.create_revision != term:
            raise Unavailable(
                f"node {self.settings.node} lost the leader lease: the write is refused"
            )

    def _catch_up(self, name: str, repo: Repository, term: int) -> None:
        """etcd refused: deposed (raise), or main is behind what etcd accepted (a commit whose
        local move was lost): follow etcd so that the write is re-applied on its head."""
        self._check_term(term)
        _, entries = self._etcd.get(self._key(name))
        entry = entries.get(self._key(name))
        if entry is None:
            raise Unavailable(f"{name} is not recorded in the cluster yet")
        if entry.value == TOMBSTONE:
            raise NotFound(f"{name} was archived")
        head = repo.head()
        if head == entry.value:
            return
        fetch_missing(
            repo,
            name,
            entry.value,
            self.settings.others.values(),
            self.secret,
            self.settings.call_timeout,
        )
        remote.follow(repo, head, entry.value)

    def _replicate(
        self, name: str, repo: Repository, commit: str, objects: tuple[str, bytes] | None
    ) -> None:
        """Return once `min_replicas` peers hold `commit`; Unavailable otherwise.

        `objects`: (parent, the objects the commit adds to it), sent in the request when the
        peer holds the parent (one round trip); otherwise, or if that fails, the peer fetches
        the candidate ref over git smart HTTP."""
        self._on_peers(
            name, commit[:12], lambda base: self._hand_over(base, name, repo, commit, objects)
        )

    def _on_peers(self, name: str, what: str, hand_over: Callable[[str], str | None]) -> None:
        """Return once `hand_over(peer base URL)` succeeded (None) on `min_replicas` peers,
        asked at once; Unavailable otherwise."""
        needed = self.settings.min_replicas
        if needed == 0:
            return
        peers = self.silences.to_ask(self.settings.others.values(), needed)
        futures = [self._pool.submit(self._ask, hand_over, base) for base in peers]
        done, errors = 0, [f"{base}: skipped, no answer lately" for base in self._left_out(peers)]
        # a hand-over is at most two calls (the objects, then the candidate's fetch)
        wait = 2 * self.settings.call_timeout
        try:
            for future in as_completed(futures, timeout=wait):
                error = future.result()
                if error is None:
                    done += 1
                    if done >= needed:
                        return
                else:
                    errors.append(error)
        except FuturesTimeout:
            errors.append(f"timed out after {wait:g}s")
        raise Unavailable(
            f"{name}: only {done} of the {needed} replicas needed hold {what}; "
            f"nothing was committed ({'; '.join(errors[:3])})"
        )

    def _ask(self, hand_over: Callable[[str], str | None], base: str) -> str | None:
        """`hand_over(base)`, telling the silences whether the peer answered at all (whatever
        happens: a peer left marked as probed would never be asked again)."""
        answered = True
        try:
            return hand_over(base)
        except PeerSilent as exc:
            answered = False
            return exc.message
        finally:
            (self.silences.answered if answered else self.silences.silent)(base)

    def _left_out(self, asked: list[str]) -> list[str]:
        return [base for base in self.settings.others.values() if base not in asked]


def _check_names(repository: str, commit: str) -> None:
    try:
        parse_repository_name(str(repository))
    except NotFound:
        raise InvalidInput(
            f"repository {str(repository)[:60]!r} is not one of the store's"
        ) from None
    if not _COMMIT.match(str(commit)):
        raise InvalidInput("commit must be a full commit id", key="commit")


def objects_of(repo: Repository, old: str | None, new: str) -> tuple[str, bytes] | None:
    """(old, the objects the commits from `old` to `new` add to it) when each of them has one
    parent, the one before (a commit, or a round's chain of at most `MAX_CHAIN`); None
    otherwise. Newest commit first: the peer writes the objects last first, so each commit
    lands after its trees and its parent."""
    if old is None:
        return None
    steps: list[tuple[str, str]] = []  # (parent, child)
    commit = new
    while commit != old:
        parents = commit_of(repo.git, commit).parent_ids
        if len(steps) == MAX_CHAIN or len(parents) != 1:
            return None
        steps.append((str(parents[0]), commit))
        commit = steps[-1][0]
    objects = [obj for parent, child in steps for obj in remote.new_objects(repo, parent, child)]
    return old, encode_objects(objects)


def incoming_repository(root: Path, repository: str) -> Repository:
    """The repository a peer fills before etcd names it (created on first use)."""
    path = state.folder(root) / "incoming" / repository
    if (path / "HEAD").exists():
        return Repository(path, repository)
    path.parent.mkdir(parents=True, exist_ok=True)
    return remote.init_bare(path, repository)


class PeerSilent(Unavailable):
    """A peer gave no answer: unreachable, refused the connection, or timed out."""


def post(
    url: str, body: bytes, content_type: str, secret: ClusterSecret, timeout: float
) -> str | None:
    """POST to a peer; None when it answers 204, else why not. PeerSilent when it does not
    answer within `timeout` seconds."""
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type, **secret.headers()}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return None if answer.status == 204 else f"{url}: {answer.status}"
    except urllib.error.HTTPError as exc:
        return f"{url}: {exc.code} {exc.read()[:200].decode('utf-8', 'replace')}"
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise PeerSilent(f"{url}: {exc}") from exc
