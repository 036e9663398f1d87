"""`gitstore backup` of a live store under write load, `gitstore restore`, checked by fsck."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
import requests
from click.testing import CliRunner
from live_server import GITSTORE, free_port, isolated_env, stop_process, wait_until_answers

from cli.main import cli
from gitstore import Store
from gitstore.api import create_app
from gitstore.configdb.importer import SAMPLE_DIR

OVERRIDES = "/api/v1/config/environments/1/nodes/{node}/resources/astute/overrides"
SECRET = "Backup-S3cret-77"


def run(*args: str, code: int = 0, env: dict | None = None):
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


class Writer(threading.Thread):
    """Sets key `k<i>` to i on one node, one write at a time, recording each acknowledged one."""

    def __init__(self, url: str, node: int) -> None:
        super().__init__(daemon=True)
        self.url = url + OVERRIDES.format(node=node) + "/keys/set"
        self.acknowledged: list[int] = []
        self.stop = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        index = 0
        with requests.Session() as session:
            while not self.stop.is_set():
                done = session.put(self.url, json=[["load", f"k{index}", index]], timeout=30)
                if done.status_code != 204:
                    self.errors.append(f"{done.status_code} {done.text}")
                    return
                self.acknowledged.append(index)
                index += 1


@pytest.fixture
def live(tmp_path):
    root = tmp_path / "store"
    store = Store.init(root)
    store.importer.load_tree(SAMPLE_DIR)
    client = create_app({"TESTING": True}, store=store).test_client()
    secret = OVERRIDES.format(node=1) + "/keys/set"
    assert client.put(secret, json=[["nova", "db_password", SECRET]]).status_code == 204
    port = free_port()
    log = tmp_path / "serve.log"
    args = [str(GITSTORE), "serve", "--root", str(root), "--port", str(port), "--workers", "2"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env=isolated_env(tmp_path)
        )
    url = f"http://127.0.0.1:{port}"
    wait_until_answers(process, url, log, probe="/healthz")
    yield url, root
    stop_process(process)


def _restored(root, node: int) -> dict:
    snapshot = Store(root).environment_repo(1).snapshot()
    return snapshot.read_yaml(f"nodes/{node}/overrides/astute.yaml")["load"]


def test_a_backup_under_write_load_restores_every_acknowledged_write(live, tmp_path):
    url, root = live
    writers = [Writer(url, node) for node in (2, 3)]
    for writer in writers:
        writer.start()
    while min(len(w.acknowledged) for w in writers) < 5:
        time.sleep(0.05)
    before = [list(w.acknowledged) for w in writers]  # acknowledged before the backup began
    phrase = {"GITSTORE_BACKUP_PASSPHRASE": "load test phrase"}
    run(
        "backup",
        "--root",
        str(root),
        "--to",
        str(tmp_path / "backup"),
        "--include-keyring",
        env=phrase,
    )
    for writer in writers:
        writer.stop.set()
        writer.join(timeout=60)
        assert not writer.errors
    assert all(len(w.acknowledged) > len(b) for w, b in zip(writers, before, strict=True)), (
        "writes should have gone on during the backup"
    )
    run("restore", "--from", str(tmp_path / "backup"), "--root", str(tmp_path / "new"), env=phrase)
    assert "no problems found" in run("fsck", "--root", str(tmp_path / "new"))
    for node, acknowledged in zip((2, 3), before, strict=True):
        load = _restored(tmp_path / "new", node)
        assert all(load[f"k{index}"] == index for index in acknowledged)


def test_the_keyring_travels_encrypted_and_only_when_asked(live, tmp_path):
    url, root = live
    phrase = tmp_path / "phrase"
    phrase.write_text("correct horse battery staple\n")
    run("backup", "--root", str(root), "--to", str(tmp_path / "plain"))
    assert not (tmp_path / "plain" / "keyring.enc").exists()
    run("backup", "--root", str(root), "--to", str(tmp_path / "bk"), "--include-keyring", code=2)
    run(
        "backup",
        "--root",
        str(root),
        "--to",
        str(tmp_path / "bk"),
        "--include-keyring",
        env={"GITSTORE_BACKUP_PASSPHRASE": "correct horse battery staple"},
    )
    copy = (tmp_path / "bk" / "keyring.enc").read_bytes()
    assert (root / "keyring.yaml").read_bytes().split(b"key: ")[1][:20] not in copy
    wrong = tmp_path / "wrong"
    wrong.write_text("not it\n")
    output = run(
        "restore",
        "--from",
        str(tmp_path / "bk"),
        "--root",
        str(tmp_path / "x"),
        "--passphrase-file",
        str(wrong),
        code=1,
    )
    assert "wrong passphrase" in output
    run(
        "restore",
        "--from",
        str(tmp_path / "bk"),
        "--root",
        str(tmp_path / "new"),
        "--passphrase-file",
        str(phrase),
    )
    assert (tmp_path / "new" / "keyring.yaml").read_bytes() == (root / "keyring.yaml").read_bytes()
    assert "no problems found" in run("fsck", "--root", str(tmp_path / "new"))
    # without the keyring, restore makes a new one and fsck names the value it cannot open
    run("restore", "--from", str(tmp_path / "plain"), "--root", str(tmp_path / "bare"))
    output = run("fsck", "--root", str(tmp_path / "bare"), code=1)
    assert "keyring: environments/1.git" in output and SECRET not in output


def test_restore_refuses_a_root_in_use_and_a_folder_that_is_no_backup(live, tmp_path):
    _, root = live
    run("backup", "--root", str(root), "--to", str(tmp_path / "bk"))
    assert "not an empty folder" in run(
        "restore", "--from", str(tmp_path / "bk"), "--root", str(root), code=1
    )
    (tmp_path / "empty").mkdir()
    assert "not a (finished) gitstore backup" in run(
        "restore", "--from", str(tmp_path / "empty"), "--root", str(tmp_path / "n"), code=1
    )
