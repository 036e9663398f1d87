"""The export package, loaded with python-heatclient's own template utilities.

`heat stack-create -f plan.yaml -e environment.yaml` runs these functions on the operator's
machine: they parse the master template, read the environment and follow its resource registry
to the provider templates. If they resolve our export, Heat's tooling can deploy it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from heatclient.common import template_format, template_utils

from .conftest import COMPUTE, COMPUTE_V2, CONTROLLER

SECRET = "admin-pw-52e1"


@pytest.fixture
def exported(client, tmp_path) -> tuple[dict, Path]:
    """A plan of compute v1 and v2 and controller v1, exported (revealed) to a folder."""
    plan = client.post("/api/v1/plans", json={"name": "overcloud"}).json
    compute = client.post("/api/v1/roles", json={"name": "compute", "content": COMPUTE}).json
    compute2 = client.put(f"/api/v1/roles/{compute['uuid']}", json={"content": COMPUTE_V2}).json
    controller = client.post(
        "/api/v1/roles", json={"name": "controller", "content": CONTROLLER}
    ).json
    for role in (compute, compute2, controller):
        client.post(f"/api/v1/plans/{plan['uuid']}/roles", json={"uuid": role["uuid"]})
    client.patch(
        f"/api/v1/plans/{plan['uuid']}",
        json=[
            {"name": "controller-1::AdminPassword", "value": SECRET},
            {"name": "compute-2::count", "value": 3},
        ],
    )
    files = client.get(f"/api/v1/plans/{plan['uuid']}/templates?reveal=1").json
    folder = tmp_path / "export"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return files, folder


def test_the_export_package_holds_every_file(exported):
    files, _ = exported
    assert sorted(files) == [
        "environment.yaml",
        "plan.yaml",
        "provider-compute-1.yaml",
        "provider-compute-2.yaml",
        "provider-controller-1.yaml",
    ]
    assert files["provider-compute-1.yaml"] == COMPUTE  # the role, byte for byte
    assert files["provider-compute-2.yaml"] == COMPUTE_V2


def test_heatclient_resolves_the_export(exported):
    _, folder = exported
    template_files, template = template_utils.get_template_contents(
        template_file=str(folder / "plan.yaml")
    )
    env_files, environment = template_utils.process_multiple_environments_and_files(
        env_paths=[str(folder / "environment.yaml")]
    )
    registry = environment["resource_registry"]
    groups = {
        name: r
        for name, r in template["resources"].items()
        if r["type"] == "OS::Heat::ResourceGroup"
    }
    assert set(groups) == {"compute-1-servers", "compute-2-servers", "controller-1-servers"}
    for group in groups.values():
        definition = group["properties"]["resource_def"]
        url = registry[definition["type"]]  # made absolute by heatclient
        assert url.startswith("file://") and url in env_files
        provider = template_format.parse(env_files[url])
        # Heat checks that a provider's properties are its parameters: they are.
        assert set(definition["properties"]) == set(provider["parameters"])
        for prop in definition["properties"].values():
            assert prop["get_param"] in template["parameters"]
    assert environment["parameters"]["controller-1::AdminPassword"] == SECRET
    assert environment["parameters"]["compute-2::count"] == 3
    assert template_files == {}  # the master template itself names no other file


def test_the_masked_export_still_parses_but_hides_secrets(client, exported):
    plan = client.get("/api/v1/plans").json[0]
    response = client.get(f"/api/v1/plans/{plan['uuid']}/templates")
    masked = response.json
    assert SECRET not in masked["environment.yaml"]
    environment = yaml.safe_load(masked["environment.yaml"])
    assert environment["parameters"]["controller-1::AdminPassword"] == "******"
    assert "environment.yaml:parameters.controller-1::AdminPassword" in (
        response.headers["X-Gitstore-Masked"].split(",")
    )
    assert template_format.parse(masked["plan.yaml"])["parameters"]


def test_the_environment_lists_every_parameter_of_every_role(client, exported):
    files, _ = exported
    master = yaml.safe_load(files["plan.yaml"])
    environment = yaml.safe_load(files["environment.yaml"])["parameters"]
    assert list(environment) == list(master["parameters"])  # each one, in the template's order
    assert environment["compute-1::Flavor"] == ""  # no value, no default: to fill in
    assert environment["compute-1::Image"] == "overcloud-full"
    plan = client.get("/api/v1/plans").json[0]
    masked = client.get(f"/api/v1/plans/{plan['uuid']}/templates").json
    shown = yaml.safe_load(masked["environment.yaml"])["parameters"]
    assert set(shown) == set(master["parameters"])
    assert shown["controller-1::AdminPassword"] == "******"
