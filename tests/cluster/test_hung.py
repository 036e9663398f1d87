"""A hung primary (its processes frozen: the host answers TCP but never replies) is replaced,
never more than one member is ready as primary at once, and no acknowledged write is lost.

A cluster of its own (conftest.py), since freezing a node disturbs the others' tests.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from cluster_harness import GITSTORE, Cluster, PrimarySampler, _pids_of_root, http

from gitstore.cluster.secret import KEY_FILE as CLUSTER_KEY_FILE
from gitstore.cluster.settings import CALL_SHARE_OF_TTL, LEASE_TTL_SECONDS

from .test_cluster import ENV_REPO, head_of, set_key, wait_until


def acknowledged_write(cluster: Cluster, key: str, value, within: float) -> tuple[str, float]:
    """(the commit, seconds taken) of a write through HAProxy, retried until `within`."""
    start = time.monotonic()
    while time.monotonic() - start < within:
        try:
            code, _, headers = set_key(cluster.url, key, value, timeout=5)
        except OSError:
            code = None
        if code == 204:
            return headers["X-Gitstore-Commit"], time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError(f"no write of {key} acknowledged within {within:.0f}s")


def every_member_holds(cluster: Cluster, commits: list[str]) -> None:
    """Every acknowledged commit is an ancestor of (or is) every member's main."""
    for name, node in cluster.nodes.items():
        for commit in commits:
            done = subprocess.run(
                ["git", "--git-dir", str(node.root / ENV_REPO), "merge-base", "--is-ancestor",
                 commit, "refs/heads/main"],
                capture_output=True, check=False,
            )  # fmt: skip
            assert done.returncode == 0, f"{name} lacks acknowledged {commit[:12]}"


def test_a_frozen_primary_is_replaced_and_only_one_member_is_ever_primary(cluster):
    commits = [acknowledged_write(cluster, "before", 1, within=30)[0]]
    old = cluster.wait_for_primary()
    group = cluster.nodes[old].process.pid
    with PrimarySampler(cluster) as sampler:
        os.killpg(group, signal.SIGSTOP)
        try:
            commit, took = acknowledged_write(cluster, "frozen", 2, within=20)
            commits.append(commit)
            assert took <= 10, f"the first write after the freeze took {took:.1f}s"
            assert cluster.wait_for_primary(other_than=old) != old
        finally:
            os.killpg(group, signal.SIGCONT)
        # thawed: it must learn it was deposed within one TTL, and never be ready meanwhile
        time.sleep(LEASE_TTL_SECONDS + 1)
        commits.append(acknowledged_write(cluster, "thawed", 3, within=20)[0])
    assert sampler.rounds > 20
    assert sampler.most <= 1, "two members answered readyz?role=primary 200 at once"
    wait_until(lambda: len({head_of(cluster, n) for n in cluster.nodes}) == 1, what="members agree")
    every_member_holds(cluster, commits)


def test_a_frozen_replica_does_not_slow_writes_and_catches_up_when_thawed(cluster):
    """The primary leaves a replica that gives no answer out of its hand-overs for a while:
    the calls to it must not queue the calls to the replica that answers, nor pile up on the
    frozen one's socket for it to work through once thawed."""
    primary = cluster.wait_for_primary()
    frozen = next(n for n in cluster.nodes if n != primary)
    group = cluster.nodes[frozen].process.pid
    acked, slowest = [], [0.0]

    def write(writer: int) -> None:
        for n in range(12):
            started = time.monotonic()
            code, body, headers = set_key(cluster.nodes[primary].url, f"cold{writer}-{n}", n)
            assert code == 204, body
            acked.append(headers["X-Gitstore-Commit"])
            slowest[0] = max(slowest[0], time.monotonic() - started)

    os.killpg(group, signal.SIGSTOP)
    try:
        threads = [threading.Thread(target=write, args=(w,)) for w in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        os.killpg(group, signal.SIGCONT)
    assert len(acked) == 72
    # a call to the frozen replica times out after the call deadline: no write waited on one
    assert slowest[0] < CALL_SHARE_OF_TTL * LEASE_TTL_SECONDS, f"a write took {slowest[0]:.1f}s"
    final = cluster.etcd_heads()[ENV_REPO]
    wait_until(lambda: head_of(cluster, frozen) == final, timeout=10, what="the thawed catch-up")
    every_member_holds(cluster, acked[-1:])


def stop_cleanly(cluster: Cluster, name: str, group: bool) -> str:
    """SIGTERM the node (its arbiter, or its whole process group as an init system does); the
    log it printed meanwhile."""
    node = cluster.nodes[name]
    before = node.log.stat().st_size
    if group:
        os.killpg(node.process.pid, signal.SIGTERM)
    else:
        node.process.send_signal(signal.SIGTERM)
    node.process.wait(timeout=30)
    wait_until(lambda: not _pids_of_root(node.root), timeout=10, what=f"{name}'s children gone")
    with node.log.open() as log:
        log.seek(before)
        return log.read()


def test_sigterm_stops_a_member_without_traceback_or_leftover_process(cluster):
    primary = cluster.wait_for_primary()
    replica = next(n for n in cluster.nodes if n != primary)
    for name, group in ((replica, False), (primary, True)):
        printed = stop_cleanly(cluster, name, group)
        assert "Traceback" not in printed, printed
        cluster.start_node(name)
    cluster.wait_for_primary()
    for node in cluster.nodes.values():
        assert "Warning" not in node.log.read_text()


def test_a_dead_node_is_replaced_as_docs_ha_md_says(cluster):
    """docs/ha.md "Replacing a dead node": a fresh `gitstore init`, the cluster's files, the
    dead node's name; it fetches everything and reports `behind: []`, with etcd's heads."""
    commit = acknowledged_write(cluster, "before-replacement", 1, within=30)[0]
    primary = cluster.wait_for_primary()
    dead = next(n for n in cluster.nodes if n != primary)
    node = cluster.nodes[dead]
    cluster.kill(dead)
    shutil.rmtree(node.root)
    subprocess.run([GITSTORE, "init", "--root", str(node.root)], check=True, capture_output=True)
    key = node.root / CLUSTER_KEY_FILE
    shutil.copy(cluster.seed / CLUSTER_KEY_FILE, key)
    key.chmod(0o600)
    cluster.start_node(dead)
    wait_until(
        lambda: (
            (cluster.status(dead) or {}).get("behind") == []
            and (cluster.status(dead) or {}).get("primary") == primary
        ),
        timeout=30,
        what="the new node caught up",
    )
    for repo, head in cluster.etcd_heads().items():
        assert head_of(cluster, dead, repo) == head, repo
    every_member_holds(cluster, [commit])
    assert http("GET", node.url + "/readyz?role=replica")[0] == 200


#: docs/ha.md's way to sign a call to a member with shell tools (the same text as there).
SIGNED_STATUS = """t=$(date +%s)
mac=$(printf 'gitstore-member-v1:%s' "$t" |
  openssl dgst -sha256 -hmac "$(cat "$KEY")" -r | cut -d' ' -f1)
curl -s -H "X-Gitstore-Member: $t.$mac" "$NODE/cluster/v1/status"
"""


def test_the_documented_member_signature_reads_the_status(cluster):
    docs = (Path(__file__).parents[2] / "docs/ha.md").read_text()
    assert (
        SIGNED_STATUS.replace('"$KEY"', "/srv/gitstore/cluster.key").replace(
            "$NODE", "http://10.0.0.11:8000"
        )
        in docs
    )
    name = cluster.wait_for_primary()
    done = subprocess.run(
        ["sh", "-c", SIGNED_STATUS],
        env={**os.environ, "KEY": str(cluster.seed / CLUSTER_KEY_FILE),
             "NODE": cluster.nodes[name].url},
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    assert json.loads(done.stdout)["role"] == "primary", done.stdout
