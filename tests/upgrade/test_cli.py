"""`gitstore upgrade clone|assign|vips|status`, on a local store and against a real server."""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner
from werkzeug.serving import make_server

from cli.main import cli
from gitstore.api import create_app

from .conftest import NETWORK, NEW, ORIGINAL, SEED


@pytest.fixture(params=["local", "http"])
def gs(request, upgrade_store):
    """Runs `gitstore` against the store: `--root`, or `--url` of a server on it."""
    if request.param == "local":
        connection = ["--root", str(upgrade_store.root)]
    else:
        app = create_app({"TESTING": True}, store=upgrade_store)
        server = make_server("127.0.0.1", 0, app, threaded=True)
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        request.addfinalizer(lambda: (server.shutdown(), server.server_close()))
        connection = ["--url", f"http://127.0.0.1:{server.server_port}"]

    def run(*args: str):
        return CliRunner().invoke(cli, [*connection, *args], catch_exceptions=False)

    return run


def test_a_side_by_side_upgrade_from_the_command_line(gs, upgrade_store):
    cloned = gs(
        "upgrade",
        "clone",
        "--env",
        str(ORIGINAL),
        "--name",
        "prod-newton",
        "--release",
        str(NEW),
        "-f",
        "json",
    )
    assert cloned.exit_code == 0, cloned.output
    assert json.loads(cloned.stdout)["upgrade"] == {"role": "seed", "peer": ORIGINAL}

    moved = gs("upgrade", "assign", "--env", str(SEED), "--nodes", "1,2", "--no-reprovision")
    assert moved.exit_code == 0, moved.output
    lines = moved.stdout.splitlines()
    assert lines[0].split() == ["id", "fqdn", "roles", "pending_roles", "status", "ip_addresses"]
    assert lines[2].split()[:4] == ["1", "node-1", "controller", "ready"]
    assert "192.168.0.11/24" in lines[2]

    repro = gs(
        "upgrade",
        "assign",
        "--env",
        str(SEED),
        "--nodes",
        "3",
        "--roles",
        "compute,cinder",
        "-f",
        "json",
    )
    assert json.loads(repro.stdout)[0]["pending_roles"] == ["compute", "cinder"]

    vips = gs("upgrade", "vips", "--env", str(SEED), "-f", "json")
    assert json.loads(vips.stdout) == NETWORK["vips"]

    status = gs("upgrade", "status", "--env", str(ORIGINAL))
    assert status.exit_code == 0, status.output
    assert status.stdout.splitlines()[:4] == [
        "environment 1 is the original of environment 2",
        "nodes in the original (1): none",
        "nodes in the seed (2): 1, 2, 3",
        "moves in progress: none",
    ]
    assert '~ external_dns.dns_list: "8.8.8.8, 8.8.4.4" -> ["8.8.8.8", "8.8.4.4"]' in (
        status.stdout
    )
    assert "generated settings that differ: none" in status.stdout
    assert upgrade_store.nodes.list(ORIGINAL).data == []


def test_failures_print_one_line_and_exit_1(gs):
    result = gs("upgrade", "assign", "--env", str(ORIGINAL), "--nodes", "3")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "Error: environment 1 is not an upgrade seed: clone an "
        "environment first (POST .../upgrade/clone)"
    )
    unknown = gs("upgrade", "clone", "--env", str(ORIGINAL), "--name", "x", "--release", "9")
    assert unknown.exit_code == 1 and "release 9" in unknown.stderr


def test_usage_mistakes_exit_2(gs):
    result = gs("upgrade", "assign", "--env", str(SEED), "--nodes", "1,,2")
    assert result.exit_code == 2 and "--nodes" in result.stderr
    assert gs("upgrade", "status").exit_code == 2


def test_status_of_an_environment_not_in_an_upgrade(gs):
    result = gs("upgrade", "status", "--env", str(ORIGINAL))
    assert result.stdout.strip() == "environment 1 is not in an upgrade"
