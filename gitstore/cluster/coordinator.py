"""One process per node: holds the node's leader lease, campaigns, and follows etcd.

The lease belongs to the node, not to a gunicorn worker: `gitstore serve --cluster` starts this
process next to gunicorn, and the workers read its word (`state.py`). It runs one loop:

- keep its lease alive (every quarter of the TTL); a lease that expired is replaced;
- no leader: a member whose repositories match etcd campaigns at once (a transaction that
  creates the leader key with its lease, if no one did); one that cannot catch up waits two
  TTLs first, so that an up-to-date member wins;
- leader: record the heads etcd lacks (first start of a cluster), bring every repository to
  etcd's commit (fetching what it lacks from peers), gather every peer's labels, and only
  then say "primary";
- not leader: follow etcd (`follower.py`); once after start, fetch the primary's labels;
- then wait for the next change below the cluster's prefix (an etcd watch), at most a quarter
  of the TTL.

It exits when its parent (gunicorn's arbiter) is gone, revoking the lease so that another
member takes over at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import time
from pathlib import Path

from gitstore.cluster import state
from gitstore.cluster.etcd import Compare, Entry, Etcd
from gitstore.cluster.follower import Follower
from gitstore.cluster.secret import ClusterSecret
from gitstore.cluster.settings import ClusterSettings
from gitstore.errors import GitstoreError
from gitstore.repositories import Repositories

log = logging.getLogger("gitstore.cluster")


class Coordinator:
    """The loop above, for one node."""

    def __init__(self, settings: ClusterSettings, root: Path) -> None:
        self.settings = settings
        self.root = Path(root)
        ttl = settings.lease_ttl
        self.etcd = Etcd(settings.etcd_host, settings.etcd_port, timeout=max(0.5, ttl / 3))
        secret = ClusterSecret.load(settings.secret_file)
        self.follower = Follower(Repositories(root), secret)
        self.lease = 0
        self.renewed = 0.0
        self.leaderless_since: float | None = None
        self.behind: list[str] = []
        self.led_term = 0
        self.labels_gathered = False  # once after start, from the primary (or all peers)

    # -- the loop --------------------------------------------------------------------------
    def run(self, parent: int) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self._stop())
        while os.getppid() == parent:
            try:
                revision = self.step()
                self.etcd.wait_for_change(self.settings.prefix, revision, self._pause())
            except GitstoreError as exc:
                log.warning("cluster: %s", exc.message)
                self._publish(state.UNKNOWN, 0, None)
                time.sleep(self._pause())
        self._stop()

    def step(self) -> int:
        """One turn of the loop; the etcd revision it saw."""
        self._keep_lease()
        revision, entries = self.etcd.get(self.settings.prefix, prefix=True)
        leader = entries.get(self.settings.leader_key)
        wanted = self._wanted(entries)
        if leader is None:
            self._campaign(wanted)
        elif leader.lease == self.lease and _node_of(leader) == self.settings.node:
            self._lead(leader, wanted)
        else:
            self.leaderless_since = None
            self.behind = self.follower.sync(wanted, self._sources(leader))
            if not self.labels_gathered and not self.behind:
                self.follower.gather_labels(self._sources(leader)[:1], self._keep_lease)
                self.labels_gathered = True
            self._publish(state.REPLICA, 0, leader)
        return revision

    def _pause(self) -> float:
        return self.settings.lease_ttl / 4

    def _stop(self) -> None:
        if self.lease:
            with contextlib.suppress(GitstoreError):
                self.etcd.revoke(self.lease)
        raise SystemExit(0)

    # -- lease and election ----------------------------------------------------------------
    def _keep_lease(self) -> None:
        now = time.monotonic()
        if self.lease and now - self.renewed < self._pause():
            return
        if self.lease and self.etcd.keep_alive(self.lease):
            self.renewed = now
            return
        self.lease = self.etcd.grant(self.settings.lease_ttl)
        self.renewed = now

    def _campaign(self, wanted: dict[str, str]) -> None:
        now = time.monotonic()
        self.leaderless_since = self.leaderless_since or now
        self.behind = self.follower.sync(wanted, self.settings.others.values())
        patient = now - self.leaderless_since > 2 * self.settings.lease_ttl
        if self.behind and not patient:
            self._publish(state.REPLICA, 0, None)
            return
        me = json.dumps({"node": self.settings.node, "url": self.settings.url})
        key = self.settings.leader_key
        if self.etcd.transaction([Compare(key, "VERSION", 0)], {key: me}, lease=self.lease):
            log.info("cluster: %s won the election", self.settings.node)

    def _lead(self, leader: Entry, wanted: dict[str, str]) -> None:
        """Lead: once per term, etcd learns the heads it lacks and the repositories catch up;
        then writes open (and this loop leaves main to the workers)."""
        self.leaderless_since = None
        term = leader.create_revision
        if self.led_term != term:
            self._record_unknown_heads(term, wanted)
            self.behind = self.follower.sync(wanted, self.settings.others.values())
            if self.behind:
                self._publish(state.UNKNOWN, 0, leader)
                return
            # Every acknowledged label is on some peer; writes are not open yet.
            self.follower.gather_labels(self.settings.others.values(), self._keep_lease)
            self.labels_gathered = True
            self.led_term = term
            log.info("cluster: %s is the primary (term %d)", self.settings.node, term)
        fresh = time.monotonic() - self.renewed < self.settings.lease_ttl / 2
        self._publish(state.PRIMARY if fresh else state.UNKNOWN, term, leader)

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
        first = others.pop(_node_of(leader), None) if leader else None
        return ([first] if first else []) + list(others.values())

    def _publish(self, role: str, term: int, leader: Entry | None) -> None:
        primary = _node_of(leader) if leader else None
        state.write(
            self.root,
            state.NodeState(
                node=self.settings.node,
                role=role,
                term=term,
                primary=primary,
                primary_url=self.settings.peers.get(primary) if primary else None,
                behind=self.behind,
                updated=time.time(),
            ),
        )


def _node_of(leader: Entry) -> str | None:
    try:
        return json.loads(leader.value).get("node")
    except (ValueError, AttributeError):
        return None


def run(settings: dict, root: Path, parent: int) -> None:
    """The coordinator process's body (`gitstore serve --cluster` starts it): `settings` as
    `ClusterSettings.as_dict` gives them."""
    Coordinator(ClusterSettings.from_dict(settings), root).run(parent)
