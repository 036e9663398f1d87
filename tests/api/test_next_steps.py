"""The common refusals name one next step: the command or request that gets past them."""

from __future__ import annotations

from error_shape import assert_error

API = "/api/v1"
ENV = f"{API}/config/environments/1"
ASTUTE = f"{ENV}/nodes/1/resources/astute/values"


def test_an_unknown_node_names_the_command_that_adds_it_to_the_inventory(client, inventory):
    assert_error(
        client.get(f"{ENV}/nodes/4/resources/astute/values"),
        404,
        "cannot find node '4' in environment 1",
        "gitstore node create --env 1 --fqdn FQDN",
        "POST /api/v1/clusters/1/nodes",
    )
    assert_error(client.get(f"{API}/clusters/1/nodes/77"), 404, "gitstore node list --env 1")


def test_an_unknown_node_without_inventory_names_the_facts_upload(client):
    assert_error(
        client.get(f"{ENV}/nodes/4/resources/astute/values"),
        404,
        "gitstore facts upload --env 1 --node 4",
    )


def test_an_unknown_environment_names_the_command_that_creates_it(client):
    for url in (f"{API}/config/environments/9", f"{API}/config/environments/9/history"):
        assert_error(
            client.get(url), 404, "environment 9 does not exist", "gitstore env create --id 9"
        )


def test_a_level_off_the_hierarchy_names_how_to_add_it_or_order_it(client):
    assert_error(
        client.get(f"{ENV}/role/x/resources/astute/values"),
        404,
        "expected 'nodes'",
        "gitstore env update 1 --levels nodes,role",
    )
    assert_error(
        client.get(f"{ENV}/hierarchy_levels/role"),
        404,
        "no hierarchy level 'role'",
        "gitstore env update 1 --levels nodes,role",
    )
    client.put(ENV, json={"hierarchy_levels": ["role", "nodes"]})
    assert_error(
        client.get(f"{ENV}/nodes/1/resources/astute/values"), 404, "--level role=...,nodes=..."
    )


def test_an_unknown_resource_names_how_to_define_or_attach_it(client, fuel_store):
    assert_error(
        client.get(f"{ENV}/resources/nosuch/values"),
        404,
        "gitstore def create --component fuel --name nosuch",
    )
    fuel_store.components.create({"name": "extra", "resource_definitions": [{"name": "more"}]})
    assert_error(
        client.get(f"{ENV}/resources/more/values"),
        404,
        "gitstore env update 1 --components fuel,extra",
    )


def test_unknown_catalog_entities_name_their_listing(client):
    assert_error(client.get(f"{API}/config/components/99"), 404, "gitstore component list")
    assert_error(client.get(f"{API}/config/resource_definitions/99"), 404, "gitstore def list")
    assert_error(client.get(f"{API}/releases/9"), 404, "GET /api/v1/releases")
    assert_error(client.get(f"{API}/plugins/9"), 404, "GET /api/v1/plugins")


def test_an_unknown_version_names_the_history(client):
    assert_error(
        client.get(f"{ENV}/resources/astute/values?version=999"),
        404,
        "unknown version '999' in environment 1",
        "gitstore config history --env 1",
    )


def test_an_unknown_key_names_how_to_see_the_keys(client):
    client.put(f"{ENV}/resources/astute/values", json={"a": 1})
    deleted = client.patch(f"{ENV}/resources/astute/values/keys/delete", json=[["nosuch"]])
    assert_error(deleted, 409, "key 'nosuch' does not exist", "gitstore config get")


def test_a_stale_if_match_names_the_version_to_reread_at(client):
    url = f"{ENV}/resources/astute/values"
    client.put(url, json={"a": 1})
    first = client.get(url).headers["X-Gitstore-Version"]
    client.put(url, json={"a": 2})
    now = client.get(url).headers["X-Gitstore-Version"]
    stale = client.put(url, json={"a": 3}, headers={"If-Match": first})
    assert_error(stale, 412, "read it again", f"--if-version {now}")
    unknown = client.put(url, json={"a": 3}, headers={"If-Match": "nosuch"})
    assert_error(unknown, 412, "names no version", "X-Gitstore-Version")


def test_a_document_that_is_no_mapping_names_the_key_write(client):
    refused = client.put(f"{ENV}/resources/astute/values", json=[1, 2])
    assert_error(refused, 400, '{"key": "value"}', "keys/set")


def test_an_unknown_tag_names_the_tag_listing(client, fuel_store):
    fuel_store.releases.create({"name": "r", "version": "1", "operating_system": "Ubuntu"})
    fuel_store.environments.update(1, {"release": "r"})
    assert_error(client.get(f"{API}/clusters/1/tags/nope"), 404, "gitstore tag list --env 1")
    assert_error(client.get(f"{API}/releases/1/tags/nope"), 404, "gitstore tag list --release 1")


def test_an_unknown_graph_type_names_the_graph_listing(client, fuel_store):
    fuel_store.releases.create({"name": "r", "version": "1", "operating_system": "Ubuntu"})
    missing = client.get(f"{API}/releases/1/deployment_graphs/nope")
    assert_error(missing, 404, "gitstore graph list --release 1")
