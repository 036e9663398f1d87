"""`gitstore env|component|def|level`, local and over HTTP."""

from __future__ import annotations

import json

import pytest
import yaml
from cli_helpers import assert_failure, assert_usage_error


def as_json(result) -> object:
    return json.loads(result.stdout)


# -- environments ------------------------------------------------------------------------------
def test_env_create_list_show_update_delete(gs):
    created = as_json(
        gs.ok(
            "env",
            "create",
            "--id",
            "7",
            "--name",
            "seven",
            "--components",
            "fuel",
            "--levels",
            "role,nodes",
            "--merge",
            "shallow",
            "-f",
            "json",
        )
    )
    assert created == {
        "id": 7,
        "name": "seven",
        "components": [1],
        "hierarchy_levels": ["role", "nodes"],
        "merge": "shallow",
    }
    listed = as_json(gs.ok("env", "list", "--format", "json"))
    assert [e["id"] for e in listed] == [1, 7]
    assert as_json(gs.ok("env", "show", "7", "-f", "json")) == created
    updated = as_json(
        gs.ok(
            "env",
            "update",
            "7",
            "--levels",
            "nodes",
            "--components",
            "",
            "--merge",
            "deep",
            "-f",
            "json",
        )
    )
    assert updated["hierarchy_levels"] == ["nodes"] and updated["components"] == []
    assert updated["merge"] == "deep" and updated["name"] == "seven"
    deleted = gs.ok("env", "delete", "7")
    assert "environment 7 deleted" in deleted.stdout
    assert_failure(gs("env", "show", "7"), "environment 7 does not exist")


def test_env_create_allocates_the_next_id_and_takes_component_ids(gs):
    created = yaml.safe_load(gs.ok("env", "create", "--components", "1", "-f", "yaml").stdout)
    assert created["id"] == 2 and created["components"] == [1]
    assert as_json(gs.ok("env", "show", "2", "-f", "json")) == created


def test_env_list_is_a_sorted_table(gs):
    gs.ok("env", "create", "--id", "30", "--name", "thirty")
    gs.ok("env", "create", "--id", "4")
    lines = gs.ok("env", "list").stdout.splitlines()
    assert lines[0].split() == ["id", "name", "components", "hierarchy_levels", "merge"]
    assert set(lines[1]) == {"-", " "}
    assert [line.split()[0] for line in lines[2:]] == ["1", "4", "30"]
    assert "thirty" in lines[4]


def test_env_show_table_and_yaml(gs):
    table = gs.ok("env", "show", "1").stdout
    assert "hierarchy_levels  nodes" in table
    assert yaml.safe_load(gs.ok("env", "show", "1", "-f", "yaml").stdout)["id"] == 1


def test_env_show_at_an_older_version(gs):
    gs.ok("env", "update", "1", "--name", "renamed")
    old = as_json(gs.ok("env", "show", "1", "--version", "1", "-f", "json"))
    assert old["name"] is None


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["env", "create", "--id", "1"], "environment 1 already exists"),
        (["env", "create", "--components", "nope"], "component 'nope' does not exist"),
        (["env", "create", "--levels", "global"], "reserved name"),
        (["env", "update", "9", "--name", "x"], "environment 9 does not exist"),
        (["env", "delete", "9"], "environment 9 does not exist"),
    ],
)
def test_env_errors(gs_readonly, args, fragment):
    assert_failure(gs_readonly(*args), fragment)


def test_env_update_refuses_to_drop_a_level_with_data(gs):
    gs.store.config.put(1, [("nodes", "1")], "astute", "values", {"a": 1})
    assert_failure(gs("env", "update", "1", "--levels", "role"), "hierarchy level 'nodes'")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["env", "create", "--id", "0"], "0 is not in the range x>=1"),
        (["env", "create", "--levels", "a,,b"], "has an empty item"),
        (["env", "create", "--merge", "wide"], "'wide' is not one of"),
        (["env", "update", "1"], "nothing to update"),
        (["env", "show"], "Missing argument 'ENV_ID'"),
        (["env", "show", "one"], "'one' is not a valid integer"),
        (["env", "list", "-f", "csv"], "'csv' is not one of"),
    ],
)
def test_env_usage_errors(gs_readonly, args, fragment):
    assert_usage_error(gs_readonly(*args), fragment)


# -- components --------------------------------------------------------------------------------
def test_component_create_list_show_update_delete(gs):
    created = as_json(
        gs.ok(
            "component",
            "create",
            "--name",
            "extra",
            "--resources",
            "extra/one,extra/two",
            "-f",
            "json",
        )
    )
    assert created["name"] == "extra"
    assert created["resource_definitions"] == ["extra/one", "extra/two"]
    table = gs.ok("component", "list").stdout
    assert "extra/one, extra/two" in table
    assert [c["name"] for c in as_json(gs.ok("component", "list", "-f", "json"))] == [
        "fuel",
        "extra",
    ]
    by_name = as_json(gs.ok("component", "show", "extra", "-f", "json"))
    assert by_name == as_json(gs.ok("component", "show", str(created["id"]), "-f", "json"))
    renamed = as_json(gs.ok("component", "update", "extra", "--name", "more", "-f", "json"))
    assert renamed["name"] == "more" and renamed["id"] == created["id"]
    assert f"component {created['id']} deleted" in gs.ok("component", "delete", "more").stdout
    assert_failure(gs("component", "show", "more"), "component 'more' does not exist")


def test_component_errors(gs):
    assert_failure(gs("component", "create", "--name", "fuel"), "component 'fuel' already exists")
    gs.store.config.put(1, [], "globals", "values", {"a": 1})
    assert_failure(gs("component", "delete", "fuel"), "environments")
    assert_failure(gs("component", "show", "99"), "component 99 does not exist")
    assert_failure(gs("component", "create", "--name", "bad name"), "may contain only")


def test_component_usage_errors(gs_readonly):
    assert_usage_error(gs_readonly("component", "create"), "Missing option '--name'")
    assert_usage_error(gs_readonly("component", "update", "fuel"), "Missing option '--name'")
    assert_usage_error(gs_readonly("component", "delete"), "Missing argument 'REF'")


# -- resource definitions ------------------------------------------------------------------------
def test_def_create_with_typed_content_and_list_show_delete(gs):
    created = as_json(
        gs.ok(
            "def",
            "create",
            "--component",
            "fuel",
            "--name",
            "extra",
            "--content",
            '{"a": 1}',
            "--type",
            "json",
            "-f",
            "json",
        )
    )
    assert created["component_id"] == 1 and created["content"] == {"a": 1}
    listed = as_json(gs.ok("def", "list", "--component", "fuel", "-f", "json"))
    assert [d["name"] for d in listed] == [
        "astute",
        "globals",
        "override/plugins",
        "override/node",
        "extra",
    ]
    assert as_json(gs.ok("def", "show", "extra", "-f", "json")) == created
    assert "extra" in gs.ok("def", "list").stdout
    assert f"resource definition {created['id']} deleted" in gs.ok("def", "delete", "extra").stdout
    assert_failure(gs("def", "show", str(created["id"])), "does not exist")


def test_def_content_from_a_file_and_from_stdin(gs, tmp_path):
    path = tmp_path / "content.yaml"
    path.write_text("a: [1, 2]\n")
    from_file = as_json(
        gs.ok("def", "create", "--name", "orphan", "--file", str(path), "-f", "json")
    )
    assert from_file == {"id": 5, "name": "orphan", "component_id": None, "content": {"a": [1, 2]}}
    assert [d["name"] for d in as_json(gs.ok("def", "list", "--component", "", "-f", "json"))] == [
        "orphan"
    ]
    from_stdin = as_json(
        gs.ok(
            "def",
            "update",
            "orphan",
            "--input-format",
            "json",
            "--component",
            "fuel",
            "-f",
            "json",
            input='{"b": true}',
        )
    )
    assert from_stdin["content"] == {"b": True} and from_stdin["component_id"] == 1
    renamed = as_json(gs.ok("def", "update", "5", "--name", "adopted", "-f", "json"))
    assert renamed["name"] == "adopted" and renamed["content"] == {"b": True}


def test_def_errors(gs):
    assert_failure(gs("def", "create", "--name", "astute"), "'astute' already exists")
    assert_failure(
        gs("def", "create", "--name", "x", "--component", "nope"), "component 'nope' does not exist"
    )
    assert_failure(gs("def", "create", "--name", "values"), "is reserved")
    gs.store.config.put(1, [], "astute", "values", {"a": 1})
    assert_failure(gs("def", "delete", "astute"), "environments")
    assert_failure(gs("def", "update", "astute", "--name", "other"), "cannot be renamed")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["def", "create"], "Missing option '--name'"),
        (["def", "create", "--name", "x", "--content", "1"], "--content needs --type"),
        (["def", "create", "--name", "x", "--type", "int"], "--type int needs --content"),
        (
            [
                "def",
                "create",
                "--name",
                "x",
                "--content",
                "1",
                "--type",
                "int",
                "--input-format",
                "json",
            ],
            "exclude each other",
        ),
        (["def", "create", "--name", "x", "--file", "/nonexistent.yaml"], "No such file"),
        (["def", "update", "astute"], "nothing to update"),
    ],
)
def test_def_usage_errors(gs_readonly, args, fragment):
    assert_usage_error(gs_readonly(*args), fragment)


# -- levels --------------------------------------------------------------------------------------
def test_level_list_and_show(gs):
    gs.ok("env", "update", "1", "--levels", "role,nodes")
    gs.store.config.put(1, [("role", "compute")], "astute", "values", {"a": 1})
    gs.store.config.put(1, [("role", "compute"), ("nodes", "2")], "astute", "values", {"a": 1})
    gs.store.config.put(1, [("role", "x"), ("nodes", "1")], "astute", "values", {"a": 1})
    levels = as_json(gs.ok("level", "list", "--env", "1", "-f", "json"))
    assert levels == [
        {"name": "role", "parent": None, "values": ["compute"]},
        {"name": "nodes", "parent": "role", "values": ["1", "2"]},
    ]
    lines = gs.ok("level", "list", "-e", "1").stdout.splitlines()
    assert [line.split()[0] for line in lines[2:]] == ["role", "nodes"]
    shown = as_json(gs.ok("level", "show", "nodes", "--env", "1", "-f", "json"))
    assert shown == levels[1]


def test_level_errors(gs):
    assert_failure(gs("level", "show", "role", "-e", "1"), "no hierarchy level 'role'")
    assert_failure(gs("level", "list", "-e", "5"), "environment 5 does not exist")
    assert_usage_error(gs("level", "list"), "Missing option '--env'")
    assert_usage_error(gs("level", "show", "-e", "1"), "Missing argument 'NAME'")
