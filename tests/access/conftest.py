"""Fixtures of the access tests: a store with two environments, users with each role."""

from __future__ import annotations

import pytest

from gitstore import Store
from gitstore.api import create_app

from .helpers import add_users


def build_store(root) -> Store:
    """Component `fuel` (astute, globals); environments 1 and 2 with hierarchy [nodes]."""
    store = Store.init(root)
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": "astute"}, {"name": "globals"}]}
    )
    for env_id in (1, 2):
        store.environments.create(
            {"id": env_id, "components": ["fuel"], "hierarchy_levels": ["nodes"]}
        )
    return store


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """(store, tokens by user) for a module: a store whose access file has every test user."""
    store = build_store(tmp_path_factory.mktemp("guarded") / "store")
    return store, add_users(store.root)


@pytest.fixture(scope="module")
def guarded_client(guarded):
    store, _ = guarded
    return create_app({"TESTING": True}, store=store).test_client()


@pytest.fixture(scope="module")
def tokens(guarded) -> dict[str, str]:
    return guarded[1]
