"""`gitstore facts upload|download`, local and over HTTP, with the sample's real Fuel facts."""

from __future__ import annotations

import threading

import pytest
import yaml
from cli_helpers import assert_failure, assert_usage_error, hiera_source

from cli.facts import upload_facts
from cli.http_client import HttpClient
from cli.local_client import LocalClient


def commits(store, env_id: int = 1) -> int:
    return store.environment_repo(env_id).snapshot().version


def test_upload_writes_every_file_of_a_node_in_one_commit(gs, hiera):
    folder = hiera("1")
    before = commits(gs.store)
    result = gs.ok("facts", "upload", "--env", "1", "--node", "1", "--dir", str(folder))
    assert commits(gs.store) == before + 1
    assert "uploaded 3 resources for node 1 to environment 1" in result.stdout
    for resource in ("astute", "globals", "override/node"):
        expected = yaml.safe_load((folder / f"{resource}.yaml").read_text())
        stored = gs.store.config.read(1, [("nodes", "1")], resource, "values").data
        assert stored == expected, resource
    info = gs.store.environment_repo(1).snapshot().info()
    assert info.message.startswith("facts: upload nodes/1 values (3 resources: astute")


def test_upload_creates_component_definitions_and_environment(gs_empty, hiera):
    gs = gs_empty
    gs.ok("facts", "upload", "-e", "5", "-n", "3", "--dir", str(hiera("3")), "-c", "hiera")
    env = gs.store.environments.get(5).data
    assert env["hierarchy_levels"] == ["nodes"] and env["components"] == [1]
    names = [d["name"] for d in gs.store.definitions.list().data]
    assert names == ["astute", "globals", "override/node"]
    assert commits(gs.store, 5) == 2  # the environment's creation, then the upload


def test_upload_adds_missing_definitions_and_attaches_the_component(gs, hiera, tmp_path):
    gs.ok("env", "create", "--id", "2", "--levels", "nodes")
    folder = hiera("2")
    (folder / "extra").mkdir()
    (folder / "extra" / "facts.yaml").write_text("a: 1\n")
    result = gs.ok("facts", "upload", "-e", "2", "-n", "2", "--dir", str(folder))
    assert "attached component 1 to environment 2" in result.stderr
    assert gs.store.config.read(2, [("nodes", "2")], "extra/facts", "values").data == {"a": 1}
    assert gs.store.definitions.get("extra/facts").data["component_id"] == 1


def test_upload_skips_bad_files_by_path_and_says_so(gs, hiera):
    folder = hiera("2")
    (folder / "broken.yaml").write_text("a: [1\n")
    (folder / "list.yaml").write_text("- 1\n- 2\n")
    (folder / ".hidden.yaml").write_text("- ignored\n")
    result = gs("facts", "upload", "-e", "1", "-n", "2", "--dir", str(folder))
    assert result.exit_code == 3, (result.stdout, result.stderr)
    assert f"skipped {folder / 'broken.yaml'}: " in result.stderr
    assert f"skipped {folder / 'list.yaml'}: " in result.stderr and "not list" in result.stderr
    assert "hidden" not in result.stderr
    assert "uploaded 2 resources" in result.stdout
    assert gs.store.config.read(1, [("nodes", "2")], "globals", "values").data


def test_upload_with_nothing_readable_fails(gs, tmp_path):
    facts = tmp_path / "facts"  # apart from the store root (its keyring.yaml is no fact)
    facts.mkdir()
    (facts / "bad.yaml").write_text("just a string\n")
    assert_failure(
        gs("facts", "upload", "-e", "1", "-n", "1", "--dir", str(facts)), "nothing to upload"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_failure(
        gs("facts", "upload", "-e", "1", "-n", "1", "--dir", str(empty)), "no *.yaml files"
    )


def test_progress_bar_for_more_than_a_handful_of_files(gs, tmp_path):
    facts = tmp_path / "facts"  # apart from the store root (its keyring.yaml is no fact)
    facts.mkdir()
    for index in range(7):
        (facts / f"r{index}.yaml").write_text(f"value: {index}\n")
    result = gs.ok("facts", "upload", "-e", "1", "-n", "1", "--dir", str(facts))
    assert "reading facts" in result.stderr
    assert gs.store.config.read(1, [("nodes", "1")], "r6", "values").data == {"value": 6}
    few = gs.ok("facts", "upload", "-e", "1", "-n", "2", "--dir", str(hiera_source("2")))
    assert "reading facts" not in few.stderr


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["facts", "upload", "-n", "1"], "Missing option '--env'"),
        (["facts", "upload", "-e", "1"], "give --node"),
        (["facts", "upload", "-e", "1", "-n", "a/b"], "must not contain '/'"),
        (["facts", "upload", "-e", "1", "-n", "1", "--dir", "/nonexistent"], "does not exist"),
        (["facts", "download", "-e", "1", "-n", "1"], "Missing option '--dir'"),
    ],
)
def test_facts_usage_errors(gs_readonly, args, fragment):
    assert_usage_error(gs_readonly(*args), fragment)


def test_nodes_racing_to_upload_into_an_empty_store(gs_empty, hiera, http_server):
    """Four nodes at once: one component, one environment, every node's facts stored."""
    gs = gs_empty
    folders = {node: hiera(node) for node in ("1", "2", "3")}
    folders["4"] = folders["1"]
    failures = []

    def run(node: str) -> None:
        client = (
            LocalClient(str(gs.store.root)) if gs.mode == "local" else HttpClient(http_server.url)
        )
        try:
            upload_facts(client, 1, node, folders[node])
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            failures.append((node, exc))

    threads = [threading.Thread(target=run, args=(node,)) for node in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert [c["name"] for c in gs.store.components.list().data] == ["fuel"]
    assert gs.store.environments.get(1).data["components"] == [1]
    for node in folders:
        stored = gs.store.config.read(1, [("nodes", node)], "globals", "values").data
        assert stored == yaml.safe_load((folders[node] / "globals.yaml").read_text())
    assert commits(gs.store) == 1 + len(folders)


# -- download ----------------------------------------------------------------------------------
def test_download_writes_the_effective_values_in_the_same_layout(gs, hiera, tmp_path):
    folder = hiera("1")
    gs.ok("facts", "upload", "-e", "1", "-n", "1", "--dir", str(folder))
    gs.ok(
        "config",
        "override",
        "-e",
        "1",
        "-l",
        "nodes=1",
        "-r",
        "astute",
        "-k",
        "fqdn",
        "-t",
        "str",
        "-v",
        "changed.example.org",
    )
    target = tmp_path / "out"
    result = gs.ok("facts", "download", "-e", "1", "-n", "1", "--dir", str(target))
    assert f"wrote 3 files to {target}" in result.stdout
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*.yaml"))
    assert written == ["astute.yaml", "globals.yaml", "override/node.yaml"]
    astute = yaml.safe_load((target / "astute.yaml").read_text())
    original = yaml.safe_load((folder / "astute.yaml").read_text())
    assert astute == {**original, "fqdn": "changed.example.org"}
    assert not list(target.rglob(".*.tmp"))


def test_download_at_an_older_version_and_of_an_unknown_environment(gs, hiera, tmp_path):
    gs.ok("facts", "upload", "-e", "1", "-n", "1", "--dir", str(hiera("1")))
    older = ["--dir", str(tmp_path / "v1"), "--version", "1"]
    gs.ok("facts", "download", "-e", "1", "-n", "1", *older)  # node 1 is known now: no data then
    assert not (tmp_path / "v1").exists() or not list((tmp_path / "v1").iterdir())
    assert_failure(
        gs("facts", "download", "-e", "8", "-n", "1", "--dir", str(tmp_path)),
        "environment 8 does not exist",
    )


def test_upload_refuses_a_yaml_alias_bomb_naming_the_file(gs, hiera):
    from hostile import alias_bomb

    folder = hiera("2")
    (folder / "bomb.yaml").write_text(alias_bomb(7))
    result = gs("facts", "upload", "-e", "1", "-n", "2", "--dir", str(folder))
    assert result.exit_code == 3, (result.stdout, result.stderr)
    assert f"skipped {folder / 'bomb.yaml'}: " in result.stderr
    assert "aliases expand it by more than 10000 nodes" in result.stderr
    names = [d["name"] for d in gs.store.definitions.list().data]
    assert "bomb" not in names


# -- issue 22 ------------------------------------------------------------------------------------
def test_download_warns_how_many_values_are_masked_unless_reveal(gs, tmp_path):
    document = {"fqdn": "n1", "db_password": "s3cret", "keystone": {"admin_password": "k3y"}}
    gs.store.config.put(1, [("nodes", "1")], "astute", "values", document)
    masked = gs.ok("facts", "download", "-e", "1", "-n", "1", "--dir", str(tmp_path / "m"))
    assert "2 secret values were written masked" in masked.stderr
    written = yaml.safe_load((tmp_path / "m" / "astute.yaml").read_text())
    assert written["db_password"] == "******" and written["fqdn"] == "n1"
    revealed = gs.ok(
        "facts", "download", "-e", "1", "-n", "1", "--dir", str(tmp_path / "r"), "--reveal"
    )
    assert "masked" not in revealed.stderr
    assert yaml.safe_load((tmp_path / "r" / "astute.yaml").read_text()) == document


def test_upload_says_it_created_the_environment(gs_empty, hiera):
    folder = str(hiera("3"))
    result = gs_empty.ok("facts", "upload", "-e", "5", "-n", "3", "--dir", folder)
    assert "created environment 5" in result.stderr
    again = gs_empty.ok("facts", "upload", "-e", "5", "-n", "3", "--dir", folder)
    assert "created" not in again.stderr


def test_download_of_an_unknown_node_fails_naming_it(gs, tmp_path):
    result = gs("facts", "download", "-e", "1", "-n", "42", "--dir", str(tmp_path))
    assert_failure(result, "cannot find node '42'")


def test_a_file_that_does_not_parse_is_named_once(gs, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "astute.yaml").write_text("a: [1\n")
    result = gs("facts", "upload", "-e", "1", "-n", "1", "--dir", str(folder))
    assert result.exit_code == 1
    assert result.stderr.count("astute.yaml") == 1, result.stderr
    assert "line 2 YAML does not parse" in result.stderr
