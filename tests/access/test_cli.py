"""`gitstore user ...` and `gitstore token ...` on a store root, through the real click group."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.main import cli
from gitstore import Store
from gitstore.access.credentials import TOKEN_PREFIX
from gitstore.access.policy import AccessFile, Credentials


@pytest.fixture
def root(tmp_path):
    return str(Store.init(tmp_path / "store").root)


def gs(root: str | None, *args: str, stdin: str | None = None):
    prefix = ["--root", root] if root else []
    return CliRunner().invoke(cli, [*prefix, *args], input=stdin, catch_exceptions=False)


def test_user_add_from_stdin_then_list_shows_roles_never_hashes(root):
    added = gs(
        root,
        "user",
        "add",
        "alice",
        "--role",
        "writer:env:1",
        "--role",
        "reader",
        "--password-stdin",
        stdin="s3cret-pw\n",
    )
    assert added.exit_code == 0, added.output
    listed = gs(root, "user", "list", "--format", "json")
    assert json.loads(listed.stdout) == [
        {"name": "alice", "roles": ["writer:env:1", "reader"], "password": True, "tokens": 0}
    ]
    assert "s3cret-pw" not in (listed.output + (AccessFile(root).path.read_text()))
    assert "scrypt$" not in gs(root, "user", "list").stdout


def test_user_add_prompts_twice_without_password_stdin(root):
    added = gs(root, "user", "add", "bob", "--role", "admin", stdin="pw-1\npw-1\n")
    assert added.exit_code == 0, added.output
    assert "pw-1" not in added.stdout
    assert AccessFile(root).authenticate(Credentials("bob", "pw-1")).name == "bob"


def test_token_create_prints_the_token_alone_and_list_shows_only_ids(root):
    gs(root, "user", "add", "svc", "--role", "reader", "--no-password")
    created = gs(root, "token", "create", "--user", "svc", "--name", "puppet")
    assert created.exit_code == 0
    token = created.stdout
    assert token.endswith("\n") and token.count("\n") == 1
    assert token.startswith(f"{TOKEN_PREFIX}_")
    listed = gs(root, "token", "list", "--format", "json")
    [entry] = json.loads(listed.stdout)
    assert entry["user"] == "svc" and entry["name"] == "puppet" and entry["id"] in token
    assert token.strip() not in listed.stdout
    assert gs(root, "token", "revoke", entry["id"]).exit_code == 0
    assert json.loads(gs(root, "token", "list", "--format", "json").stdout) == []


def test_passwd_roles_and_remove(root):
    gs(root, "user", "add", "carol", "--role", "reader", "--password-stdin", stdin="old\n")
    gs(root, "token", "create", "--user", "carol")
    assert gs(root, "user", "passwd", "carol", "--password-stdin", stdin="new\n").exit_code == 0
    access = AccessFile(root)
    assert access.authenticate(Credentials("carol", "new")).name == "carol"
    assert gs(root, "user", "roles", "carol", "--role", "secrets:env:2").exit_code == 0
    assert [str(g) for g in access.authenticate(Credentials("carol", "new")).grants] == [
        "secrets:env:2"
    ]
    removed = gs(root, "user", "remove", "carol")
    assert removed.exit_code == 0 and "revoked 1 token" in removed.stderr
    assert access.users() == [] and access.tokens() == []


@pytest.mark.parametrize(
    "args, code, fragment",
    [
        (["user", "add", "x", "--role", "boss", "--no-password"], 2, "role 'boss'"),
        (["user", "add", "x", "--role", "reader:env:one", "--no-password"], 2, "scope 'env:one'"),
        (["user", "add", "x", "--no-password"], 2, "--role"),
        (["user", "add", "a:b", "--role", "reader", "--no-password"], 1, "user name"),
        (["user", "remove", "ghost"], 1, "no user 'ghost'"),
        (["token", "create", "--user", "ghost"], 1, "no user 'ghost'"),
        (["token", "revoke", "0123"], 1, "no token with id '0123'"),
        (["user", "passwd", "ghost", "--password-stdin"], 1, "no user 'ghost'"),
    ],
    ids=[
        "bad role",
        "bad scope",
        "no role",
        "bad name",
        "remove unknown",
        "token unknown user",
        "revoke unknown",
        "passwd unknown",
    ],
)
def test_mistakes_are_one_line_errors(root, args, code, fragment):
    result = gs(root, *args, stdin="pw\n")
    assert result.exit_code == code, result.output
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_a_second_add_of_the_same_user_is_a_conflict(root):
    gs(root, "user", "add", "dave", "--role", "reader", "--no-password")
    again = gs(root, "user", "add", "dave", "--role", "admin", "--no-password")
    assert again.exit_code == 1 and "user 'dave' exists" in again.stderr


def test_the_commands_need_a_store_root(tmp_path):
    result = gs(None, "user", "list")
    assert result.exit_code == 2 and "--root" in result.stderr
    missing = gs(str(tmp_path), "user", "list")
    assert missing.exit_code == 1 and "is not a gitstore root" in missing.stderr
