"""The README's `make demo`, run for real with make, up to where it would install or serve."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _make(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_demo_on_a_busy_port_fails_at_once_naming_the_port(tmp_path):
    venv = tmp_path / "venv"  # does not exist: the check must come before any install
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        began = time.monotonic()
        result = _make("demo", f"PORT={port}", f"VENV={venv}", f"DEMO_STORE={tmp_path / 's'}")
        took = time.monotonic() - began

    assert result.returncode != 0
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr
    assert f"PORT={port + 1}" in result.stderr
    assert took < 10
    assert not venv.exists()
    assert not (tmp_path / "s").exists()


def test_demo_installs_the_runtime_dependencies_only(tmp_path):
    planned = _make("-n", "demo", f"VENV={tmp_path / 'venv'}").stdout

    installs = [line for line in planned.splitlines() if "pip install" in line]
    assert installs and all("[test]" not in line for line in installs)
    assert "-e ." in installs[0]


def test_tests_install_the_test_extra(tmp_path):
    planned = _make("-n", "test", f"VENV={tmp_path / 'venv'}").stdout

    assert "-e '.[test]'" in planned
