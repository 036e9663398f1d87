"""A move touches two repositories: killed between any two of its steps, it is never served as
the node being in both environments or in neither, and the next write or start completes it.

A child process runs the move with a test-only pause point (`GITSTORE_TEST_PAUSE`), is seen
arriving there, is killed with SIGKILL, and the parent checks what readers are served.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitstore import Store
from gitstore.api import create_app
from gitstore.deployment.inventory import node_path

from .conftest import ORIGINAL, SEED

MOVE = """
import sys
from gitstore import Store
Store(sys.argv[1]).moves.assign(2, {"nodes_ids": [1, 2], "reprovision": False})
"""


def start_move(store: Store, point: str, tmp_path: Path) -> subprocess.Popen:
    """Run the move in a child process until it reaches `point` (it then waits there)."""
    marker = tmp_path / f"{point}.paused"
    env = {**os.environ, "GITSTORE_TEST_PAUSE": point, "GITSTORE_TEST_PAUSE_FILE": str(marker)}
    child = subprocess.Popen(
        [sys.executable, "-c", MOVE, str(store.root)], env=env, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        if child.poll() is not None:
            raise AssertionError(f"the move ended early: {child.stderr.read().decode()}")
        assert time.monotonic() < deadline, "the move never reached its pause point"
        time.sleep(0.02)
    return child


def kill(child: subprocess.Popen) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    child.stderr.close()
    assert child.returncode == -signal.SIGKILL


def served(store: Store) -> dict[int, set[int]]:
    """Where readers are served nodes 1 and 2: environment -> node ids (fresh handles)."""
    fresh = Store(store.root)
    return {
        env_id: {n["id"] for n in fresh.nodes.list(env_id).data} & {1, 2}
        for env_id in (ORIGINAL, SEED)
    }


def stored(store: Store) -> dict[int, set[int]]:
    """Where the heads of the repositories hold nodes 1 and 2 (raw git, no intent applied)."""
    fresh = Store(store.root)
    return {
        env_id: {
            i for i in (1, 2) if fresh.environment_repo(env_id).snapshot().exists(node_path(i))
        }
        for env_id in (ORIGINAL, SEED)
    }


def exactly_once(where: dict[int, set[int]]) -> bool:
    return all(sum(node in ids for ids in where.values()) == 1 for node in (1, 2))


@pytest.mark.parametrize(
    ("point", "raw"),
    [
        ("move.intent-written", {ORIGINAL: {1, 2}, SEED: set()}),
        ("move.seed-committed", {ORIGINAL: {1, 2}, SEED: {1, 2}}),
        ("move.original-committed", {ORIGINAL: set(), SEED: {1, 2}}),
    ],
)
def test_a_move_killed_between_steps_is_served_once_and_completed_by_the_next_write(
    seeded_store, tmp_path, point, raw
):
    child = start_move(seeded_store, point, tmp_path)
    try:
        assert stored(seeded_store) == raw
        assert exactly_once(served(seeded_store)), served(seeded_store)
    finally:
        kill(child)
    assert exactly_once(served(seeded_store))
    assert len(seeded_store.moves.pending()) == 1
    Store(seeded_store.root).nodes.create(ORIGINAL, {"fqdn": "node-9"})  # the next write
    assert served(seeded_store) == stored(seeded_store) == {ORIGINAL: set(), SEED: {1, 2}}
    assert seeded_store.moves.pending() == []
    moved = Store(seeded_store.root).nodes.get(SEED, 1).data
    assert moved["ip_addresses"] == {"management": "192.168.0.11/24", "public": "172.16.0.11/24"}


def test_a_server_start_completes_an_interrupted_move(seeded_store, tmp_path):
    kill(start_move(seeded_store, "move.seed-committed", tmp_path))
    client = create_app({"TESTING": True}, store=Store(seeded_store.root)).test_client()
    assert seeded_store.moves.pending() == []
    assert stored(seeded_store) == {ORIGINAL: set(), SEED: {1, 2}}
    nodes = client.get(f"/api/v1/clusters/{SEED}/nodes").get_json()
    assert {n["id"] for n in nodes} == {1, 2}


def test_a_move_that_can_no_longer_complete_is_withdrawn(seeded_store, tmp_path):
    """The seed's release loses the role while the move is interrupted: the replay undoes
    commit A instead, so the nodes stay in the original, served and stored once."""
    kill(start_move(seeded_store, "move.seed-committed", tmp_path))
    store = Store(seeded_store.root)
    release = store.releases.get(2).data
    roles = {k: v for k, v in release["roles_metadata"].items() if k != "controller"}
    store.releases.update(2, {"roles_metadata": roles})  # reconciles the seed: a write
    assert store.moves.pending() == []
    assert served(store) == stored(store) == {ORIGINAL: {1, 2}, SEED: set()}
