"""`POST /clusters/<orig>/upgrade/clone`: the seed's acceptance criteria, the cases of the
reference implementation (Nailgun's cluster_upgrade extension) and every error code."""

from __future__ import annotations

import subprocess

import pytest

from .conftest import (
    ADMIN_PASSWORD,
    API,
    DB_PASSWORD,
    NETWORK,
    NEW,
    OLD,
    ORIGINAL,
    SEED,
    assert_error,
    release_bodies,
)


def settings(api, env_id: int, reveal: bool = True) -> dict:
    response = api.get(f"{API}/clusters/{env_id}/settings" + ("?reveal=1" if reveal else ""))
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def git(store, env_id: int, *args: str) -> str:
    path = store.environment_path(env_id)
    return subprocess.run(
        ["git", "--git-dir", str(path), *args], check=True, capture_output=True, text=True
    ).stdout


# -- acceptance: the clone has the new release, the copied attributes and the relation -------
def test_the_seed_has_the_new_release_the_name_and_the_relation(seeded_api, seed):
    assert seed["id"] == SEED and seed["name"] == "prod-newton" and seed["release"] == NEW
    assert seed["upgrade"] == {"role": "seed", "peer": ORIGINAL}
    original = seeded_api.get(f"{API}/clusters/{ORIGINAL}").get_json()
    assert original["upgrade"] == {"role": "original", "peer": SEED}
    assert original["release"] == OLD
    status = seeded_api.get(f"{API}/clusters/{ORIGINAL}/upgrade").get_json()
    assert (status["role"], status["peer"], status["seed"]) == ("original", SEED, SEED)


def test_editable_values_are_copied_except_metadata(seeded_api, seed, fuel_release):
    mine = settings(seeded_api, SEED)["editable"]
    theirs = settings(seeded_api, ORIGINAL)["editable"]
    assert mine["access"]["password"]["value"] == ADMIN_PASSWORD
    assert mine["common"]["puppet_debug"]["value"] is False  # the original's, not the default
    assert (
        mine["common"]["metadata"]
        == (fuel_release["attributes_metadata"]["editable"]["common"]["metadata"])
    )
    assert theirs["common"]["metadata"]["label"] == "Common (changed in the original)"
    assert "legacy" in theirs and "legacy" not in mine  # only in the old release: dropped
    assert set(mine) == set(fuel_release["attributes_metadata"]["editable"])


def test_text_lists_are_migrated_by_the_rules_of_the_target_release(seeded_api, seed):
    dns = settings(seeded_api, SEED)["editable"]["external_dns"]["dns_list"]
    assert dns["type"] == "text_list" and dns["value"] == ["8.8.8.8", "8.8.4.4"]
    # a rule `since: 9.0` is for upgrades from before 9.0: the original already is 9.0
    assert settings(seeded_api, SEED)["editable"]["common"]["debug"]["value"] is False


def test_generated_credentials_are_equal_after_reveal(seeded_api, seed):
    mine = settings(seeded_api, SEED)["generated"]
    theirs = settings(seeded_api, ORIGINAL)["generated"]
    assert mine["keystone"]["db_password"] == DB_PASSWORD
    assert {k: v for k, v in mine.items() if k in theirs} == theirs
    assert mine["only_in_original"] == {"token": "kept-Orig1nal"}


def test_generated_credentials_are_masked_by_default_and_sealed_for_the_seed(
    seeded_api, seed, seeded_store
):
    response = seeded_api.get(f"{API}/clusters/{SEED}/settings")
    assert response.get_json()["generated"]["keystone"]["db_password"] == "******"
    assert "generated.keystone.db_password" in response.headers["X-Gitstore-Masked"]
    stored = git(seeded_store, SEED, "show", "main:settings/generated.yaml")
    assert DB_PASSWORD not in stored and "ENC[v1,aesgcm" in stored
    original = git(seeded_store, ORIGINAL, "show", "main:settings/generated.yaml")
    line = next(li for li in stored.splitlines() if "db_password" in li)
    assert line not in original  # re-sealed: bound to the seed's repository


def test_networks_node_groups_and_vips_are_equal(seeded_api, seed):
    mine = seeded_api.get(f"{API}/clusters/{SEED}/network").get_json()
    assert mine == seeded_api.get(f"{API}/clusters/{ORIGINAL}/network").get_json() == NETWORK


def test_overrides_and_graphs_are_kept_values_and_nodes_are_not(seeded_store, seed):
    view = seeded_store.environments.view(SEED)
    files = set(view.snapshot.walk())
    assert {
        "global/overrides/astute.yaml",
        "nodes/1/overrides/astute.yaml",
        "graphs/upgrade-checks.yaml",
    } <= files
    assert not any("/values/" in f or f.startswith("inventory/nodes/") for f in files)
    assert seeded_store.nodes.list(SEED).data == []
    override = seeded_store.config.read(SEED, [], "astute", "overrides", _reveal()).data
    assert override == {"debug": True, "rabbit": {"password": "rabbit-Orig1nal"}}


def _reveal():
    from gitstore.configdb.values import Query

    return Query(reveal=True)


def test_the_seed_history_starts_from_the_original(seeded_store, seed):
    original_head = git(seeded_store, ORIGINAL, "rev-parse", "main").strip()
    assert git(seeded_store, SEED, "rev-parse", "main~1").strip() == original_head
    log = git(seeded_store, SEED, "log", "--format=%s", "main")
    assert log.splitlines()[0] == (
        "environment 2: upgrade seed of environment 1 into release Newton on Ubuntu 16.04"
    )
    assert "environment 1: upgrade: record relation" in log
    stat = git(seeded_store, SEED, "diff", "--stat", "main~1", "main")
    assert "environment.yaml" in stat and "settings/editable.yaml" in stat


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "word"),
    [
        ({"name": "x"}, "release_id"),
        ({"release_id": NEW}, "name"),
        ({"name": "", "release_id": NEW}, "name"),
        ({"name": "x", "release_id": "2"}, "release_id"),
        ({"name": "x", "release_id": NEW, "mode": "ha"}, "mode"),
        ([1, 2], "object"),
    ],
)
def test_a_bad_body_is_400(shared_api, body, word):
    assert_error(shared_api.post(f"{API}/clusters/{ORIGINAL}/upgrade/clone", json=body), 400, word)


def test_an_empty_body_is_400(shared_api):
    assert_error(shared_api.post(f"{API}/clusters/{ORIGINAL}/upgrade/clone", data=""), 400, "empty")


def test_an_original_already_in_an_upgrade_is_400(shared_api):
    body = {"name": "again", "release_id": NEW}
    assert_error(
        shared_api.post(f"{API}/clusters/{ORIGINAL}/upgrade/clone", json=body),
        400,
        "already in an upgrade",
    )
    assert_error(
        shared_api.post(f"{API}/clusters/{SEED}/upgrade/clone", json=body),
        400,
        "already in an upgrade",
    )


def test_a_taken_name_is_409(api):
    body = {"name": "prod", "release_id": NEW}
    assert_error(
        api.post(f"{API}/clusters/{ORIGINAL}/upgrade/clone", json=body), 409, "prod", "taken"
    )


def test_a_missing_release_is_404(api):
    body = {"name": "x", "release_id": 99}
    assert_error(api.post(f"{API}/clusters/{ORIGINAL}/upgrade/clone", json=body), 404, "99")


def test_a_missing_environment_is_404(shared_api):
    body = {"name": "x", "release_id": NEW}
    assert_error(shared_api.post(f"{API}/clusters/77/upgrade/clone", json=body), 404, "77")


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"state": "deprecated", "version": "ocata-11.0"}, ("deprecated",)),
        ({"state": "manageonly", "version": "ocata-11.0"}, ("manageonly",)),
        ({"version": "mitaka-9.0"}, ("not newer",)),
        ({"version": "liberty-8.0"}, ("not newer",)),
        ({"version": "ocata-11.0", "operating_system": "CentOS"}, ("CentOS", "operating system")),
    ],
)
def test_a_release_that_cannot_be_a_target_is_400_naming_why(
    api, upgrade_store, fuel_release, change, words
):
    _, body = release_bodies(fuel_release)
    created = upgrade_store.releases.create({**body, "name": "Other", **change}).data
    response = api.post(
        f"{API}/clusters/{ORIGINAL}/upgrade/clone", json={"name": "x", "release_id": created["id"]}
    )
    assert_error(response, 400, f"release {created['id']}", *words)
    assert upgrade_store.environment_ids() == [ORIGINAL]
    assert "upgrade" not in api.get(f"{API}/clusters/{ORIGINAL}").get_json()


def test_one_call_upgrade_is_404_not_implemented(shared_api):
    body = assert_error(
        shared_api.post(f"{API}/clusters/{ORIGINAL}/upgrade", json={}), 404, "not implemented"
    )
    assert "clone" in body["message"]


# -- the relation ---------------------------------------------------------------------------
def test_deleting_the_seed_frees_the_original_for_another_clone(seeded_api, seed):
    assert seeded_api.delete(f"{API}/config/environments/{SEED}").status_code == 204
    assert "upgrade" not in seeded_api.get(f"{API}/clusters/{ORIGINAL}").get_json()
    again = seeded_api.post(
        f"{API}/clusters/{ORIGINAL}/upgrade/clone", json={"name": "second-try", "release_id": NEW}
    )
    assert again.status_code == 201, again.get_json()
    assert again.get_json()["upgrade"] == {"role": "seed", "peer": ORIGINAL}


def test_deleting_the_original_removes_the_relation_from_the_seed(seeded_api, seed):
    assert seeded_api.delete(f"{API}/config/environments/{ORIGINAL}").status_code == 204
    assert "upgrade" not in seeded_api.get(f"{API}/clusters/{SEED}").get_json()
    assert seeded_api.get(f"{API}/clusters/{SEED}/upgrade").get_json()["role"] is None


def test_a_one_sided_claim_counts_for_nothing(api, upgrade_store):
    """What a crash between the claim and the seed's creation leaves behind."""
    upgrade_store.relations.set_claim(ORIGINAL, {"role": "original", "peer": 5}, None, "test")
    assert upgrade_store.relations.relation(ORIGINAL) is None
    response = api.post(
        f"{API}/clusters/{ORIGINAL}/upgrade/clone", json={"name": "after-crash", "release_id": NEW}
    )
    assert response.status_code == 201
    assert api.get(f"{API}/clusters/{ORIGINAL}").get_json()["upgrade"]["peer"] == 2
