"""`/api/v1/config/environments`: create, read, partial update, archive on delete."""

from __future__ import annotations

import pytest

from .helpers import API, ENV, assert_error, commit_count

ENVS = f"{API}/environments"


def test_post_creates_repo_with_one_commit(fuel_store, client):
    response = client.post(
        ENVS, json={"components": ["fuel"], "hierarchy_levels": ["role", "nodes"]}
    )
    assert response.status_code == 201
    assert response.get_json() == {
        "id": 2,
        "name": None,
        "components": [1],
        "hierarchy_levels": ["role", "nodes"],
        "merge": "deep",
    }
    assert (fuel_store.root / "environments" / "2.git" / "HEAD").is_file()
    repo = fuel_store.environment_repo(2)
    assert commit_count(repo) == 1
    assert response.headers["X-Gitstore-Commit"] == repo.head()


def test_post_with_explicit_id_name_merge_and_component_id(client):
    response = client.post(
        ENVS, json={"id": 42, "name": "prod", "components": [1], "merge": "shallow"}
    )
    assert response.status_code == 201
    assert response.get_json() == {
        "id": 42,
        "name": "prod",
        "components": [1],
        "hierarchy_levels": [],
        "merge": "shallow",
    }


def test_post_defaults_components_and_levels_to_empty(client):
    body = client.post(ENVS, json={}).get_json()
    assert body["components"] == [] and body["hierarchy_levels"] == []


def test_explicit_id_already_used_is_409(client):
    assert_error(client.post(ENVS, json={"id": 1}), 409, "1")


def test_unknown_component_is_404(client):
    assert_error(client.post(ENVS, json={"components": ["nope"]}), 404, "nope")
    assert_error(client.post(ENVS, json={"components": [77]}), 404, "77")


def test_same_component_twice_is_409(client):
    assert_error(client.post(ENVS, json={"components": ["fuel", 1]}), 409, "fuel")


@pytest.mark.parametrize(
    "body, field",
    [
        ({"components": "fuel"}, "components"),
        ({"components": [None]}, "components"),
        ({"components": [True]}, "components"),
        ({"hierarchy_levels": "nodes"}, "hierarchy_levels"),
        ({"hierarchy_levels": [1]}, "hierarchy level"),
        ({"id": "3"}, "id"),
        ({"id": 0}, "id"),
        ({"id": True}, "id"),
        ({"merge": "sideways"}, "merge"),
        ({"name": 5}, "name"),
        ({"name": "a\nb"}, "name"),
        ({"colour": "red"}, "colour"),
        ([], "object"),
    ],
)
def test_wrong_types_are_400_naming_the_field(client, body, field):
    assert_error(client.post(ENVS, json=body), 400, field)


@pytest.mark.parametrize(
    "level",
    [
        "global",
        "graphs",
        "inventory",
        "settings",
        "transactions",
        "network",
        "environment.yaml",
        "resources",
    ],
)
def test_reserved_level_names_are_400(client, level):
    assert_error(client.post(ENVS, json={"hierarchy_levels": [level]}), 400, level)


@pytest.mark.parametrize("level", ["..", ".hidden", "a/b", "", "a\tb", "ro le"])
def test_bad_level_names_are_400(client, level):
    assert_error(client.post(ENVS, json={"hierarchy_levels": [level]}), 400, "hierarchy level")


def test_repeated_level_is_400(client):
    assert_error(client.post(ENVS, json={"hierarchy_levels": ["role", "role"]}), 400, "role")


def test_list_and_get(client):
    client.post(ENVS, json={"id": 5, "name": "five"})
    listing = client.get(ENVS)
    assert listing.status_code == 200
    assert [e["id"] for e in listing.get_json()] == [1, 5]
    one = client.get(f"{ENVS}/5")
    assert one.status_code == 200 and one.get_json()["name"] == "five"
    assert one.headers["X-Gitstore-Commit"]
    assert_error(client.get(f"{ENVS}/6"), 404, "6")


def test_list_refuses_version_because_it_spans_repositories(client):
    assert_error(client.get(f"{ENVS}?version=1"), 400, "version")


def test_put_and_patch_are_partial_updates(client, env_commits):
    before = env_commits()
    put = client.put(ENV, json={"name": "prod"})
    assert put.status_code == 200
    assert put.get_json() == {
        "id": 1,
        "name": "prod",
        "components": [1],
        "hierarchy_levels": ["nodes"],
        "merge": "deep",
    }
    assert put.headers["X-Gitstore-Commit"]
    patch = client.patch(ENV, json={"merge": "shallow", "hierarchy_levels": ["role", "nodes"]})
    assert patch.status_code == 200
    assert patch.get_json()["name"] == "prod" and patch.get_json()["merge"] == "shallow"
    assert patch.get_json()["hierarchy_levels"] == ["role", "nodes"]
    assert env_commits() == before + 2


def test_update_errors(client):
    assert_error(client.put(ENV, json={"id": 2}), 400, "id")
    assert_error(client.put(ENV, json={"merge": 1}), 400, "merge")
    assert_error(client.put(ENV, json={"components": ["fuel", "fuel"]}), 409, "fuel")
    assert_error(client.put(f"{ENVS}/9", json={"name": "x"}), 404, "9")


def test_removing_a_level_that_holds_data_is_409_naming_it(client, env_commits):
    client.put(f"{ENV}/nodes/1/resources/astute/values", json={"a": 1})
    before = env_commits()
    assert_error(client.put(ENV, json={"hierarchy_levels": []}), 409, "nodes")
    assert_error(client.put(ENV, json={"hierarchy_levels": ["hosts"]}), 409, "nodes")
    assert env_commits() == before
    extended = client.put(ENV, json={"hierarchy_levels": ["role", "nodes"]})
    assert extended.status_code == 200


def test_removing_an_empty_level_is_allowed(client):
    client.put(ENV, json={"hierarchy_levels": ["role", "nodes"]})
    client.put(f"{ENV}/role/compute/resources/astute/values", json={"a": 1})
    response = client.put(ENV, json={"hierarchy_levels": ["role"]})
    assert response.status_code == 200
    assert_error(client.put(ENV, json={"hierarchy_levels": ["nodes"]}), 409, "role")


def test_detaching_a_component_with_data_is_409(client):
    client.put(f"{ENV}/resources/astute/values", json={"a": 1})
    assert_error(client.put(ENV, json={"components": []}), 409, "astute")


def test_delete_archives_the_repository_and_the_id_answers_404(fuel_store, client):
    client.put(f"{ENV}/resources/astute/values", json={"a": 1})
    response = client.delete(ENV)
    assert response.status_code == 204 and response.get_data() == b""
    assert not fuel_store.environment_path(1).exists()
    archived = list((fuel_store.root / "archive" / "environments").iterdir())
    assert len(archived) == 1 and archived[0].name.startswith("1-")
    assert (archived[0] / "HEAD").is_file()
    assert_error(client.get(ENV), 404, "1")
    assert_error(client.get(f"{ENV}/resources/astute/values"), 404, "1")
    assert_error(client.delete(ENV), 404, "1")
    assert [e["id"] for e in client.get(ENVS).get_json()] == []


def test_deleted_id_can_be_reused_and_starts_empty(fuel_store, client):
    client.put(f"{ENV}/resources/astute/values", json={"a": 1})
    client.delete(ENV)
    again = client.post(ENVS, json={"id": 1, "components": ["fuel"]})
    assert again.status_code == 201
    assert client.get(f"{ENV}/resources/astute/values").get_json() == {}
    assert commit_count(fuel_store.environment_repo(1)) == 1
    client.delete(ENV)
    assert len(list((fuel_store.root / "archive" / "environments").iterdir())) == 2


def test_a_component_can_be_deleted_after_its_data_is_archived(client):
    client.put(f"{ENV}/resources/astute/values", json={"a": 1})
    assert client.delete(f"{API}/components/1").status_code == 409
    client.delete(ENV)
    assert client.delete(f"{API}/components/1").status_code == 204


def test_ids_beyond_64_bits_are_404_in_urls_and_400_in_bodies(client):
    huge = "9" * 300
    for method in ("GET", "PUT", "DELETE"):
        assert_error(client.open(f"{ENVS}/{huge}", method=method, json={}), 404, "99999")
    assert_error(client.get(f"{ENVS}/{huge}/resources/astute/values"), 404, "99999")
    assert_error(client.post(ENVS, json={"id": 2**63}), 400, "id")
    assert client.post(ENVS, json={"id": 2**63 - 1}).status_code == 201
