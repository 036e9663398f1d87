"""Fixtures of the tags tests: the real Fuel release (Newton), a cluster using it, helpers."""

from __future__ import annotations

import pytest
import yaml
from fuel_data import RELEASE

from gitstore.api import create_app

FUEL_RELEASE = RELEASE
RELEASE_FIELDS = ("name", "version", "operating_system", "state", "description",
                  "roles_metadata", "tags_metadata")
API = "/api/v1"
CLUSTER = f"{API}/clusters/1"


@pytest.fixture(scope="session")
def newton() -> dict:
    """The release body of Fuel's Newton release: 9 roles with tags, 13 tags."""
    data = yaml.safe_load(FUEL_RELEASE.read_text())
    return {key: data[key] for key in RELEASE_FIELDS}


@pytest.fixture
def tag_store(fuel_store, newton):
    """The Fuel store plus release 1 (Newton), and environment 1 switched to that release."""
    fuel_store.releases.create(newton)
    fuel_store.environments.update(1, {"release": 1})
    return fuel_store


@pytest.fixture
def api(tag_store):
    return create_app({"TESTING": True}, store=tag_store).test_client()


@pytest.fixture
def add_node(api):
    """POST a node to cluster 1 and return its entity (fails the test on a non-201)."""

    def add(fqdn: str, roles: list[str], **fields) -> dict:
        body = {"fqdn": fqdn, "roles": roles, "status": "ready", **fields}
        response = api.post(f"{CLUSTER}/nodes/", json=body)
        assert response.status_code == 201, response.get_json()
        return response.get_json()

    return add


def assert_error(response, status: int, *words: str) -> dict:
    """An error in the one JSON shape with `status`, whose message names every word."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) <= {"status", "message", "errors"} and body["status"] == status
    for word in words:
        assert word in body["message"], (word, body["message"])
    return body
