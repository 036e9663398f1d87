"""`gitstore serve`: the real command, gunicorn with two workers, talked to over HTTP."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store
from gitstore.configdb.importer import SAMPLE_DIR

ASTUTE = "/api/v1/config/environments/1/nodes/{node}/resources/astute/{kind}"
START_TIMEOUT = 30


@dataclass
class Server:
    url: str
    port: int
    process: subprocess.Popen
    log: Path

    def workers(self) -> list[int]:
        """Pids of the gunicorn master's children (its workers)."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return [int(pid) for pid in children.read_text().split()]


def start(root: Path, workdir: Path, *extra: str) -> Server:
    port = free_port()
    log = workdir / f"serve-{port}.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), *extra]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=isolated_env(workdir),
        )
    server = Server(f"http://127.0.0.1:{port}", port, process, log)
    wait_until_answers(process, server.url, log)
    return server


def stop(server: Server) -> int:
    return stop_process(server.process)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("serve")


@pytest.fixture(scope="module")
def sample_root(workdir) -> Path:
    root = workdir / "store"
    Store.init(root).importer.load_tree(SAMPLE_DIR)
    return root


@pytest.fixture(scope="module")
def server(sample_root, workdir):
    server = start(sample_root, workdir, "--workers", "2")
    yield server
    stop(server)


def test_runs_two_workers(server):
    assert len(server.workers()) == 2


def test_effective_values_by_node_id_and_by_fqdn(server):
    by_id = requests.get(
        server.url + ASTUTE.format(node=1, kind="values"), params={"effective": "1"}, timeout=10
    )
    by_fqdn = requests.get(
        server.url + ASTUTE.format(node="node-1.domain.tld", kind="values"),
        params={"effective": "1"},
        timeout=10,
    )
    assert by_id.status_code == by_fqdn.status_code == 200
    assert by_id.headers["Content-Type"] == "application/json"
    assert by_id.headers["X-Gitstore-Commit"] == by_fqdn.headers["X-Gitstore-Commit"]
    assert by_id.json() == by_fqdn.json()
    assert by_id.json()["fqdn"] == "node-1.domain.tld"


def test_a_key_set_through_one_worker_is_read_by_every_worker(server):
    url = server.url + ASTUTE.format(node=2, kind="overrides")
    put = requests.put(url + "/keys/set", json=[["nova", "cpu_allocation_ratio", 4.0]], timeout=10)
    assert put.status_code == 204
    commit = put.headers["X-Gitstore-Commit"]
    effective = server.url + ASTUTE.format(node="node-2.domain.tld", kind="values")
    for _ in range(12):  # a new connection each time: the workers take turns accepting
        got = requests.get(effective, params={"effective": "1", "key": "nova"}, timeout=10)
        assert got.status_code == 200
        assert got.headers["X-Gitstore-Commit"] == commit
        assert got.json()["cpu_allocation_ratio"] == 4.0
        assert got.json()["state_path"] == "/var/lib/nova"  # still merged with the values


def test_keep_alive_serves_many_requests_on_one_connection(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    path = ASTUTE.format(node=3, kind="values") + "?effective&key=libvirt_type"
    local_ports = set()
    try:
        for _ in range(10):
            conn.request("GET", path)
            response = conn.getresponse()
            assert response.status == 200
            assert response.read() == b'"kvm"'
            local_ports.add(conn.sock.getsockname()[1])
    finally:
        conn.close()
    assert len(local_ports) == 1


def test_errors_are_json(server):
    got = requests.get(server.url + "/api/v1/config/environments/9", timeout=10)
    assert got.status_code == 404
    assert got.json()["status"] == 404


def test_sigterm_stops_the_master_and_its_workers(sample_root, workdir):
    server = start(sample_root, workdir, "--workers", "2")
    workers = server.workers()
    assert len(workers) == 2

    assert stop(server) == 0

    for pid in workers:
        assert not Path(f"/proc/{pid}").exists()
    with pytest.raises(requests.ConnectionError):
        requests.get(server.url + "/api/v1/config/environments", timeout=2)


def test_serve_rewrites_the_hooks_a_previous_installation_wrote(sample_root, workdir):
    """A hook names the interpreter that wrote it: after an upgrade into another installation
    (the previous one then removed) every push would fail at its gate."""
    repos = [sample_root / "catalog.git", *sorted((sample_root / "environments").glob("*.git"))]
    hooks = [repo / "hooks" / name for repo in repos for name in ("pre-receive", "post-receive")]
    for hook in hooks:
        hook.write_text(hook.read_text().replace(sys.executable, "/opt/gitstore-0.9/bin/python"))
    server = start(sample_root, workdir, "--workers", "1")
    stop(server)
    assert [h for h in hooks if f"exec {sys.executable} -P -m" not in h.read_text()] == []


def test_serve_refuses_a_folder_that_is_not_a_store(tmp_path):
    result = subprocess.run(
        [str(GITSTORE), "serve", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        env=isolated_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1
    assert "is not a gitstore root" in result.stderr
    assert "Traceback" not in result.stderr


#: Ctrl-C in a terminal signals the whole foreground process group: the master and every
#: worker get SIGINT, and the master then sends each worker SIGQUIT. A gevent worker that took
#: both quit signals used to hang in interpreter shutdown until the master's 30 s SIGKILL
#: (about one stop in five).
CTRL_C_STOPS = 20
CTRL_C_SECONDS = 5


def _start_in_own_group(root: Path, workdir: Path) -> Server:
    port = free_port()
    log = workdir / f"serve-ctrl-c-{port}.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "2"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=isolated_env(workdir),
            start_new_session=True,  # its own process group, as a shell job has
        )
    server = Server(f"http://127.0.0.1:{port}", port, process, log)
    _wait_until_listening(server)
    return server


def _wait_until_listening(server: Server) -> None:
    """Until the master listens: its workers may still be loading the app, as after `make
    demo` when someone presses Ctrl-C at once (the stops that hung fell in that window)."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and server.process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    pytest.fail("the server did not listen:\n" + server.log.read_text(errors="replace"))


def test_ctrl_c_stops_the_server_promptly_every_time(sample_root, workdir):
    for attempt in range(CTRL_C_STOPS):
        server = _start_in_own_group(sample_root, workdir)
        time.sleep(attempt % 5 * 0.15)  # from workers still booting to workers serving
        workers = server.workers()
        began = time.monotonic()
        os.killpg(server.process.pid, signal.SIGINT)
        try:
            server.process.wait(timeout=CTRL_C_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait()
            pytest.fail(
                f"stop {attempt + 1} took over {CTRL_C_SECONDS}s:\n"
                + server.log.read_text(errors="replace")[-3000:]
            )
        took = time.monotonic() - began
        assert took < CTRL_C_SECONDS
        assert "Perhaps out of memory" not in server.log.read_text(errors="replace")
        assert not [pid for pid in workers if Path(f"/proc/{pid}").exists()]


def test_serve_on_a_busy_port_exits_at_once_naming_the_port(sample_root, tmp_path):
    """gunicorn alone retries a busy address every second, forever."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        began = time.monotonic()
        result = subprocess.run(
            [str(GITSTORE), "serve", "--root", str(sample_root), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=20,
            env=isolated_env(tmp_path),
            stdin=subprocess.DEVNULL,
        )
        took = time.monotonic() - began
    assert result.returncode == 1, result.stderr
    assert f"Error: port {port} on 127.0.0.1 is already in use" in result.stderr
    assert f"choose another with --port, e.g. --port {port + 1}" in result.stderr
    assert "Connection in use" not in result.stderr  # gunicorn never tried
    assert took < 10
