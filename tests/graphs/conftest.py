"""Fixtures of the graph tests: the real Fuel release and graph (Newton), a cluster using them."""

from __future__ import annotations

import copy

import pytest
import yaml
from error_shape import assert_error  # noqa: F401 - the tests here import it from this module
from fuel_data import FUEL, newton_release

from gitstore.api import create_app

DATA = FUEL
API = "/api/v1"
CLUSTER = f"{API}/clusters/1"
RELEASE = f"{API}/releases/1"


@pytest.fixture(scope="session")
def _newton_tasks() -> list[dict]:
    return yaml.safe_load((DATA / "release-graph-newton-10.0.yaml").read_text())


@pytest.fixture
def newton() -> dict:
    """The release body of Fuel's Newton release (9 roles, 13 tags)."""
    return newton_release()


@pytest.fixture
def newton_tasks(_newton_tasks) -> list[dict]:
    """The 204 tasks of Newton's default deployment graph, as fuel-library wrote them."""
    return copy.deepcopy(_newton_tasks)


@pytest.fixture
def graph_store(fuel_store, newton):
    """The Fuel store plus release 1 (Newton, no graph yet) used by environment 1."""
    fuel_store.releases.create(newton)
    fuel_store.environments.update(1, {"release": 1})
    fuel_store.local_executor = True  # as `gitstore serve --enable-local-executor`
    return fuel_store


@pytest.fixture
def api(graph_store):
    return create_app({"TESTING": True}, store=graph_store).test_client()


@pytest.fixture
def add_node(api):
    """POST a node to cluster 1 and return its entity."""

    def add(fqdn: str, roles: list[str], **fields) -> dict:
        body = {"fqdn": fqdn, "roles": roles, "status": "ready", **fields}
        response = api.post(f"{CLUSTER}/nodes", json=body)
        assert response.status_code == 201, response.get_json()
        return response.get_json()

    return add


def task(task_id: str, **fields) -> dict:
    """A task-based shell task (version 2.1.0) on every node unless fields say otherwise."""
    return {"id": task_id, "type": "shell", "version": "2.1.0", "roles": "*", **fields}


def ids(tasks: list[dict]) -> list[str]:
    return [t["id"] for t in tasks]
