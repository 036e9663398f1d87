"""A serving worker warms the gate's per-file results up in the background once its app is
loaded (gitstore/serve/workers.py, gitstore/gitops/warmup.py), in steps taken in the worker's
idle time: lookups that arrive meanwhile are answered promptly, and a stream of lookups keeps
the warm-up waiting, in every worker of the server (they share the CPUs). The real
`gitstore serve`, two gevent workers."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import requests
from live_server import GITSTORE, free_port, isolated_env, stop_process

from gitstore import Store
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author

NODES = 400
KEYS = 500  # per node: the warm-up parses every node's file, ~1 s of CPU in all
PROMPT_S = 0.2  # a lookup that shared the CPU with the warm-up took 0.2-0.6 s
PAUSE_S = 0.1  # between lookups: the warm-up's turn (the worker is idle after QUIET)
STREAM_S = 3.0  # of lookups one after another, during which the warm-up waits
ENDS_WITHIN_S = 120
BEGUN = "warm-up: checking the main of 1 environments"
LOOKUP = "/api/v1/config/environments/1/nodes/{node}/resources/astute/values?effective"


def _store(root: Path) -> Store:
    store = Store.init(root)
    store.components.create({"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    store.environments.create({"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    changes = ChangeSet(f"{NODES} nodes")
    for node in range(1, NODES + 1):
        text = "".join(f"key_{k}:\n  node: {node}\n  value: v{k}\n" for k in range(KEYS))
        changes.put(f"nodes/{node}/values/astute.yaml", text.encode())
    store.environment_repo(1).update(lambda _: changes, Author("seed", "seed@example.com"))
    return store


def _warmed(log: Path) -> bool:
    return "warmed environment 1" in log.read_text(errors="replace")


def _wait_for(process: subprocess.Popen, log: Path, line: str) -> None:
    ends = time.monotonic() + ENDS_WITHIN_S
    while line not in log.read_text(errors="replace"):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < ends, log.read_text()
        time.sleep(0.01)


def test_lookups_during_the_warm_up_are_answered_promptly(tmp_path):
    root = tmp_path / "store"
    _store(root)
    port = free_port()
    log = tmp_path / "serve.log"
    command = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port)]
    command += ["--workers", "2", "--no-maintenance"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=isolated_env(tmp_path),
        )
    url = f"http://127.0.0.1:{port}"
    session = requests.Session()  # one connection: one worker serves it, the other is idle
    try:
        _wait_for(process, log, BEGUN)  # the worker is checking: each lookup from now is timed
        during = []
        node = 0
        streamed = time.monotonic() + STREAM_S
        while time.monotonic() < streamed:
            node = node % NODES + 1  # a node not read before: a cold lookup
            started = time.perf_counter()
            answer = session.get(url + LOOKUP.format(node=node), timeout=30)
            during.append(time.perf_counter() - started)
            assert answer.status_code == 200, answer.text
        assert not _warmed(log), "a worker's warm-up took CPU from a stream of lookups"
        ends = time.monotonic() + ENDS_WITHIN_S
        while not _warmed(log):
            assert time.monotonic() < ends, "the warm-up never ended"
            node = node % NODES + 1  # a node not read before: a cold lookup
            started = time.perf_counter()
            answer = session.get(url + LOOKUP.format(node=node), timeout=30)
            took = time.perf_counter() - started
            assert answer.status_code == 200, answer.text
            during.append(took)
            time.sleep(PAUSE_S)
        assert f"{NODES + 1} files checked, {NODES} key indexes" in log.read_text()
        assert len(during) >= 3, "the warm-up ended before the lookups began: make it longer"
        assert max(during) < PROMPT_S, (during.index(max(during)), len(during), sorted(during)[-5:])
    finally:
        session.close()
        stop_process(process)


def test_giving_way_waits_until_no_request_started_or_ended_for_quiet_seconds():
    import threading

    from gitstore.serve.activity import Activity

    activity = Activity(quiet=0.05)
    stop = threading.Event()
    last = [time.monotonic()]

    def requests_coming() -> None:  # a request starts or ends every 10 ms for 0.3 s
        ends = time.monotonic() + 0.3
        while time.monotonic() < ends:
            activity.touch()
            last[0] = time.monotonic()
            time.sleep(0.01)
        stop.set()

    threading.Thread(target=requests_coming, daemon=True).start()
    activity.give_way()
    assert stop.is_set()
    assert time.monotonic() - last[0] >= 0.05
