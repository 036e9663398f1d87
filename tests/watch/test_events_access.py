"""Who may read the change stream: `reader` on the environment named by `?env=`, as for reads."""

from __future__ import annotations

import base64

import pytest

from gitstore.access.policy import AccessFile, parse_grants
from gitstore.api import create_app

PASSWORD = "Watch-Pa55word-9Kx"


def _auth(user: str) -> dict[str, str]:
    pair = base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()
    return {"Authorization": f"Basic {pair}"}


@pytest.fixture
def guarded(fuel_store):
    fuel_store.environments.create({"id": 2, "components": ["fuel"], "hierarchy_levels": []})
    access = AccessFile(fuel_store.root)
    access.add_user("one", parse_grants(["reader:env:1"]), PASSWORD)
    access.add_user("two", parse_grants(["reader:env:2"]), PASSWORD)
    return create_app({"TESTING": True}, store=fuel_store).test_client()


def test_a_reader_of_the_environment_gets_the_stream(guarded, fuel_store):
    first = fuel_store.environment_repo(1).head()
    fuel_store.config.update_keys(1, [], "astute", "values", "set", [["a", 1]])
    response = guarded.get(
        f"/api/v1/events?env=1&since={first}", headers=_auth("one"), buffered=False
    )
    try:
        assert response.status_code == 200
        assert next(response.response).startswith(b": stream of environment 1")
        assert b"event: commit" in next(response.response)  # the commits after the first
    finally:
        response.close()


def test_a_reader_of_another_environment_is_refused(guarded):
    assert guarded.get("/api/v1/events?env=1", headers=_auth("two")).status_code == 403
    assert guarded.get("/api/v1/events?env=1").status_code == 401


def test_since_naming_no_commit_is_400(guarded):
    got = guarded.get("/api/v1/events?env=1&since=nonsense", headers=_auth("one"))
    assert got.status_code == 400
    assert "since" in got.get_json()["message"]
