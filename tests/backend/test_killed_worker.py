"""A `gitstore serve` worker SIGKILLed while it commits rounds of writes loses no acknowledged
write and leaves a repository that `git fsck --strict` finds whole.

The real server (gunicorn, gevent workers): eight clients set keys in three nodes' overrides,
so the writers queued in a worker are committed in rounds (`CommitQueue._in_round`), while the
test kills a worker every few tenths of a second (gunicorn starts another). A write counts as
acknowledged only when its 2xx arrived; every one must then be in main, and main must have
gained at most one commit per write sent.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
from background import Background
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store
from gitstore.configdb.importer import SAMPLE_DIR

from .helpers import git

CLIENTS = 8
KILLS = 4
NODES = ("1", "2", "3")
OVERRIDES = "/api/v1/config/environments/1/nodes/{node}/resources/astute/overrides"


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "store"
    Store.init(root).importer.load_tree(SAMPLE_DIR)
    port = free_port()
    log = tmp_path / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "2"]
    args += ["--min-free-disk", "1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=isolated_env(tmp_path)
        )
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(process, url, log, probe="/healthz")
    yield {"url": url, "root": root, "process": process}
    stop_process(process)


class Writers(Background):
    """CLIENTS threads, each on its own connection, setting keys until told to stop."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.sent = 0
        self.acknowledged: list[tuple[str, str, int]] = []
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, args=(n,)) for n in range(CLIENTS)]

    def _run(self, client: int) -> None:
        session = requests.Session()
        number = 0
        while not self.stop.is_set():
            node, key = NODES[number % len(NODES)], f"c{client}_{number}"
            with self._lock:
                self.sent += 1
            try:
                answer = session.patch(
                    self.url + OVERRIDES.format(node=node) + "/keys/set",
                    json=[[key, number]],
                    timeout=30,
                )
            except requests.RequestException:  # its worker was killed: not acknowledged
                session = requests.Session()
            else:
                if answer.ok:
                    with self._lock:
                        self.acknowledged.append((node, key, number))
            number += 1


def _workers(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return [int(pid) for pid in children]


def _version(url: str) -> int:
    answer = requests.get(url + OVERRIDES.format(node=NODES[0]), timeout=30)
    return int(answer.headers["X-Gitstore-Version"])


def test_a_killed_worker_loses_no_acknowledged_write(server):
    url, master = server["url"], server["process"].pid
    before = _version(url)
    killed = 0
    with Writers(url) as writers:
        deadline = time.monotonic() + 60
        while killed < KILLS and time.monotonic() < deadline:
            time.sleep(0.4)
            acknowledged = len(writers.acknowledged)
            if acknowledged < 5 * (killed + 1):  # a new worker still starting: let it write
                continue
            workers = _workers(master)
            if len(workers) == 2:
                subprocess.run(["kill", "-KILL", str(workers[killed % 2])], check=True)
                killed += 1
        time.sleep(0.5)  # writes on the replacement workers too
    assert killed == KILLS, (len(writers.acknowledged), writers.sent, _workers(master))

    for node in NODES:
        answer = requests.get(url + OVERRIDES.format(node=node), timeout=30)
        document = answer.json()
        missing = [k for n, k, v in writers.acknowledged if n == node and document.get(k) != v]
        assert not missing, f"node {node}: acknowledged but not in main: {missing[:5]}"
    gained = _version(url) - before
    assert len(writers.acknowledged) <= gained <= writers.sent
    repo = Store(server["root"]).environment_path(1)
    git(repo, "fsck", "--strict", "--full", "--no-progress")
