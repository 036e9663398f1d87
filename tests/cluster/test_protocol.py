"""Members' calls carry the protocol version they speak (`X-Gitstore-Protocol`): a signed call
in a protocol this member does not speak is a clear 409 naming both, never misread; a call
without the header is protocol 1 (members made before it). Real app, single process."""

from __future__ import annotations

import warnings

import pytest

from gitstore import Store
from gitstore.api import create_app
from gitstore.cluster.secret import HEADER, PROTOCOL, PROTOCOL_HEADER, ClusterSecret
from gitstore.cluster.secret import create as create_cluster_secret
from gitstore.cluster.settings import settings

from .conftest import seed_store

OBJECTS = "/cluster/v1/objects?repository=catalog.git"


@pytest.fixture
def member(tmp_path):
    root = seed_store(tmp_path / "a")
    key = create_cluster_secret(tmp_path / "cluster.key")
    peers = "a=http://127.0.0.1:9,b=http://127.0.0.1:10"
    config = settings("etcd://127.0.0.1:9", "a", peers, 1, str(key)).as_dict()
    with warnings.catch_warnings():  # its etcd client imports eventlet, which warns
        warnings.simplefilter("ignore")
        store = Store(root, cluster=config)
    return create_app({"TESTING": True}, store=store).test_client(), ClusterSecret.load(key)


def test_a_member_sends_its_protocol_on_every_call(member):
    _client, secret = member
    assert secret.headers()[PROTOCOL_HEADER] == str(PROTOCOL)
    env = secret.git_env()
    headers = [env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))]
    assert f"{PROTOCOL_HEADER}: {PROTOCOL}" in headers and any(HEADER in h for h in headers)


@pytest.mark.parametrize("protocol", ["2", "0", "abc", "1" * 40])
def test_an_unknown_protocol_is_refused_naming_both(member, protocol):
    client, secret = member
    answer = client.post(OBJECTS, data=b"", headers={**secret.headers(), PROTOCOL_HEADER: protocol})
    assert answer.status_code == 409
    message = answer.get_json()["message"]
    assert f"speaks cluster protocol {protocol[:20]!r}" in message and "speaks 1" in message


@pytest.mark.parametrize("protocol", [str(PROTOCOL), None])
def test_a_known_or_absent_protocol_is_served(member, protocol):
    client, secret = member
    headers = secret.headers()
    if protocol is None:
        del headers[PROTOCOL_HEADER]  # a member of the version before the header
    answer = client.post(OBJECTS, data=b"", headers=headers)
    assert answer.status_code not in (401, 409), answer.get_json()


def test_the_protocol_is_not_looked_at_before_the_signature(member):
    client, _secret = member
    answer = client.post(OBJECTS, data=b"", headers={PROTOCOL_HEADER: "2"})
    assert answer.status_code == 401
