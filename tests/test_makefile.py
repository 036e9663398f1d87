"""The README's `make demo`, run for real with make, up to where it would install or serve."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

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


def _system_python_can_make_a_venv() -> bool:
    check = "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))"
    system = Path("/usr/bin/python3")
    return system.exists() and subprocess.run([system, "-c", check]).returncode == 0


def test_the_venv_is_built_from_the_system_python_when_it_can_be(tmp_path):
    planned = _make("-n", "install", f"VENV={tmp_path / 'venv'}").stdout

    expected = "/usr/bin/python3" if _system_python_can_make_a_venv() else "python3"
    assert f"|| {expected} -m venv {tmp_path / 'venv'}" in planned


def test_python_chooses_the_interpreter(tmp_path):
    planned = _make("-n", "install", "PYTHON=/opt/py/bin/python3.12", f"VENV={tmp_path / 'v'}")

    assert f"|| /opt/py/bin/python3.12 -m venv {tmp_path / 'v'}" in planned.stdout


#: What a fresh Debian machine lacks that the tests need, by the package that brings it.
FRESH_MACHINE_LACKS = ("puppet", "hiera-eyaml", "graphviz", "wrk", "openssl")


def test_make_test_without_the_system_tools_stops_at_once_saying_what_to_install(tmp_path):
    """`make test` on a machine without puppet & co. used to install the Python packages and
    fail 3 minutes later in the first Puppet test. Here no tool is on PATH and the user is not
    root and has no sudo: nothing can be installed, so it must stop before pip and pytest."""
    empty = tmp_path / "bin"
    empty.mkdir()
    venv = tmp_path / "venv"
    as_user = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    began = time.monotonic()
    result = subprocess.run(
        [*(as_user if os.geteuid() == 0 else []), "/usr/bin/make", "--no-print-directory",
         "test", f"VENV={venv}"],
        cwd=REPO, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={"PATH": str(empty), "LANG": "C.UTF-8"},
    )  # fmt: skip
    took = time.monotonic() - began

    assert result.returncode != 0
    (line, *rest) = result.stderr.splitlines()
    assert all(line.startswith("make: ***") for line in rest), result.stderr
    needed, _, command = line.partition("; install them with: ")
    assert needed.startswith("the tests need packages that are not installed: "), line
    assert command.startswith("sudo apt-get install -y "), line
    for package in FRESH_MACHINE_LACKS:
        assert package in needed.split() and package in command.split(), line
    assert "pytest" not in result.stdout + result.stderr
    assert not venv.exists()
    assert took < 10


@pytest.mark.skipif(os.geteuid() != 0, reason="the root path: apt-get without sudo")
def test_as_root_the_missing_packages_are_installed_with_apt_get(tmp_path):
    """apt-get and npm stand-ins that only record their arguments: root installs at once."""
    tools, calls = tmp_path / "bin", tmp_path / "calls"
    tools.mkdir()
    for name in ("apt-get", "npm"):
        (tools / name).write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\n')
        (tools / name).chmod(0o755)
    result = subprocess.run(
        ["/bin/bash", str(REPO / "tools" / "system-deps.sh")],
        capture_output=True, text=True, timeout=60, env={"PATH": str(tools)},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    update, install, *_ = calls.read_text().splitlines()
    assert update == "apt-get update -qq"
    assert install.startswith("apt-get install -y -qq ")
    for package in FRESH_MACHINE_LACKS:
        assert package in install.split()
    assert "npm" not in install.split()  # a stand-in npm is on PATH: never apt's on top of it


def test_make_test_and_ci_share_one_system_dependency_step(tmp_path):
    planned = _make("-n", "test", f"VENV={tmp_path / 'venv'}").stdout.splitlines()

    steps = [i for i, line in enumerate(planned) if "system-deps.sh" in line or "pip" in line]
    assert "system-deps.sh" in planned[steps[0]]  # before pip installs anything
    assert "tools/system-deps.sh" in (REPO / ".ci" / "run").read_text()
    assert "apt-get install" not in (REPO / ".ci" / "run").read_text()
