"""Fixtures of the upgrade tests: Fuel's Newton release and an older one, and an original
environment as an operator would have it (settings, credentials, networks, VIPs, ConfigDB data,
a cluster graph and three deployed nodes)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from gitstore.api import create_app
from gitstore.settings import generate

FUEL_RELEASE = Path("/work/shared/data/fuel/release-newton-10.0.yaml")
RELEASE_FIELDS = ("name", "version", "operating_system", "state", "description",
                  "roles_metadata", "tags_metadata")
API = "/api/v1"
OLD, NEW = 1, 2  # release ids
ORIGINAL = 1  # environment id
ADMIN_PASSWORD = "admin-pass-Orig1nal"
DB_PASSWORD = "keystone-db-Orig1nal"
NETWORK = {
    "node_groups": [{"name": "default"}],
    "networks": [
        {"name": "management", "node_group": "default", "cidr": "192.168.0.0/24",
         "gateway": None, "ip_ranges": [["192.168.0.1", "192.168.0.254"]], "vlan": 101,
         "meta": {"notation": "cidr"}},
        {"name": "public", "node_group": "default", "cidr": "172.16.0.0/24",
         "gateway": "172.16.0.1", "ip_ranges": [["172.16.0.2", "172.16.0.126"]], "vlan": None},
    ],
    "vips": [
        {"name": "vrouter_pub", "network": "public", "ip": "172.16.0.3", "namespace": "vrouter"},
        {"name": "management", "network": "management", "ip": "192.168.0.2",
         "namespace": "haproxy"},
    ],
}
NODES = [("node-1", "controller"), ("node-2", "controller"), ("node-3", "compute")]


@pytest.fixture(scope="session")
def fuel_release() -> dict:
    return yaml.safe_load(FUEL_RELEASE.read_text())


def release_bodies(data: dict) -> tuple[dict, dict]:
    """Mitaka (9.0, made from Newton) and Newton (10.0), both on Ubuntu."""
    new = {key: copy.deepcopy(data[key]) for key in RELEASE_FIELDS}
    old = {**copy.deepcopy(new), "name": "Mitaka on Ubuntu 14.04", "version": "mitaka-9.0"}
    return old, new


def old_settings(data: dict) -> dict:
    """Mitaka's defaults: Newton's, with the DNS list still a text field and a section Newton
    dropped."""
    editable = copy.deepcopy(data["attributes_metadata"]["editable"])
    editable["external_dns"]["dns_list"].update(type="text", value="")
    editable["legacy"] = {"metadata": {"label": "Legacy"}, "flag": {"type": "checkbox",
                                                                    "value": False}}
    return {"editable": editable, "generated": data["attributes_metadata"]["generated"]}


@pytest.fixture
def upgrade_store(fuel_store, fuel_release):
    """Releases 1 (Mitaka 9.0) and 2 (Newton 10.0) with settings and rules; environment 1
    on Mitaka with settings, networks, ConfigDB data, a graph and nodes 1-3 deployed."""
    store = fuel_store
    old, new = release_bodies(fuel_release)
    store.releases.create(old)
    store.releases.create(new)
    store.settings.put_release_settings(OLD, old_settings(fuel_release))
    store.settings.put_release_settings(NEW, fuel_release["attributes_metadata"])
    store.settings.put_upgrade_rules(NEW, {"rules": [
        {"since": "10.0", "op": "text_to_list", "path": "editable.external_dns.dns_list"},
        {"since": "9.0", "op": "set", "path": "editable.common.debug.value", "value": True},
    ]})
    store.environments.update(ORIGINAL, {"release": OLD, "name": "prod"})
    store.settings.put_cluster_settings(ORIGINAL, original_settings(fuel_release))
    store.networks.put(ORIGINAL, NETWORK)
    store.config.put(ORIGINAL, [], "astute", "values", {"deployment_id": 1, "uid": "1"})
    store.config.put(ORIGINAL, [], "astute", "overrides",
                     {"debug": True, "rabbit": {"password": "rabbit-Orig1nal"}})
    store.config.put(ORIGINAL, [("nodes", "1")], "astute", "overrides", {"role": "primary"})
    store.config.put(ORIGINAL, [("nodes", "1")], "astute", "values", {"fqdn": "node-1"})
    store.graphs.create("cluster", ORIGINAL, "upgrade-checks", {"tasks": [
        {"id": "check-db", "type": "shell", "roles": ["controller"],
         "parameters": {"cmd": "true"}}]})
    for index, (fqdn, role) in enumerate(NODES, start=1):
        store.nodes.create(ORIGINAL, {
            "fqdn": fqdn, "roles": [role], "status": "ready",
            "ip_addresses": {"management": f"192.168.0.{10 + index}/24",
                             "public": f"172.16.0.{10 + index}/24"}})
    return store


def original_settings(data: dict) -> dict:
    editable = generate(old_settings(data)["editable"])
    editable["external_dns"]["dns_list"]["value"] = "8.8.8.8, 8.8.4.4"
    editable["access"]["password"]["value"] = ADMIN_PASSWORD
    editable["common"]["puppet_debug"]["value"] = False
    editable["common"]["metadata"]["label"] = "Common (changed in the original)"
    editable["legacy"]["flag"]["value"] = True
    generated = generate(data["attributes_metadata"]["generated"])
    generated["keystone"]["db_password"] = DB_PASSWORD
    generated["only_in_original"] = {"token": "kept-Orig1nal"}
    return {"editable": editable, "generated": generated}


@pytest.fixture
def api(upgrade_store):
    return create_app({"TESTING": True}, store=upgrade_store).test_client()


@pytest.fixture
def seed(api) -> dict:
    """Environment 2: the seed of environment 1 in Newton."""
    response = api.post(f"{API}/clusters/{ORIGINAL}/upgrade/clone",
                        json={"name": "prod-newton", "release_id": NEW})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def assert_error(response, status: int, *words: str) -> dict:
    """An error in the one JSON shape with `status`, whose message names every word."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) <= {"status", "message", "errors"} and body["status"] == status
    for word in words:
        assert word in body["message"], (word, body["message"])
    return body
