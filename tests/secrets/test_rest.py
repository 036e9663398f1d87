"""Secrets through REST: sealed in git, masked by default, revealed only to the allowed."""

from __future__ import annotations

import re

from secrets_helpers import PASSWORD, SEALED, VALUES, all_objects, stored

from gitstore.access.policy import AccessFile, parse_grants
from gitstore.backend.changes import ChangeSet
from gitstore.secrets.seal import MASK

NODE = "/api/v1/config/environments/1/nodes/1/resources/astute/values"


def _line(data: bytes, key: bytes) -> bytes:
    return next(line for line in data.splitlines() if line.strip().startswith(key + b":"))


def test_a_password_set_through_rest_is_sealed_in_git(fuel_store, with_password):
    data = stored(fuel_store)
    assert PASSWORD.encode() not in data
    assert SEALED.fullmatch(_line(data, b"db_password").split(b": ", 1)[1].decode())
    assert b"user: nova" in data and b"region: one" in data  # keys and plain values readable
    assert PASSWORD.encode() not in all_objects(fuel_store.root)


def test_default_reads_mask_secrets_and_list_them(with_password):
    for url in (VALUES, VALUES + "?effective", NODE + "?effective"):
        answer = with_password.get(url)
        assert answer.status_code == 200
        assert answer.json["nova"] == {"db_password": MASK, "user": "nova"}
        assert answer.headers["X-Gitstore-Masked"] == "nova.db_password"
    one = with_password.get(VALUES + "?effective&key=nova.db_password")
    assert one.json == MASK and one.headers["X-Gitstore-Masked"] == "nova.db_password"
    plain = with_password.get(VALUES + "?key=region")
    assert plain.json == "one" and "X-Gitstore-Masked" not in plain.headers


def test_reveal_returns_plain_text_and_is_audited(fuel_store, with_password):
    answer = with_password.get(NODE + "?effective&reveal=1")
    assert answer.status_code == 200
    assert answer.json["nova"]["db_password"] == PASSWORD
    assert "X-Gitstore-Masked" not in answer.headers
    entries = fuel_store.secrets.audit.entries()
    assert entries[-1]["paths"] == ["nova.db_password"]
    assert entries[-1]["environment"] == 1 and entries[-1]["who"]
    assert PASSWORD not in fuel_store.secrets.audit.path.read_text()
    assert oct(fuel_store.secrets.audit.path.stat().st_mode & 0o777) == "0o600"


def test_reveal_needs_the_secrets_role(fuel_store, with_password):
    access = AccessFile(fuel_store.root)
    access.add_user("reader", parse_grants(["reader"]), "reader-pw")
    access.add_user("ops", parse_grants(["reader", "secrets:env:1"]), "ops-pw")
    access.add_user("other", parse_grants(["reader", "secrets:env:2"]), "other-pw")
    tokens = {name: access.create_token(name)[1] for name in ("reader", "ops", "other")}

    def get(url, user):
        return with_password.get(url, headers={"Authorization": f"Bearer {tokens[user]}"})

    assert get(VALUES, "reader").json["nova"]["db_password"] == MASK
    for user in ("reader", "other"):
        refused = get(VALUES + "?reveal=1", user)
        assert refused.status_code == 403 and "secrets" in refused.json["message"]
        assert PASSWORD not in refused.get_data(as_text=True)
    allowed = get(VALUES + "?reveal=1", "ops")
    assert allowed.status_code == 200 and allowed.json["nova"]["db_password"] == PASSWORD
    assert fuel_store.secrets.audit.entries()[-1]["who"] == "ops"


def test_a_ciphertext_copied_to_another_key_does_not_decrypt(fuel_store, with_password):
    sealed = _line(stored(fuel_store), b"db_password").split(b": ", 1)[1].decode()

    def copy(snapshot):
        changes = ChangeSet("copy a ciphertext")
        text = snapshot.read("global/values/astute.yaml").decode()
        changes.put(
            "global/values/astute.yaml",
            (text + f"keystone:\n  admin_password: {sealed}\n").encode(),
        )
        return changes

    fuel_store.environment_repo(1).update(copy, fuel_store.default_author)
    masked = with_password.get(VALUES)
    assert masked.json["keystone"]["admin_password"] == MASK  # never the ENC text
    answer = with_password.get(VALUES + "?reveal=1")
    assert answer.status_code == 422
    assert "keystone.admin_password" in answer.json["message"]
    assert "ENC[" not in answer.get_data(as_text=True)
    assert PASSWORD not in answer.get_data(as_text=True)
    # written back through REST, a copied ciphertext is refused the same way
    refused = with_password.put(
        VALUES, json={"nova": {"db_password": sealed}, "other_password": sealed}
    )
    assert refused.status_code == 422 and "other_password" in refused.json["message"]


def test_changing_another_key_keeps_the_secret_line_byte_for_byte(fuel_store, with_password):
    before = _line(stored(fuel_store), b"db_password")
    assert with_password.patch(VALUES + "/keys/set", json=[["region", "two"]]).status_code == 204
    assert _line(stored(fuel_store), b"db_password") == before
    again = {"nova": {"db_password": PASSWORD, "user": "nova2"}, "region": "three"}
    assert with_password.put(VALUES, json=again).status_code == 204  # same plain text sent
    after = stored(fuel_store)
    assert _line(after, b"db_password") == before and b"user: nova2" in after
    changed = {"nova": {"db_password": "An0ther-Passw0rd", "user": "nova2"}, "region": "three"}
    assert with_password.put(VALUES, json=changed).status_code == 204
    assert _line(stored(fuel_store), b"db_password") != before


def test_the_mask_sentinel_keeps_the_stored_value(fuel_store, with_password):
    before = _line(stored(fuel_store), b"db_password")
    masked = with_password.get(VALUES).json
    masked["region"] = "two"
    assert with_password.put(VALUES, json=masked).status_code == 204  # a read, edited, put back
    assert _line(stored(fuel_store), b"db_password") == before
    assert with_password.get(VALUES + "?reveal=1").json["nova"]["db_password"] == PASSWORD
    missing = with_password.patch(VALUES + "/keys/set", json=[["new_password", MASK]])
    assert missing.status_code == 400 and "new_password" in missing.json["message"]


def test_diff_history_and_explain_say_secret_changed_without_values(fuel_store, with_password):
    changed = {"nova": {"db_password": "An0ther-Passw0rd", "user": "nova"}, "region": "one"}
    assert with_password.put(VALUES, json=changed).status_code == 204
    base = "/api/v1/config/environments/1"
    diff = with_password.get(f"{base}/diff?from=2")
    entry = diff.json["scopes"]["/"]["astute"]["changed"]["nova.db_password"]
    assert entry == {"old": MASK, "new": MASK, "note": "secret changed"}
    history = with_password.get(f"{base}/history?path=/&resource=astute&key=nova.db_password")
    assert [e.get("note") for e in history.json["entries"]] == ["secret changed"] * 2
    explain = with_password.get(VALUES + "?effective&explain&key=nova")
    assert [k["value"] for k in explain.json["keys"]] == [MASK, "nova"]
    assert explain.json["keys"][0]["layers"][0]["value"] == MASK
    revealed = with_password.get(VALUES + "?effective&explain&key=nova&reveal=1")
    assert revealed.json["keys"][0]["value"] == "An0ther-Passw0rd"
    for answer in (diff, history, explain):
        text = answer.get_data(as_text=True)
        assert PASSWORD not in text and "An0ther" not in text and "ENC[" not in text


def test_hiera_reveals_for_the_secrets_role_and_masks_for_others(fuel_store, with_password):
    url = "/api/v1/hiera/1/1"
    assert with_password.put(NODE, json={"region": "node-1"}).status_code == 204
    assert with_password.get(url).json["resources"]["astute"]["nova"]["db_password"] == PASSWORD
    access = AccessFile(fuel_store.root)
    access.add_user("puppet", parse_grants(["reader", "secrets:env:1"]), "puppet-pw")
    access.add_user("viewer", parse_grants(["reader"]), "viewer-pw")
    tokens = {name: access.create_token(name)[1] for name in ("puppet", "viewer")}
    puppet = with_password.get(url, headers={"Authorization": f"Bearer {tokens['puppet']}"})
    assert puppet.json["resources"]["astute"]["nova"]["db_password"] == PASSWORD
    assert fuel_store.secrets.audit.entries()[-1]["who"] == "puppet"
    viewer = with_password.get(url, headers={"Authorization": f"Bearer {tokens['viewer']}"})
    assert viewer.json["resources"]["astute"]["nova"]["db_password"] == MASK
    assert viewer.headers["X-Gitstore-Masked"] == "resources.astute.nova.db_password"
    assert viewer.headers["ETag"] != puppet.headers["ETag"]


def test_without_keyring_plain_reads_work_and_secrets_are_unavailable(fuel_store, with_password):
    fuel_store.secrets.keyring.path.unlink()
    assert with_password.get(VALUES + "?key=region").json == "one"
    assert with_password.get(VALUES).json["nova"]["db_password"] == MASK
    revealed = with_password.get(VALUES + "?reveal=1")
    assert revealed.status_code == 503
    assert re.search("secrets are unavailable.*no keyring", revealed.json["message"])
    assert "nova.db_password" in revealed.json["message"]
    assert with_password.patch(VALUES + "/keys/set", json=[["region", "two"]]).status_code == 204
    refused = with_password.patch(VALUES + "/keys/set", json=[["admin_token", "t0k3n-value"]])
    assert refused.status_code == 503 and "admin_token" in refused.json["message"]
    assert "t0k3n-value" not in refused.get_data(as_text=True)


def test_a_keyring_others_can_read_is_refused(fuel_store, with_password):
    fuel_store.secrets.keyring.path.chmod(0o644)
    answer = with_password.get(VALUES + "?reveal=1")
    assert answer.status_code == 503 and "chmod 600" in answer.json["message"]


def test_server_side_encryption_needs_writer(fuel_store, with_password):
    url = "/api/v1/config/environments/1/secrets/encrypt"
    body = {
        "path": "global/values/astute.yaml",
        "document": {"nova": {"db_password": PASSWORD, "user": "nova"}, "api_token": "x1"},
    }
    sealed = with_password.post(url, json=body)
    assert sealed.status_code == 200
    assert (
        sealed.json["nova"]["db_password"]
        == _line(stored(fuel_store), b"db_password").split(b": ", 1)[1].decode()
    )  # unchanged: same text
    assert SEALED.fullmatch(sealed.json["api_token"]) and sealed.json["nova"]["user"] == "nova"
    bad = with_password.post(url, json={"path": "../x.yaml", "document": {}})
    assert bad.status_code == 400 and "path" in bad.json["message"]
    access = AccessFile(fuel_store.root)
    access.add_user("reader", parse_grants(["reader"]), "reader-pw")
    token = access.create_token("reader")[1]
    refused = with_password.post(url, json=body, headers={"Authorization": f"Bearer {token}"})
    assert refused.status_code == 403


def test_secret_keys_of_definitions_and_environments_apply(fuel_store, client):
    definition = fuel_store.definitions.get("astute").data["id"]
    assert (
        client.patch(
            f"/api/v1/config/resource_definitions/{definition}",
            json={"secret_keys": ["nodes.*.admin_pass"]},
        ).status_code
        == 200
    )
    assert (
        client.patch(
            "/api/v1/config/environments/1", json={"secret_keys": ["ssh.private"]}
        ).status_code
        == 200
    )
    bad = client.patch("/api/v1/config/environments/1", json={"secret_keys": ["a..b"]})
    assert bad.status_code == 400 and "secret_keys" in bad.json["message"]
    document = {
        "nodes": {"n1": {"admin_pass": "AdminPass1", "name": "n1"}},
        "ssh": {"private": "PRIVATE-KEY-1", "public": "pub"},
    }
    assert client.put(VALUES, json=document).status_code == 204
    data = stored(fuel_store)
    assert b"AdminPass1" not in data and b"PRIVATE-KEY-1" not in data and b"public: pub" in data
    masked = client.get(VALUES).headers["X-Gitstore-Masked"].split(",")
    assert sorted(masked) == ["nodes.n1.admin_pass", "ssh.private"]
    rules = client.get("/api/v1/config/environments/1/secrets/rules").json
    assert rules["environment_secret_keys"] == ["ssh.private"]
    assert rules["resource_secret_keys"]["astute"] == ["nodes.*.admin_pass"]
