"""`POST /clusters/<seed>/upgrade/assign` and `.../upgrade/vips`: nodes move with their ids and
addresses; every error code of the seed's API."""

from __future__ import annotations

import pytest

from .conftest import API, NETWORK, ORIGINAL, SEED, assert_error

ASSIGN = f"{API}/clusters/{SEED}/upgrade/assign"


def nodes_of(api, env_id: int) -> dict[int, dict]:
    return {n["id"]: n for n in api.get(f"{API}/clusters/{env_id}/nodes").get_json()}


def test_controllers_move_with_their_ids_roles_and_addresses(seeded_api):
    before = nodes_of(seeded_api, ORIGINAL)
    response = seeded_api.post(ASSIGN, json={"nodes_ids": [1, 2], "reprovision": False})
    assert response.status_code == 200, response.get_json()
    moved = {n["id"]: n for n in response.get_json()}
    assert sorted(moved) == [1, 2]
    seed_nodes, original_nodes = nodes_of(seeded_api, SEED), nodes_of(seeded_api, ORIGINAL)
    assert sorted(seed_nodes) == [1, 2] and sorted(original_nodes) == [3]
    for node_id in (1, 2):
        node = seed_nodes[node_id]
        assert node["cluster"] == SEED and node["fqdn"] == before[node_id]["fqdn"]
        assert node["ip_addresses"] == before[node_id]["ip_addresses"]
        assert node["roles"] == ["controller"] and node["pending_roles"] == []
        assert node["status"] == "ready"
    primaries = [n for n in seed_nodes.values() if "primary-controller" in n["tags"]]
    assert len(primaries) == 1  # the seed elected its own primary controller


def test_with_reprovision_roles_become_pending(seeded_api):
    response = seeded_api.post(ASSIGN, json={"nodes_ids": [3], "roles": ["compute", "cinder"]})
    assert response.status_code == 200, response.get_json()
    node = nodes_of(seeded_api, SEED)[3]
    assert node["roles"] == [] and node["pending_roles"] == ["compute", "cinder"]
    assert node["pending_addition"] is True and node["status"] == "discover"
    assert node["ip_addresses"] == {"management": "192.168.0.13/24", "public": "172.16.0.13/24"}


def test_a_node_in_error_after_a_failed_deployment_moves(seeded_api):
    seeded_api.patch(
        f"{API}/clusters/{ORIGINAL}/nodes/3", json={"status": "error", "error_type": "deploy"}
    )
    response = seeded_api.post(ASSIGN, json={"nodes_ids": [3], "reprovision": False})
    assert response.status_code == 200, response.get_json()


def test_the_commits_name_the_move_on_both_sides(seeded_api, seeded_store):
    seeded_api.post(ASSIGN, json={"nodes_ids": [3]})
    seed_log = seeded_store.environment_repo(SEED).commit_info(
        seeded_store.environment_repo(SEED).head()
    )
    original_log = seeded_store.environment_repo(ORIGINAL).commit_info(
        seeded_store.environment_repo(ORIGINAL).head()
    )
    assert "move nodes 3 in from environment 1" in seed_log.message
    assert "move nodes 3 out to environment 2" in original_log.message
    assert seed_log.message.split("(move ")[1] == original_log.message.split("(move ")[1]
    assert seeded_store.moves.pending() == []


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "word"),
    [
        ({}, "nodes_ids"),
        ({"nodes_ids": []}, "nodes_ids"),
        ({"nodes_ids": ["1"]}, "nodes_ids"),
        ({"nodes_ids": [1, 1]}, "twice"),
        ({"nodes_ids": [1], "reprovision": "yes"}, "reprovision"),
        ({"nodes_ids": [1], "roles": "controller"}, "roles"),
        ({"nodes_ids": [1], "extra": 1}, "extra"),
    ],
)
def test_a_bad_body_is_400(shared_api, body, word):
    assert_error(shared_api.post(ASSIGN, json=body), 400, word)


def test_an_empty_body_is_400(shared_api):
    assert_error(shared_api.post(ASSIGN, data=""), 400, "empty")


def test_a_missing_node_is_404(shared_api):
    assert_error(shared_api.post(ASSIGN, json={"nodes_ids": [99]}), 404, "node 99")


def test_a_node_not_in_the_seeds_original_is_405(seeded_api, seeded_store):
    seeded_store.environments.create({"id": 5})
    seeded_store.nodes.create(5, {"fqdn": "stranger", "status": "ready"})
    body = assert_error(
        seeded_api.post(ASSIGN, json={"nodes_ids": [4]}), 405, "node 4", "environment 5"
    )
    assert "original" in body["message"]


@pytest.mark.parametrize(
    ("fields", "word"),
    [
        ({"status": "discover"}, "discover"),
        ({"status": "provisioning"}, "provisioning"),
        ({"status": "error", "error_type": "provision"}, "provision"),
    ],
)
def test_a_node_in_the_wrong_status_is_400(seeded_api, fields, word):
    seeded_api.patch(f"{API}/clusters/{ORIGINAL}/nodes/3", json=fields)
    assert_error(seeded_api.post(ASSIGN, json={"nodes_ids": [3]}), 400, "node 3", word)
    assert 3 in nodes_of(seeded_api, ORIGINAL) and 3 not in nodes_of(seeded_api, SEED)


def test_a_node_already_in_the_seed_is_400(seeded_api):
    assert seeded_api.post(ASSIGN, json={"nodes_ids": [3]}).status_code == 200
    assert_error(
        seeded_api.post(ASSIGN, json={"nodes_ids": [3]}), 400, "already", f"environment {SEED}"
    )


def test_a_role_unknown_in_the_seed_is_409(shared_api):
    body = {"nodes_ids": [3], "roles": ["compute", "no-such-role"]}
    assert_error(shared_api.post(ASSIGN, json=body), 409, "no-such-role")
    assert 3 in nodes_of(shared_api, ORIGINAL) and 3 not in nodes_of(shared_api, SEED)


def test_conflicting_roles_are_400(shared_api):
    body = {"nodes_ids": [3], "roles": ["compute", "ironic"]}  # Newton: ironic conflicts
    assert_error(shared_api.post(ASSIGN, json=body), 400, "conflicts")


def test_nodes_with_different_role_sets_are_400(shared_api):
    assert_error(shared_api.post(ASSIGN, json={"nodes_ids": [1, 3]}), 400, "different roles")


def test_a_roles_override_still_needs_one_shared_role_set(shared_api):
    body = {"nodes_ids": [1, 3], "roles": ["compute"]}  # a controller and a compute
    assert_error(shared_api.post(ASSIGN, json=body), 400, "different roles", "node 1", "3")


def test_assigning_to_an_environment_that_is_not_a_seed_is_400(shared_api):
    assert_error(
        shared_api.post(f"{API}/clusters/{ORIGINAL}/upgrade/assign", json={"nodes_ids": [3]}),
        400,
        "original",
        f"{SEED}",
    )
    assert_error(
        shared_api.post(f"{API}/clusters/{ORIGINAL}/upgrade/assign", json={"nodes_ids": [3]}),
        400,
        "seed",
    )


def test_a_network_the_seed_lacks_is_400_naming_it(seeded_api):
    network = {**NETWORK, "networks": NETWORK["networks"][:1], "vips": NETWORK["vips"][1:]}
    assert seeded_api.put(f"{API}/clusters/{SEED}/network", json=network).status_code == 200
    body = {"nodes_ids": [3], "reprovision": False}
    assert_error(seeded_api.post(ASSIGN, json=body), 400, "public", "node 3")


# -- VIPs -----------------------------------------------------------------------------------
def test_vips_of_the_original_are_copied_into_the_seed(seeded_api):
    seeded_api.put(f"{API}/clusters/{SEED}/network", json={**NETWORK, "vips": []})
    response = seeded_api.post(f"{API}/clusters/{SEED}/upgrade/vips")
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == NETWORK["vips"]
    assert seeded_api.get(f"{API}/clusters/{SEED}/network").get_json()["vips"] == NETWORK["vips"]


def test_vips_without_a_relation_or_on_the_original_are_400(seeded_api, seeded_store):
    assert_error(
        seeded_api.post(f"{API}/clusters/{ORIGINAL}/upgrade/vips"),
        400,
        "original",
        f"environment {SEED}",
    )
    seeded_store.environments.create({"id": 7})
    assert_error(seeded_api.post(f"{API}/clusters/7/upgrade/vips"), 400, "not an upgrade seed")
