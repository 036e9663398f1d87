"""Fixtures of the secrets tests: a store with a password set through REST."""

from __future__ import annotations

import pytest
from secrets_helpers import PASSWORD, VALUES

from gitstore.api import create_app


@pytest.fixture
def app(fuel_store):
    return create_app({"TESTING": True}, store=fuel_store)


@pytest.fixture
def with_password(client):
    """Global astute values holding one password (and two plain keys), set through REST."""
    document = {"nova": {"db_password": PASSWORD, "user": "nova"}, "region": "one"}
    assert client.put(VALUES, json=document).status_code == 204
    node = "/api/v1/config/environments/1/nodes/1/resources/globals/values"
    assert client.put(node, json={"node": 1}).status_code == 204  # node 1 exists (issue 22)
    return client
