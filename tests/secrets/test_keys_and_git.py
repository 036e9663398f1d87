"""Rotation, the push gate, facts upload and offline sealing in a clone: real git throughout."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from secrets_helpers import PASSWORD, SEALED, VALUES, all_objects, stored
from werkzeug.serving import make_server

from cli.main import cli
from gitstore.configdb.values import Query
from gitstore.errors import Conflict
from gitstore.secrets.seal import MASK

PROJECT = Path(__file__).resolve().parents[2]
SAMPLE_ASTUTE = PROJECT / "sample_repo" / "environments" / "1" / "global" / "values" / "astute.yaml"
#: Passwords of the sample astute.yaml (facts of a real deployment).
SAMPLE_SECRETS = [
    b"Toe5phw4",
    b"VXcP6cIR",
    b"tHq2rcoq",
    b"WBfBSo6U",
    b"trj609V8",
    b"sJRfG0GP",
    b"385SUUrC",
]


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)


def gitstore(*args: str, input: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def reveal(store, env_id: int = 1) -> dict:
    return store.config.read(env_id, [], "astute", "values", Query(reveal=True), "test").data


def test_init_creates_a_private_keyring(fuel_store):
    keyring = fuel_store.secrets.keyring
    assert keyring.path == fuel_store.root / "keyring.yaml"
    assert oct(keyring.path.stat().st_mode & 0o777) == "0o600"
    keys = keyring.require()
    assert keys.active == "k1" and len(keys.keys["k1"]) == 32


def test_rotate_reseals_everything_and_a_running_server_notices(fuel_store, with_password):
    fuel_store.config.put(1, [("nodes", "2")], "astute", "values", {"admin_token": "T0ken-2"})
    code, out, err = gitstore("--root", str(fuel_store.root), "secrets", "rotate")
    assert code == 0, err
    assert "active key: k2" in out and "environments/1: 2 values" in out
    assert "catalog: 0 values, no commit" in out
    for path in ("global/values/astute.yaml", "nodes/2/values/astute.yaml"):
        kids = SEALED.findall(stored(fuel_store, path).decode())
        assert kids and set(kids) == {"k2"}
    # the app (built before the rotation) reads the new keyring without a restart
    assert with_password.get(VALUES + "?reveal=1").json["nova"]["db_password"] == PASSWORD
    with_password.patch(VALUES + "/keys/set", json=[["api_token", "new-T0ken"]])
    assert set(SEALED.findall(stored(fuel_store).decode())) == {"k2"}
    code, out, _ = gitstore("--root", str(fuel_store.root), "secrets", "keys")
    header, _, *rows = [line.split() for line in out.splitlines()]
    assert header == ["id", "active", "values", "created", "note"]
    assert [row[:3] for row in rows] == [["k1", "0", rows[0][2]], ["k2", "*", "3"]]
    with pytest.raises(Conflict, match="active key"):
        fuel_store.secrets.remove_key("k2")
    assert gitstore("--root", str(fuel_store.root), "secrets", "remove-key", "k1")[0] == 0
    assert list(fuel_store.secrets.keyring.require().keys) == ["k2"]
    assert reveal(fuel_store)["nova"]["db_password"] == PASSWORD


def test_a_used_key_cannot_be_removed(fuel_store, with_password):
    fuel_store.secrets.keyring.add_key()
    with pytest.raises(Conflict, match="still seals 1 values"):
        fuel_store.secrets.remove_key("k1")


def test_a_push_with_a_plain_secret_is_rejected_naming_file_and_key(
    fuel_store, with_password, tmp_path
):
    clone = tmp_path / "clone"
    assert (
        git("clone", "-q", str(fuel_store.environment_path(1)), str(clone), cwd=tmp_path).returncode
        == 0
    )
    astute = clone / "global" / "values" / "astute.yaml"
    astute.write_text(astute.read_text() + "keystone:\n  admin_password: Pushed-Plain-1\n")
    git("commit", "-qam", "add a password", cwd=clone)
    head = fuel_store.environment_repo(1).head()
    pushed = git("push", "-q", "origin", "HEAD:main", cwd=clone)
    assert pushed.returncode != 0
    assert "global/values/astute.yaml" in pushed.stderr
    assert "keystone.admin_password" in pushed.stderr and "plain text" in pushed.stderr
    assert "Pushed-Plain-1" not in pushed.stderr
    assert fuel_store.environment_repo(1).head() == head
    # sealed offline with a copy of the keyring, the same change is accepted
    code, _, err = gitstore(
        "secrets",
        "encrypt",
        str(astute),
        "--env",
        "1",
        "-i",
        "--keyring",
        str(fuel_store.secrets.keyring.path),
    )
    assert code == 0, err
    text = astute.read_text()
    assert "Pushed-Plain-1" not in text and "region: one" in text
    git("commit", "-qam", "seal it", cwd=clone)
    assert git("push", "-q", "origin", "HEAD:main", cwd=clone).returncode == 0
    assert reveal(fuel_store)["keystone"]["admin_password"] == "Pushed-Plain-1"
    assert reveal(fuel_store)["nova"]["db_password"] == PASSWORD


def test_decrypt_and_edit_in_a_clone_keep_unchanged_ciphertexts(
    fuel_store, with_password, tmp_path, monkeypatch
):
    clone = tmp_path / "clone"
    git("clone", "-q", str(fuel_store.environment_path(1)), str(clone), cwd=tmp_path)
    astute = clone / "global" / "values" / "astute.yaml"
    keyring = str(fuel_store.secrets.keyring.path)
    monkeypatch.setenv("GITSTORE_KEYRING", keyring)
    code, out, _ = gitstore("secrets", "decrypt", str(astute), "--env", "1")
    assert code == 0 and f"db_password: {PASSWORD}" in out
    assert PASSWORD not in astute.read_text()  # printed, the file is left sealed
    before = astute.read_bytes()
    monkeypatch.setenv("EDITOR", "sed -i s/region:\\ one/region:\\ two/")
    code, _, err = gitstore("secrets", "edit", str(astute), "--env", "1")
    assert code == 0, err
    after = astute.read_bytes()
    assert b"region: two" in after
    assert [line for line in after.splitlines() if b"db_password" in line] == [
        line for line in before.splitlines() if b"db_password" in line
    ]
    wrong_env = gitstore("secrets", "decrypt", str(astute), "--env", "2")
    assert wrong_env[0] == 1 and "does not decrypt" in wrong_env[2]
    assert PASSWORD not in wrong_env[2] and "ENC[" not in wrong_env[2]


@pytest.mark.parametrize(
    ("written", "message"),
    [
        (b"region: one\nregion: two\n", "line 2 YAML does not parse: key 'region' is repeated"),
        (b"region: \xff\n", "is not UTF-8: byte 0xff at line 1"),
    ],
)
def test_edit_refuses_what_the_push_gate_would(
    fuel_store, with_password, tmp_path, monkeypatch, written, message
):
    """A repeated key or bytes that are not UTF-8: one line, and the file is left as it was."""
    clone = tmp_path / "clone"
    git("clone", "-q", str(fuel_store.environment_path(1)), str(clone), cwd=tmp_path)
    astute = clone / "global" / "values" / "astute.yaml"
    before = astute.read_bytes()
    editor = tmp_path / "editor.py"
    editor.write_text(f"import sys; open(sys.argv[1], 'wb').write({written!r})\n")
    monkeypatch.setenv("GITSTORE_KEYRING", str(fuel_store.secrets.keyring.path))
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    code, _, err = gitstore("secrets", "edit", str(astute), "--env", "1")
    assert code == 1 and message in err and "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    assert astute.read_bytes() == before


def test_encrypt_through_the_server_needs_no_keyring(fuel_store, with_password, app, tmp_path):
    clone = tmp_path / "clone"
    git("clone", "-q", str(fuel_store.environment_path(1)), str(clone), cwd=tmp_path)
    settings = clone / "settings" / "generated.yaml"
    settings.parent.mkdir()
    settings.write_text("# generated credentials\nmysql:\n  root: Gen-Root-1\nport: 3306\n")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        code, out, err = gitstore(
            "--url",
            f"http://127.0.0.1:{server.server_port}",
            "secrets",
            "encrypt",
            str(settings),
            "--env",
            "1",
        )
    finally:
        server.shutdown()
        server.server_close()
    assert code == 0, err
    assert out.startswith("# generated credentials\n")  # comments kept
    assert "Gen-Root-1" not in out and len(SEALED.findall(out)) == 2  # wholly secret file


def test_facts_upload_stores_no_password_in_plain_text(fuel_store, tmp_path):
    facts = tmp_path / "facts"
    facts.mkdir()
    (facts / "astute.yaml").write_bytes(SAMPLE_ASTUTE.read_bytes())
    code, _, err = gitstore(
        "--root", str(fuel_store.root), "facts", "upload", "-e", "1", "-n", "3", "--dir", str(facts)
    )
    assert code == 0, err
    data = stored(fuel_store, "nodes/3/values/astute.yaml")
    assert SEALED.search(data.decode())
    everything = all_objects(fuel_store.root)
    assert not [secret for secret in SAMPLE_SECRETS if secret in everything]
    effective = fuel_store.config.read(
        1, [("nodes", "3")], "astute", "values", Query(effective=True)
    )
    assert "nova.db_password" in effective.masked
    assert effective.data["nova"]["db_password"] == MASK


def test_the_sample_store_holds_no_plain_password(tmp_path):
    root = tmp_path / "sample"
    code, _, err = gitstore("init", "--root", str(root), "--sample")
    assert code == 0, err
    assert not [secret for secret in SAMPLE_SECRETS if secret in all_objects(root)]
    code, out, _ = gitstore(
        "--root",
        str(root),
        "config",
        "get",
        "-e",
        "1",
        "-r",
        "astute",
        "-k",
        "nova.db_password",
        "-f",
        "plain",
        "--reveal",
    )
    assert code == 0 and out.strip() == "VXcP6cIR"


def test_renaming_a_level_keeps_secrets_readable(fuel_store, client):
    fuel_store.environments.update(1, {"hierarchy_levels": ["role", "nodes"]})
    fuel_store.config.put(
        1, [("role", "compute")], "astute", "values", {"rabbit": {"password": "R4bbit-pw"}}
    )
    fuel_store.environments.rename_level(1, "role", {"name": "group"})
    path = "group/compute/values/astute.yaml"
    assert SEALED.search(stored(fuel_store, path).decode())
    data = fuel_store.config.read(
        1, [("group", "compute")], "astute", "values", Query(reveal=True)
    ).data
    assert data == {"rabbit": {"password": "R4bbit-pw"}}


def test_the_whole_store_holds_no_test_plaintext(fuel_store, with_password):
    fuel_store.config.update_keys(
        1, [("nodes", "1")], "astute", "overrides", "set", [["mysql", "root_password", "Root-Pw-9"]]
    )
    fuel_store.config.write_many(
        1,
        {((("nodes", "2"),), "astute", "values"): {"heat": {"auth_encryption_key": "Heat-Key-9"}}},
        "facts",
    )
    gitstore("--root", str(fuel_store.root), "secrets", "rotate")
    everything = all_objects(fuel_store.root)
    for plain in (PASSWORD, "Root-Pw-9", "Heat-Key-9"):
        assert plain.encode() not in everything
    for path in fuel_store.root.rglob("*"):
        if path.is_file() and path.name != "keyring.yaml" and "objects" not in path.parts:
            assert PASSWORD.encode() not in path.read_bytes(), path
    assert os.stat(fuel_store.secrets.keyring.path).st_mode & 0o077 == 0
