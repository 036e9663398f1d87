"""Real network faults (tests/netns_harness.py): members and a 3-member etcd on hosts of their
own, packets dropped or delayed inside the test's namespaces. Each case writes through HAProxy
during the fault, samples `/readyz?role=primary` on every member every 100 ms (never two at
once), heals, and checks every acknowledged write on every member.

One cluster for the module; the cases run in file order and each leaves it healed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time

import pytest
from cluster_harness import PrimarySampler, http
from netns_harness import NetnsCluster, available

from .conftest import seed_store
from .test_cluster import head_of, set_key, wait_until
from .test_hung import acknowledged_write, every_member_holds

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("netns")
    seed = seed_store(workdir / "seed")
    with NetnsCluster(workdir, seed) as running:
        yield running
    shutil.rmtree(workdir, ignore_errors=True)


def settled(net: NetnsCluster, commits: list[str]) -> None:
    """Every member's main is etcd's, and holds every acknowledged commit."""
    net.wait_for_primary()
    wait_until(
        lambda: len({head_of(net, n) for n in net.nodes}) == 1, timeout=30, what="members agree"
    )
    every_member_holds(net, commits)


def writes(net: NetnsCluster, key: str, count: int, within: float) -> tuple[list[str], float]:
    """`count` acknowledged writes through HAProxy; (their commits, seconds to the first)."""
    commits, first = [], 0.0
    for i in range(count):
        commit, took = acknowledged_write(net, f"{key}{i}", i, within=within)
        commits.append(commit)
        first = first or took
    return commits, first


def test_a_blackholed_primary_is_replaced(net):
    commits = writes(net, "calm", 2, within=30)[0]
    old = net.wait_for_primary()
    with PrimarySampler(net) as sampler:
        net.network.drop(old)
        try:
            more, first = writes(net, "blackholed", 3, within=30)
            commits += more
            assert first <= 10, f"first write after the blackhole took {first:.1f}s"
        finally:
            net.network.heal(old)
        commits += writes(net, "healed", 2, within=30)[0]
    assert sampler.most <= 1
    settled(net, commits)


def test_a_primary_cut_off_etcd_but_not_clients_steps_down(net):
    old = net.wait_for_primary()
    with PrimarySampler(net) as sampler:
        net.partition(old)
        try:
            commits, first = writes(net, "no-etcd", 3, within=30)
            assert first <= 10
            new = net.wait_for_primary(other_than=old)
            assert new != old
            # the old one still answers HTTP, yet is not ready as primary
            code, body, _ = _readyz(net, old)
            assert code == 503, body
        finally:
            net.heal(old)
    assert sampler.most <= 1
    settled(net, commits)


def test_a_replica_cut_off_the_primary_but_not_etcd(net):
    primary = net.wait_for_primary()
    replica = next(n for n in net.nodes if n != primary)
    with PrimarySampler(net) as sampler:
        net.network.drop(replica, [primary])
        try:
            commits, first = writes(net, "split", 3, within=30)
            assert first <= 10
        finally:
            net.network.heal(replica)
    assert sampler.most <= 1
    settled(net, commits)


class Stalls:
    """A member's processes stopped for `stopped` seconds, then let run for `running`, again
    and again: the slow disk's stand-in. A process blocked in `fsync` sleeps in the kernel
    (state D); to its peers that is the same as being stopped for as long. (`tc netem`, which
    would delay its packets instead, needs a kernel module this machine may not have, and an
    `LD_PRELOAD` around `fsync` would not reach git's or the kernel's writeback.)"""

    def __init__(self, net: NetnsCluster, name: str, stopped: float, running: float) -> None:
        self.group = net.nodes[name].process.pid
        self.stopped, self.running = stopped, running
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Stalls:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        os.killpg(self.group, signal.SIGCONT)

    def _run(self) -> None:
        while not self._stop.is_set():
            os.killpg(self.group, signal.SIGSTOP)
            self._stop.wait(self.stopped)
            os.killpg(self.group, signal.SIGCONT)
            self._stop.wait(self.running)


def test_a_slow_replica_does_not_stop_writes(net):
    """Writes go on with the other replica while one stalls as on a slow disk; the slow one
    catches up."""
    primary = net.wait_for_primary()
    slow = next(n for n in net.nodes if n != primary)
    with PrimarySampler(net) as sampler, Stalls(net, slow, stopped=0.5, running=0.2):
        commits, first = writes(net, "slow", 4, within=30)
        assert first <= 5
    assert sampler.most <= 1
    settled(net, commits)


def test_losing_etcd_members_one_then_two(net):
    """One etcd member down: the cluster goes on (quorum 2 of 3). Two down: no quorum, writes
    are refused cleanly (no acknowledgement, no member ready as primary for long), and nothing
    acknowledged is lost once etcd is back."""
    primary = net.wait_for_primary()
    spare = [e for e in net.ETCD_MEMBERS if e != net.etcd_of(primary)]
    with PrimarySampler(net) as sampler:
        net.kill_etcd(spare[0])
        try:
            commits, _ = writes(net, "etcd-one-down", 2, within=30)
            net.kill_etcd(spare[1])
            time.sleep(3)  # leases cannot be renewed without a quorum
            code, _, _ = set_key(net.url, "no-quorum", 1, timeout=10)
            assert code != 204, "a write was acknowledged without an etcd quorum"
        finally:
            for name in spare:
                net.start_etcd(name)
        commits += writes(net, "etcd-back", 2, within=60)[0]
    assert sampler.most <= 1
    settled(net, commits)


def _readyz(net: NetnsCluster, name: str):
    code, body, headers = http("GET", net.nodes[name].url + "/readyz?role=primary", timeout=5)
    return code, json.loads(body), headers
