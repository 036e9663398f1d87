"""`gitstore config get|set|override|delete`, local and over HTTP."""

from __future__ import annotations

import json

import pytest
import yaml
from cli_helpers import assert_failure, assert_usage_error, hiera_source

from gitstore.configdb.values import Query

NODE1 = ["-e", "1", "-l", "nodes=1", "-r", "astute"]


@pytest.fixture
def astute(gs) -> dict:
    """Node 1's real astute.yaml stored as its values; global values under it."""
    document = yaml.safe_load((hiera_source("1") / "astute.yaml").read_text())
    gs.store.config.put(1, [("nodes", "1")], "astute", "values", document)
    gs.store.config.put(1, [], "astute", "values", {"debug": False, "region": "RegionOne"})
    return document


# -- the seed's three use cases ----------------------------------------------------------------
def test_get_whole_resource_for_a_node(gs, astute):
    result = gs.ok("config", "get", *NODE1, "--format", "json")
    assert json.loads(result.stdout) == {**{"debug": False, "region": "RegionOne"}, **astute}


def test_get_one_key(gs, astute):
    result = gs.ok("config", "get", *NODE1, "--key", "fqdn", "--format", "json")
    assert json.loads(result.stdout) == {"fqdn": astute["fqdn"]}
    plain = gs.ok("config", "get", *NODE1, "-k", "fqdn", "-f", "plain")
    assert plain.stdout == astute["fqdn"] + "\n"


def test_override_one_key_and_see_the_new_effective_value(gs, astute):
    result = gs.ok(
        "config",
        "override",
        *NODE1,
        "--key",
        "fqdn",
        "--type",
        "str",
        "--value",
        "node-1.example.org",
    )
    assert "astute overrides at nodes/1: key fqdn set" in result.stdout
    after = gs.ok("config", "get", *NODE1, "--key", "fqdn", "--format", "plain")
    assert after.stdout == "node-1.example.org\n"
    values = gs.store.config.read(1, [("nodes", "1")], "astute", "values").data
    assert values["fqdn"] == astute["fqdn"]  # the values document is untouched


# -- get ---------------------------------------------------------------------------------------
def first_key(document: dict, kind: type) -> str:
    return next(key for key, value in document.items() if isinstance(value, kind) and value)


def test_get_key_keeps_its_type_and_indexes_lists(gs, astute):
    listed = first_key(astute, list)
    result = gs.ok("config", "get", *NODE1, "-k", f"{listed}.0", "-f", "json")
    assert json.loads(result.stdout) == {f"{listed}.0": astute[listed][0]}
    flag = first_key(astute, bool)
    result = gs.ok("config", "get", *NODE1, "-k", flag, "-f", "yaml")
    assert yaml.safe_load(result.stdout) == {flag: astute[flag]}


def test_get_default_is_yaml_and_global_without_level(gs, astute):
    result = gs.ok("config", "get", "-e", "1", "-r", "astute")
    assert yaml.safe_load(result.stdout) == {"debug": False, "region": "RegionOne"}


def test_get_show_lookup_names_the_level(gs, astute):
    result = gs.ok("config", "get", *NODE1, "--show-lookup", "-f", "json")
    data = json.loads(result.stdout)
    assert data["region"] == ["RegionOne", "/"]
    assert data["fqdn"] == [astute["fqdn"], "/nodes/1/"]
    one = gs.ok("config", "get", *NODE1, "-s", "-k", "region", "-f", "json")
    assert json.loads(one.stdout) == {"region": ["RegionOne", "/"]}


def test_get_at_an_older_version(gs, astute):
    gs.ok("config", "set", *NODE1, "-k", "fqdn", "-t", "str", "-v", "renamed")
    version = gs.store.environment_repo(1).snapshot().version
    old = gs.ok("config", "get", *NODE1, "-k", "fqdn", "-f", "plain", "--version", str(version - 1))
    assert old.stdout == astute["fqdn"] + "\n"


def test_get_plain_prints_a_mapping_as_json(gs, astute):
    mapping = first_key(astute, dict)
    result = gs.ok("config", "get", *NODE1, "-k", mapping, "-f", "plain")
    assert json.loads(result.stdout) == astute[mapping]


# -- set and override: the type rules ----------------------------------------------------------
@pytest.mark.parametrize(
    ("type_", "value", "stored"),
    [
        ("int", "42", 42),
        ("str", "42", "42"),
        ("bool", "TRUE", True),
        ("bool", "1", True),
        ("bool", "False", False),
        ("bool", "0", False),
        ("json", '{"a": [1, null]}', {"a": [1, None]}),
        ("yaml", "a: [1, ~]", {"a": [1, None]}),
    ],
)
def test_set_key_with_type(gs, type_, value, stored):
    gs.ok("config", "set", *NODE1, "-k", "x.y", "-t", type_, "-v", value)
    values = gs.store.config.read(1, [("nodes", "1")], "astute", "values").data
    assert values == {"x": {"y": stored}}


def test_set_null_takes_no_value(gs):
    gs.ok("config", "set", *NODE1, "-k", "x", "--type", "null")
    assert gs.store.config.read(1, [("nodes", "1")], "astute", "values").data == {"x": None}


def test_set_whole_document_from_stdin_json(gs, astute):
    gs.ok("config", "set", *NODE1, "--format", "json", input='{"only": 1}')
    assert gs.store.config.read(1, [("nodes", "1")], "astute", "values").data == {"only": 1}


def test_set_from_stdin_yaml_takes_the_first_document_and_warns(gs):
    result = gs.ok("config", "set", *NODE1, "--format", "yaml", input="a: 1\n---\nb: 2\n")
    assert "only the first is used" in result.stderr
    assert gs.store.config.read(1, [("nodes", "1")], "astute", "values").data == {"a": 1}


def test_set_one_key_from_stdin(gs):
    gs.ok("config", "override", *NODE1, "-k", "list", "-f", "yaml", input="- 1\n- two\n")
    data = gs.store.config.read(1, [("nodes", "1")], "astute", "overrides").data
    assert data == {"list": [1, "two"]}


def test_set_whole_document_with_a_typed_value(gs):
    gs.ok("config", "set", *NODE1, "-t", "json", "-v", '{"k": "v"}')
    assert gs.store.config.read(1, [("nodes", "1")], "astute", "values").data == {"k": "v"}


def test_set_reports_the_new_version(gs):
    result = gs.ok("config", "set", "-e", "1", "-r", "globals", "-k", "a", "-t", "int", "-v", "1")
    version = gs.store.environment_repo(1).snapshot().version
    assert f"globals values at global: key a set (version {version}, commit" in result.stdout


def test_set_normalises_yaml_dates_to_strings(gs):
    gs.ok("config", "set", *NODE1, "-f", "yaml", input="when: 2016-01-02\n")
    data = gs.store.config.read(1, [("nodes", "1")], "astute", "values").data
    assert data == {"when": "2016-01-02"}


# -- delete ------------------------------------------------------------------------------------
def test_delete_key_and_override_key(gs, astute):
    gs.ok("config", "override", *NODE1, "-k", "fqdn", "-t", "str", "-v", "x")
    gs.ok("config", "delete", *NODE1, "-k", "fqdn", "--override")
    assert gs.store.config.read(1, [("nodes", "1")], "astute", "overrides").data == {}
    mapping = first_key(astute, dict)
    inner = next(iter(astute[mapping]))
    result = gs.ok("config", "delete", *NODE1, "--key", f"{mapping}.{inner}")
    assert f"key {mapping}.{inner} deleted" in result.stdout
    values = gs.store.config.read(1, [("nodes", "1")], "astute", "values").data
    assert inner not in values[mapping] and values["fqdn"] == astute["fqdn"]


# -- usage errors: exit 2, one line --------------------------------------------------------------
SET = ["config", "set", *NODE1]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["config", "get", "-r", "astute"], "Missing option '--env'"),
        (["config", "get", "-e", "1"], "Missing option '--resource'"),
        (["config", "get", "-e", "x", "-r", "astute"], "'x' is not a valid integer"),
        (["config", "get", "-e", "1", "-r", "a", "-l", "nodes"], "level 'nodes' must look like"),
        (["config", "get", "-e", "1", "-r", "a", "-l", "nodes=1,"], "level '' must look like"),
        (["config", "get", "-e", "1", "-r", "a", "-l", "=1"], "level '=1' must look like"),
        (["config", "get", "-e", "1", "-r", "a", "-l", "nodes=.."], "must not start with '.'"),
        (["config", "get", "-e", "1", "-r", "a", "-k", "a..b"], "is not a dotted path"),
        (["config", "get", "-e", "1", "-r", "a", "-f", "xml"], "'xml' is not one of"),
        (["config", "get", "-e", "1", "-r", "a", "--version", " "], "not empty"),
        ([*SET, "-k", "a", "-v", "1"], "--value needs --type"),
        ([*SET, "-k", "a", "-t", "int", "-v", "1", "-f", "json"], "exclude each other"),
        ([*SET, "-k", "a", "-t", "null", "-v", "1"], "--type null takes no --value"),
        ([*SET, "-k", "a", "-t", "int"], "--type int needs --value"),
        ([*SET, "-k", "a", "-t", "int", "-v", "one"], "'one' is not an int"),
        ([*SET, "-k", "a", "-t", "bool", "-v", "yes"], "'yes' is not a bool"),
        ([*SET, "-k", "a", "-t", "json", "-v", "{bad"], "--value is not valid json"),
        ([*SET, "-k", "a", "-t", "yaml", "-v", "a: [b"], "--value is not valid yaml"),
        ([*SET, "-k", "a", "-t", "float", "-v", "1"], "'float' is not one of"),
        ([*SET, "-k", "a"], "give --type and --value, --type null, or --format"),
        ([*SET, "-t", "null"], "--type null needs --key"),
        ([*SET, "-t", "int", "-v", "3"], "without --key the value must be a mapping"),
        ([*SET, "-k", "a", "-t", "str", "-f", "yaml"], "to read stdin give only --format"),
        (["config", "delete", *NODE1], "Missing option '--key'"),
        (["config", "nope"], "No such command 'nope'"),
    ],
)
def test_usage_errors_print_one_line_and_exit_2(gs_readonly, args, fragment):
    assert_usage_error(gs_readonly(*args, input=""), fragment)


# -- store and server errors: exit 1 with the message --------------------------------------------
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["config", "get", "-e", "9", "-r", "astute"], "environment 9 does not exist"),
        (["config", "get", "-e", "1", "-r", "nope"], "resource 'nope' is not defined"),
        (["config", "get", "-e", "1", "-l", "role=x", "-r", "astute"], "expected 'nodes'"),
        (["config", "get", "-e", "1", "-l", "nodes=1,role=x", "-r", "astute"], "hierarchy levels"),
        (["config", "get", "-e", "1", "-r", "astute", "-k", "missing"], "key 'missing' does not"),
        (["config", "get", *NODE1], "cannot find node '1'"),
        (["config", "get", *NODE1, "--version", "999"], "unknown version"),
        (["config", "delete", *NODE1, "-k", "missing"], "key 'missing' does not exist"),
    ],
)
def test_store_errors_exit_1_with_the_message(gs_readonly, args, fragment):
    assert_failure(gs_readonly(*args), fragment)


def test_bad_stdin_is_an_input_error(gs):
    assert_failure(gs(*SET, "-f", "json", input="{nope"), "<stdin>: JSON does not parse")
    assert_failure(gs(*SET, "-f", "yaml", input=""), "<stdin> is empty")
    assert_failure(gs(*SET, "-f", "yaml", input="- a\n"), "must be a mapping, not list")


def test_set_refuses_a_yaml_alias_bomb(gs):
    from hostile import alias_bomb

    before = gs.store.environment_repo(1).snapshot().commit_id
    result = gs("config", "set", *NODE1, "--format", "yaml", input=alias_bomb(7))
    assert_failure(result, "aliases expand it by more than 10000 nodes")
    assert "<stdin>" in result.stderr and "line 5" in result.stderr
    assert gs.store.environment_repo(1).snapshot().commit_id == before


def test_set_refuses_a_level_value_with_a_zero_width_character(gs):
    result = gs(
        "config",
        "set",
        "-e",
        "1",
        "-l",
        "nodes=node-1\u200b",
        "-r",
        "astute",
        "-k",
        "a",
        "-t",
        "int",
        "-v",
        "1",
    )
    assert_usage_error(result, "U+200B ZERO WIDTH SPACE")


# -- issue 22: optimistic writes and unknown nodes ----------------------------------------------
def test_if_version_refuses_a_write_over_a_changed_document(gs, astute):
    read = gs.store.config.read(1, [("nodes", "1")], "astute", "values")
    gs.store.config.put(1, [], "globals", "values", {"other": 1})  # another document: no matter
    key = ["--key", "fqdn", "--type", "str"]
    gs.ok("config", "set", *NODE1, *key, "--value", "a.example.org", "--if-version", read.commit)
    late = gs("config", "set", *NODE1, *key, "--value", "b", "--if-version", str(read.version))
    assert_failure(late, "changed since version")
    whole = gs("config", "override", *NODE1, "-f", "json", "--if-version", "1", input="{}")
    assert whole.exit_code == 0, whole.stderr  # no overrides document at version 1 nor now
    value = gs.store.config.read(1, [("nodes", "1")], "astute", "values", Query(key="fqdn"))
    assert value.data == "a.example.org"


def test_unknown_nodes_fail_naming_them(gs, astute):
    assert_failure(gs("config", "get", "-e", "1", "-l", "nodes=9", "-r", "astute"), "'9'")
    typo = gs(
        "config",
        "override",
        "-e",
        "1",
        "-l",
        "nodes=node-9.domain.tld",
        "-r",
        "astute",
        "-k",
        "a",
        "-t",
        "int",
        "-v",
        "1",
    )
    assert_failure(typo, "node-9.domain.tld")
    assert not gs.store.environment_repo(1).snapshot().exists("nodes/node-9.domain.tld")


def test_refusals_print_their_next_step_in_both_modes(gs_readonly):
    missing_env = gs_readonly("config", "get", "-e", "9", "-r", "astute")
    assert_failure(missing_env, "gitstore env create --id 9")
    assert len(missing_env.stderr.strip().splitlines()) == 1
    off_hierarchy = gs_readonly("config", "get", "-e", "1", "-l", "role=x", "-r", "astute")
    assert_failure(off_hierarchy, "gitstore env update 1 --levels nodes,role")
    unknown = gs_readonly("config", "get", "-e", "1", "-r", "nosuch")
    assert_failure(unknown, "gitstore def create --component fuel --name nosuch")
