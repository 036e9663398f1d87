"""Waiting requests are bounded per worker process (limit `waiting_requests`): past it a new
blocking query or event stream is 503 with Retry-After, and every other request is still
answered. Before the bound, parked watchers filled gunicorn's connections and the worker
answered nothing else (a request hung until the client gave up)."""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from error_shape import ERROR_KEYS
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store, limits
from gitstore.configdb.importer import SAMPLE_DIR
from gitstore.watch.heads import Heads
from gitstore.watch.service import Watch
from gitstore.watch.slots import Slots

LIMIT = 3
NODE = "/api/v1/config/environments/1/nodes/1/resources/astute/values"


@pytest.fixture
def server(tmp_path):
    """`gitstore serve --workers 1` whose store allows LIMIT waiting requests (one per test:
    a stream its client closed keeps its slot until the server's next keepalive write)."""
    workdir = tmp_path
    root = workdir / "store"
    Store.init(root).importer.load_tree(SAMPLE_DIR)
    (root / limits.LIMITS_FILE).write_text(f"waiting_requests: {LIMIT}\n")
    port, log = free_port(), workdir / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=isolated_env(workdir)
        )
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(process, url, log)
    yield url
    stop_process(process)


def _stream(url: str) -> requests.Response:
    return requests.get(url + "/api/v1/events", params={"env": "1"}, stream=True, timeout=30)


def _assert_busy(response: requests.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["Retry-After"] == "5"
    body = response.json()
    assert set(body) <= ERROR_KEYS and body["status"] == 503
    assert "waiting_requests" in body["message"]


def _held(url: str, head: str) -> requests.Response:
    return requests.get(url + NODE, params={"index": head, "wait": "20s"}, timeout=60)


def test_streams_past_the_limit_are_503_and_others_are_answered(server):
    streams = [_stream(server) for _ in range(LIMIT)]
    try:
        assert all(stream.status_code == 200 for stream in streams)
        with _stream(server) as refused:
            _assert_busy(refused)
        started = time.monotonic()
        assert requests.get(server + NODE, timeout=10).status_code == 200
        assert requests.get(server + "/healthz", timeout=10).status_code == 200
        assert time.monotonic() - started < 5
    finally:
        streams.pop().close()
    # commits make every stream write, sooner than its next keepalive comment: a closed
    # connection's first write is taken by the kernel, its second fails
    for number in range(2):
        written = requests.put(server + NODE + "/keys/set", json=[["streamed", number]], timeout=30)
        assert written.status_code == 204
        time.sleep(0.2)
    _until_accepted(server, streams)


def _until_accepted(url: str, streams: list) -> None:
    """A closed stream gives its slot back (the worker sees the closed connection at its next
    write: an event, a keepalive comment)."""
    deadline = time.monotonic() + 30
    try:
        while True:
            again = _stream(url)
            if again.status_code == 200:
                streams.append(again)
                return
            again.close()
            assert time.monotonic() < deadline, "the closed stream's slot never came back"
            time.sleep(0.5)
    finally:
        for stream in streams:
            stream.close()


def test_blocking_queries_past_the_limit_are_503_and_end_with_their_slots(server):
    head = requests.get(server + NODE, timeout=10).headers["X-Gitstore-Index"]
    pool = ThreadPoolExecutor(LIMIT)
    held = [pool.submit(_held, server, head) for _ in range(LIMIT)]
    time.sleep(2)  # parked by now (a probe sent earlier could take one of their slots)
    _assert_busy(requests.get(server + NODE, params={"index": head, "wait": "1s"}, timeout=30))
    assert requests.get(server + NODE, timeout=10).status_code == 200
    written = requests.put(server + NODE + "/keys/set", json=[["waiting", 1]], timeout=30)
    assert written.status_code == 204  # the commit ends every held query
    assert all(done.result(timeout=60).status_code == 200 for done in held)
    again = requests.get(server + NODE, params={"index": head, "wait": "1s"}, timeout=30)
    assert again.status_code == 200


def test_a_stream_closed_before_it_started_gives_its_slot_back(fuel_store):
    slots = Slots(lambda: 1)
    watch = Watch(fuel_store.repos, Heads(fuel_store.repos), slots)
    stream = watch.stream(1, None, keepalive=1.0)
    assert slots.held == 1
    stream.close()
    assert slots.held == 0
    stream = watch.stream(1, None, keepalive=1.0)
    stream.close()
    stream.close()  # twice gives it back once
    assert slots.held == 0
