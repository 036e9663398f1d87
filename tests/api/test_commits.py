"""Every successful write request is exactly one commit, in the repository it addresses."""

from __future__ import annotations

import pytest

from .helpers import API, ENV, commit_count

WRITES = [
    (
        "catalog",
        "POST",
        f"{API}/components",
        {"name": "nova", "resource_definitions": [{"name": "a"}, {"name": "b"}]},
    ),
    ("catalog", "PUT", f"{API}/components/2", {"name": "nova2"}),
    ("catalog", "PATCH", f"{API}/components/2", {"resource_definitions": [{"name": "c"}]}),
    ("catalog", "POST", f"{API}/resource_definitions", {"name": "loose"}),
    ("catalog", "PUT", f"{API}/resource_definitions/1", {"content": {"x": 1}}),
    ("catalog", "PATCH", f"{API}/resource_definitions/1/keys/set", [["y", 2], ["z", 3]]),
    ("catalog", "PUT", f"{API}/resource_definitions/1/keys/delete", [["x"]]),
    ("catalog", "DELETE", f"{API}/resource_definitions/4", None),
    ("catalog", "DELETE", f"{API}/components/2", None),
    ("env", "PUT", f"{ENV}/nodes/1/resources/astute/values", {"a": 1, "b": 2, "c": 3}),
    ("env", "PUT", f"{ENV}/resources/astute/overrides", {"o": 1}),
    ("env", "PUT", f"{ENV}/nodes/1/resources/astute/values/keys/set", [["d", 4], ["e", 5]]),
    ("env", "PATCH", f"{ENV}/nodes/1/resources/astute/values/keys/delete", [["a"], ["b"]]),
    ("env", "PUT", ENV, {"name": "prod", "hierarchy_levels": ["role", "nodes"]}),
    ("env", "PATCH", ENV, {"hierarchy_levels": ["nodes"], "merge": "shallow"}),
    ("env", "PUT", f"{ENV}/hierarchy_levels/nodes", {"name": "hosts"}),
]


def test_each_write_request_is_exactly_one_commit(fuel_store, client):
    catalog = fuel_store.catalog()
    env = fuel_store.environment_repo(1)
    for repo_name, method, url, body in WRITES:
        counts = (commit_count(catalog), commit_count(env))
        response = client.open(url, method=method, json=body)
        assert response.status_code in (200, 201, 204), (url, response.get_data(as_text=True))
        expected = (
            (counts[0] + 1, counts[1]) if repo_name == "catalog" else (counts[0], counts[1] + 1)
        )
        assert (commit_count(catalog), commit_count(env)) == expected, (method, url)
        repo = catalog if repo_name == "catalog" else env
        assert response.headers["X-Gitstore-Commit"] == repo.head(), (method, url)


def test_creating_an_environment_is_one_commit_and_touches_no_other_repo(fuel_store, client):
    catalog_before = commit_count(fuel_store.catalog())
    env_before = commit_count(fuel_store.environment_repo(1))
    assert client.post(f"{API}/environments", json={"components": [1]}).status_code == 201
    assert commit_count(fuel_store.environment_repo(2)) == 1
    assert commit_count(fuel_store.catalog()) == catalog_before
    assert commit_count(fuel_store.environment_repo(1)) == env_before


@pytest.mark.parametrize(
    "url, body, message",
    [
        (
            f"{ENV}/nodes/1/resources/astute/values",
            {"a": 1, "b": 2, "c": 3},
            "config: set nodes/1 astute values (3 keys)",
        ),
        (
            f"{ENV}/resources/override/plugins/overrides",
            {"a": 1},
            "config: set global override/plugins overrides (1 keys)",
        ),
        (
            f"{ENV}/nodes/2/resources/globals/values/keys/set",
            [["a", "b", 1]],
            "config: set nodes/2 globals values keys a.b",
        ),
    ],
)
def test_commit_messages_say_what_changed(fuel_store, client, url, body, message):
    client.put(url, json=body)
    repo = fuel_store.environment_repo(1)
    assert repo.commit_info(repo.head()).message == message


def test_a_failed_write_makes_no_commit(fuel_store, client):
    env = fuel_store.environment_repo(1)
    before = commit_count(env)
    client.put(f"{ENV}/nodes/1/resources/astute/values", json=[1])
    client.put(f"{ENV}/nodes/1/resources/astute/values/keys/delete", json=[["missing"]])
    client.put(ENV, json={"hierarchy_levels": ["global"]})
    client.put(f"{ENV}/hierarchy_levels/nodes", json={"name": "resources"})
    assert commit_count(env) == before
