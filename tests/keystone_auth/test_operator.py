"""What an OpenStack operator expects of a service behind Keystone: the `Keystone uri=`
challenge, system-scoped tokens, and a first token that does not pay for the set-up."""

from __future__ import annotations

import requests
from access.helpers import serve
from live_server import stop_process

from .conftest import keystone_store, serve_args
from .keystone_fixture import ADMIN_PASSWORD

WHOAMI = "/api/v1/access/whoami"


def _challenges(answer: requests.Response) -> list[str]:
    return answer.raw.headers.getlist("WWW-Authenticate")


def test_a_401_names_keystone_beside_basic(server, cloud):
    """keystonemiddleware's services answer `Keystone uri=...`: clients find Keystone by it."""
    keystone = f'Keystone uri="{cloud.keystone.auth_url}"'
    anonymous = requests.get(server.url + WHOAMI, timeout=60)
    refused = requests.get(server.url + WHOAMI, headers={"X-Auth-Token": "nope"}, timeout=60)
    for answer in (anonymous, refused):
        assert answer.status_code == 401, answer.text
        assert _challenges(answer) == [keystone, 'Basic realm="gitstore"']


def test_a_system_scoped_token_is_matched_by_a_system_rule(server, cloud):
    token = cloud.keystone.system_token("admin", ADMIN_PASSWORD)
    answer = requests.get(server.url + WHOAMI, headers={"X-Auth-Token": token}, timeout=60)
    assert answer.status_code == 200, answer.text
    assert answer.json()["user"] == "admin"
    assert answer.json()["roles"] == ["admin"]
    assert answer.json()["via"] == "keystone (system all)"
    users = requests.get(
        server.url + "/api/v1/access/users", headers={"X-Auth-Token": token}, timeout=60
    )
    assert users.status_code == 200, users.text


def test_the_first_token_of_a_worker_costs_one_validation_only(cloud, tmp_path):
    """Starting auth_token, finding Keystone's version and the service login happen as the
    worker starts: the first client's token costs Keystone one validation, nothing more."""
    store, _ = keystone_store(tmp_path / "store")
    one = serve(store.root, tmp_path, *serve_args(cloud), "--workers", "1")
    try:
        token = cloud.token("alice")
        before = len(cloud.keystone.lines())
        answer = requests.get(one.url + WHOAMI, headers={"X-Auth-Token": token}, timeout=60)
        asked = cloud.keystone.lines()[before:]
    finally:
        stop_process(one.process)
    assert answer.status_code == 200, answer.text
    assert [" ".join(line.split()[:2]) for line in asked] == ["GET /v3/auth/tokens"], asked
