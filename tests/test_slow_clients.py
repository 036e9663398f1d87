"""Slow and vanishing clients against the real `gitstore serve` (issue 25, item 4).

A client that never finishes its request must not hold what other clients need: not a worker
thread while it sends half a header block, and not a `git http-backend` once it has gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from access.helpers import add_users, basic, isolated_env, password_of, serve

from gitstore import Store
from gitstore.configdb.importer import SAMPLE_DIR

#: More half-sent requests than the old default had threads (2 workers x 4 threads).
SLOW_CLIENTS = 16
#: Generous: a healthy server answers in milliseconds, a blocked one never.
ANSWER_BOUND = 20
#: How long a dead push client's `git http-backend` may outlive it.
CLEANUP_BOUND = 30

#: Sends the head of a push and part of its pack, then waits to be killed.
#: A git client that sends half of its request body, then hangs (argv: port, auth, service,
#: old main). The declared length is far larger than what is sent.
_HALF_CLIENT = """
import socket, sys, time
port, auth, service, old = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
if service == "receive-pack":
    command = f"{old} {'1' * 40} refs/heads/main\\0report-status\\n"
    body = (f"{len(command) + 4:04x}{command}0000").encode()
    body += b"PACK\\0\\0\\0\\2\\0\\0\\0\\5" + b"x" * 50000
else:
    body = f"0032want {old}\\n".encode()
head = (
    f"POST /git/environments/1.git/git-{service} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n"
    f"Authorization: {auth}\\r\\nContent-Type: application/x-git-{service}-request\\r\\n"
    "Content-Length: 10000000\\r\\n\\r\\n"
)
sock = socket.create_connection(("127.0.0.1", int(port)))
sock.sendall(head.encode() + body)
print("sent", flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def guarded_server(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("slow")
    store = Store.init(workdir / "store")
    store.importer.load_tree(SAMPLE_DIR)
    add_users(store.root, {"writer": ["writer"]})
    server = serve(store.root, workdir)
    yield store, server
    server.stop()
    for pid in _backends(store.root):  # left by a failed test: never outlive the suite
        os.kill(pid, signal.SIGKILL)


def _half_header(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"GET /api/v1/config/environments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return sock


def test_half_sent_headers_do_not_block_other_clients(guarded_server):
    _, server = guarded_server
    slow = [_half_header(server.port) for _ in range(SLOW_CLIENTS)]
    try:
        time.sleep(1)  # every slow client has been accepted and has sent its bytes
        started = time.monotonic()
        got = requests.get(
            server.url + "/api/v1/access/whoami",
            headers=basic("writer", password_of("writer")),
            timeout=ANSWER_BOUND,
        )
        assert got.status_code == 200
        assert time.monotonic() - started < ANSWER_BOUND
        # and the half-sent heads are given up on (gunicorn's keep-alive time bounds a head)
        assert _closed_within(slow[0], ANSWER_BOUND)
    finally:
        for sock in slow:
            sock.close()


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes `sock` within `seconds` (whatever it sends before)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            if not sock.recv(4096):
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
    return False


def _backends(root: Path) -> list[int]:
    """Pids of the `git http-backend` processes serving `root` (orphans included)."""
    marker = f"GIT_PROJECT_ROOT={root.resolve()}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if b"http-backend" not in (entry / "cmdline").read_bytes():
                continue
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue  # not a process, or one that has just ended
    return found


def _half_client(server, service: str, old: str) -> subprocess.Popen:
    auth = basic("writer", password_of("writer"))["Authorization"]
    client = subprocess.Popen(
        [sys.executable, "-c", _HALF_CLIENT, str(server.port), auth, service, old],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert client.stdout.readline().strip() == "sent"
    return client


def _kill(client: subprocess.Popen) -> None:
    os.kill(client.pid, signal.SIGKILL)
    client.wait()
    client.stdout.close()


def _no_backend_after(root: Path, bound: float) -> list[int]:
    """The backends still there after `bound`; [] as soon as one look finds none (a second
    look could catch a short-lived backend of the dying client's partial request)."""
    deadline = time.monotonic() + bound
    while (left := _backends(root)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def test_a_fetch_client_killed_mid_transfer_leaves_no_http_backend(guarded_server):
    store, server = guarded_server
    old = _main_of(store.root / "environments" / "1.git")
    client = _half_client(server, "upload-pack", old)
    try:
        deadline = time.monotonic() + ANSWER_BOUND
        while not _backends(store.root) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _backends(store.root), "the fetch never reached git http-backend"
    finally:
        _kill(client)
    assert _no_backend_after(store.root, CLEANUP_BOUND) == []


def test_a_push_starts_git_only_once_its_body_is_whole(guarded_server):
    """A push is read whole before git runs (it waits its turn with REST writers), so a client
    that dies mid-body never leaves a git http-backend behind."""
    store, server = guarded_server
    old = _main_of(store.root / "environments" / "1.git")
    client = _half_client(server, "receive-pack", old)
    try:
        time.sleep(3)
        assert _backends(store.root) == []
    finally:
        _kill(client)
    assert _backends_seen_within(store.root, 3.0) == []  # the cut body never reaches git
    assert _main_of(store.root / "environments" / "1.git") == old


def _backends_seen_within(root: Path, seconds: float) -> list[int]:
    """Every backend any look finds during `seconds` (looks every 20 ms)."""
    seen: set[int] = set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.update(_backends(root))
        time.sleep(0.02)
    return sorted(seen)


def _main_of(git_dir: Path) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "rev-parse", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


#: How long a SIGKILLed worker's git processes may outlive it.
ORPHAN_BOUND = 10
#: A pre-receive hook that says it started, then takes its time (and refuses in the end).
_SLOW_HOOK = """#!/bin/sh
touch {marker}
sleep 120
exit 1
"""


def test_a_worker_killed_mid_push_takes_its_git_processes_with_it(guarded_server, tmp_path):
    """git http-backend runs in a session of its own (so a client that vanishes can have its
    whole group killed). A worker SIGKILLed while git works (the OOM killer, a node crash)
    must not leave git running on: it was seen spinning at 40 % CPU, and a push whose hook
    is still running would go on to move main for a client nobody answers."""
    store, server = guarded_server
    repo = store.root / "environments" / "1.git"
    old = _main_of(repo)
    hook, marker = repo / "hooks" / "pre-receive", tmp_path / "hook-started"
    gate = hook.read_text()
    hook.write_text(_SLOW_HOOK.format(marker=marker))
    push = None
    try:
        push = _start_push(server, tmp_path)
        deadline = time.monotonic() + ANSWER_BOUND
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert marker.exists(), "the push never reached its pre-receive hook"
        gits = _git_processes(store.root)
        [worker] = {_parent_of(pid) for pid in gits} - set(gits)
        assert worker != server.process.pid  # a worker, not the master
        _stop(push)  # first: git would resend the push to another worker
        os.kill(worker, signal.SIGKILL)
        assert _still_running_after(gits, ORPHAN_BOUND) == []
    finally:
        hook.write_text(gate)
        _stop(push)
        for pid in _git_processes(store.root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert _main_of(repo) == old
    got = requests.get(  # the master replaced the worker: the server still serves
        server.url + "/api/v1/access/whoami",
        headers=basic("writer", password_of("writer")),
        timeout=ANSWER_BOUND,
    )
    assert got.status_code == 200


def _start_push(server, workdir: Path) -> subprocess.Popen:
    """A real `git push` of one new commit to environment 1, left running."""
    url = f"http://writer:{password_of('writer')}@127.0.0.1:{server.port}/git/environments/1.git"
    work, env = workdir / "work", isolated_env(workdir)
    subprocess.run(["git", "clone", "-q", url, str(work)], env=env, check=True)
    (work / "global" / "values" / "pushed.yaml").write_text("slow: true\n")
    for command in (["add", "-A"], ["commit", "-qm", "slow push"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *command],
            cwd=work, env=env, check=True,
        )  # fmt: skip
    return subprocess.Popen(
        ["git", "push", "-q", "origin", "HEAD:main"],
        cwd=work, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def _git_processes(root: Path) -> list[int]:
    """Pids of every process git http-backend started for `root` (its children and hooks
    inherit GIT_PROJECT_ROOT)."""
    marker = f"GIT_PROJECT_ROOT={root.resolve()}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue  # not a process, or one that has just ended
    return found


def _still_running_after(pids: list[int], bound: float) -> list[int]:
    deadline = time.monotonic() + bound
    while (running := [pid for pid in pids if _running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    return running


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie nobody reaps here has stopped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stop(process: subprocess.Popen | None) -> None:
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])
