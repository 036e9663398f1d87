"""A JSON body with a field its route does not declare is a 400 naming the field, and nothing
is stored (docs/api.md, "Request bodies"); Nailgun's documented fields are still taken."""

from __future__ import annotations

import pytest
from error_shape import assert_error

API = "/api/v1"
ENV = f"{API}/config/environments/1"
UNKNOWN = {"frobnicate_level": 3}
RELEASE = {"name": "seed", "version": "1", "operating_system": "Ubuntu"}
BODIES = {"releases": RELEASE, "plugins": {"name": "seed", "version": "1"}}


@pytest.fixture
def release(client, fuel_store):
    """Release 1 (`seed`, one role with a primary tag) used by environment 1."""
    body = {
        **RELEASE,
        "roles_metadata": {"controller": {"name": "Controller", "tags": ["controller"]}},
        "tags_metadata": {"controller": {"has_primary": True}},
    }
    assert client.post(f"{API}/releases", json=body).status_code == 201
    fuel_store.environments.update(1, {"release": 1})
    return 1


def _refused(response, field: str = "frobnicate_level") -> None:
    body = assert_error(response, 400, repr(field))
    assert "known fields: " in body["message"]  # the fields it does take


@pytest.mark.parametrize("owners", ["releases", "plugins"])
def test_a_release_or_plugin_with_an_unknown_field_is_refused(client, catalog_commits, owners):
    before = catalog_commits()
    _refused(client.post(f"{API}/{owners}", json={**BODIES[owners], **UNKNOWN}))
    assert client.post(f"{API}/{owners}", json=BODIES[owners]).status_code == 201
    for method in (client.put, client.patch):
        _refused(method(f"{API}/{owners}/1", json=UNKNOWN))
    assert catalog_commits() == before + 1
    assert "frobnicate_level" not in client.get(f"{API}/{owners}/1").get_json()


def test_nailguns_documented_release_and_plugin_fields_are_kept_as_given(client):
    modes = {"ha_compact": {"description": "HA"}}
    created = client.post(
        f"{API}/releases", json={**RELEASE, "modes_metadata": modes, "is_deployable": True}
    )
    assert created.status_code == 201, created.get_json()
    assert client.get(f"{API}/releases/1").get_json()["modes_metadata"] == modes
    plugin = {
        **BODIES["plugins"],
        "title": "Seed plugin",
        "fuel_version": ["9.0"],
        "package_version": "4",
    }
    assert client.post(f"{API}/plugins", json=plugin).status_code == 201


@pytest.mark.parametrize("owner", ["releases/1", "clusters/1"])
def test_a_tag_with_an_unknown_field_is_refused(client, release, owner):
    tag = {"name": "swift", "meta": {"has_primary": False}}
    _refused(client.post(f"{API}/{owner}/tags/", json={**tag, **UNKNOWN}))
    assert client.post(f"{API}/{owner}/tags/", json=tag).status_code == 201
    _refused(client.put(f"{API}/{owner}/tags/swift", json={**tag, **UNKNOWN}))
    shown = client.get(f"{API}/{owner}/tags/swift").get_json()
    assert client.put(f"{API}/{owner}/tags/swift", json=shown).status_code == 200  # a GET's echo


def test_cluster_roles_with_an_unknown_field_are_refused(client, release):
    roles = client.get(f"{API}/clusters/1/roles").get_json()
    _refused(client.put(f"{API}/clusters/1/roles", json={"roles_metadata": {}, **UNKNOWN}))
    assert client.get(f"{API}/clusters/1/roles").get_json() == roles


@pytest.mark.parametrize("method", ["post", "put", "patch"])
def test_a_graph_with_an_unknown_field_is_refused(client, release, method):
    url = f"{API}/releases/1/deployment_graphs/default"
    if method != "post":
        assert client.post(url, json={"tasks": []}).status_code == 201
    _refused(getattr(client, method)(url, json={"tasks": [], **UNKNOWN}))
    graph = {"name": "deploy", "node_filter": "$.pending_deletion = false", "tasks": []}
    assert getattr(client, method)(url, json=graph).status_code == (
        201 if method == "post" else 200
    )


def test_a_batch_of_documents_with_an_unknown_field_is_refused(client, env_commits):
    before = env_commits()
    item = {"resource": "astute", "document": {"a": 1}}
    _refused(client.put(f"{ENV}/documents", json={"documents": [item], **UNKNOWN}))
    _refused(client.put(f"{ENV}/documents", json={"documents": [{**item, **UNKNOWN}]}))
    assert env_commits() == before


def test_an_encrypt_body_with_an_unknown_field_names_it(client):
    body = {"path": "global/values/astute.yaml", "document": {}, **UNKNOWN}
    _refused(client.post(f"{ENV}/secrets/encrypt", json=body))
