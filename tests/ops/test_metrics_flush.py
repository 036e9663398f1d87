"""Request counts a worker buffers (gitstore/metrics.py `_Buffer`) reach the shared counters:
when it stops gracefully, even if its flush interval has not come yet."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store, metrics

HEALTHZ = 'gitstore_http_requests_total{method="GET",route="/healthz",status="200"}'


def _workers(server: subprocess.Popen) -> set[int]:
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    return {int(pid) for pid in children}


def _counted(url: str) -> float:
    for line in requests.get(url + "/metrics", timeout=10).text.splitlines():
        if line.startswith(HEALTHZ + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.parametrize("worker_class", ["gevent", "gthread"])
def test_a_workers_counts_survive_its_graceful_exit(tmp_path, worker_class):
    root = tmp_path / "store"
    Store.init(root)
    port = free_port()
    log = tmp_path / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "1"]
    args += ["--worker-class", worker_class]
    # An hour: only the exit can have written the counts the scrape finds.
    env = isolated_env(tmp_path, **{metrics.FLUSH_ENV: "3600"})
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answers(process, url, log, probe="/healthz")
        with requests.Session() as session:
            for _ in range(25):
                assert session.get(url + "/healthz", timeout=10).status_code == 200
        (first,) = _workers(process)
        os.kill(first, signal.SIGTERM)  # gunicorn: a graceful stop; the master starts another
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _workers(process) in (set(), {first}):
            time.sleep(0.1)
        wait_until_answers(process, url, log, probe="/healthz")
        # The new worker flushes its own counts before it answers the scrape; the first one's
        # 25 (and the probes it answered) are in the files only if its exit wrote them.
        assert _counted(url) >= 26
    finally:
        stop_process(process)


def test_buffered_requests_reach_the_histogram_as_observations_would():
    route = f"/test/buffered/{time.monotonic_ns()}"
    durations = [0.0, 0.005, 0.0051, 0.3, 2.5, 61.0, 0.001]
    for seconds in durations:
        metrics.request_answered(route, "GET", 200, seconds)
    text = metrics.exposition()[0].decode()  # a scrape flushes this process first
    samples = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if f'route="{route}"' in line
    }
    labels = f'method="GET",route="{route}"'
    assert samples[f'gitstore_http_requests_total{{{labels},status="200"}}'] == len(durations)
    assert samples[f"gitstore_http_request_duration_seconds_count{{{labels}}}"] == len(durations)
    assert samples[f"gitstore_http_request_duration_seconds_sum{{{labels}}}"] == pytest.approx(
        sum(durations)
    )
    for bound in (0.005, 0.01, 0.25, 0.5, 2.5, 60.0):
        expected = sum(seconds <= bound for seconds in durations)
        key = f'gitstore_http_request_duration_seconds_bucket{{le="{bound}",{labels}}}'
        assert samples[key] == expected, bound
