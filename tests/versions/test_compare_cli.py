"""`gitstore env compare A B`, on a local store and over HTTP."""

from __future__ import annotations

import json

import pytest
from live_server import cli_runner, threaded_app_server

from .test_compare import staged  # noqa: F401 - the fixture


@pytest.fixture(scope="module")
def server():
    with threaded_app_server() as served:
        yield served


@pytest.fixture(params=["local", "http"])
def gs(request, fuel_store, server):
    return cli_runner(request.param, fuel_store, server)


def test_compare_table_names_nodes_keys_levels_and_the_nodes_alone(gs, staged):  # noqa: F811
    _, ids, commits = staged
    lines = gs("env", "compare", "1", "2").stdout.splitlines()
    assert lines[0].startswith("A: environment 1 version ")
    assert "global" in lines and "  astute mtu: 1500 at / values" in "\n".join(lines)
    web = lines.index(f"node web-1.example (A {ids[1]['web-1']}, B {ids[2]['web-1']})")
    ip = next(line for line in lines[web:] if " ip: " in line)
    assert f'"10.0.0.1" at /nodes/{ids[1]["web-1"]}/ overrides {commits["a_ip"][:12]}' in ip
    assert f'"10.1.0.1" at /nodes/{ids[2]["web-1"]}/ overrides {commits["b_ip"][:12]}' in ip
    assert "nodes in A only (1): old-1.example" in lines
    assert "nodes in B only (1): new-1.example" in lines


def test_compare_json_with_node_and_versions(gs, staged):  # noqa: F811
    data = json.loads(
        gs("env", "compare", "1", "2", "--node", "web-1.example", "-f", "json").stdout
    )
    assert data["global"] is None and [n["name"] for n in data["nodes"]] == ["web-1.example"]
    paged = json.loads(gs("env", "compare", "1", "2", "--limit", "1", "-f", "json").stdout)
    assert paged["page"]["next"] == 1
    pinned = json.loads(gs("env", "compare", "1", "1", "--version-a", "1", "-f", "json").stdout)
    assert pinned["a"]["version"] == 1


def test_compare_errors_name_the_bad_part(gs, staged):  # noqa: F811
    assert "environment 9" in gs("env", "compare", "1", "9", code=1).stderr
    assert "version_a" in gs("env", "compare", "1", "2", "--version-a", "nope", code=1).stderr
    assert "ghost" in gs("env", "compare", "1", "2", "--node", "ghost", code=1).stderr
