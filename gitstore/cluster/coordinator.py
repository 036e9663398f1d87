"""One process per node: holds the node's leader lease, campaigns, and follows etcd.

The lease belongs to the node, not to a gunicorn worker: `gitstore serve --cluster` starts this
process next to gunicorn, and the workers read its word (`state.py`).

The lease is renewed by a thread of its own (`Lease`), every quarter of the TTL, that never
waits on a peer, on git or on a repository lock. The moment a renewal fails for longer than the
TTL, or etcd says the lease expired, the thread withdraws the word "primary" (the workers stop
taking writes). The word "primary" also carries the lease's end (`primary_until`): a member
whose whole coordinator is frozen stops claiming it within one TTL.

The main loop:
- no leader: a member whose repositories match etcd campaigns at once (a transaction that
  creates the leader key with its lease, if no one did); one that cannot catch up waits two
  TTLs first, so that an up-to-date member wins;
- leader: record the heads etcd lacks (first start of a cluster), bring every repository to
  etcd's commit (fetching what it lacks from peers), gather the peers' labels, and say
  "primary" once `min_replicas` peers answered; a peer that did not answer in time is skipped
  and its labels fetched in a later turn;
- not leader: follow etcd (`follower.py`); once after start, fetch the primary's labels;
- then wait for the next change below the cluster's prefix (an etcd watch), at most a quarter
  of the TTL.

Every call to a peer or to etcd ends within `ClusterSettings.call_timeout`, shorter than the
TTL. It exits on SIGTERM or when its parent (gunicorn's arbiter) is gone, revoking the lease so
that another member takes over at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gitstore.cluster import state
from gitstore.cluster.etcd import Compare, Entry, Etcd
from gitstore.cluster.follower import Follower
from gitstore.cluster.secret import ClusterSecret
from gitstore.cluster.settings import ClusterSettings
from gitstore.errors import GitstoreError
from gitstore.repositories import Repositories

log = logging.getLogger("gitstore.cluster")
#: How often a member retries fetching labels from peers that did not answer at takeover.
LABEL_RETRY_SECONDS = 5.0


class Lease:
    """The node's lease, renewed every quarter of the TTL by a thread with its own etcd client.

    `renewed` is when the last successful renewal was *sent*: etcd expires the lease no sooner
    than one TTL after it received it, so `held()` never outlives etcd's word."""

    def __init__(
        self, etcd: Etcd, ttl: int, lost: Callable[[], None], renewed: Callable[[], None]
    ) -> None:
        self._etcd = etcd
        self.ttl = ttl
        self._lost = lost
        self._renewed = renewed
        self._lock = threading.Lock()
        self.id = 0
        self.renewed = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lease", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def held(self) -> int:
        """The lease's id while it is surely alive in etcd, else 0."""
        with self._lock:
            return self.id if self.remaining() > 0 else 0

    def remaining(self) -> float:
        return self.renewed + self.ttl - time.monotonic() if self.id else 0.0

    def ensure(self) -> int:
        """A live lease: the held one, or a new one (the main loop, between steps)."""
        held = self.held()
        if held:
            return held
        sent = time.monotonic()
        granted = self._etcd.grant(self.ttl)
        with self._lock:
            self.id, self.renewed = granted, sent
        return granted

    def _run(self) -> None:
        while not self._stop.wait(self.ttl / 4):
            lease = self.id
            if lease and not self._renew(lease):
                log.warning("cluster: lease %x lost", lease)
                self._lost()
            elif lease:
                self._renewed()

    def _renew(self, lease: int) -> bool:
        """Renew `lease`; False once it is surely lost (etcd says so, or no renewal for a TTL)."""
        sent = time.monotonic()
        try:
            alive = self._etcd.keep_alive(lease)
        except GitstoreError as exc:
            log.warning("cluster: lease not renewed (%s)", exc.message)
            alive = None  # etcd may still hold it, until one TTL after the last renewal
        with self._lock:
            if lease != self.id:
                return True  # replaced meanwhile by the main loop
            if alive:
                self.renewed = sent
            if alive is False or self.remaining() <= 0:
                self.id = 0
                return False
        return True


class Coordinator:
    """The loop above, for one node."""

    def __init__(self, settings: ClusterSettings, root: Path) -> None:
        self.settings = settings
        self.root = Path(root)
        timeout = settings.call_timeout
        self.etcd = Etcd(settings.etcd_host, settings.etcd_port, timeout=timeout)
        secret = ClusterSecret.load(settings.secret_file)
        self.follower = Follower(Repositories(root), secret, timeout)
        self.lease = Lease(
            Etcd(settings.etcd_host, settings.etcd_port, timeout=timeout),
            settings.lease_ttl,
            self._lease_lost,
            self._extend_word,
        )
        self.leaderless_since: float | None = None
        self.behind: list[str] = []
        self.led_term = 0
        self.labels_gathered = False  # once after start, from the primary (or all peers)
        self.labels_pending: set[str] = set()  # peers that did not answer at takeover
        self.labels_tried = 0.0
        self._word_lock = threading.Lock()
        self._word = state.NodeState(settings.node)
        self._stopping = threading.Event()

    # -- the loop --------------------------------------------------------------------------
    def run(self, parent: int) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self._stopping.set())
        signal.signal(signal.SIGINT, lambda *_: self._stopping.set())
        self.lease.start()
        while os.getppid() == parent and not self._stopping.is_set():
            try:
                revision = self.step()
                self.etcd.wait_for_change(self.settings.prefix, revision, self._pause())
            except GitstoreError as exc:
                log.warning("cluster: %s", exc.message)
                self._publish(state.UNKNOWN, 0, None)
                self._stopping.wait(self._pause())
        self._stop()

    def step(self) -> int:
        """One turn of the loop; the etcd revision it saw."""
        lease = self.lease.ensure()
        self.follower.new_round()
        revision, entries = self.etcd.get(self.settings.prefix, prefix=True)
        leader = entries.get(self.settings.leader_key)
        wanted = self._wanted(entries)
        if leader is None:
            self._campaign(wanted, lease)
        elif leader.lease == lease and _node_of(leader) == self.settings.node:
            self._lead(leader, wanted)
        else:
            self.leaderless_since = None
            self.led_term = 0
            self.behind = self.follower.sync(wanted, self._sources(leader))
            if not self.labels_gathered and not self.behind:
                self.follower.gather_labels(self._sources(leader)[:1])
                self.labels_gathered = True
            self._publish(state.REPLICA, 0, leader)
        return revision

    def _pause(self) -> float:
        return self.settings.lease_ttl / 4

    def _stop(self) -> None:
        self.lease.stop()
        self._publish(state.UNKNOWN, 0, None)
        lease = self.lease.held()
        if lease:
            with contextlib.suppress(GitstoreError):
                self.etcd.revoke(lease)

    # -- lease and election ----------------------------------------------------------------
    def _lease_lost(self) -> None:
        """The lease thread's word: stop acting as primary at once."""
        with self._word_lock:
            if self._word.role != state.PRIMARY:
                return
        self.led_term = 0
        self._publish(state.UNKNOWN, 0, None)

    def _campaign(self, wanted: dict[str, str], lease: int) -> None:
        now = time.monotonic()
        self.led_term = 0
        self.leaderless_since = self.leaderless_since or now
        self.behind = self.follower.sync(wanted, self.settings.others.values())
        patient = now - self.leaderless_since > 2 * self.settings.lease_ttl
        if self.behind and not patient:
            self._publish(state.REPLICA, 0, None)
            return
        me = json.dumps({"node": self.settings.node, "url": self.settings.url})
        key = self.settings.leader_key
        if self.etcd.transaction([Compare(key, "VERSION", 0)], {key: me}, lease=lease):
            log.info("cluster: %s won the election", self.settings.node)

    def _lead(self, leader: Entry, wanted: dict[str, str]) -> None:
        """Lead: once per term, etcd learns the heads it lacks and the repositories catch up;
        then writes open (and this loop leaves main to the workers)."""
        self.leaderless_since = None
        term = leader.create_revision
        if self.led_term != term and not self._take_over(term, leader, wanted):
            return
        if self.labels_pending and time.monotonic() - self.labels_tried > LABEL_RETRY_SECONDS:
            self.labels_tried = time.monotonic()
            self.labels_pending -= set(self.follower.gather_labels(self.labels_pending))
        self._publish(state.PRIMARY, term, leader)

    def _take_over(self, term: int, leader: Entry, wanted: dict[str, str]) -> bool:
        """Catch up with etcd and gather the peers' labels; whether writes may open."""
        started = time.monotonic()
        self._record_unknown_heads(term, wanted)
        others = list(self.settings.others.values())
        self.behind = self.follower.sync(wanted, others)
        if self.behind:
            self._publish(state.UNKNOWN, 0, leader)
            return False
        caught_up = time.monotonic()
        # Every acknowledged label is on `min_replicas` peers; writes are not open yet.
        answered = self.follower.gather_labels(others)
        gathered = time.monotonic()
        if len(answered) < self.settings.min_replicas:
            log.warning("cluster: only %d peers answered; writes stay closed", len(answered))
            self._publish(state.UNKNOWN, 0, leader)
            return False
        self.labels_pending = set(others) - set(answered)
        self.labels_tried = time.monotonic()
        self.labels_gathered = True
        self.led_term = term
        log.info(
            "cluster: %s took over: it is the primary (term %d)",
            self.settings.node,
            term,
            extra={
                "fields": {
                    "term": term,
                    "repositories": len(wanted),
                    "caught_up_seconds": round(caught_up - started, 3),
                    "labels_seconds": round(gathered - caught_up, 3),
                }
            },
        )
        return True

    def _record_unknown_heads(self, term: int, wanted: dict[str, str]) -> None:
        """A repository etcd has no key for (a store that just became a cluster) is recorded
        at its local head."""
        for name, head in self.follower.local_heads().items():
            if name not in wanted and head is not None:
                key = self.settings.key_of(name)
                self.etcd.transaction(
                    [Compare(self.settings.leader_key, "CREATE", term), Compare(key, "VERSION", 0)],
                    {key: head},
                )

    # -- helpers ---------------------------------------------------------------------------
    def _wanted(self, entries: dict[str, Entry]) -> dict[str, str]:
        prefix = self.settings.repositories_prefix
        return {k[len(prefix) :]: e.value for k, e in entries.items() if k.startswith(prefix)}

    def _sources(self, leader: Entry | None) -> list[str]:
        """Peers' base URLs, the primary's first (it has every accepted commit)."""
        others = dict(self.settings.others)
        node = _node_of(leader) if leader else None
        first = others.pop(node, None) if node is not None else None
        return ([first] if first else []) + list(others.values())

    def _publish(self, role: str, term: int, leader: Entry | None) -> None:
        """Say `role`; "primary" only while the lease is surely held, and only until its end."""
        primary = _node_of(leader) if leader else None
        with self._word_lock:
            until = 0.0
            if role == state.PRIMARY:
                remaining = self.lease.remaining() if self.lease.held() else 0.0
                if remaining <= 0 or self.led_term != term:
                    role, term = state.UNKNOWN, 0
                else:
                    until = time.time() + remaining
            self._word = state.NodeState(
                node=self.settings.node,
                role=role,
                term=term,
                primary=primary,
                primary_url=self.settings.peers.get(primary) if primary else None,
                behind=self.behind,
                updated=time.time(),
                primary_until=until,
            )
            state.write(self.root, self._word)

    def _extend_word(self) -> None:
        """After a renewal: the word "primary" lasts until the lease's new end."""
        with self._word_lock:
            if self._word.role != state.PRIMARY or not self.lease.held():
                return
            until = time.time() + self.lease.remaining()
            self._word = dataclasses.replace(self._word, primary_until=until, updated=time.time())
            state.write(self.root, self._word)


def _node_of(leader: Entry) -> str | None:
    try:
        return json.loads(leader.value).get("node")
    except (ValueError, AttributeError):
        return None


def run(settings: dict, root: Path, parent: int) -> None:
    """The coordinator process's body (`gitstore serve --cluster` starts it): `settings` as
    `ClusterSettings.as_dict` gives them."""
    Coordinator(ClusterSettings.from_dict(settings), root).run(parent)
