"""`gitstore config history|diff|revert|explain`, on a local store and over HTTP."""

from __future__ import annotations

import json

import pytest
import yaml
from live_server import cli_runner, threaded_app_server

from gitstore.errors import NotFound

from .helpers import BOB, effective, put

NODE1 = ["-e", "1", "-l", "nodes=1", "-r", "astute"]


@pytest.fixture(scope="module")
def server():
    with threaded_app_server() as served:
        yield served


@pytest.fixture(params=["local", "http"])
def gs(request, fuel_store, server):
    """Run `gitstore ...` against the store, locally or through the HTTP server."""
    return cli_runner(request.param, fuel_store, server)


@pytest.fixture
def edited(fuel_store):
    first = put(fuel_store, "", {"mtu": 1500, "ntp": ["a"]})
    put(fuel_store, "nodes/1", {"mtu": 9000}, kind="overrides", author=BOB)
    put(fuel_store, "nodes/2", {"x": 1})
    put(fuel_store, "", {"mtu": 1400, "ntp": ["b"]})
    return fuel_store, first.commit


def test_history_table_and_json(gs, edited):
    table = gs("config", "history", "-e", "1").stdout.splitlines()
    assert table[0].split() == ["version", "commit", "date", "author", "message", "changes"]
    assert "/ astute values ~mtu ~ntp" in table[2] and table[2].startswith("5 ")
    assert len(table) == 2 + 5
    data = json.loads(gs("config", "history", *NODE1, "-k", "mtu", "-f", "json").stdout)
    assert [(e.get("old"), e.get("new")) for e in data["entries"]] == [(1500, 9000), (None, 1500)]
    values = gs("config", "history", *NODE1, "-k", "mtu").stdout
    assert "(absent)" in values and "9000" in values and "bob" in values
    limited = yaml.safe_load(gs("config", "history", "-e", "1", "-n", "1", "-f", "yaml").stdout)
    assert len(limited["entries"]) == 1


def test_diff_lists_keys_with_signs(gs, edited):
    _, first = edited
    text = gs("config", "diff", "-e", "1", "--from", first).stdout
    assert "/ astute" in text and "  ~ mtu: 1500 -> 1400" in text
    assert "/nodes/1/ astute" in text and "  ~ mtu: 1500 -> 9000" in text
    assert "/nodes/2/ astute" in text and "  + x: 1" in text
    data = json.loads(
        gs("config", "diff", "-e", "1", "--from", first, "-l", "nodes=2", "-f", "json").stdout
    )
    assert set(data["scopes"]) == {"/nodes/2/"}
    same = gs("config", "diff", "-e", "1", "--from", "HEAD", "--to", "main").stdout
    assert same.startswith("no differences")
    failed = gs("config", "diff", "-e", "1", "--from", "nope", code=1)
    assert "nope" in failed.stderr and "Traceback" not in failed.stderr


def test_revert_and_its_usage_errors(gs, edited):
    store, first = edited
    done = gs("config", "revert", "-e", "1", "--to", first, "-p", "global/values/astute.yaml")
    assert done.stdout.startswith("reverted: version 6")
    assert effective(store, "") == {"mtu": 1500, "ntp": ["a"]}
    again = gs("config", "revert", "-e", "1", "--to", first, "-p", "global/values/astute.yaml")
    assert again.stdout.startswith("nothing to revert")
    undo = gs("config", "revert", "-e", "1", "--commit", "3", "-m", "drop the node override")
    assert "version 7" in undo.stdout
    with pytest.raises(NotFound, match="cannot find node '1'"):  # its only document is gone
        effective(store, "nodes/1")
    assert "exactly one" in gs("config", "revert", "-e", "1", code=2).stderr
    both = gs("config", "revert", "-e", "1", "--commit", "2", "-p", "x", code=2)
    assert "--path" in both.stderr


def test_explain_table_and_json(gs, edited):
    text = gs("config", "explain", *NODE1).stdout.splitlines()
    assert text[0].split()[:3] == ["key", "won", "scope"]
    winner = next(line for line in text if line.startswith("mtu") and "*" in line)
    assert "nodes/1/overrides/astute.yaml:1" in winner and "bob" in winner
    data = json.loads(
        gs("config", "explain", *NODE1, "-k", "ntp", "--version", "3", "-f", "json").stdout
    )
    assert [(k["path"], k["value"]) for k in data["keys"]] == [("ntp", ["a"])]
