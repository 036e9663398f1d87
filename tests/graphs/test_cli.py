"""`gitstore graph list|upload|download|delete|show|execute` on a local store (--root)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from cli.main import cli

from .conftest import task


@pytest.fixture
def run(graph_store):
    def invoke(*args: str, code: int = 0):
        result = CliRunner().invoke(cli, ["--root", str(graph_store.root), "graph", *args])
        assert result.exit_code == code, result.output + (result.stderr or "")
        return result

    return invoke


def test_upload_file_and_dir_list_download_delete(run, tmp_path, newton_tasks):
    graph_file = tmp_path / "release.yaml"
    graph_file.write_text(yaml.safe_dump(newton_tasks))
    assert (
        "graph default created (204 tasks)"
        in run("upload", "--release", "1", "--file", str(graph_file)).output
    )
    folder = tmp_path / "custom"
    (folder / "a").mkdir(parents=True)
    (folder / "metadata.yaml").write_text("name: from a folder\n")
    (folder / "a" / "tasks.yaml").write_text(yaml.safe_dump([task("one", requires=["hosts"])]))
    (folder / "tasks.yaml").write_text(yaml.safe_dump([task("two", requires=["one"])]))
    assert (
        "graph default replaced (2 tasks)"
        in run("upload", "--env", "1", "--dir", str(folder)).output
    )
    listed = run("list", "--env", "1").output
    assert "default  from a folder  2" in listed and "cluster:1" in listed
    downloaded = yaml.safe_load(run("download", "--env", "1", "--cluster").output)
    assert [t["id"] for t in downloaded] == ["one", "two"]
    target = tmp_path / "merged.yaml"
    assert "206 tasks" in run("download", "--env", "1", "--file", str(target)).output
    assert len(yaml.safe_load(target.read_text())) == 206
    released = json.loads(run("download", "--env", "1", "--release", "-f", "json").output)
    assert len(released) == 204
    assert "graph default deleted" in run("delete", "--env", "1", "--type", "default").output
    failed = run("delete", "--release", "1", "--type", "nothing", code=1)
    assert "no graph of type 'nothing'" in failed.stderr
    assert run("list", code=2).exit_code == 2


def test_show_dot_and_execute(run, graph_store, tmp_path):
    graph_store.graphs.create(
        "release",
        1,
        "default",
        {
            "tasks": [
                {"id": "start", "type": "stage"},
                task("hello", requires=["start"], parameters={"cmd": f"echo hi > {tmp_path}/hi"}),
                task("boom", requires=["hello"], parameters={"cmd": "exit 4"}),
            ]
        },
    )
    graph_store.nodes.create(1, {"fqdn": "n1.example", "roles": ["controller"], "status": "ready"})
    dot = run("show", "--env", "1", "--dot", "--parents-for", "hello").output
    assert dot.startswith('digraph "default" {') and '"start" -> "hello";' in dot
    assert '"boom"' not in dot
    tasks = yaml.safe_load(run("show", "--env", "1").output)
    assert [t["id"] for t in tasks] == ["start", "hello", "boom"]
    dry = run("execute", "--env", "1", "--dry-run").output
    assert "transaction 1 of environment 1: ready" in dry
    ok = run("execute", "--env", "1", "--executor", "local", "--tasks", "hello").output
    assert "transaction 2 of environment 1: ready" in ok and (tmp_path / "hi").exists()
    failed = run("execute", "--env", "1", "--executor", "local", code=1).output
    assert "transaction 3 of environment 1: error" in failed
    assert "boom on 1: the command exited with code 4" in failed
