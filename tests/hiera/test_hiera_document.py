"""The node document (`GET /api/v1/hiera/<env>/<node>`) through the real Flask app."""

from __future__ import annotations

import pytest
import yaml
from short_ids import short_id

from gitstore import Store
from gitstore.access.policy import AccessFile, parse_grants
from gitstore.api import create_app
from gitstore.backend.changes import ChangeSet

from .conftest import AUTHOR, COMPUTE, CONTROLLER, FQDN, attach_newton, build_fuel_store

URL = "/api/v1/hiera/1"


@pytest.fixture(scope="module")
def fuel_root(tmp_path_factory):
    return build_fuel_store(tmp_path_factory.mktemp("hiera-document") / "store").root


@pytest.fixture
def client(fuel_root):
    """A test client of a store nobody writes to (writing tests use `writable`)."""
    return create_app({"TESTING": True}, store=Store(fuel_root)).test_client()


@pytest.fixture
def writable(tmp_path):
    store = build_fuel_store(tmp_path / "store")
    return store, create_app({"TESTING": True}, store=store).test_client()


def test_document_holds_every_resource_effective_at_the_node(client):
    response = client.get(f"{URL}/{COMPUTE}")
    assert response.status_code == 200
    doc = response.get_json()
    assert doc["environment"] == 1 and doc["node"] == COMPUTE and doc["fqdn"] == FQDN[COMPUTE]
    assert doc["levels"] == [["nodes", COMPUTE]]
    assert doc["commit"] == response.headers["X-Gitstore-Commit"]
    assert doc["version"] == int(response.headers["X-Gitstore-Version"])
    resources = doc["resources"]
    assert sorted(resources) == sorted(
        [
            "astute",
            "globals",
            "override/plugins",
            "override/node",
            "override/configuration/node",
            "override/configuration/role",
            "override/configuration/cluster",
        ]
    )
    assert resources["astute"]["uid"] == COMPUTE
    assert resources["override/node"] == {"libvirt_type": "lxc"}
    assert resources["globals"]["syslog_log_facility_nova"] == "LOG_LOCAL6"


def test_a_resource_without_data_at_the_node_is_empty(client):
    doc = client.get(f"{URL}/{CONTROLLER}").get_json()
    assert doc["resources"]["override/node"] == {}
    assert doc["resources"]["astute"]["uid"] == CONTROLLER


def test_node_by_fqdn_is_the_node_by_id(client):
    by_fqdn = client.get(f"{URL}/{FQDN[COMPUTE]}").get_json()
    by_id = client.get(f"{URL}/{COMPUTE}").get_json()
    assert by_fqdn == by_id


def test_resources_parameter_narrows_the_document(client):
    doc = client.get(f"{URL}/{COMPUTE}?resources=globals,override/node").get_json()
    assert list(doc["resources"]) == ["globals", "override/node"]


@pytest.mark.parametrize("value, named", [("globals,nope", "nope"), ("globals,,astute", "empty")])
def test_bad_resources_parameter_is_400_naming_it(client, value, named):
    response = client.get(f"{URL}/{COMPUTE}?resources={value}")
    assert response.status_code == 400
    assert named in response.get_json()["message"]


def test_unknown_node_is_404_marked_as_a_node(client):
    response = client.get(f"{URL}/node-9.test.domain.local")
    assert response.status_code == 404
    body = response.get_json()
    assert "node 'node-9.test.domain.local' is unknown in environment 1" in body["message"]
    assert body["errors"] == [{"key": "node", "value": "node-9.test.domain.local"}]


def test_unknown_environment_is_404_not_marked_as_a_node(client):
    response = client.get(f"/api/v1/hiera/99/{COMPUTE}")
    assert response.status_code == 404
    assert "errors" not in response.get_json()


def test_unknown_version_is_422_even_for_an_unknown_node(client):
    for node in (COMPUTE, "node-9"):
        response = client.get(f"{URL}/{node}?version=0badc0de")
        assert response.status_code == 422
        assert "unknown version '0badc0de'" in response.get_json()["message"]


def test_empty_version_is_400(client):
    response = client.get(f"{URL}/{COMPUTE}?version=")
    assert response.status_code == 400
    assert "'version' is empty" in response.get_json()["message"]


def test_pinned_version_serves_that_commit_and_is_immutable(writable):
    store, client = writable
    first = client.get(f"{URL}/{COMPUTE}")
    store.config.update_keys(
        1, [("nodes", COMPUTE)], "override/node", "values", "set", [["libvirt_type", "kvm"]], AUTHOR
    )
    sha = first.headers["X-Gitstore-Commit"]
    for pin in (sha, short_id(sha, 10), first.headers["X-Gitstore-Version"]):
        pinned = client.get(f"{URL}/{COMPUTE}?version={pin}")
        assert pinned.get_json()["resources"]["override/node"] == {"libvirt_type": "lxc"}
        assert pinned.get_json()["commit"] == sha
    # An open store reveals its secrets to everyone: the pinned document holds them, so it is
    # asked for again before each use rather than `immutable` (a pin's data never changes,
    # but who may read its secrets can).
    assert client.get(f"{URL}/{COMPUTE}?version={sha}").headers["Cache-Control"] == (
        "private, no-cache"
    )
    assert client.get(f"{URL}/{COMPUTE}").get_json()["resources"]["override/node"] == {
        "libvirt_type": "kvm"
    }


def test_etag_survives_an_unrelated_commit_and_changes_with_a_relevant_one(writable):
    store, client = writable
    first = client.get(f"{URL}/{COMPUTE}")
    etag = first.headers["ETag"]
    assert etag.startswith('W/"')
    store.config.update_keys(
        1, [("nodes", CONTROLLER)], "override/node", "values", "set", [["debug", True]], AUTHOR
    )
    again = client.get(f"{URL}/{COMPUTE}", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.headers["X-Gitstore-Commit"] != first.headers["X-Gitstore-Commit"]
    store.config.update_keys(
        1, [("nodes", COMPUTE)], "override/node", "values", "set", [["debug", True]], AUTHOR
    )
    changed = client.get(f"{URL}/{COMPUTE}", headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.get_json()["resources"]["override/node"]["debug"] is True


def test_gitstore_instances_groups_instance_tags_at_the_document_commit(writable):
    """Node 127 carries `database:2`, then node 125 (a controller) `database:1`, `rabbitmq:1`."""
    store, client = writable
    attach_newton(store)
    assert client.get(f"{URL}/{COMPUTE}").get_json()["gitstore_instances"] == {}
    store.tags.assign(1, COMPUTE, ["database:2"], AUTHOR)
    first = client.get(f"{URL}/{COMPUTE}")
    assert first.get_json()["gitstore_instances"] == {"database": {"2": [int(COMPUTE)]}}

    assigned = client.post(
        f"/api/v1/clusters/1/nodes/{CONTROLLER}/tags", json={"tags": ["database:1", "rabbitmq:1"]}
    )
    assert assigned.status_code == 200, assigned.get_json()
    # Only node 125's record changed: node 127's document changes through the section alone.
    changed = client.get(f"{URL}/{COMPUTE}", headers={"If-None-Match": first.headers["ETag"]})
    assert changed.status_code == 200
    grouping = {
        "database": {"1": [int(CONTROLLER)], "2": [int(COMPUTE)]},
        "rabbitmq": {"1": [int(CONTROLLER)]},
    }
    assert changed.get_json()["gitstore_instances"] == grouping
    assert client.get(f"{URL}/{FQDN[CONTROLLER]}").get_json()["gitstore_instances"] == grouping
    assert store.tags.all_instances(1) == grouping

    sha = first.headers["X-Gitstore-Commit"]
    pinned = client.get(f"{URL}/{COMPUTE}?version={sha}").get_json()
    assert pinned["gitstore_instances"] == {"database": {"2": [int(COMPUTE)]}}

    store.config.update_keys(
        1, [("nodes", CONTROLLER)], "override/node", "values", "set", [["debug", True]], AUTHOR
    )
    again = client.get(f"{URL}/{COMPUTE}", headers={"If-None-Match": changed.headers["ETag"]})
    assert again.status_code == 304
    assert again.headers["X-Gitstore-Commit"] != changed.headers["X-Gitstore-Commit"]


def test_per_resource_route_accepts_the_fqdn(client):
    path = "/api/v1/config/environments/1/nodes/{}/resources/override/node/values?effective"
    by_fqdn = client.get(path.format(FQDN[COMPUTE]))
    assert by_fqdn.status_code == 200
    assert (
        by_fqdn.get_json() == client.get(path.format(COMPUTE)).get_json() == {"libvirt_type": "lxc"}
    )


def test_levels_above_nodes_come_from_the_inventory_record(tmp_path):
    store = Store.init(tmp_path / "store")
    store.components.create({"name": "c", "resource_definitions": [{"name": "r"}]})
    store.environments.create({"id": 1, "components": ["c"], "hierarchy_levels": ["rack", "nodes"]})
    store.config.put(1, [], "r", "values", {"a": "global", "b": "global"})
    store.config.put(1, [("rack", "r2")], "r", "values", {"a": "rack", "b": "rack"})
    store.config.put(1, [("rack", "r2"), ("nodes", "7")], "r", "values", {"b": "node"})

    def operation(snapshot):
        changes = ChangeSet("inventory: node 7 in rack r2, node 8 in no rack")
        changes.put("inventory/nodes/7.yaml", yaml.safe_dump({"id": 7, "rack": "r2"}).encode())
        changes.put("inventory/nodes/8.yaml", yaml.safe_dump({"id": 8}).encode())
        return changes

    store.environment_repo(1).update(operation, AUTHOR)
    seven = store.hiera.node_document(1, "7").data
    assert seven["levels"] == [["rack", "r2"], ["nodes", "7"]]
    assert seven["resources"]["r"] == {"a": "rack", "b": "node"}
    assert store.hiera.node_document(1, "8").data["resources"]["r"] == {
        "a": "global",
        "b": "global",
    }


def test_secrets_are_revealed_only_to_the_secrets_role(writable):
    """The Puppet master's user needs `secrets`; anyone else gets masks, named in a header."""
    store, client = writable
    access = AccessFile(store.root)
    access.add_user("puppet", parse_grants(["reader:env:1", "secrets:env:1"]), None)
    access.add_user("viewer", parse_grants(["reader:env:1"]), None)
    tokens = {user: access.create_token(user)[1] for user in ("puppet", "viewer")}

    def astute_as(user):
        response = client.get(
            f"{URL}/{COMPUTE}?resources=astute", headers={"Authorization": f"Bearer {tokens[user]}"}
        )
        assert response.status_code == 200
        return response, response.get_json()["resources"]["astute"]

    response, astute = astute_as("viewer")
    assert astute["access"]["password"] == "******"
    assert "resources.astute.access.password" in response.headers["X-Gitstore-Masked"]
    response, astute = astute_as("puppet")
    assert astute["access"]["password"] == "admin"
    assert "X-Gitstore-Masked" not in response.headers
    # No shared cache, and no use without asking the server again (a withdrawn `secrets`
    # role must reach the master): a pinned revealed document was `immutable` for a year.
    assert response.headers["Cache-Control"] == "private, no-cache"
    sha = response.headers["X-Gitstore-Commit"]
    pinned = client.get(
        f"{URL}/{COMPUTE}?resources=astute&version={sha}",
        headers={"Authorization": f"Bearer {tokens['puppet']}"},
    )
    assert pinned.headers["Cache-Control"] == "private, no-cache"
