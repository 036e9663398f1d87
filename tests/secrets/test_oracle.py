"""No guessing oracle (issue 25, item 6): a writer who may not read a secret cannot test a
guess of it, neither through server-side encryption nor by watching whether a write commits."""

from __future__ import annotations

from secrets_helpers import PASSWORD, VALUES, stored

from gitstore import Store
from gitstore.access.policy import AccessFile, parse_grants
from gitstore.layout import EnvironmentView
from gitstore.secrets.caller import KEYRING_HOLDER

ENCRYPT = "/api/v1/config/environments/1/secrets/encrypt"
PATH = "global/values/astute.yaml"


def _stored_secret(store) -> str:
    line = next(x for x in stored(store).splitlines() if x.strip().startswith(b"db_password:"))
    return line.split(b": ", 1)[1].decode()


def _users(store) -> dict[str, dict[str, str]]:
    access = AccessFile(store.root)
    access.add_user("writer", parse_grants(["writer"]), "writer-pw")
    access.add_user("keeper", parse_grants(["writer", "secrets:env:1"]), "keeper-pw")
    return {
        name: {"Authorization": f"Bearer {access.create_token(name)[1]}"}
        for name in ("writer", "keeper")
    }


def _encrypt(client, headers, guess):
    document = {"nova": {"db_password": guess, "user": "nova"}, "region": "one"}
    got = client.post(ENCRYPT, json={"path": PATH, "document": document}, headers=headers)
    assert got.status_code == 200
    return got.json["nova"]["db_password"]


def test_encrypt_never_hands_a_writer_the_stored_ciphertext(fuel_store, with_password):
    headers = _users(fuel_store)["writer"]
    head = _stored_secret(fuel_store)
    right, wrong = _encrypt(with_password, headers, PASSWORD), _encrypt(with_password, headers, "x")
    assert head not in (right, wrong)
    assert _encrypt(with_password, headers, PASSWORD) != right  # a fresh nonce every time


def test_encrypt_keeps_the_stored_ciphertext_for_who_may_read_it(fuel_store, with_password):
    headers = _users(fuel_store)["keeper"]
    assert _encrypt(with_password, headers, PASSWORD) == _stored_secret(fuel_store)


def _set_password(client, headers, value):
    url = VALUES + "/keys/set"
    got = client.put(url, json=[["nova", "db_password", value]], headers=headers)
    assert got.status_code == 204
    return got.headers["X-Gitstore-Commit"]


def test_a_right_guess_commits_like_a_wrong_one_for_a_writer(fuel_store, with_password):
    headers = _users(fuel_store)["writer"]
    head = fuel_store.environment_repo(1).head()
    after_right = _set_password(with_password, headers, PASSWORD)
    assert after_right != head  # re-sealed: a commit, as for any other value
    assert _set_password(with_password, headers, "wrong") != after_right


def test_an_unchanged_secret_makes_no_commit_for_who_may_read_it(fuel_store, with_password):
    headers = _users(fuel_store)["keeper"]
    head = fuel_store.environment_repo(1).head()
    assert _set_password(with_password, headers, PASSWORD) == head


def _put_password(store, value):
    document = {"nova": {"db_password": value, "user": "nova"}, "region": "one"}
    return store.config.put(1, [], "astute", "values", document).commit


def test_a_front_end_that_binds_no_caller_cannot_compare(fuel_store, with_password):
    """A store opened without naming who calls it (as a new front end would) seals every
    secret anew: the right guess commits like a wrong one, and encrypt never hands back the
    stored ciphertext."""
    opened = Store(fuel_store.root)
    head = opened.environment_repo(1).head()
    assert _put_password(opened, PASSWORD) != head
    sealed = opened.secrets.encrypt(1, PATH, {"nova": {"db_password": PASSWORD}}).data
    assert sealed["nova"]["db_password"] != _stored_secret(opened)
    view = EnvironmentView(opened.environment_repo(1).snapshot())
    assert opened.secrets.sealer(1, view, opened.secrets.caller).compare is False


def test_the_keyring_holder_named_by_the_cli_compares(fuel_store, with_password):
    opened = Store(fuel_store.root, caller=KEYRING_HOLDER)
    head = opened.environment_repo(1).head()
    assert _put_password(opened, PASSWORD) == head
