"""Credentials, identities and the access file, through the real app on real stores."""

from __future__ import annotations

import os
import stat
import subprocess
import time

import pytest

from gitstore.access.policy import ACCESS_REQUIRED, ANONYMOUS_READ, AccessFile, parse_grants
from gitstore.access.ratelimit import FailureLog
from gitstore.api import create_app

from .conftest import build_store
from .helpers import add_users, basic, bearer, password_of

ASTUTE = "/api/v1/config/environments/{env}/resources/astute/values"
SMALL = {"alice": ["writer:env:1"], "root": ["admin"]}


@pytest.fixture
def small(tmp_path):
    """(store, tokens, client): users alice (writer on env 1) and root (admin)."""
    store = build_store(tmp_path / "store")
    tokens = add_users(store.root, SMALL)
    return store, tokens, create_app({"TESTING": True}, store=store).test_client()


def test_a_store_without_access_file_is_open(tmp_path):
    client = create_app({"TESTING": True}, store=build_store(tmp_path / "store")).test_client()
    assert client.get(ASTUTE.format(env=1)).status_code == 200
    assert client.put(ASTUTE.format(env=2), json={"a": 1}).status_code == 204
    assert client.get("/api/v1/access/whoami").json["access_control"] is False


def test_basic_bearer_and_x_auth_token_all_authenticate(small):
    _, tokens, client = small
    for headers in (
        basic("alice", password_of("alice")),
        bearer(tokens["alice"]),
        {"X-Auth-Token": tokens["alice"]},
    ):
        got = client.get("/api/v1/access/whoami", headers=headers)
        assert got.status_code == 200
        assert got.json["user"] == "alice"
        assert got.json["roles"] == ["writer:env:1"]


@pytest.mark.parametrize(
    "headers, message",
    [
        (basic("alice", "wrong"), "invalid user name or password"),
        (basic("nobody", "alice-pw"), "invalid user name or password"),
        (bearer("gst_000000000000_guess"), "invalid or revoked token"),
        ({"X-Auth-Token": "not-a-token"}, "invalid or revoked token"),
        ({"Authorization": "Basic %%%"}, "malformed Basic credentials"),
        ({"Authorization": "Negotiate abc"}, "unsupported authorization scheme"),
    ],
    ids=[
        "wrong password",
        "unknown user",
        "unknown token",
        "foreign token",
        "bad base64",
        "other scheme",
    ],
)
def test_bad_credentials_get_401_with_a_challenge(small, headers, message):
    got = small[2].get(ASTUTE.format(env=1), headers=headers)
    assert got.status_code == 401
    assert got.headers["WWW-Authenticate"] == 'Basic realm="gitstore"'
    assert set(got.json) == {"status", "message"} and got.json["status"] == 401
    assert got.json["message"].startswith(message)


def test_commits_through_rest_record_the_authenticated_user(small):
    store, tokens, client = small
    assert (
        client.put(
            ASTUTE.format(env=1), json={"debug": True}, headers=bearer(tokens["alice"])
        ).status_code
        == 204
    )
    assert (
        client.post(
            "/api/v1/config/components",
            json={"name": "extra"},
            headers=basic("root", password_of("root")),
        ).status_code
        == 201
    )
    assert _last_author(store.environment_path(1)) == "alice <alice@gitstore>"
    assert _last_author(store.root / "catalog.git") == "root <root@gitstore>"


def _last_author(repo) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), "log", "-1", "--format=%an <%ae>"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_anonymous_reads_when_allowed_but_never_writes(small):
    store, _, _ = small
    client = create_app({"TESTING": True, ANONYMOUS_READ: True}, store=store).test_client()
    assert client.get(ASTUTE.format(env=1)).status_code == 200
    assert client.get("/api/v1/access/whoami").json["user"] is None
    got = client.put(ASTUTE.format(env=1), json={"a": 1})
    assert got.status_code == 401
    assert client.get(ASTUTE.format(env=1) + "?reveal=1").status_code == 401


def test_revocation_and_role_changes_apply_to_the_next_request(small):
    store, tokens, client = small
    other_process_view = AccessFile(store.root)  # as `gitstore token revoke` would
    headers = bearer(tokens["alice"])
    assert client.put(ASTUTE.format(env=1), json={"a": 1}, headers=headers).status_code == 204
    other_process_view.set_roles("alice", parse_grants(["reader:env:1"]))
    assert client.put(ASTUTE.format(env=1), json={"a": 2}, headers=headers).status_code == 403
    token_id = other_process_view.tokens("alice")[0]["id"]
    other_process_view.revoke_token(token_id)
    got = client.get(ASTUTE.format(env=1), headers=headers)
    assert (got.status_code, got.json["message"]) == (401, "invalid or revoked token")


def test_removing_a_user_revokes_their_tokens_and_password(small):
    store, tokens, client = small
    assert AccessFile(store.root).remove_user("alice") == 1
    assert client.get(ASTUTE.format(env=1), headers=bearer(tokens["alice"])).status_code == 401
    got = client.get(ASTUTE.format(env=1), headers=basic("alice", password_of("alice")))
    assert got.status_code == 401


def test_the_access_file_is_private_and_holds_no_secret(small):
    store, tokens, client = small
    path = store.root / "access.yaml"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    text = path.read_text()
    for secret in [*tokens.values(), password_of("alice"), password_of("root")]:
        assert secret not in text
    assert text.count("scrypt$n=16384,r=8,p=1$") == 2


def test_the_access_file_is_never_served(small):
    _, tokens, client = small
    for path in (
        "/git/access.yaml",
        "/git/catalog.git/../access.yaml",
        "/git/environments/1.git/../../access.yaml",
        "/access.yaml",
    ):
        got = client.get(path, headers=bearer(tokens["root"]))
        assert got.status_code == 404, path
        assert b"scrypt" not in got.data


def test_management_answers_hold_no_secret(small):
    store, tokens, client = small
    headers = bearer(tokens["root"])
    answers = [
        client.get(path, headers=headers).get_data(as_text=True)
        for path in ("/api/v1/access/users", "/api/v1/access/tokens", "/api/v1/access/whoami")
    ]
    hashes = [
        line.split(": ", 1)[1]
        for line in (store.root / "access.yaml").read_text().splitlines()
        if "scrypt$" in line or "sha256$" in line
    ]
    for secret in [*tokens.values(), *hashes, "scrypt$", "sha256$"]:
        assert not any(secret in answer for answer in answers)
    assert '"alice"' in answers[0] and '"alice tests"' in answers[1]


def test_an_admin_revokes_a_token_over_rest(small):
    store, tokens, client = small
    token_id = AccessFile(store.root).tokens("alice")[0]["id"]
    assert (
        client.delete(
            f"/api/v1/access/tokens/{token_id}", headers=bearer(tokens["alice"])
        ).status_code
        == 403
    )
    assert (
        client.delete(
            f"/api/v1/access/tokens/{token_id}", headers=bearer(tokens["root"])
        ).status_code
        == 204
    )
    assert client.get(ASTUTE.format(env=1), headers=bearer(tokens["alice"])).status_code == 401


def test_a_broken_access_file_refuses_everything_without_showing_it(small):
    store, tokens, client = small
    (store.root / "access.yaml").write_text("users: [not, a, mapping]\n")
    got = client.get(ASTUTE.format(env=1), headers=bearer(tokens["root"]))
    assert got.status_code == 503
    assert "access file" in got.json["message"] and "users must be a mapping" in got.json["message"]


def test_a_server_that_requires_an_access_file_fails_closed_without_one(small):
    store, tokens, _ = small
    client = create_app({"TESTING": True, ACCESS_REQUIRED: True}, store=store).test_client()
    assert client.get(ASTUTE.format(env=1), headers=bearer(tokens["root"])).status_code == 200
    (store.root / "access.yaml").unlink()
    got = client.get(ASTUTE.format(env=1))
    assert got.status_code == 503
    assert "no access file" in got.json["message"]


def test_more_than_20_failures_in_a_minute_block_the_address(small):
    _, tokens, client = small
    guesser = {"REMOTE_ADDR": "192.0.2.7"}
    for attempt in range(21):
        got = client.get(
            ASTUTE.format(env=1), environ_base=guesser, headers=bearer(f"gst_{attempt:012d}_guess")
        )
        assert got.status_code == 401, attempt
    for headers in (bearer("gst_000000000000_guess"), bearer(tokens["root"])):
        got = client.get(ASTUTE.format(env=1), environ_base=guesser, headers=headers)
        assert got.status_code == 429
        assert got.json["status"] == 429 and "192.0.2.7" in got.json["message"]
        assert 1 <= int(got.headers["Retry-After"]) <= 60
    elsewhere = client.get(
        ASTUTE.format(env=1),
        environ_base={"REMOTE_ADDR": "192.0.2.8"},
        headers=bearer(tokens["root"]),
    )
    assert elsewhere.status_code == 200


def test_a_block_lifts_when_the_window_has_passed(tmp_path):
    failures = FailureLog(tmp_path, limit=3, window=1.0)
    for _ in range(3):
        failures.record("192.0.2.1")
    assert failures.blocked_for("192.0.2.1") == 0
    failures.record("192.0.2.1")
    assert failures.blocked_for("192.0.2.1") == 1
    assert failures.blocked_for("192.0.2.2") == 0
    time.sleep(1.1)
    assert failures.blocked_for("192.0.2.1") == 0


def test_a_failure_log_is_shared_through_its_file(tmp_path):
    one, two = FailureLog(tmp_path, limit=2), FailureLog(tmp_path, limit=2)
    for log in (one, two, one):
        log.record("192.0.2.1")
    assert two.blocked_for("192.0.2.1") > 0


def test_a_token_is_hashed_once_per_version_of_the_access_file(small, monkeypatch):
    store, tokens, _ = small
    from gitstore.access import credentials
    from gitstore.access.policy import Credentials
    from gitstore.errors import Unauthorized

    hashed = []
    real = credentials.token_digest
    monkeypatch.setattr(credentials, "token_digest", lambda token: hashed.append(1) or real(token))
    access = AccessFile(store.root)
    for _ in range(5):
        assert access.authenticate(Credentials(token=tokens["alice"])).name == "alice"
    assert len(hashed) == 1
    access.set_roles("alice", parse_grants(["reader:env:2"]))  # a new version of the file
    identity = access.authenticate(Credentials(token=tokens["alice"]))
    assert not identity.has("reader", 1) and identity.has("reader", 2) and len(hashed) == 2
    [entry] = access.tokens("alice")
    access.revoke_token(entry["id"])
    with pytest.raises(Unauthorized, match="invalid or revoked token"):
        access.authenticate(Credentials(token=tokens["alice"]))
