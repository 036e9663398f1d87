"""`gitstore tx list|show|wait` and the execute summary, locally and over real HTTP."""

from __future__ import annotations

import json

import pytest
from live_server import cli_runner, threaded_app_server

from .conftest import task


@pytest.fixture(scope="module")
def server():
    with threaded_app_server() as served:
        yield served


@pytest.fixture(params=["local", "http"])
def run(request, graph_store, server):
    invoke = cli_runner(request.param, graph_store, server)
    invoke.mode = request.param
    return invoke


@pytest.fixture
def cluster(graph_store, tmp_path):
    """Cluster 1 with one node and a graph `slow` whose task takes a moment, and `boom`."""
    slow = task("slow", parameters={"cmd": f"sleep 1; echo done > {tmp_path}/slow"})
    graph_store.graphs.create("release", 1, "slow", {"tasks": [slow]})
    boom = task("boom", parameters={"cmd": "exit 3"})
    graph_store.graphs.create("release", 1, "boom", {"tasks": [boom]})
    graph_store.nodes.create(1, {"fqdn": "n1.example", "roles": ["controller"], "status": "ready"})
    return tmp_path


def test_a_dry_run_says_plainly_what_would_run(run, cluster):
    out = run("graph", "execute", "-e", "1", "--type", "slow", "--dry-run").stdout
    assert "transaction 1 of environment 1: ready, a dry run: nothing was run" in out
    assert "graph slow: would run 1 tasks (1 on node 1)" in out
    by_executor = run("graph", "execute", "-e", "1", "--type", "slow").stdout
    assert "the dry-run executor: nothing was run" in by_executor


def test_wait_follows_a_run_to_its_end_and_list_show_it(run, cluster):
    started = json.loads(
        run(
            "graph", "execute", "-e", "1", "--type", "slow", "--executor", "local", "-f", "json"
        ).stdout
    )
    waited = run("tx", "wait", str(started["id"]), "--interval", "0.2").stdout
    assert f"transaction {started['id']} of environment 1: ready" in waited
    assert "ran 1 of 1 task runs" in waited
    assert (cluster / "slow").read_text() == "done\n"
    listed = run("tx", "list", "-e", "1").stdout.splitlines()
    assert listed[0].split()[:3] == ["id", "cluster", "status"]
    assert listed[2].split()[:4] == [str(started["id"]), "1", "ready", "slow:ready"]
    shown = json.loads(run("tx", "show", str(started["id"]), "-f", "json").stdout)
    assert shown["graphs"][0]["history"][0]["task_name"] == "slow"


def test_wait_exits_1_when_the_run_failed(run, cluster):
    # locally the run ends inside `execute`; over HTTP `execute` answers while it is pending
    code = 1 if run.mode == "local" else 0
    run("graph", "execute", "-e", "1", "--type", "boom", "--executor", "local", code=code)
    failed = run("tx", "wait", "1", "--interval", "0.2", code=1).stdout
    assert "transaction 1 of environment 1: error" in failed
    assert "boom on 1: the command exited with code 3" in failed
    assert "transaction 99 does not exist" in run("tx", "wait", "99", code=1).stderr


def test_node_shows_one_nodes_tasks_and_their_states(run, cluster):
    run("graph", "execute", "-e", "1", "--type", "boom", "--dry-run")
    shown = run("tx", "node", "1", "1").stdout
    assert "transaction 1 on node 1: ready" in shown
    assert "boom skipped: dry run: nothing was run" in shown
    as_json = json.loads(run("tx", "node", "1", "1", "-f", "json").stdout)
    assert as_json["graphs"][0]["tasks"][0]["id"] == "boom"
    assert "has no tasks on node '7'" in run("tx", "node", "1", "7", code=1).stderr
