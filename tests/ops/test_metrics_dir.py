"""The directory the workers share their counters through: made private and removed by
`gitstore serve`, or the operator's, emptied of an earlier run's counts at start."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import requests
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store, metrics

OLD_RUN = """
from gitstore import metrics
metrics.commits_arrived("push", "catalog.git", "", "0" * 40, 1000)
"""


def _serve(root: Path, workdir: Path, **env: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = workdir / f"serve-{port}.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "2"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=isolated_env(workdir, **env)
        )
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(process, url, log, probe="/healthz")
    return process, url


def _shared_dir(server: subprocess.Popen) -> Path:
    """The folder of the counter files a worker has mapped (after it answered something)."""
    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    for pid in children:
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
            path = line.split()[-1]
            if path.endswith(".db") and "/gitstore-metrics-" in path:
                return Path(path).parent
    raise AssertionError("no worker maps a counter file")


def test_a_private_directory_is_made_and_removed_at_exit(tmp_path):
    root = tmp_path / "store"
    Store.init(root)
    process, url = _serve(root, tmp_path)
    for _ in range(6):
        requests.get(url + "/healthz", timeout=10)
    shared = _shared_dir(process)
    assert shared.is_dir() and (shared.stat().st_mode & 0o777) == 0o700
    stop_process(process)
    assert not shared.exists()


def test_the_operators_directory_is_emptied_at_start_and_kept(tmp_path):
    root = tmp_path / "store"
    Store.init(root)
    shared = tmp_path / "metrics"
    shared.mkdir()
    env = isolated_env(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(shared))
    subprocess.run([sys.executable, "-c", OLD_RUN], env=env, check=True)  # an earlier run's
    assert list(shared.glob("*.db"))
    process, url = _serve(root, tmp_path, PROMETHEUS_MULTIPROC_DIR=str(shared))
    try:
        text = requests.get(url + "/metrics", timeout=10).text
        assert 'gitstore_commits_total{source="push"} 1000' not in text
        deadline = time.monotonic() + metrics.FLUSH_SECONDS + 10  # another worker's probe
        while "gitstore_http_requests_total" not in text and time.monotonic() < deadline:
            time.sleep(0.2)  # lands at its worker's next flush
            text = requests.get(url + "/metrics", timeout=10).text
        assert "gitstore_http_requests_total" in text
    finally:
        stop_process(process)
    assert shared.is_dir()
