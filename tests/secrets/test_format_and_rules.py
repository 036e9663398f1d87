"""The sealed format, the rules, and masking that never edits shared documents."""

from __future__ import annotations

import copy
import os

import pytest
from secrets_helpers import SEALED

from gitstore.errors import Undecryptable
from gitstore.secrets import cipher
from gitstore.secrets.cipher import Place
from gitstore.secrets.mask import mask
from gitstore.secrets.rules import Rules, parse_patterns, rules_for_file
from gitstore.secrets.seal import MASK

KEY = os.urandom(32)
HERE = Place("environments/1", "global/values/astute.yaml", ("nova", "db_password"))


@pytest.mark.parametrize("value", ["s3cret", "ünïcødé", 1234, 1.5, True, ["a", 1], ""])
def test_a_sealed_value_opens_to_the_same_value_and_type(value):
    text = cipher.seal(value, "k1", KEY, HERE)
    assert SEALED.fullmatch(text) and cipher.key_id_of(text) == "k1"
    opened = cipher.open_sealed(text, {"k1": KEY}, HERE)
    assert opened == value and type(opened) is type(value)


@pytest.mark.parametrize(
    "elsewhere",
    [
        Place("environments/2", HERE.file, HERE.key),
        Place(HERE.repository, "nodes/1/values/astute.yaml", HERE.key),
        Place(HERE.repository, HERE.file, ("nova", "user_password")),
        Place(HERE.repository, HERE.file, ("nova.db_password",)),  # dots inside a key
    ],
)
def test_a_ciphertext_does_not_open_at_another_place(elsewhere):
    text = cipher.seal("s3cret", "k1", KEY, HERE)
    with pytest.raises(Undecryptable, match="moved or copied") as failure:
        cipher.open_sealed(text, {"k1": KEY}, elsewhere)
    assert failure.value.key == elsewhere.dotted and "s3cret" not in str(failure.value)
    assert "ENC[" not in str(failure.value)


def test_tampered_unknown_key_and_malformed_values_fail_clearly():
    text = cipher.seal("s3cret", "k1", KEY, HERE)
    data = text.rsplit("d=", 1)[1]
    flipped = text.replace(data, ("A" if data[0] != "A" else "B") + data[1:])
    for bad, why in (
        (flipped, "altered"),
        (text, "not in the keyring"),
        ("ENC[v1,aesgcm,kid=k1]", "not a well-formed"),
    ):
        keys = {"k1": KEY} if bad is not text else {"k2": KEY}
        with pytest.raises(Undecryptable, match=why):
            cipher.open_sealed(bad, keys, HERE)


def test_default_patterns_are_suffixes_in_any_case():
    rules = rules_for_file("nodes/1/values/astute.yaml", {}, {})
    for path in [
        ("DB_PASSWORD",),
        ("a", "passwd"),
        ("metering_secret",),
        ("admin_token",),
        ("ssh_key",),
        ("keystone", "admin_token", "x"),
        ("users", "0", "password"),
    ]:
        assert rules.secret(path), path
    for path in [("password_policy",), ("token_ttl",), ("key",), ("keys", "0"), ("user",)]:
        assert not rules.secret(path), path


def test_secret_keys_of_definitions_and_environments_with_wildcards():
    definitions = {"astute": {"secret_keys": ["nodes.*.pass"]}}
    environment = {"secret_keys": ["ssh.private"]}
    rules = rules_for_file("global/overrides/astute.yaml", definitions, environment)
    assert rules.secret(("nodes", "n1", "pass")) and rules.secret(("ssh", "private", "rsa"))
    assert not rules.secret(("nodes", "n1", "name")) and not rules.secret(("ssh", "public"))
    settings = rules_for_file("settings/editable.yaml", definitions, environment)
    assert settings.secret(("ssh", "private")) and not settings.secret(("nodes", "n1", "pass"))
    assert rules_for_file("settings/generated.yaml", {}, {}).secret(("anything",))
    assert not rules_for_file("inventory/nodes/1.yaml", definitions, environment).secret(
        ("password",)
    )
    with pytest.raises(Exception, match="empty segment"):
        parse_patterns(["a..b"], "secret_keys")


def test_masking_copies_and_never_edits_the_shared_document():
    sealed = cipher.seal("x", "k1", KEY, HERE)
    document = {
        "nova": {"db_password": sealed, "user": "u"},
        "plain_token": "legacy",
        "list": [{"password": None}],
        "other": "ENC[broken",
    }
    before = copy.deepcopy(document)
    shown, paths = mask(document, Rules())
    assert document == before
    assert shown == {
        "nova": {"db_password": MASK, "user": "u"},
        "plain_token": MASK,
        "list": [{"password": None}],
        "other": MASK,
    }
    assert sorted(paths) == ["nova.db_password", "other", "plain_token"]
    untouched = {"a": 1}
    assert mask(untouched, Rules())[0] is untouched
