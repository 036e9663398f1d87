"""Every id an environment may be created with is reachable over git smart HTTP, the push gate's
repository names and cluster replication: one bound (`layout.MAX_ENVIRONMENT_ID`) for all."""

from __future__ import annotations

import pytest
from error_shape import assert_error

from gitstore.api import create_app
from gitstore.cluster.member import _check_names
from gitstore.errors import InvalidInput, NotFound
from gitstore.layout import MAX_ENVIRONMENT_ID, parse_repository_name

ENVIRONMENTS = "/api/v1/config/environments"
COMMIT = "0" * 40


@pytest.fixture
def client(fuel_store):
    return create_app({"TESTING": True}, store=fuel_store).test_client()


def test_the_largest_environment_id_is_served_over_git(client):
    assert len(str(MAX_ENVIRONMENT_ID)) == 19
    created = client.post(ENVIRONMENTS, json={"id": MAX_ENVIRONMENT_ID})
    assert created.status_code == 201, created.get_json()
    refs = client.get(
        f"/git/environments/{MAX_ENVIRONMENT_ID}.git/info/refs?service=git-upload-pack"
    )
    assert refs.status_code == 200, refs.get_data(as_text=True)
    assert b"refs/heads/main" in refs.get_data()


def test_an_id_over_the_bound_is_refused_everywhere(client):
    too_big = MAX_ENVIRONMENT_ID + 1
    assert_error(client.post(ENVIRONMENTS, json={"id": too_big}), 400, "'id'")
    for digits in (str(too_big), "9" * 20, "9" * 5000):
        answer = client.get(f"/git/environments/{digits}.git/info/refs?service=git-upload-pack")
        assert_error(answer, 404, "no git repository")
        with pytest.raises(NotFound):
            parse_repository_name(f"environments/{digits}.git")
        with pytest.raises(InvalidInput):
            _check_names(f"environments/{digits}.git", COMMIT)


def test_repository_names_take_every_environment_id():
    name = f"environments/{MAX_ENVIRONMENT_ID}.git"
    assert parse_repository_name(name).env_id == MAX_ENVIRONMENT_ID
    _check_names(name, COMMIT)  # a replica takes what its primary serves
