"""The one validator: whole trees (gate, `validate`) and single documents (REST writes)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.main import cli
from gitstore import validation
from gitstore.gitops import rules
from gitstore.gitops.service import validate_repository
from gitstore.store import Store

from .helpers import commit_files, git


@pytest.fixture
def work(gitops_store, tmp_path):
    """A clone of environment 1 (a CI checkout has nothing more)."""
    path = tmp_path / "work"
    git("clone", "-q", str(gitops_store.environment_path(1)), str(path))
    return path


def catalog_of(store: Store) -> str:
    return str(store.root / "catalog.git")


def test_a_filled_store_is_valid(gitops_store):
    assert gitops_store.gitops.validate_all() == {"catalog.git": [], "environments/1.git": []}


def test_problems_name_file_line_and_key(gitops_store, work):
    commit_files(
        work,
        {
            "global/values/astute.yaml": "# ports\nport: 80\nregion: 7\n",
            "nodes/2/values/astute.yaml": "- not\n- a mapping\n",
            "nodes/3/values/globals.yaml": "a: 1\nb: {c: [1, 2}\n",
            "nodes/x y/values/globals.yaml": "a: 1\n",
            "role/compute/values/globals.yaml": "a: 1\n",
            "global/overrides/unknown.yaml": "a: 1\n",
            "global/notes.txt": "hello\n",
        },
    )
    problems = validate_repository(work, catalog=catalog_of(gitops_store))
    assert {
        "file": "global/values/astute.yaml",
        "line": 3,
        "key": "region",
        "message": "7 is not of type 'string' (schema of resource 'astute')",
    } in problems
    assert {
        "file": "nodes/2/values/astute.yaml",
        "line": 1,
        "message": "document must be a mapping, not a list",
    } in problems
    parse = [p for p in problems if p["file"] == "nodes/3/values/globals.yaml"]
    assert parse == [
        {
            "file": "nodes/3/values/globals.yaml",
            "line": 2,
            "message": "YAML does not parse: did not find expected ',' or ']'",
        }
    ]
    messages = {p["file"]: p["message"] for p in problems}
    assert (
        "top-level folder 'role' is neither a level declared"
        in messages["role/compute/values/globals.yaml"]
    )
    assert "resource 'unknown' is not defined" in messages["global/overrides/unknown.yaml"]
    assert "may hold only the folders values/ and overrides/" in messages["global/notes.txt"]
    assert len(problems) == 6, problems  # a level value may hold a space: `x y` is fine


def test_invalid_level_values_and_environment_yaml(gitops_store, work):
    commit_files(
        work,
        {
            "environment.yaml": "id: 1\nname: 5\ncomponents: [fuel, ghost]\n"
            "hierarchy: [nodes, global]\nmerge: deep\n",
            "nodes/.hidden/values/globals.yaml": "a: 1\n",
        },
    )
    problems = validate_repository(work, catalog=catalog_of(gitops_store))
    by_key = {(p["file"], p.get("key")): p for p in problems}
    assert by_key[("environment.yaml", "name")]["line"] == 2
    assert (
        by_key[("environment.yaml", "components")]["message"]
        == "component 'ghost' does not exist in the catalog"
    )
    assert "reserved" in by_key[("environment.yaml", "hierarchy")]["message"]
    assert "invalid level value" in by_key[("nodes/.hidden/values/globals.yaml", None)]["message"]


def test_the_environment_id_must_be_the_repository_s(gitops_store):
    snapshot = gitops_store.environment_repo(1).snapshot()
    problems = rules.validate(snapshot, "environment", env_id=2)
    assert problems == [
        {
            "file": "environment.yaml",
            "line": 1,
            "key": "id",
            "message": "is 1 but this is the repository of environment 2",
        }
    ]


def test_forge_metadata_and_plain_files_at_the_top_are_allowed(gitops_store, work):
    commit_files(
        work,
        {
            ".github/CODEOWNERS": "**/overrides/** @ops\n",
            "README.md": "hi\n",
            ".gitlab-ci.yml": "not: [checked\n",
        },
    )
    assert validate_repository(work, catalog=catalog_of(gitops_store)) == []
    commit_files(work, {"extra.yaml": "a: 1\n"})
    problems = validate_repository(work, catalog=catalog_of(gitops_store))
    assert [p["file"] for p in problems] == ["extra.yaml"]


def test_without_a_catalog_only_catalog_checks_are_skipped(work):
    commit_files(
        work, {"global/values/astute.yaml": "region: 7\n", "global/values/unknown.yaml": "a: [\n"}
    )
    problems = validate_repository(work)  # a clone outside any store, no --catalog
    assert [(p["file"], p["message"][:20]) for p in problems] == [
        ("global/values/unknown.yaml", "YAML does not parse:")
    ]


def _catalog_problems(store, tmp_path, files: dict[str, str]) -> list[dict]:
    """The problems `validate` finds in a clone of the store's catalog with `files` committed."""
    work = tmp_path / "catalog"
    git("clone", "-q", str(store.root / "catalog.git"), str(work))
    commit_files(work, files)
    return validate_repository(work)


def test_catalog_rules(gitops_store, tmp_path):
    problems = _catalog_problems(
        gitops_store,
        tmp_path,
        {
            "components/other.yaml": "id: 1\nname: different\nresource_definitions:\n"
            "- id: 2\n  name: astute\n  schema: {type: 12}\n"
            "  secret_keys: nope\n",
        },
    )
    found = {(p["file"], p.get("key")): p["message"] for p in problems}
    assert found[("components/other.yaml", "name")] == "must be 'other', the name of the file"
    assert found[("components/other.yaml", "id")].startswith("id 1 is also the id of")
    assert found[("components/other.yaml", "resource_definitions.0.id")].startswith(
        "id 2 is also used in"
    )
    assert (
        "also defined in components/fuel.yaml"
        in found[("components/other.yaml", "resource_definitions.0.name")]
    )
    assert (
        "is not valid under any of the given schemas"
        in found[("components/other.yaml", "resource_definitions.0.schema")]
    )
    assert (
        found[("components/other.yaml", "resource_definitions.0.secret_keys")]
        == "must be a list of strings"
    )


def test_the_gate_refuses_schemas_that_recurse_or_reach_outside(gitops_store, tmp_path):
    problems = _catalog_problems(
        gitops_store,
        tmp_path,
        {
            "resource_definitions.yaml": "resource_definitions:\n"
            "- {id: 90, name: loop, schema: {$ref: '#'}}\n"
            "- {id: 91, name: remote, schema: {$ref: 'http://example.com/x'}}\n"
            "- {id: 92, name: tree, schema: {items: {$ref: '#'}}}\n",
        },
    )
    found = {p.get("key"): p["message"] for p in problems}
    assert "'loop' is invalid: a $ref recurses" in found["resource_definitions.0.schema"]
    assert "'http://example.com/x' does not resolve" in found["resource_definitions.1.schema"]
    assert "resource_definitions.2.schema" not in found


def test_the_gate_refuses_all_digit_component_names(gitops_store, tmp_path):
    files = {"components/7.yaml": "id: 70\nname: '7'\nresource_definitions: []\n"}
    messages = [p["message"] for p in _catalog_problems(gitops_store, tmp_path, files)]
    assert "component name '7' must not be all digits" in messages


def test_rest_writes_apply_the_same_rule(gitops_store):
    from gitstore.api import create_app

    client = create_app({"TESTING": True}, store=gitops_store).test_client()
    response = client.put(
        "/api/v1/config/environments/1/resources/astute/values", json={"port": 1, "region": 7}
    )
    assert response.status_code == 400
    body = response.get_json()
    definition = gitstore_definition(gitops_store, "astute")
    assert body["errors"] == validation.resource_document_problems(
        definition, "global/values/astute.yaml", {"port": 1, "region": 7}
    )
    assert body["errors"][0]["key"] == "region"
    assert "global/values/astute.yaml" in body["message"]


def gitstore_definition(store: Store, name: str) -> dict:
    return store.definitions.get(name).data


def test_a_rule_added_to_the_list_runs(gitops_store, monkeypatch):
    def no_inventory_node_4(tree):
        if tree.snapshot.exists("inventory/nodes/4.yaml"):
            tree.report("inventory/nodes/4.yaml", "node 4 is retired", key="id")

    extended = (*rules.RULES["environment"], no_inventory_node_4)
    monkeypatch.setitem(rules.RULES, "environment", extended)
    problems = gitops_store.gitops.validate("environments/1.git")
    assert problems == [
        {"file": "inventory/nodes/4.yaml", "line": 1, "key": "id", "message": "node 4 is retired"}
    ]


def test_the_gate_is_installed_and_runs_on_a_local_push(gitops_store, work):
    hook = gitops_store.environment_path(1) / "hooks" / "pre-receive"
    hook.unlink()
    Store.init(gitops_store.root)  # `gitstore init` on an existing store reinstalls hooks
    assert hook.exists()
    commit_files(work, {"global/values/astute.yaml": "port: high\n"})
    done = git("push", "origin", "main", cwd=work, check=False)
    assert done.returncode != 0
    assert (
        "global/values/astute.yaml:1: key 'port': 'high' is not of type 'integer'" in done.stderr
    ), done.stderr


def test_validate_command(gitops_store, work):
    runner = CliRunner()
    result = runner.invoke(cli, ["--root", str(gitops_store.root), "validate"])
    assert result.exit_code == 0, result.output
    assert "environments/1.git: valid" in result.stdout
    commit_files(work, {"global/values/astute.yaml": "port: high\n"})
    result = runner.invoke(
        cli,
        [
            "validate",
            "--repo",
            str(work),
            "--catalog",
            catalog_of(gitops_store),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["valid"] is False
    assert report["repositories"][str(work)][0]["key"] == "port"
    result = runner.invoke(cli, ["validate", "--repo", str(work), "HEAD~1"])
    assert result.exit_code == 0, result.output
