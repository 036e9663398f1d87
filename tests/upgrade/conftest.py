"""Fixtures of the upgrade tests: Fuel's Newton release and an older one, and an original
environment as an operator would have it (settings, credentials, networks, VIPs, ConfigDB data,
a cluster graph and three deployed nodes).

The stores are built once per session and copied directory by directory for each test: a
store is plain files (bare repositories, keyring), so a copy is a real, independent store.
"""

from __future__ import annotations

import copy
import os
import shutil
from pathlib import Path

import pytest
import yaml
from error_shape import assert_error  # noqa: F401 - the tests here import it from this module
from fuel_data import RELEASE, RELEASE_FIELDS

from gitstore import Store
from gitstore.api import create_app
from gitstore.upgrade.settings import generate

FUEL_RELEASE = RELEASE
API = "/api/v1"
OLD, NEW = 1, 2  # release ids
ORIGINAL, SEED = 1, 2  # environment ids
SEED_NAME = "prod-newton"
FUEL_RESOURCES = ["astute", "globals", "override/plugins", "override/node"]
ADMIN_PASSWORD = "admin-pass-Orig1nal"
DB_PASSWORD = "keystone-db-Orig1nal"
NETWORK = {
    "node_groups": [{"name": "default"}],
    "networks": [
        {
            "name": "management",
            "node_group": "default",
            "cidr": "192.168.0.0/24",
            "gateway": None,
            "ip_ranges": [["192.168.0.1", "192.168.0.254"]],
            "vlan": 101,
            "meta": {"notation": "cidr"},
        },
        {
            "name": "public",
            "node_group": "default",
            "cidr": "172.16.0.0/24",
            "gateway": "172.16.0.1",
            "ip_ranges": [["172.16.0.2", "172.16.0.126"]],
            "vlan": None,
        },
    ],
    "vips": [
        {"name": "vrouter_pub", "network": "public", "ip": "172.16.0.3", "namespace": "vrouter"},
        {
            "name": "management",
            "network": "management",
            "ip": "192.168.0.2",
            "namespace": "haproxy",
        },
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
    editable["legacy"] = {
        "metadata": {"label": "Legacy"},
        "flag": {"type": "checkbox", "value": False},
    }
    return {"editable": editable, "generated": data["attributes_metadata"]["generated"]}


def build_original(store: Store, data: dict) -> None:
    """Releases 1 (Mitaka 9.0) and 2 (Newton 10.0) with settings and rules; environment 1 on
    Mitaka with settings, networks, ConfigDB data, a cluster graph and nodes 1-3 deployed."""
    store.components.create(
        {"name": "fuel", "resource_definitions": [{"name": n} for n in FUEL_RESOURCES]}
    )
    store.environments.create(
        {"id": ORIGINAL, "components": ["fuel"], "hierarchy_levels": ["nodes"]}
    )
    old, new = release_bodies(data)
    store.releases.create(old)
    store.releases.create(new)
    store.settings.put_release_settings(OLD, old_settings(data))
    store.settings.put_release_settings(NEW, data["attributes_metadata"])
    store.settings.put_upgrade_rules(
        NEW,
        {
            "rules": [
                {"since": "10.0", "op": "text_to_list", "path": "editable.external_dns.dns_list"},
                {"since": "9.0", "op": "set", "path": "editable.common.debug.value", "value": True},
            ]
        },
    )
    store.environments.update(ORIGINAL, {"release": OLD, "name": "prod"})
    store.settings.put_cluster_settings(ORIGINAL, original_settings(data))
    store.networks.put(ORIGINAL, NETWORK)
    store.config.put(ORIGINAL, [], "astute", "values", {"deployment_id": 1, "uid": "1"})
    store.config.put(
        ORIGINAL,
        [],
        "astute",
        "overrides",
        {"debug": True, "rabbit": {"password": "rabbit-Orig1nal"}},
    )
    store.config.put(ORIGINAL, [("nodes", "1")], "astute", "overrides", {"role": "primary"})
    store.config.put(ORIGINAL, [("nodes", "1")], "astute", "values", {"fqdn": "node-1"})
    store.graphs.create(
        "cluster",
        ORIGINAL,
        "upgrade-checks",
        {
            "tasks": [
                {
                    "id": "check-db",
                    "type": "shell",
                    "roles": ["controller"],
                    "parameters": {"cmd": "true"},
                }
            ]
        },
    )
    for index, (fqdn, role) in enumerate(NODES, start=1):
        store.nodes.create(
            ORIGINAL,
            {
                "fqdn": fqdn,
                "roles": [role],
                "status": "ready",
                "ip_addresses": {
                    "management": f"192.168.0.{10 + index}/24",
                    "public": f"172.16.0.{10 + index}/24",
                },
            },
        )


@pytest.fixture(scope="session")
def templates(tmp_path_factory, fuel_release) -> dict[str, Path]:
    """Store roots built once per session (copied by each test): `original` as
    `build_original` leaves it, `seeded` with environment 2 cloned from it into Newton."""
    with pytest.MonkeyPatch.context() as patch:
        home = tmp_path_factory.mktemp("template-home")
        for name in [n for n in os.environ if n.startswith(("GIT_", "GITSTORE_"))]:
            patch.delenv(name)
        patch.setenv("HOME", str(home))
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        base = tmp_path_factory.mktemp("templates")
        original = base / "original"
        build_original(Store.init(original), fuel_release)
        seeded = base / "seeded"
        shutil.copytree(original, seeded, symlinks=True)
        Store(seeded).upgrades.clone(ORIGINAL, {"name": SEED_NAME, "release_id": NEW})
    return {"original": original, "seeded": seeded}


def copy_store(template: Path, tmp_path: Path) -> Store:
    root = tmp_path / "store"
    shutil.copytree(template, root, symlinks=True)
    return Store(root)


@pytest.fixture
def upgrade_store(templates, tmp_path) -> Store:
    """A copy of the `original` template: nothing cloned yet."""
    return copy_store(templates["original"], tmp_path)


@pytest.fixture
def seeded_store(templates, tmp_path) -> Store:
    """A copy of the `seeded` template: environment 2 is the seed of environment 1."""
    return copy_store(templates["seeded"], tmp_path)


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
def seeded_api(seeded_store):
    return create_app({"TESTING": True}, store=seeded_store).test_client()


@pytest.fixture(scope="session")
def shared_api(templates, tmp_path_factory):
    """One app on one copy of the `seeded` template for the whole session: only for requests
    that change nothing (reads and refused writes), which need no store of their own."""
    store = copy_store(templates["seeded"], tmp_path_factory.mktemp("shared"))
    return create_app({"TESTING": True}, store=store).test_client()


@pytest.fixture
def seed(seeded_api) -> dict:
    """Environment 2 as the clone answered it."""
    return seeded_api.get(f"{API}/clusters/{SEED}").get_json()
