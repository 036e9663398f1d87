"""Fixtures of the REST API tests: commit counters and a node inventory with fqdns."""

from __future__ import annotations

import pytest

from gitstore.backend.changes import ChangeSet
from gitstore.backend.repository import Author

from .helpers import NODES, commit_count


@pytest.fixture
def catalog_commits(fuel_store):
    """A function returning how many commits `catalog.git` holds now."""
    return lambda: commit_count(fuel_store.catalog())


@pytest.fixture
def env_commits(fuel_store):
    """A function returning how many commits an environment repository holds now."""
    return lambda env_id=1: commit_count(fuel_store.environment_repo(env_id))


@pytest.fixture
def inventory(fuel_store):
    """Environment 1 gets `inventory/nodes/<id>.yaml` with fqdns for nodes 1-3."""

    def operation(snapshot):
        changes = ChangeSet("inventory: add nodes")
        for node_id, fqdn in NODES.items():
            doc = f"id: {node_id}\nfqdn: {fqdn}\nroles: [controller]\n".encode()
            changes.put(f"inventory/nodes/{node_id}.yaml", doc)
        return changes

    fuel_store.environment_repo(1).update(operation, Author("test", "test@example.com"))
    return NODES
