"""Concurrent writers through the facade: nothing is lost and history stays linear.

Eight processes (each with its own Store, as gunicorn workers) start together and write 200
times each, alternating between one resource they all share (each its own keys) and a resource
of their own. Afterwards every write must be readable and `main` must be a straight line of
exactly one commit per write after the set-up commit.
"""

from __future__ import annotations

import multiprocessing
import threading

from gitstore import Store
from gitstore.configdb.values import Query

from .helpers import linear_history
from .writers import write_keys

PROCESSES = 8
WRITES = 200
SETUP_COMMITS = 1  # creating an environment is one commit
SHARED = "astute"


def _environment(store: Store, resources: list[str]) -> None:
    store.components.create(
        {"name": "bench", "resource_definitions": [{"name": name} for name in resources]}
    )
    store.environments.create({"id": 1, "components": ["bench"], "hierarchy_levels": ["nodes"]})


def _effective(store: Store, resource: str) -> dict:
    return store.config.read(1, [], resource, "values", Query(effective=True)).data


def _expected(prefix: str, writes: int, parity: int) -> dict[str, int]:
    return {f"{prefix}{n}": n for n in range(writes) if n % 2 == parity}


def test_processes_writing_one_shared_and_one_own_resource_each(store):
    own = [f"r{i}" for i in range(PROCESSES)]
    _environment(store, [SHARED, *own])
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(PROCESSES)
    workers = [
        context.Process(
            target=write_keys,
            daemon=True,
            args=(str(store.root), 1, [SHARED, own[i]], f"w{i}_", WRITES, barrier),
        )
        for i in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    assert [w.exitcode for w in workers] == [0] * PROCESSES

    shared = {}
    for i in range(PROCESSES):
        shared.update(_expected(f"w{i}_", WRITES, parity=0))
        assert _effective(store, own[i]) == _expected(f"w{i}_", WRITES, parity=1)
    assert _effective(store, SHARED) == shared
    assert len(shared) == PROCESSES * WRITES // 2
    history = linear_history(store.environment_path(1))
    assert len(history) == PROCESSES * WRITES + SETUP_COMMITS


def test_threads_of_one_process_sharing_a_store(store):
    threads, writes = 8, 40
    _environment(store, [SHARED, "globals"])
    barrier = threading.Barrier(threads)
    failures: list[BaseException] = []

    def run(i: int) -> None:
        try:
            write_keys(str(store.root), 1, [SHARED, "globals"], f"t{i}_", writes, barrier)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            failures.append(exc)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert failures == []
    for resource, parity in ((SHARED, 0), ("globals", 1)):
        expected = {}
        for i in range(threads):
            expected.update(_expected(f"t{i}_", writes, parity))
        assert _effective(store, resource) == expected
    assert len(linear_history(store.environment_path(1))) == threads * writes + SETUP_COMMITS
