"""`gitstore role ...` and `gitstore plan ...`, on a local store and over HTTP."""

from __future__ import annotations

import json

import pytest
import yaml
from live_server import cli_runner, threaded_app_server

from .conftest import COMPUTE, COMPUTE_V2, CONTROLLER


@pytest.fixture(scope="module")
def server():
    with threaded_app_server() as served:
        yield served


@pytest.fixture(params=["local", "http"])
def gs(request, store, server):
    """Run `gitstore ...` against the store, locally or through the HTTP server."""
    return cli_runner(request.param, store, server)


@pytest.fixture
def role_files(tmp_path):
    files = {}
    for name, content in (("compute", COMPUTE), ("controller", CONTROLLER)):
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_text(content)
    return files


def test_role_upload_and_list(gs, role_files):
    out = gs("role", "upload", str(role_files["compute"])).stdout
    assert out.startswith("role compute version 1 uploaded")
    again = gs("role", "upload", str(role_files["compute"])).stdout
    assert "version 1 unchanged" in again
    role_files["compute"].write_text(COMPUTE_V2)
    assert "version 2 uploaded" in gs("role", "upload", str(role_files["compute"])).stdout
    gs(
        "role",
        "upload",
        str(role_files["controller"]),
        "--name",
        "ctrl",
        "--description",
        "Controllers",
    )
    listed = json.loads(gs("role", "list", "-f", "json").stdout)
    assert [(r["name"], r["version"]) for r in listed] == [
        ("compute", 1),
        ("compute", 2),
        ("ctrl", 1),
    ]
    latest = json.loads(gs("role", "list", "--latest", "-f", "json").stdout)
    assert [(r["name"], r["version"]) for r in latest] == [("compute", 2), ("ctrl", 1)]
    table = gs("role", "list", "--latest").stdout.splitlines()
    assert table[0].split() == ["uuid", "name", "version", "description", "created_at"]
    assert len(table) == 4 and "Controllers" in table[3]


def test_build_a_plan_set_values_and_export(gs, role_files, tmp_path):
    for path in role_files.values():
        gs("role", "upload", str(path))
    created = json.loads(
        gs("plan", "create", "overcloud", "--description", "Prod", "-f", "json").stdout
    )
    gs("plan", "add-role", "overcloud", "compute")
    gs("plan", "add-role", created["uuid"], "controller", "--version", "1")
    gs("plan", "add-role", "overcloud", "compute", code=1)  # the same version twice
    gs("plan", "set", "overcloud", "compute-1::count=3", "--type", "int")
    gs("plan", "set", "overcloud", "controller-1::AdminPassword=s3cret-cli")
    shown = json.loads(gs("plan", "show", "overcloud", "-f", "json").stdout)
    values = {p["name"]: p["value"] for p in shown["parameters"]}
    assert values["compute-1::count"] == 3
    assert values["controller-1::AdminPassword"] == "******"
    table = gs("plan", "show", "overcloud", "--reveal").stdout
    assert "s3cret-cli" in table and "compute v1" in table
    folder = tmp_path / "out"
    written = gs("plan", "export", "overcloud", "--dir", str(folder), "--reveal").stdout
    assert len(written.splitlines()) == 4
    environment = yaml.safe_load((folder / "environment.yaml").read_text())
    assert environment["parameters"]["controller-1::AdminPassword"] == "s3cret-cli"
    assert (folder / "provider-compute-1.yaml").read_text() == COMPUTE
    assert "overcloud" in gs("plan", "list").stdout


def test_set_with_an_unknown_name_changes_nothing(gs, role_files):
    gs("role", "upload", str(role_files["compute"]))
    gs("plan", "create", "overcloud")
    gs("plan", "add-role", "overcloud", "compute")
    failed = gs("plan", "set", "overcloud", "compute-1::count=2", "nope=1", "--type", "int", code=1)
    assert "nope" in failed.stderr and "Traceback" not in failed.stderr
    shown = json.loads(gs("plan", "show", "overcloud", "-f", "json").stdout)
    assert {p["name"]: p["value"] for p in shown["parameters"]}["compute-1::count"] == 1
    gs("plan", "set", "overcloud", "no-equals-sign", code=2)


def test_remove_role_and_delete(gs, role_files):
    gs("role", "upload", str(role_files["compute"]))
    role_files["compute"].write_text(COMPUTE_V2)
    gs("role", "upload", str(role_files["compute"]))
    gs("plan", "create", "overcloud")
    gs("plan", "add-role", "overcloud", "compute", "--version", "1")
    gs("plan", "add-role", "overcloud", "compute")
    ambiguous = gs("plan", "remove-role", "overcloud", "compute", code=2)
    assert "give --version" in ambiguous.stderr
    left = json.loads(
        gs("plan", "remove-role", "overcloud", "compute", "--version", "1", "-f", "json").stdout
    )
    assert [(r["name"], r["version"]) for r in left["roles"]] == [("compute", 2)]
    assert "deleted" in gs("plan", "delete", "overcloud").stdout
    assert "does not exist" in gs("plan", "show", "overcloud", code=1).stderr
