"""Hidden parameters: sealed in git, masked by default, revealed only with the secrets role."""

from __future__ import annotations

import base64
import re
import subprocess
import time

import pytest

from gitstore.access.policy import AccessFile, parse_grants
from gitstore.api import create_app
from gitstore.plans import MemoryDriver, Plans
from gitstore.secrets.keyring import KEYRING_FILE

from .conftest import COMPUTE, CONTROLLER

PASSWORD = "nova-pw-3f9c0a1b"  # appears nowhere but in the value set below
NOVA = "compute-1::NovaPassword"
SEALED = re.compile(r"^ENC\[v1,aesgcm,kid=[A-Za-z0-9_.-]+,n=[A-Za-z0-9+/]{16},d=[A-Za-z0-9+/=]+\]$")


@pytest.fixture
def plan(client):
    plan = client.post("/api/v1/plans", json={"name": "overcloud"}).json
    for name, content in (("compute", COMPUTE), ("controller", CONTROLLER)):
        role = client.post("/api/v1/roles", json={"name": name, "content": content}).json
        client.post(f"/api/v1/plans/{plan['uuid']}/roles", json={"uuid": role["uuid"]})
    response = client.patch(
        f"/api/v1/plans/{plan['uuid']}", json=[{"name": NOVA, "value": PASSWORD}]
    )
    assert response.status_code == 200, response.json
    return response.json


def _git(store, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={store.root / 'catalog.git'}", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _value(plan_view: dict, name: str):
    return next(p for p in plan_view["parameters"] if p["name"] == name)["value"]


def _basic(user: str) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{user}-pw".encode()).decode()}


def test_the_committed_yaml_holds_only_sealed_values(plan, fuel_store):
    environment = _git(fuel_store, "show", "main:plans/overcloud/environment.yaml")
    assert PASSWORD not in environment
    stored = dict(
        line.strip().split(": ", 1) for line in environment.splitlines() if "Password" in line
    )
    assert set(stored) == {NOVA, "controller-1::AdminPassword"}
    assert all(SEALED.match(value) for value in stored.values())
    master = _git(fuel_store, "show", "main:plans/overcloud/plan.yaml")
    assert "changeme" not in master  # the hidden default of the controller role
    # No object of the catalog, in any commit, holds the plaintext.
    objects = subprocess.run(
        [
            "git",
            f"--git-dir={fuel_store.root / 'catalog.git'}",
            "cat-file",
            "--batch-all-objects",
            "--batch",
        ],
        capture_output=True,
        check=True,
    ).stdout
    assert PASSWORD.encode() not in objects


def test_answers_mask_hidden_values_by_default(client, plan):
    assert _value(plan, NOVA) == "******"
    response = client.get(f"/api/v1/plans/{plan['uuid']}")
    assert _value(response.json, NOVA) == "******"
    masked = response.headers["X-Gitstore-Masked"].split(",")
    assert f"parameters.{NOVA}.value" in masked
    assert "parameters.controller-1::AdminPassword.default" in masked
    assert _value(response.json, "compute-1::Image") == "overcloud-full"  # not hidden
    exported = client.get(f"/api/v1/plans/{plan['uuid']}/templates").json
    assert PASSWORD not in exported["environment.yaml"]
    assert f"{NOVA}: '******'" in exported["environment.yaml"]


def test_reveal_on_an_open_store(client, plan, fuel_store):
    revealed = client.get(f"/api/v1/plans/{plan['uuid']}?reveal=1")
    assert _value(revealed.json, NOVA) == PASSWORD
    assert "X-Gitstore-Masked" not in revealed.headers
    exported = client.get(f"/api/v1/plans/{plan['uuid']}/templates?reveal=1").json
    assert f"{NOVA}: {PASSWORD}" in exported["environment.yaml"]
    audit = fuel_store.secrets.audit.entries()
    assert [entry["what"] for entry in audit] == ["plan overcloud view", "plan overcloud export"]
    assert all(PASSWORD not in str(entry) for entry in audit)


def test_reveal_needs_the_secrets_role_on_the_whole_store(plan, fuel_store):
    access = AccessFile(fuel_store.root)
    for user, grants in (
        ("reader", ["reader"]),
        ("writer", ["writer"]),
        ("env_secrets", ["reader", "secrets:env:1"]),
        ("keeper", ["reader", "secrets"]),
    ):
        access.add_user(user, parse_grants(grants), f"{user}-pw")
    client = create_app({"TESTING": True}, store=fuel_store).test_client()
    url = f"/api/v1/plans/{plan['uuid']}"
    assert _value(client.get(url, headers=_basic("reader")).json, NOVA) == "******"
    for user in ("reader", "env_secrets"):
        for path in (url, f"{url}/templates"):
            denied = client.get(f"{path}?reveal=1", headers=_basic(user))
            assert denied.status_code == 403 and "secrets" in denied.json["message"]
    allowed = client.get(f"{url}?reveal=1", headers=_basic("keeper"))
    assert _value(allowed.json, NOVA) == PASSWORD
    assert fuel_store.secrets.audit.entries()[-1]["who"] == "keeper"
    # Taking a role out of a plan is a write (writer), not a deletion (admin).
    role = plan["roles"][0]["uuid"]
    assert client.delete(f"{url}/roles/{role}", headers=_basic("reader")).status_code == 403
    assert client.delete(f"{url}/roles/{role}", headers=_basic("writer")).status_code == 200


def test_the_mask_sent_back_keeps_the_value_and_its_ciphertext(client, plan, fuel_store):
    def sealed_line() -> str:
        text = _git(fuel_store, "show", "main:plans/overcloud/environment.yaml")
        return next(line for line in text.splitlines() if NOVA in line)

    before = sealed_line()
    url = f"/api/v1/plans/{plan['uuid']}"
    response = client.patch(
        url, json=[{"name": NOVA, "value": "******"}, {"name": "compute-1::count", "value": 4}]
    )
    assert response.status_code == 200
    assert sealed_line() == before  # another value changed: this line is byte-identical
    client.patch(url, json=[{"name": NOVA, "value": PASSWORD}])  # the same value again
    assert sealed_line() == before
    assert _value(client.get(f"{url}?reveal=1").json, NOVA) == PASSWORD


def test_without_a_keyring_hidden_values_cannot_be_stored_or_revealed(client, plan, fuel_store):
    (fuel_store.root / KEYRING_FILE).unlink()
    url = f"/api/v1/plans/{plan['uuid']}"
    assert _value(client.get(url).json, NOVA) == "******"  # masking needs no key
    refused = client.patch(url, json=[{"name": NOVA, "value": "new-password"}])
    assert refused.status_code == 503 and "new-password" not in refused.json["message"]
    assert client.get(f"{url}?reveal=1").status_code == 503
    ok = client.patch(url, json=[{"name": "compute-1::count", "value": 2}])
    assert ok.status_code == 200  # values that are not hidden are still written


def test_a_ciphertext_copied_to_another_parameter_is_refused(client, plan, fuel_store):
    """A sealed value is bound to its place: sent for another parameter it does not open."""
    stored = fuel_store.plans.deployments.retrieve(plan["uuid"])
    sealed = stored.environment_file.parameters[NOVA]
    assert SEALED.match(sealed)
    response = client.patch(
        f"/api/v1/plans/{plan['uuid']}",
        json=[{"name": "controller-1::AdminPassword", "value": sealed}],
    )
    assert response.status_code == 422
    assert sealed not in response.json["message"]


def test_the_memory_driver_masks_too(store):
    plans = Plans(store.repos, store.secrets, MemoryDriver())
    role = plans.roles.create("compute", COMPUTE)
    plan = plans.deployments.create("overcloud")
    plans.deployments.add_role(plan.uuid, role.uuid)
    view = plans.set_values(plan.uuid, [{"name": NOVA, "value": PASSWORD}])
    assert _value(view.data, NOVA) == "******"
    assert _value(plans.get_plan(plan.uuid, reveal=True).data, NOVA) == PASSWORD


def _push_catalog(store, tmp_path, edit) -> subprocess.CompletedProcess:
    """Clone the catalog, apply `edit(folder)` to `plans/overcloud/`, commit and push."""
    work = tmp_path / "catalog-work"
    subprocess.run(
        ["git", "clone", "-q", str(store.root / "catalog.git"), str(work)],
        check=True,
        capture_output=True,
    )
    edit(work / "plans" / "overcloud")
    for args in (
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "edit the plan"],
    ):
        subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)
    return subprocess.run(
        ["git", "push", "origin", "main"], cwd=work, capture_output=True, text=True
    )


def _replace_line(path, startswith: str, line: str) -> None:
    lines = path.read_text().splitlines()
    at = next(i for i, text in enumerate(lines) if text.strip().startswith(startswith))
    lines[at] = line
    path.write_text("\n".join(lines) + "\n")


def test_a_push_of_a_plain_hidden_value_is_refused(plan, fuel_store, tmp_path):
    head = fuel_store.catalog().head()
    done = _push_catalog(
        fuel_store,
        tmp_path,
        lambda folder: _replace_line(
            folder / "environment.yaml", f"{NOVA}:", f"  {NOVA}: pushed-in-plain-text"
        ),
    )
    assert done.returncode != 0
    assert (
        "plans/overcloud/environment.yaml:" in done.stderr
        and f"key 'parameters.{NOVA}'" in done.stderr
        and "a secret stored in plain text" in done.stderr
        and "gitstore plan set" in done.stderr
    ), done.stderr
    assert "pushed-in-plain-text" not in done.stderr  # the message never shows the value
    assert fuel_store.catalog().head() == head


def test_a_push_of_a_plain_hidden_default_is_refused(plan, fuel_store, tmp_path):
    def edit(folder):
        master = folder / "plan.yaml"
        text = master.read_text()
        sealed = re.search(r"ENC\[[^\]]*\]", text).group(0)
        master.write_text(text.replace(sealed, "changeme", 1))

    done = _push_catalog(fuel_store, tmp_path, edit)
    assert done.returncode != 0
    assert (
        "plans/overcloud/plan.yaml:" in done.stderr
        and "key 'parameters.controller-1::AdminPassword.default'" in done.stderr
    ), done.stderr


def test_a_push_that_keeps_hidden_values_sealed_is_accepted(plan, fuel_store, tmp_path):
    done = _push_catalog(
        fuel_store,
        tmp_path,
        lambda folder: _replace_line(
            folder / "environment.yaml", "compute-1::count:", "  compute-1::count: 4"
        ),
    )
    assert done.returncode == 0, done.stderr
    stored = _git(fuel_store, "show", "main:plans/overcloud/environment.yaml")
    assert "compute-1::count: 4" in stored


def test_a_writer_cannot_test_guesses_of_a_hidden_value(plan, fuel_store):
    """Issue 25, item 6: the right value makes a commit like a wrong one for a writer
    without the store-wide secrets role; the keeper's unchanged value makes none."""
    access = AccessFile(fuel_store.root)
    access.add_user("writer", parse_grants(["writer"]), "writer-pw")
    access.add_user("keeper", parse_grants(["writer", "secrets"]), "keeper-pw")
    client = create_app({"TESTING": True}, store=fuel_store).test_client()
    url = f"/api/v1/plans/{plan['uuid']}"

    def head() -> str:
        return _git(fuel_store, "rev-parse", "main").strip()

    before = head()
    right = client.patch(url, json=[{"name": NOVA, "value": PASSWORD}], headers=_basic("writer"))
    assert right.status_code == 200 and head() != before
    before = head()
    same = client.patch(url, json=[{"name": NOVA, "value": PASSWORD}], headers=_basic("keeper"))
    assert same.status_code == 200 and head() == before


def test_an_unchanged_hidden_value_makes_no_commit_in_a_later_second(plan, fuel_store):
    """The keeper's no-op is not a matter of timing: sent a second later (`updated_at` has
    whole seconds), the unchanged value still makes no commit. The test above passed only
    when both requests fell in one second; in full runs it failed now and then."""
    AccessFile(fuel_store.root).add_user("keeper", parse_grants(["writer", "secrets"]), "keeper-pw")
    client = create_app({"TESTING": True}, store=fuel_store).test_client()
    url = f"/api/v1/plans/{plan['uuid']}"
    before = _git(fuel_store, "rev-parse", "main").strip()
    stamp = client.get(url, headers=_basic("keeper")).json["updated_at"]
    time.sleep(1.1)
    same = client.patch(url, json=[{"name": NOVA, "value": PASSWORD}], headers=_basic("keeper"))
    assert same.status_code == 200, same.json
    assert _git(fuel_store, "rev-parse", "main").strip() == before
    assert client.get(url, headers=_basic("keeper")).json["updated_at"] == stamp
