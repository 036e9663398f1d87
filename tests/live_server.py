"""Real servers for tests: a free loopback port, a clean environment, start-up and shutdown.

Every suite that talks to a real `gitstore serve` or gunicorn over HTTP uses these, so the
start-up wait (which must survive a slow first answer on a loaded machine) lives in one place.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner
from werkzeug.serving import make_server

from cli.main import cli
from gitstore.api import create_app

BIN = Path(sys.executable).parent
GITSTORE = BIN / "gitstore"
GUNICORN = BIN / "gunicorn"
START_TIMEOUT = 60
PROBE = "/api/v1/config/environments"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def isolated_env(home: Path, **extra: str) -> dict[str, str]:
    """The test process's environment without git or gitstore settings, HOME in `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITSTORE_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        **extra,
    )
    return env


def wait_until_answers(
    process: subprocess.Popen,
    url: str,
    log: Path,
    *,
    probe: str = PROBE,
    verify: bool | str = True,
    cert: tuple[str, str] | None = None,
) -> None:
    """Poll `url + probe` until the server answers anything; fail with its log otherwise.

    A refused connection and a read timeout both mean "not ready yet": gunicorn listens before
    its workers have imported the app.
    """
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"server exited early:\n{_tail(log)}")
        try:
            requests.get(url + probe, timeout=5, verify=verify, cert=cert)
            return
        except requests.RequestException:
            time.sleep(0.1)
    stop_process(process)
    pytest.fail(f"server did not answer in {START_TIMEOUT}s:\n{_tail(log)}")


def stop_process(process: subprocess.Popen) -> int:
    """SIGTERM (a graceful gunicorn shutdown), SIGKILL after 20 s; the exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"


class Dispatch:
    """The WSGI app of an in-process server: whichever app the current test installs."""

    app = None

    def __call__(self, environ, start_response):
        return self.app(environ, start_response)


@contextlib.contextmanager
def threaded_app_server() -> Iterator[tuple[Dispatch, str]]:
    """Real HTTP on a free loopback port, served by werkzeug in a thread of this process."""
    dispatch = Dispatch()
    httpd = make_server("127.0.0.1", 0, dispatch, threaded=True)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield dispatch, f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        thread.join()
        httpd.server_close()


def cli_runner(mode: str, store, server: tuple[Dispatch, str]) -> Callable[..., Any]:
    """`run(*args, code=0)`: the `gitstore` command on `store`, locally or over HTTP."""
    if mode == "local":
        connection = ["--root", str(store.root)]
    else:
        server[0].app = create_app({"TESTING": True}, store=store)
        connection = ["--url", server[1]]

    def run(*args: str, code: int = 0):
        result = CliRunner().invoke(cli, [*connection, *args], catch_exceptions=False)
        assert result.exit_code == code, (result.stdout, result.stderr)
        return result

    return run


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """(cert.pem, key.pem) in `folder`: a self-signed certificate for 127.0.0.1 (openssl)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key
