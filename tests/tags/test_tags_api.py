"""`/api/v1/{releases|plugins|clusters}/<id>/tags/`: listing, merging, codes, deletion."""

from __future__ import annotations

from .conftest import API, CLUSTER, assert_error

RELEASE = f"{API}/releases/1"


def test_release_tags_list_and_single(api):
    listed = api.get(f"{RELEASE}/tags/").get_json()
    assert len(listed) == 13
    assert listed[0] == {
        "name": "controller",
        "meta": {"has_primary": True},
        "owner_type": "release",
        "owner_id": 1,
    }
    assert api.get(f"{RELEASE}/tags/mongo").get_json()["meta"] == {"has_primary": True}


def test_create_update_codes(api):
    created = api.post(f"{RELEASE}/tags/", json={"name": "swift", "meta": {"has_primary": False}})
    assert created.status_code == 201
    assert created.get_json() == {
        "name": "swift",
        "meta": {"has_primary": False},
        "owner_type": "release",
        "owner_id": 1,
    }
    assert_error(
        api.post(f"{RELEASE}/tags", json={"name": "swift", "meta": {"has_primary": True}}),
        409,
        "swift",
    )
    assert_error(
        api.post(f"{RELEASE}/tags", json={"name": "bad name", "meta": {"has_primary": True}}),
        400,
        "^[a-zA-Z0-9_-]+$",
    )
    assert_error(
        api.post(f"{RELEASE}/tags", json={"name": "x", "meta": {}}), 400, "meta.has_primary"
    )
    updated = api.put(
        f"{RELEASE}/tags/swift", json={"meta": {"has_primary": True, "label": "Swift"}}
    )
    assert updated.status_code == 200 and updated.get_json()["meta"]["label"] == "Swift"
    assert_error(
        api.put(f"{RELEASE}/tags/swift", json={"name": "other", "meta": {"has_primary": True}}),
        400,
        "renamed",
    )
    assert_error(api.get(f"{RELEASE}/tags/x"), 404, "Tag 'x' is not found for the release 1")
    assert_error(
        api.put(f"{RELEASE}/tags/x", json={"meta": {"has_primary": True}}),
        404,
        "Tag 'x' is not found for the release 1",
    )
    assert_error(api.delete(f"{CLUSTER}/tags/x"), 404, "Tag 'x' is not found for the cluster 1")
    assert_error(api.get(f"{API}/plugins/4/tags/"), 404, "plugin")


def test_cluster_list_merges_release_cluster_and_plugins(api):
    plugin = {
        "name": "contrail",
        "version": "5.0.0",
        "roles_metadata": {"contrail-db": {"name": "Contrail DB", "has_primary": True}},
        "tags_metadata": {"neutron": {"has_primary": False}},
    }
    assert api.post(f"{API}/plugins", json=plugin).status_code == 201
    api.patch(f"{API}/config/environments/1", json={"plugins": ["contrail"]})
    created = api.post(f"{CLUSTER}/tags", json={"name": "mysql", "meta": {"has_primary": True}})
    assert created.status_code == 201 and created.get_json()["owner_type"] == "cluster"
    api.post(f"{CLUSTER}/tags", json={"name": "compute", "meta": {"has_primary": True}})
    merged = {t["name"]: t for t in api.get(f"{CLUSTER}/tags").get_json()}
    assert merged["controller"]["owner_type"] == "release"
    assert merged["mysql"]["owner_type"] == "cluster"
    assert merged["compute"] == {
        "name": "compute",
        "meta": {"has_primary": True},
        "owner_type": "cluster",
        "owner_id": 1,
    }
    assert merged["neutron"]["owner_type"] == "plugin"  # plugins come last and win
    assert merged["contrail-db"]["meta"] == {"has_primary": True}  # a role without tags
    assert api.get(f"{CLUSTER}/roles").get_json()["contrail-db"]["tags"] == ["contrail-db"]
    # the single-tag routes see only the cluster's own tags
    assert_error(api.get(f"{CLUSTER}/tags/controller"), 404, "cluster 1")
    assert api.get(f"{CLUSTER}/tags/mysql").get_json()["meta"] == {"has_primary": True}
    plugin_tags = api.get(f"{API}/plugins/1/tags").get_json()
    # issue 22: the role without tags got its own name as a tag of the plugin, as in Nailgun
    assert [t["name"] for t in plugin_tags] == ["neutron", "contrail-db"]


def test_deleting_a_release_tag_strips_roles_and_primaries(api, add_node, tag_store):
    add_node("node-1", ["controller"])
    assert "rabbitmq" in api.get(f"{CLUSTER}/nodes/1").get_json()["primary_tags"]
    deleted = api.delete(f"{RELEASE}/tags/rabbitmq")
    assert deleted.status_code == 204
    controller = api.get(RELEASE).get_json()["roles_metadata"]["controller"]
    assert controller["tags"] == ["controller", "database", "keystone", "neutron"]
    node = api.get(f"{CLUSTER}/nodes/1").get_json()
    assert "rabbitmq" not in node["primary_tags"] and "rabbitmq" not in node["tags"]
    stored = tag_store.environment_repo(1).snapshot().read_yaml("inventory/nodes/1.yaml")
    assert "rabbitmq" not in stored["primary_tags"]  # committed, not only hidden


def test_cluster_defining_the_same_tag_keeps_its_primary(api, add_node, tag_store):
    api.post(f"{CLUSTER}/tags", json={"name": "keystone", "meta": {"has_primary": True}})
    roles = {"roles_metadata": {"identity": {"name": "Identity", "tags": ["keystone"]}}}
    assert api.put(f"{CLUSTER}/roles", json=roles).status_code == 200
    add_node("node-1", ["identity"])
    add_node("node-2", ["controller"])
    api.delete(f"{RELEASE}/tags/keystone")
    assert api.get(f"{CLUSTER}/nodes/1").get_json()["primary_tags"] == ["keystone"]
    assert "keystone" not in api.get(f"{CLUSTER}/nodes/2").get_json()["tags"]
    # deleting the cluster's tag now strips it from the cluster role and from the primary
    assert api.delete(f"{CLUSTER}/tags/keystone").status_code == 204
    assert api.get(f"{CLUSTER}/roles").get_json()["identity"]["tags"] == []
    node_1 = api.get(f"{CLUSTER}/nodes/1").get_json()
    assert node_1["primary_tags"] == [] and node_1["tags"] == ["identity"]
    snapshot = tag_store.environment_repo(1).snapshot()
    assert snapshot.read_yaml("inventory/roles.yaml")["roles_metadata"]["identity"]["tags"] == []


def test_cluster_roles_must_name_existing_tags(api, add_node):
    roles = {"roles_metadata": {"swift": {"tags": ["swift", "object-store"]}}}
    assert_error(
        api.put(f"{CLUSTER}/roles", json=roles),
        400,
        "Role swift contains non-existent tag object-store",
    )
    api.post(f"{CLUSTER}/tags", json={"name": "object-store", "meta": {"has_primary": True}})
    assert api.put(f"{CLUSTER}/roles", json=roles).status_code == 200
    swift = add_node("swift-1", ["swift"])
    assert swift["tags"] == ["swift", "object-store", "primary-object-store"]
    assert_error(api.put(f"{CLUSTER}/roles", json={"roles_metadata": {}}), 409, "swift")


def test_catalog_tag_changes_reelect_in_the_clusters_using_them(api, add_node):
    add_node("compute-1", ["compute"])
    assert api.get(f"{CLUSTER}/nodes/1").get_json()["primary_tags"] == []
    api.put(f"{RELEASE}/tags/compute", json={"meta": {"has_primary": True}})
    assert api.get(f"{CLUSTER}/nodes/1").get_json()["primary_tags"] == ["compute"]
    plugin = {
        "name": "lma",
        "version": "1.0.0",
        "roles_metadata": {"collector": {"tags": ["collector", "elastic"]}},
        "tags_metadata": {"collector": {"has_primary": True}, "elastic": {"has_primary": True}},
    }
    api.post(f"{API}/plugins", json=plugin)
    api.patch(f"{API}/config/environments/1", json={"plugins": ["lma"]})
    add_node("lma-1", ["collector"])
    assert api.get(f"{CLUSTER}/nodes/2").get_json()["primary_tags"] == ["collector", "elastic"]
    assert api.delete(f"{API}/plugins/1/tags/elastic").status_code == 204
    role = api.get(f"{API}/plugins/1").get_json()["roles_metadata"]["collector"]
    assert role["tags"] == ["collector"]
    node = api.get(f"{CLUSTER}/nodes/2").get_json()
    assert node["primary_tags"] == ["collector"] and node["tags"] == [
        "collector",
        "primary-collector",
    ]
