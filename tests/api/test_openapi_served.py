"""`GET /api/v1/openapi.json`, and a bounded schemathesis run against the served document.

The run covers the values templates (one catch-all Flask rule, spelled out in the document)
with a few examples per operation: every request the document calls valid must not be
refused, and every answer must be documented. A longer run over every route belongs in bench/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
import yaml
from hypothesis import HealthCheck, given, settings
from live_server import threaded_app_server

from gitstore import Store
from gitstore.access.policy import AccessFile
from gitstore.api import create_app
from gitstore.configdb.importer import SAMPLE_DIR

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml"

EXAMPLES = 25


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory):
    store = Store.init(tmp_path_factory.mktemp("openapi") / "store")
    store.importer.load_tree(SAMPLE_DIR)
    return store


def test_the_spec_is_served_as_json_without_credentials(tmp_path):
    store = Store.init(tmp_path / "store")
    AccessFile(store.root).add_user("alice", (), "alice-pw-1234")  # access control on
    with threaded_app_server() as (dispatch, url):
        dispatch.app = create_app({"TESTING": True}, store=store)
        refused = requests.get(url + "/api/v1/config/environments", timeout=10)
        got = requests.get(url + "/api/v1/openapi.json", timeout=10)
    assert refused.status_code == 401
    assert got.status_code == 200
    assert got.headers["Content-Type"].startswith("application/json")
    assert json.loads(got.text) == yaml.safe_load(OPENAPI.read_text())
    schemes = got.json()["components"]["securitySchemes"]
    assert {s.get("scheme") or s.get("name") for s in schemes.values()} == {
        "basic",
        "bearer",
        "X-Auth-Token",
        "gitstore_session",
        "X-Gitstore-Member",  # cluster members' signature (docs/ha.md)
    }


def _values_operations(app):
    import schemathesis

    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)
    for result in schema.get_all_operations():
        operation = result.ok()
        if "/resources/{resource}/{kind}" in operation.path and operation.method == "get":
            yield operation


def test_schemathesis_finds_no_mismatch_on_the_values_routes(sample_store):
    app = create_app({"TESTING": True}, store=sample_store)
    operations = list(_values_operations(app))
    assert len(operations) == 2  # the global and the per-level template
    for operation in operations:

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def check(case):
            case.call_and_validate()

        check()
