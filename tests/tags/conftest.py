"""Fixtures of the tags tests: the real Fuel release (Newton), a cluster using it, helpers."""

from __future__ import annotations

import pytest
from error_shape import assert_error  # noqa: F401 - the tests here import it from this module
from fuel_data import newton_release

from gitstore.api import create_app

API = "/api/v1"
CLUSTER = f"{API}/clusters/1"


@pytest.fixture
def newton() -> dict:
    """The release body of Fuel's Newton release: 9 roles with tags, 13 tags."""
    return newton_release()


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
