"""What gunicorn answers itself, for a request it cannot parse (a request line or headers over
its limits, a malformed header), is in gitstore's one JSON error shape, not gunicorn's HTML."""

from __future__ import annotations

import json
import socket
import subprocess

import pytest
from error_shape import ERROR_KEYS
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from gitstore import Store


@pytest.fixture(scope="module", params=["gevent", "gthread"])
def server(request, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("wire-errors")
    root = workdir / "store"
    Store.init(root)
    port, log = free_port(), workdir / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "1"]
    args += ["--worker-class", request.param]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=isolated_env(workdir)
        )
    wait_until_answers(process, f"http://127.0.0.1:{port}", log)
    yield port
    stop_process(process)


def _raw(port: int, request: bytes) -> tuple[str, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (x.partition(":") for x in lines)}
    return status, headers, body


@pytest.mark.parametrize(
    "request_bytes, status, named",
    [
        (b"GET /api/v1/status?" + b"q" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "Request"),
        (b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"v" * 9000 + b"\r\n\r\n", 431, "header"),
        (b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, "Content-Length"),
    ],
    ids=["request line", "header", "content length"],
)
def test_gunicorns_own_errors_are_json_in_the_one_shape(server, request_bytes, status, named):
    line, headers, body = _raw(server, request_bytes)
    assert line.startswith(f"HTTP/1.1 {status} "), line
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    answer = json.loads(body)
    assert set(answer) <= ERROR_KEYS and answer["status"] == status
    assert named.lower() in answer["message"].lower(), answer
