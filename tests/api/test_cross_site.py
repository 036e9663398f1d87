"""Cross-site writes to an open store (issue 25, item 7).

A web page the operator visits can POST `text/plain` to a loopback server without a CORS
pre-flight, and DNS rebinding lets it reach the server under its own name. So JSON bodies must
say they are JSON (415 otherwise), and an open store answers only the names it is served as.
"""

from __future__ import annotations

import json

import pytest

from gitstore.access.policy import AccessFile, parse_grants
from gitstore.api import create_app

from .helpers import API, assert_error

ENVS = f"{API}/environments"
NEW_ENV = {"components": ["fuel"], "hierarchy_levels": ["role", "nodes"]}


def _environment_ids(client) -> list[int]:
    return [env["id"] for env in client.get(ENVS).get_json()]


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_json_body_without_the_json_type_is_refused_and_writes_nothing(client, content_type):
    before = _environment_ids(client)
    headers = {"Content-Type": content_type} if content_type else {}
    got = client.post(ENVS, data=json.dumps(NEW_ENV), headers=headers)
    assert_error(got, 415, "application/json")
    assert _environment_ids(client) == before


def test_every_json_route_checks_the_type(client):
    """A key write, a batch and a label go through the same body helper."""
    for method, path in (
        ("PUT", f"{API}/environments/1/resources/astute/values/keys/set"),
        ("PUT", f"{API}/environments/1/documents"),
        ("POST", f"{API}/environments/1/labels"),
    ):
        got = client.open(path, method=method, data="[]", content_type="text/plain")
        assert_error(got, 415, "application/json")


def test_json_with_a_charset_is_accepted(client):
    got = client.post(
        ENVS, data=json.dumps(NEW_ENV), content_type="application/json; charset=utf-8"
    )
    assert got.status_code == 201


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8000", "127.0.0.1.nip.io"])
def test_an_open_store_refuses_foreign_host_names(client, host):
    before = _environment_ids(client)
    assert_error(client.get(ENVS, headers={"Host": host}), 421, host.split(":")[0])
    assert_error(client.post(ENVS, json=NEW_ENV, headers={"Host": host}), 421)
    assert _environment_ids(client) == before


@pytest.mark.parametrize(
    "host",
    ["localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000", "10.1.2.3", "a.localhost"],
)
def test_an_open_store_answers_loopback_names_and_addresses(client, host):
    assert client.get(ENVS, headers={"Host": host}).status_code == 200


def test_an_open_store_answers_the_names_it_is_served_as(fuel_store):
    app = create_app({"TESTING": True, "GITSTORE_SERVED_HOSTS": ["config.example"]}, fuel_store)
    client = app.test_client()
    assert client.get(ENVS, headers={"Host": "config.example:8000"}).status_code == 200
    assert client.get(ENVS, headers={"Host": "other.example"}).status_code == 421


def test_a_store_with_access_control_leaves_host_names_to_its_proxy(fuel_store):
    AccessFile(fuel_store.root).add_user("reader", parse_grants(["reader"]), "reader-pw")
    client = create_app({"TESTING": True}, fuel_store).test_client()
    got = client.get(ENVS, headers={"Host": "config.example"})
    assert got.status_code == 401  # authentication decides, not the name
