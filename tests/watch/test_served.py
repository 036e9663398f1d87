"""Blocking queries and the change stream on a real `gitstore serve` (gevent workers, two of
them: a write lands in one process and wakes watchers parked in the other)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store
from gitstore.configdb.importer import SAMPLE_DIR

NODE = "/api/v1/config/environments/1/nodes/{node}/resources/astute/{kind}"
EFFECTIVE = {"effective": "1", "key": "nova"}
INDEX = "X-Gitstore-Index"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("watch-serve")
    process, url = _serve(workdir)
    yield url, workdir
    stop_process(process)


def _serve(workdir: Path, worker_class: str = "gevent") -> tuple[subprocess.Popen, str]:
    """`gitstore serve` (2 workers) on the sample store, answering."""
    root = workdir / "store"
    Store.init(root).importer.load_tree(SAMPLE_DIR)
    port, log = free_port(), workdir / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "2"]
    args += ["--worker-class", worker_class]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=isolated_env(workdir)
        )
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(process, url, log)
    return process, url


def _set(url: str, node: int, kind: str, key: str, value) -> str:
    path = NODE.format(node=node, kind=kind) + "/keys/set"
    put = requests.put(url + path, json=[["nova", key, value]], timeout=30)
    assert put.status_code == 204, put.text
    return put.headers["X-Gitstore-Commit"]


def _read(url: str, node: int = 1, **params) -> requests.Response:
    return requests.get(
        url + NODE.format(node=node, kind="values"), params={**EFFECTIVE, **params}, timeout=120
    )


def _held(url: str, node: int, index: str, wait: str):
    """A blocking query running in the background, and when it started."""
    pool = ThreadPoolExecutor(1)
    started = time.monotonic()
    return pool.submit(_read, url, node, index=index, wait=wait), started


def test_every_answer_names_the_head_it_was_read_at(server):
    url, _ = server
    got = _read(url)
    assert got.status_code == 200
    assert got.headers[INDEX] == got.headers["X-Gitstore-Commit"]


def test_a_relevant_commit_ends_the_wait(server):
    url, _ = server
    index = _read(url).headers[INDEX]
    future, started = _held(url, 1, index, "60s")
    time.sleep(1.0)
    assert not future.done()
    commit = _set(url, 1, "overrides", "watched_ratio", "first")
    got = future.result(timeout=30)
    assert time.monotonic() - started < 30
    assert got.status_code == 200
    assert got.json()["watched_ratio"] == "first"
    assert got.headers[INDEX] == commit


def test_an_index_behind_a_changed_answer_replies_at_once(server):
    url, _ = server
    index = _read(url).headers[INDEX]
    _set(url, 1, "overrides", "behind", 1)
    started = time.monotonic()
    got = _read(url, index=index, wait="60s")
    assert time.monotonic() - started < 20
    assert got.json()["behind"] == 1


def test_irrelevant_commits_do_not_end_the_wait_and_wait_ends_it(server):
    url, _ = server
    _set(url, 1, "overrides", "masked", "override wins")
    first = _read(url)
    future, started = _held(url, 1, first.headers[INDEX], "4s")
    time.sleep(0.5)
    _set(url, 2, "overrides", "elsewhere", "other node")  # another node
    _set(url, 1, "values", "masked", "hidden under the override")  # same merged result
    got = future.result(timeout=60)
    assert time.monotonic() - started >= 3.5
    assert got.status_code == 200
    assert got.json() == first.json()
    assert got.headers[INDEX] != first.headers[INDEX]  # read at the newer head


def test_a_held_query_with_if_none_match_ends_in_304(server):
    url, _ = server
    first = _read(url)
    got = requests.get(
        url + NODE.format(node=1, kind="values"),
        params={**EFFECTIVE, "index": first.headers[INDEX], "wait": "1s"},
        headers={"If-None-Match": first.headers["ETag"]},
        timeout=60,
    )
    assert got.status_code == 304
    assert got.headers[INDEX]


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"index": "no-such-commit"}, "index"),
        ({"index": "9999"}, "index"),
        ({"index": ""}, "index"),
        ({"wait": "soon"}, "wait"),
        ({"wait": "-5s"}, "wait"),
    ],
)
def test_a_malformed_index_or_wait_is_400_naming_it(server, params, key):
    url, _ = server
    got = _read(url, **params)
    assert got.status_code == 400, got.text
    assert key in got.json()["message"]


def test_the_other_blocking_reads_name_the_index(server):
    url, _ = server
    for path in (
        "/api/v1/config/environments/1",
        "/api/v1/hiera/1/1",
        "/api/v1/clusters/1/nodes/1",
        "/api/v1/clusters/1/deployment_tasks",
    ):
        first = requests.get(url + path, timeout=30)
        assert first.status_code == 200, (path, first.text)
        held = requests.get(url + path, params={"index": first.headers[INDEX], "wait": "1s"})
        assert held.status_code == 200, (path, held.text)
        assert held.headers[INDEX] == first.headers[INDEX]


def _events(url: str, count: int, **params) -> list[dict]:
    """The first `count` commit events of a stream, then the stream is closed."""
    found: list[dict] = []
    headers = params.pop("headers", {})
    with requests.get(
        url + "/api/v1/events", params=params, headers=headers, stream=True, timeout=60
    ) as stream:
        assert stream.status_code == 200, stream.text
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        event: dict = {}
        for line in stream.iter_lines(decode_unicode=True):
            if line.startswith(("event:", "id:", "data:")):
                field, _, value = line.partition(":")
                event[field] = value.strip()
            elif not line and event:
                found.append(event)
                event = {}
                if len(found) == count:
                    break
    return found


def test_the_stream_delivers_every_commit_once_across_a_reconnect(server):
    url, _ = server
    start = _read(url).headers[INDEX]
    pool = ThreadPoolExecutor(1)
    first = pool.submit(_events, url, 3, env="1", since=start)
    time.sleep(1.0)
    written = [_set(url, 1, "overrides", f"stream_{n}", n) for n in range(3)]
    got = first.result(timeout=60)
    assert [e["id"] for e in got] == written
    assert {e["event"] for e in got} == {"commit"}
    data = json.loads(got[0]["data"])
    assert data["env"] == 1 and data["commit"] == written[0]
    assert data["files"] == ["nodes/1/overrides/astute.yaml"]
    assert data["changes"][0]["resource"] == "astute"
    assert data["changes"][0]["level"] == "/nodes/1/"
    assert {"version", "author", "message", "time"} <= set(data)
    missed = [_set(url, 1, "overrides", f"missed_{n}", n) for n in range(2)]
    replay = _events(url, 2, env="1", headers={"Last-Event-ID": got[-1]["id"]})
    assert [e["id"] for e in replay] == missed
    again = _events(url, 4, env="1", since=start)
    assert [e["id"] for e in again] == written + missed[:1]


def test_the_stream_of_an_unknown_environment_is_404(server):
    url, _ = server
    got = requests.get(url + "/api/v1/events", params={"env": "99"}, timeout=30)
    assert got.status_code == 404
    assert requests.get(url + "/api/v1/events", timeout=30).status_code == 400


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=120)


def test_a_git_push_wakes_a_watcher_like_a_rest_write(server):
    url, workdir = server
    work = workdir / "clone"
    git("clone", "-q", f"{url}/git/environments/1.git", str(work))
    index = _read(url, node=3).headers[INDEX]
    future, _ = _held(url, 3, index, "60s")
    time.sleep(1.0)
    file = work / "nodes" / "3" / "overrides" / "astute.yaml"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("nova:\n  pushed_ratio: from git\n")
    git("add", "-A", cwd=work)
    git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "push", cwd=work)
    git("push", "-q", "origin", "HEAD:main", cwd=work)
    got = future.result(timeout=30)
    assert got.json()["pushed_ratio"] == "from git"


@contextlib.contextmanager
def _watch_cli(url: str, workdir: Path, *args: str) -> Iterator[subprocess.Popen]:
    """`gitstore watch` against the server, killed (and its pipes closed) at the end."""
    with subprocess.Popen(
        [str(GITSTORE), "--url", url, "watch", "--env", "1", "--format", "plain", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=isolated_env(workdir),
        cwd=workdir,
    ) as process:
        try:
            yield process
        finally:
            process.kill()


def test_cli_watch_exec_runs_once_per_change(server):
    url, workdir = server
    out = workdir / "exec.out"
    with _watch_cli(
        url,
        workdir,
        "--level",
        "nodes=1",
        "--resource",
        "astute",
        "--key",
        "nova",
        "--exec",
        f"cat >> {out}",
        "--count",
        "2",
    ) as process:
        initial = json.loads(process.stdout.readline())  # the value at start, no exec
        assert "state_path" in initial
        assert not out.exists()
        _set(url, 2, "overrides", "cli_other", 1)  # another node: not a change of this value
        _set(url, 1, "overrides", "cli_ratio", 1)
        time.sleep(1.0)
        _set(url, 1, "overrides", "cli_ratio", 2)
        assert process.wait(timeout=60) == 0, process.stderr.read()
    ran = [json.loads(line) for line in out.read_text().splitlines()]
    assert [value["cli_ratio"] for value in ran] == [1, 2]


def test_cli_watch_without_resource_prints_each_commit(server):
    url, workdir = server
    with _watch_cli(url, workdir, "--count", "2") as process:
        time.sleep(2.0)  # the stream starts at the head it finds
        written = [_set(url, 2, "overrides", f"cli_commit_{n}", n) for n in range(2)]
        assert process.wait(timeout=60) == 0, process.stderr.read()
        printed = [json.loads(line)["commit"] for line in process.stdout.read().splitlines()]
    assert printed == written


@pytest.mark.parametrize("worker_class", ["gevent", "gthread"])
def test_a_graceful_stop_ends_the_waits_and_streams_it_holds(tmp_path, worker_class):
    # A graceful stop waits for every request a worker holds: a parked query or an event
    # stream held it for gunicorn's whole graceful timeout (30 s). Now they answer and end at
    # once, and their clients ask again (with their index, or Last-Event-ID).
    process, url = _serve(tmp_path, worker_class)
    try:
        head = _read(url).headers[INDEX]
        future, _ = _held(url, 1, head, "5m")
        stream = requests.get(url + "/api/v1/events", params={"env": 1}, stream=True, timeout=60)
        lines = stream.iter_lines()
        assert next(lines).startswith(b": stream of environment 1")
        time.sleep(1.0)  # the query is parked
        assert not future.done()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0  # well under the graceful timeout
        held = future.result(timeout=5)
        assert held.status_code == 200 and held.headers[INDEX] == head  # the head, unchanged
        assert [line for line in lines if line and not line.startswith(b":")] == []
        stream.close()
    finally:
        stop_process(process)
