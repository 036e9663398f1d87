"""`/api/v1/releases` and `/api/v1/plugins`: catalog entities with roles and tags."""

from __future__ import annotations

import yaml
from fuel_data import RELEASE

from gitstore.backend.changes import ChangeSet

from .conftest import API, assert_error


def test_release_round_trip_with_fuel_metadata(api, tag_store, newton):
    listed = api.get(f"{API}/releases").get_json()
    assert [r["name"] for r in listed] == ["Newton on Ubuntu 16.04"]
    release = api.get(f"{API}/releases/1").get_json()
    assert list(release)[:5] == ["id", "name", "version", "operating_system", "state"]
    assert release["roles_metadata"] == newton["roles_metadata"]
    assert release["tags_metadata"] == newton["tags_metadata"]
    snapshot = tag_store.catalog().snapshot()
    folder = "releases/Newton on Ubuntu 16.04"
    assert set(e.name for e in snapshot.list(folder)) == {"release.yaml", "roles.yaml", "tags.yaml"}
    assert "roles_metadata" not in snapshot.read_yaml(f"{folder}/release.yaml")


def test_create_allocates_ids_and_refuses_duplicates(api):
    body = {"name": "ocata", "version": "ocata-11.0", "operating_system": "Ubuntu"}
    created = api.post(f"{API}/releases", json=body)
    assert created.status_code == 201
    assert created.get_json()["id"] == 2 and created.get_json()["state"] == "available"
    assert created.headers["X-Gitstore-Commit"]
    assert_error(api.post(f"{API}/releases", json=body), 409, "ocata")
    assert_error(
        api.post(f"{API}/releases", json={"name": "x", "version": "1"}), 400, "operating_system"
    )
    assert_error(
        api.post(f"{API}/releases", json={**body, "name": "y", "state": "odd"}), 400, "state"
    )


def test_role_naming_a_missing_tag_is_refused(api):
    body = {
        "name": "r",
        "version": "1",
        "operating_system": "Ubuntu",
        "roles_metadata": {"controller": {"tags": ["controller", "mysql"]}},
    }
    assert_error(
        api.post(f"{API}/releases", json=body),
        400,
        "Role controller contains non-existent tag mysql",
    )
    body["tags_metadata"] = {"mysql": {"has_primary": "yes"}}
    assert_error(api.post(f"{API}/releases", json=body), 400, "has_primary")


def test_partial_update_rename_moves_the_folder_unless_used(api, tag_store):
    plugin = api.post(f"{API}/plugins", json={"name": "contrail", "version": "5.0.0"})
    assert plugin.status_code == 201 and plugin.get_json()["id"] == 1
    graph = "plugins/contrail/graphs/default.yaml"

    def add_graph(snapshot):
        changes = ChangeSet("add a plugin graph")
        changes.put(graph, b"tasks: []\n")
        return changes

    tag_store.catalog().update(add_graph, tag_store.default_author)
    renamed = api.patch(f"{API}/plugins/1", json={"name": "tungsten"})
    assert renamed.status_code == 200 and renamed.get_json()["version"] == "5.0.0"
    snapshot = tag_store.catalog().snapshot()
    assert snapshot.exists("plugins/tungsten/graphs/default.yaml")
    assert not snapshot.exists("plugins/contrail")
    api.patch(f"{API}/config/environments/1", json={"plugins": ["tungsten"]})
    assert_error(api.put(f"{API}/plugins/1", json={"name": "again"}), 409, "environments [1]")
    assert_error(api.delete(f"{API}/plugins/1"), 409, "tungsten")
    assert_error(api.delete(f"{API}/releases/1"), 409, "used by environments")
    assert_error(api.put(f"{API}/plugins/1", json={"id": 5}), 400, "id")


def test_delete_and_unknown_ids(api):
    created = api.post(f"{API}/plugins", json={"name": "p", "version": "1.0.0"}).get_json()
    deleted = api.delete(f"{API}/plugins/{created['id']}")
    assert deleted.status_code == 204
    assert_error(api.get(f"{API}/plugins/{created['id']}"), 404, "plugin")
    assert_error(api.patch(f"{API}/releases/9", json={"state": "available"}), 404, "release")


def test_environment_names_release_and_plugins_by_id_or_name(api):
    api.post(f"{API}/plugins", json={"name": "a", "version": "1"})
    api.post(f"{API}/plugins", json={"name": "b", "version": "1"})
    envs = f"{API}/config/environments"
    created = api.post(envs, json={"release": "Newton on Ubuntu 16.04", "plugins": [2, "a"]})
    assert created.status_code == 201
    assert created.get_json()["release"] == 1 and created.get_json()["plugins"] == [2, 1]
    cluster = api.get(f"{API}/clusters/{created.get_json()['id']}").get_json()
    assert cluster == created.get_json()
    assert_error(api.post(envs, json={"release": "nope"}), 404, "nope")
    assert_error(api.post(envs, json={"plugins": ["a", 1]}), 400, "twice")


def test_release_role_changes_reelect_in_clusters(api, add_node):
    add_node("node-1", ["compute"])
    release = api.get(f"{API}/releases/1").get_json()
    roles = release["roles_metadata"]
    roles["compute"]["tags"] = ["compute", "mongo"]
    assert api.patch(f"{API}/releases/1", json={"roles_metadata": roles}).status_code == 200
    node = api.get(f"{API}/clusters/1/nodes/1").get_json()
    assert node["tags"] == ["compute", "mongo", "primary-mongo"]
    assert node["primary_tags"] == ["mongo"]


# -- issue 22: bodies in Nailgun's shape -------------------------------------------------------
def test_a_release_with_nailgun_settings_is_refused_naming_the_field(api, newton):
    fixture = yaml.safe_load(RELEASE.read_text())  # Nailgun's fixture, settings included
    body = {**newton, "name": "n2", "attributes_metadata": fixture["attributes_metadata"]}
    assert_error(api.post(f"{API}/releases", json=body), 400, "attributes_metadata", "/settings")
    assert [r["name"] for r in api.get(f"{API}/releases").get_json()] == ["Newton on Ubuntu 16.04"]
    patch = {"attributes_metadata": {"editable": {}}}
    assert_error(api.patch(f"{API}/releases/1", json=patch), 400, "attributes_metadata")


def test_wrongly_typed_role_fields_are_400_naming_them(api):
    roles = {"roles_metadata": {"mine": {"name": "Mine", "has_primary": {}}}}
    assert_error(api.put(f"{API}/clusters/1/roles", json=roles), 400, "has_primary", "mine")
    roles = {"roles_metadata": {"mine": {"name": "Mine", "weight": "heavy"}}}
    assert_error(api.put(f"{API}/clusters/1/roles", json=roles), 400, "weight")
    good = {"roles_metadata": {"mine": {"name": "Mine", "has_primary": True, "weight": 3}}}
    assert api.put(f"{API}/clusters/1/roles", json=good).status_code == 200


def test_a_plugin_role_without_tags_is_tagged_with_its_name(api):
    roles = {
        "contrail-db": {"name": "Contrail DB", "has_primary": True},
        "contrail-ui": {"name": "Contrail UI"},
        "tagged": {"name": "Tagged", "tags": ["contrail-db"]},
    }
    created = api.post(
        f"{API}/plugins", json={"name": "contrail", "version": "5.0.0", "roles_metadata": roles}
    )
    assert created.status_code == 201, created.get_json()
    plugin = api.get(f"{API}/plugins/1").get_json()
    assert plugin["roles_metadata"]["contrail-db"]["tags"] == ["contrail-db"]
    assert plugin["roles_metadata"]["tagged"]["tags"] == ["contrail-db"]
    assert plugin["tags_metadata"] == {
        "contrail-db": {"has_primary": True},
        "contrail-ui": {"has_primary": False},
    }
