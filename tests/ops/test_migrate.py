"""Store formats (gitstore.storeformat) and `gitstore migrate`, on stores that earlier versions
of gitstore really made (tests/data/stores/, built by make_fixtures.py there)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from cli.main import cli
from gitstore import Store, storeformat
from gitstore.api import create_app
from gitstore.errors import Conflict, Unavailable
from gitstore.ops.health import repository_paths

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "stores"
GLOBALS = "/api/v1/config/environments/1/resources/globals/values"


def _extract(version: int, folder: Path) -> Path:
    archive = FIXTURES / f"format-{version}.tar.gz"
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(folder)], check=True)
    return folder / "store"


@pytest.fixture
def old_store(tmp_path) -> Path:
    return _extract(0, tmp_path)


def _config(repo: Path, key: str) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(repo), "config", "--get", key], capture_output=True, text=True
    )
    return done.stdout.strip()


def _run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_a_new_store_is_made_at_the_current_format(store):
    assert storeformat.read(store.root).version == storeformat.CURRENT
    assert "format: 1" in (store.root / "store.yaml").read_text()
    assert _config(store.root / "catalog.git", "gc.auto") == "0"


def test_a_store_without_the_file_is_format_0_and_served_read_only(old_store):
    store = Store(old_store)
    assert store.format.version == 0 and not store.format.writable
    client = create_app({"TESTING": True}, store=store).test_client()
    assert client.get(GLOBALS).json["fixture_writes"] == 2  # reads are served
    answer = client.put(GLOBALS, json={"a": 1})
    assert answer.status_code == 409
    assert "format 0" in answer.json["message"] and "gitstore migrate" in answer.json["message"]
    with pytest.raises(Conflict, match="gitstore migrate"):
        store.environments.create({"id": 5, "components": ["fuel"]})
    Store.init(old_store)  # init keeps an existing store as it is, its format too
    assert not (old_store / "store.yaml").exists()


def test_migrate_dry_run_lists_the_steps_and_changes_nothing(old_store):
    result = _run("migrate", "--root", str(old_store), "--dry-run")
    assert result.exit_code == 0, result.output
    assert "would move" in result.output and "from format 0 to 1" in result.output
    assert "environments/1.git: set gc.auto=0" in result.output
    assert not (old_store / "store.yaml").exists()
    assert _config(old_store / "catalog.git", "gc.auto") == ""


def test_migrate_moves_a_format_0_store_forward_after_a_backup(old_store):
    result = _run("migrate", "--root", str(old_store))
    assert result.exit_code == 0, result.output
    assert storeformat.read(old_store).version == storeformat.CURRENT
    backups = list((old_store / "backups").iterdir())
    assert len(backups) == 1 and backups[0].name.startswith("format-0-")
    for name, path in repository_paths(old_store):
        assert _config(path, "gc.auto") == "0" and _config(path, "receive.autogc") == "false"
        assert "gc.auto" not in (backups[0] / name / "config").read_text()  # the old config
        subprocess.run(["git", "--git-dir", str(path), "fsck", "--strict"], check=True)
    client = create_app({"TESTING": True}, store=Store(old_store)).test_client()
    assert client.put(GLOBALS, json={"a": 1}).status_code == 204
    assert client.get(GLOBALS).json == {"a": 1}
    again = _run("migrate", "--root", str(old_store))
    assert "already has format 1: nothing to do" in again.output


def test_a_migration_killed_half_way_is_finished_by_running_it_again(old_store):
    catalog = old_store / "catalog.git"
    subprocess.run(["git", "--git-dir", str(catalog), "config", "gc.auto", "0"], check=True)
    assert Store(old_store).format.version == 0  # one repository done, the file not yet
    assert _run("migrate", "--root", str(old_store)).exit_code == 0
    assert _config(old_store / "environments/1.git", "gc.auto") == "0"
    assert Store(old_store).format.writable


@pytest.mark.parametrize(
    "text, why",
    [("format: 2\n", "format 2, newer than format 1"), ("format: 99\n", "format 99")],
)
def test_a_store_of_a_newer_format_is_refused_by_every_command(old_store, text, why):
    (old_store / "store.yaml").write_text(text)
    with pytest.raises(Unavailable, match=why):
        Store(old_store)
    for args in (
        ["serve", "--root", str(old_store)],
        ["--root", str(old_store), "config", "get", "--env", "1", "--resource", "globals"],
        ["maintenance", "--root", str(old_store)],
        ["migrate", "--root", str(old_store)],
    ):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1, (args, result.output)
        assert why in result.output and "format 1" in result.output


@pytest.mark.parametrize("text", ["format: [\n", "format: one\n", "- 1\n", "format: 0\n"])
def test_an_unreadable_format_file_is_refused_naming_the_fix(old_store, text):
    (old_store / "store.yaml").write_text(text)
    result = CliRunner().invoke(cli, ["--root", str(old_store), "env", "list"])
    assert result.exit_code == 1
    assert "store.yaml is unreadable" in result.output
    assert f"gitstore migrate --root {old_store}" in result.output


def test_migrate_refuses_a_served_store_naming_the_server(old_store, tmp_path):
    port = free_port()
    log = tmp_path / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(old_store), "--port", str(port)]
    with log.open("wb") as out:
        server = subprocess.Popen(
            [*args, "--workers", "1", "--no-maintenance"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=isolated_env(tmp_path),
        )
    try:
        wait_until_answers(server, f"http://127.0.0.1:{port}", log, probe="/healthz")
        assert "served read-only until `gitstore migrate`" in log.read_text()
        result = CliRunner().invoke(cli, ["migrate", "--root", str(old_store)])
        assert result.exit_code == 1
        assert f"being served by gitstore serve (pid {server.pid})" in result.output
    finally:
        stop_process(server)
    assert not (old_store / "store.yaml").exists()
    assert _run("migrate", "--root", str(old_store)).exit_code == 0


def test_a_backup_keeps_the_format_and_a_restore_writes_it(old_store, tmp_path):
    for root, version in ((old_store, 0), (Store.init(tmp_path / "new").root, 1)):
        copy, restored = tmp_path / f"backup-{version}", tmp_path / f"restored-{version}"
        assert _run("backup", "--root", str(root), "--to", str(copy)).exit_code == 0
        assert _run("restore", "--from", str(copy), "--root", str(restored)).exit_code == 0
        assert storeformat.read(restored).version == version
