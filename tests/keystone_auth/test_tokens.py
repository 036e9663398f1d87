"""Keystone tokens against the real `gitstore serve` and a real Keystone: mapping and refusals."""

from __future__ import annotations

import signal
import time

import requests
from access.helpers import serve
from live_server import free_port, stop_process

from .conftest import LOCAL_USER, keystone_store, serve_args


def _get(server, path: str, token: str, header: str = "X-Auth-Token") -> requests.Response:
    value = token if header == "X-Auth-Token" else f"Bearer {token}"
    return requests.get(server.url + path, headers={header: value}, timeout=60)


def _put(server, path: str, token: str, body: dict) -> requests.Response:
    return requests.put(server.url + path, json=body, headers={"X-Auth-Token": token}, timeout=60)


VALUES = "/api/v1/config/environments/{env}/resources/globals/values"


def test_a_mapped_member_writes_and_reads_its_environment_only(server, cloud):
    token = cloud.token("alice")
    assert _put(server, VALUES.format(env=1), token, {"debug": True}).status_code == 204
    read = _get(server, VALUES.format(env=1), token, header="Authorization")
    assert read.status_code == 200, read.text
    assert read.json() == {"debug": True}
    refused = _get(server, VALUES.format(env=2), token)
    assert refused.status_code == 403
    assert "writer:env:1" in refused.json()["message"]
    whoami = _get(server, "/api/v1/access/whoami", token).json()
    assert whoami["user"] == "alice"
    assert whoami["roles"] == ["writer:env:1"]
    assert whoami["via"] == "keystone (project cloud-1)"


def test_the_admin_project_admin_deletes_and_the_service_user_reveals(server, cloud):
    admin = cloud.token("admin")
    assert _get(server, "/api/v1/access/users", admin).status_code == 200
    puppet = cloud.token("puppet")
    assert _get(server, VALUES.format(env=2), puppet).status_code == 200
    assert _get(server, VALUES.format(env=2) + "?reveal=1", puppet).status_code == 200
    write = _put(server, VALUES.format(env=2), puppet, {"debug": False})
    assert write.status_code == 403
    assert "'writer'" in write.json()["message"]


def test_an_unmapped_identity_gets_403_naming_what_it_lacks(server, cloud):
    answer = _get(server, VALUES.format(env=1), cloud.token("bob"))
    assert answer.status_code == 403
    message = answer.json()["message"]
    assert "'bob'" in message and "'demo'" in message and "member" in message
    assert "matches no rule" in message


def test_a_forged_token_gets_401(server, cloud):
    real = cloud.token("alice")
    forged = real[:-8] + ("A" * 8 if not real.endswith("A" * 8) else "B" * 8)
    for token in (forged, "not-a-token-at-all"):
        answer = _get(server, VALUES.format(env=1), token)
        assert answer.status_code == 401, answer.text
        assert "Keystone refused the token" in answer.json()["message"]


def test_an_expired_token_gets_401(server, cloud):
    """A token of an application credential expires with it (Keystone caps it there)."""
    lifetime = 8
    user_token = cloud.token("alice")
    credential = cloud.keystone.app_credential(cloud.user_ids["alice"], user_token, lifetime)
    began = time.monotonic()
    token = cloud.keystone.app_credential_token(*credential)
    first = _get(server, VALUES.format(env=1), token)
    if time.monotonic() - began < lifetime - 1:  # on a very slow host it may expire already
        assert first.status_code == 200, first.text
    time.sleep(max(0.0, lifetime + 1 - (time.monotonic() - began)))
    answer = _get(server, VALUES.format(env=1), token)
    assert answer.status_code == 401, answer.text


def test_a_validated_token_costs_no_call_to_keystone(server, cloud):
    token = cloud.token("alice")
    before = cloud.keystone.validations()
    for _ in range(12):
        assert _get(server, VALUES.format(env=1), token).status_code == 200
    # each of the two workers validates it once at most, then answers from its cache
    assert cloud.keystone.validations() - before <= 2


def test_gitstore_tokens_never_call_keystone(server, cloud):
    before = cloud.keystone.validations()
    for _ in range(5):
        assert _get(server, VALUES.format(env=1), server.local_token).status_code == 200
    assert cloud.keystone.validations() == before
    assert _get(server, "/api/v1/access/whoami", server.local_token).json()["user"] == LOCAL_USER


def test_a_revoked_token_gets_401_within_the_cache_time(cloud, tmp_path):
    cache_time = 3
    store, _ = keystone_store(tmp_path / "store")
    short = serve(store.root, tmp_path, *serve_args(cloud, "--keystone-cache-time", "3"))
    try:
        token = cloud.token("alice")
        assert _get(short, VALUES.format(env=1), token).status_code == 200
        cloud.keystone.revoke(token)
        revoked = time.monotonic()
        deadline = revoked + cache_time + 30  # generous: a loaded host
        while (status := _get(short, VALUES.format(env=1), token).status_code) == 200:
            assert time.monotonic() < deadline, "the revoked token still works"
            time.sleep(0.5)
        assert status == 401
    finally:
        stop_process(short.process)


def test_keystone_stopped_is_503_for_keystone_tokens_only(server, cloud):
    """Keystone's process stopped (SIGSTOP: it accepts connections and never answers), then
    continued: Keystone tokens not yet validated get 503 within --keystone-timeout (2 s; a
    retry made it 2 x 2 + 0.5 s), gitstore's own tokens keep working."""
    fresh = cloud.token("alice")
    keystone = cloud.keystone.process
    keystone.send_signal(signal.SIGSTOP)
    try:
        began = time.monotonic()
        answer = _get(server, VALUES.format(env=1), fresh)
        waited = time.monotonic() - began
        assert answer.status_code == 503, answer.text
        assert waited < 2 + 1.5, f"a frozen Keystone held the request {waited:.1f} s"
        assert "cannot be reached" in answer.json()["message"]
        assert "gitstore's own tokens" in answer.json()["message"]
        assert _get(server, VALUES.format(env=1), server.local_token).status_code == 200
    finally:
        keystone.send_signal(signal.SIGCONT)
    deadline = time.monotonic() + 60  # the requests queued while it was stopped come first
    while (answer := _get(server, VALUES.format(env=1), fresh)).status_code == 503:
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.5)
    assert answer.status_code == 200, answer.text


def test_keystone_gone_is_503_and_gitstore_tokens_still_work(cloud, tmp_path):
    """A Keystone that refuses connections (nothing listens at the URL)."""
    store, local_token = keystone_store(tmp_path / "store")
    nowhere = f"http://127.0.0.1:{free_port()}/v3"
    args = ["--keystone-url", nowhere, "--keystone-username", "gitstore"]
    down = serve(store.root, tmp_path, *args, "--keystone-password", "x")
    try:
        answer = _get(down, VALUES.format(env=1), cloud.token("alice"))
        assert answer.status_code == 503, answer.text
        assert _get(down, VALUES.format(env=1), local_token).status_code == 200
    finally:
        stop_process(down.process)


def test_a_refused_service_login_is_503_naming_it_in_the_log(cloud, tmp_path):
    """gitstore's own service user with a wrong password: no Keystone token can be checked,
    and clients are told so (not that Keystone cannot be reached)."""
    store, local_token = keystone_store(tmp_path / "store")
    args = serve_args(cloud)
    args[args.index("--keystone-password") + 1] = "wrong"
    refused = serve(store.root, tmp_path, *args)
    try:
        answer = _get(refused, VALUES.format(env=1), cloud.token("alice"))
        assert answer.status_code == 503, answer.text
        message = answer.json()["message"]
        assert "refused the login of gitstore's service user 'gitstore'" in message
        assert "--keystone-password" in message and "cannot be reached" not in message
        assert _get(refused, VALUES.format(env=1), local_token).status_code == 200
    finally:
        stop_process(refused.process)
    log = refused.log.read_text()
    assert "refused the login of gitstore's service user 'gitstore'" in log
    assert "Keystone answered 401" in log  # with Keystone's own words after it


def test_a_service_user_without_the_service_role_is_503_saying_so(cloud, tmp_path):
    """A service user that logs in but may not validate others' tokens (Keystone's 403)."""
    store, _ = keystone_store(tmp_path / "store")
    args = serve_args(cloud)
    args[args.index("--keystone-username") + 1] = "no-role"
    args[args.index("--keystone-password") + 1] = cloud.password("no-role")
    refused = serve(store.root, tmp_path, *args)
    try:
        answer = _get(refused, VALUES.format(env=1), cloud.token("alice"))
    finally:
        stop_process(refused.process)
    assert answer.status_code == 503, answer.text
    message = answer.json()["message"]
    assert "refused gitstore's service user 'no-role', project 'service' the right to " \
        "validate tokens (it needs the service or admin role)" in message  # fmt: skip
    assert "cannot be reached" not in message
    assert "Keystone answered 403" in refused.log.read_text()
