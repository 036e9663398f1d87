"""`gitstore fsck`: each kind of problem is found and named (exit 1); a sound store exits 0."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from click.testing import CliRunner
from loose_objects import loose_object

from cli.main import cli
from gitstore import Store
from gitstore.api import create_app
from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author
from gitstore.configdb.importer import SAMPLE_DIR
from gitstore.secrets.keyring import Keyring

SECRET = "Fsck-S3cret-9a"
KEYS_SET = "/api/v1/config/environments/1/nodes/2/resources/astute/overrides/keys/set"
OLD = time.time() - 3600


@pytest.fixture
def sample(tmp_path) -> Store:
    store = Store.init(tmp_path / "store")
    store.importer.load_tree(SAMPLE_DIR)
    client = create_app({"TESTING": True}, store=store).test_client()
    assert client.put(KEYS_SET, json=[["nova", "db_password", SECRET]]).status_code == 204
    return store


def fsck(store: Store, code: int):
    result = CliRunner().invoke(cli, ["fsck", "--root", str(store.root)], catch_exceptions=False)
    assert result.exit_code == code, result.output
    assert SECRET not in result.output
    return result.output


def test_a_sound_store_passes(sample):
    assert "no problems found" in fsck(sample, 0)


def test_a_missing_object_is_a_git_fsck_problem(sample):
    repo = sample.root / "environments" / "1.git"
    blob = subprocess.run(
        ["git", "--git-dir", str(repo), "rev-parse", "main:environment.yaml"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    loose = loose_object(repo, blob)
    assert loose.exists()
    loose.chmod(0o644)
    loose.unlink()
    output = fsck(sample, 1)
    assert "git-fsck: environments/1.git:" in output and blob in output


def test_a_head_that_breaks_the_gate_rules_is_named(sample):
    def bad(snapshot):
        changes = ChangeSet("test: a document that is not a mapping, written past the gate")
        changes.put("global/values/astute.yaml", b"- a list\n- not a mapping\n")
        return changes

    sample.environment_repo(1).update(bad, Author("t", "t@example.com"))
    output = fsck(sample, 1)
    assert "gate: environments/1.git: global/values/astute.yaml" in output
    assert "mapping" in output


def test_a_stale_lock_is_named_but_a_fresh_or_held_one_is_not(sample):
    refs = sample.root / "environments" / "1.git" / "refs" / "heads"
    fresh = refs / "fresh.lock"
    fresh.write_text("")
    held = refs / "held.lock"
    held.write_text("")
    os.utime(held, (OLD, OLD))
    with held.open():  # a live process (this one) has it open: not stale
        assert "no problems found" in fsck(sample, 0)
    stale = refs / "main.lock"
    stale.write_text("")
    os.utime(stale, (OLD, OLD))
    output = fsck(sample, 1)
    assert "stale-lock: environments/1.git/refs/heads/main.lock" in output
    assert "fresh.lock" not in output


def test_a_half_made_repository_is_named(sample):
    left = sample.root / "environments" / ".creating-x1y2"
    (left / "repo.git").mkdir(parents=True)
    os.utime(left, (OLD, OLD))
    assert "half-made: environments/.creating-x1y2" in fsck(sample, 1)


def test_a_keyring_that_does_not_open_a_sealed_value_is_named(sample):
    keyring = Keyring.of_root(sample.root)
    keyring.path.unlink()
    assert "keyring: " in fsck(sample, 1) and "missing" in fsck(sample, 1)
    keyring.create()  # new keys: the sealed password no longer opens
    output = fsck(sample, 1)
    assert "keyring: environments/1.git" in output and "db_password" in output


def test_problems_as_json(sample):
    left = sample.root / ".creating-abc"
    left.mkdir()
    os.utime(left, (OLD, OLD))
    result = CliRunner().invoke(cli, ["fsck", "--root", str(sample.root), "--format", "json"])
    assert result.exit_code == 1
    assert '"kind": "half-made"' in result.output
