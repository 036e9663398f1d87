"""`/releases/<id>/settings`, `/releases/<id>/upgrade_rules`, `/clusters/<id>/settings` and
`/clusters/<id>/network`, and who may use the upgrade routes."""

from __future__ import annotations

import base64

import pytest

from gitstore.access.policy import AccessFile, parse_grants

from .conftest import (
    API,
    DB_PASSWORD,
    NETWORK,
    NEW,
    ORIGINAL,
    SEED,
    assert_error,
)

SETTINGS = f"{API}/clusters/{ORIGINAL}/settings"


# -- releases -------------------------------------------------------------------------------
def test_release_settings_read_back_as_written(api, fuel_release):
    response = api.get(f"{API}/releases/{NEW}/settings")
    assert response.status_code == 200
    assert response.get_json() == fuel_release["attributes_metadata"]
    body = {"editable": {"common": {"debug": {"value": True}}}}
    changed = api.put(f"{API}/releases/{NEW}/settings", json=body)
    assert changed.status_code == 200, changed.get_json()
    assert changed.get_json() == {**body, "generated": {}}


@pytest.mark.parametrize(
    ("body", "word"),
    [
        ({"editable": []}, "editable"),
        ({"defaults": {}}, "defaults"),
        ({"editable": {"common": 3}}, "common"),
        ([], "object"),
    ],
)
def test_bad_release_settings_are_400(shared_api, body, word):
    assert_error(shared_api.put(f"{API}/releases/{NEW}/settings", json=body), 400, word)


def test_settings_of_a_missing_release_are_404(shared_api):
    assert_error(shared_api.get(f"{API}/releases/42/settings"), 404, "42")
    assert_error(shared_api.put(f"{API}/releases/42/upgrade_rules", json={"rules": []}), 404, "42")


def test_upgrade_rules_read_back_and_are_checked(api):
    rules = api.get(f"{API}/releases/{NEW}/upgrade_rules").get_json()["rules"]
    assert rules[0] == {
        "since": "10.0",
        "op": "text_to_list",
        "path": "editable.external_dns.dns_list",
    }
    new = {
        "rules": [{"since": "10.0", "op": "rename", "path": "editable.a.b", "to": "editable.a.c"}]
    }
    assert api.put(f"{API}/releases/{NEW}/upgrade_rules", json=new).get_json() == new
    bad = {"rules": [{"since": "10.0", "op": "rename", "path": "editable.a.b"}]}
    assert_error(api.put(f"{API}/releases/{NEW}/upgrade_rules", json=bad), 400, "rules[0]", "to")


# -- cluster settings -----------------------------------------------------------------------
def test_generated_settings_are_masked_unless_revealed(shared_api):
    masked = shared_api.get(SETTINGS)
    assert masked.get_json()["generated"]["keystone"]["db_password"] == "******"
    assert DB_PASSWORD not in masked.get_data(as_text=True)
    revealed = shared_api.get(SETTINGS + "?reveal=1").get_json()
    assert revealed["generated"]["keystone"]["db_password"] == DB_PASSWORD


def test_a_masked_credential_sent_back_is_kept(api):
    document = api.get(SETTINGS).get_json()
    document["editable"]["common"]["debug"]["value"] = True
    response = api.put(SETTINGS, json=document)
    assert response.status_code == 200, response.get_json()
    revealed = api.get(SETTINGS + "?reveal=1").get_json()
    assert revealed["generated"]["keystone"]["db_password"] == DB_PASSWORD
    assert revealed["editable"]["common"]["debug"]["value"] is True


def test_a_part_left_out_is_unchanged(api):
    before = api.get(SETTINGS + "?reveal=1").get_json()
    api.put(SETTINGS, json={"editable": {"common": {"debug": {"value": True}}}})
    after = api.get(SETTINGS + "?reveal=1").get_json()
    assert after["generated"] == before["generated"]
    assert after["editable"] == {"common": {"debug": {"value": True}}}


@pytest.mark.parametrize(
    ("body", "word"),
    [
        ({"generated": "x"}, "generated"),
        ({"editable": {"a": []}}, "'a'"),
        ({"attributes": {}}, "attributes"),
    ],
)
def test_bad_cluster_settings_are_400(shared_api, body, word):
    assert_error(shared_api.put(SETTINGS, json=body), 400, word)


# -- network --------------------------------------------------------------------------------
def test_the_network_reads_back_as_written(api):
    response = api.get(f"{API}/clusters/{ORIGINAL}/network")
    assert response.status_code == 200 and response.get_json() == NETWORK
    empty = api.put(f"{API}/clusters/{ORIGINAL}/network", json={})
    assert empty.get_json() == {"node_groups": [], "networks": [], "vips": []}


def _network(**change) -> dict:
    network = {key: [dict(item) for item in NETWORK[key]] for key in NETWORK}
    for path, value in change.items():
        field, index, key = path.split("__")
        network[field][int(index)][key] = value
    return network


@pytest.mark.parametrize(
    ("body", "word"),
    [
        (_network(networks__0__cidr="192.168.0.0/33"), "networks[0].cidr"),
        (_network(networks__1__gateway="gw"), "networks[1].gateway"),
        (_network(networks__0__vlan=5000), "networks[0].vlan"),
        (_network(networks__0__node_group="other"), "node_group"),
        (_network(networks__0__ip_ranges=[["192.168.0.1"]]), "networks[0].ip_ranges"),
        (_network(vips__0__network="storage"), "vips[0].network"),
        (_network(vips__1__name="vrouter_pub"), "given twice"),
        (_network(networks__0__colour="red"), "colour"),
        ({"networks": {}}, "networks"),
        ({"node_groups": [{"name": "a"}, {"name": "a"}]}, "given twice"),
    ],
)
def test_a_bad_network_is_400_naming_the_part(shared_api, body, word):
    assert_error(shared_api.put(f"{API}/clusters/{ORIGINAL}/network", json=body), 400, word)


# -- who may ---------------------------------------------------------------------------------
def _auth(user: str) -> dict:
    raw = base64.b64encode(f"{user}:{user}-password".encode()).decode()
    return {"Authorization": f"Basic {raw}"}


@pytest.fixture
def guarded(seeded_store, seeded_api):
    access = AccessFile(seeded_store.root)
    for name, grants in {
        "seed_writer": ["writer:env:2"],
        "both": ["writer:env:1", "writer:env:2"],
        "env_writer": ["writer:env:1"],
        "store_writer": ["writer"],
        "reader": ["reader"],
    }.items():
        access.add_user(name, parse_grants(grants), f"{name}-password")
    return seeded_api


def test_moving_nodes_needs_writer_on_the_original_too(guarded):
    body = {"nodes_ids": [3]}
    assign = f"{API}/clusters/{SEED}/upgrade/assign"
    assert_error(
        guarded.post(assign, json=body, headers=_auth("seed_writer")), 403, "environment 1"
    )
    assert guarded.post(assign, json=body, headers=_auth("both")).status_code == 200


def test_cloning_creates_an_environment_so_needs_writer_on_the_store(guarded):
    clone = f"{API}/clusters/{ORIGINAL}/upgrade/clone"
    body = {"name": "x", "release_id": NEW}
    assert_error(guarded.post(clone, json=body, headers=_auth("env_writer")), 403, "store")


def test_revealing_settings_needs_the_secrets_role(guarded):
    assert_error(guarded.get(SETTINGS + "?reveal=1", headers=_auth("reader")), 403, "secrets")
    masked = guarded.get(SETTINGS, headers=_auth("reader"))
    assert masked.status_code == 200
