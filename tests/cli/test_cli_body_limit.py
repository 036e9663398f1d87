"""A request body over the server's `body_bytes`: the CLI prints the server's 413, against a
real `gitstore serve` (gunicorn answers and closes while the body is still being sent)."""

from __future__ import annotations

import json
import subprocess

import pytest
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store
from gitstore.configdb.importer import SAMPLE_DIR


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("limit")
    root = workdir / "store"
    Store.init(root).importer.load_tree(SAMPLE_DIR)
    port = free_port()
    log = workdir / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=isolated_env(workdir),
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(process, url, log)
    yield url, workdir
    stop_process(process)


def test_a_body_over_the_limit_prints_the_servers_413(served):
    url, workdir = served
    document = workdir / "huge.json"
    document.write_text(json.dumps({"a": "x" * 20_000_000}))  # 20 MB > body_bytes (16 MiB)
    with document.open("rb") as stdin:
        done = subprocess.run(
            [str(GITSTORE), "--url", url, "config", "set", "-e", "1", "-l", "nodes=1",
             "-r", "globals", "-f", "json"],
            stdin=stdin, capture_output=True, text=True, env=isolated_env(workdir), timeout=120,
        )  # fmt: skip
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.startswith("Error: request body of "), done.stderr
    assert "body_bytes" in done.stderr and "cannot reach" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
