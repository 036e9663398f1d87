"""Issue 22 item 1: a node the environment does not know is a 404 naming it.

Known: in the inventory, or a level value holding data. Only a write of values to a new numeric
id of an environment without an inventory creates a node (ConfigDB's upload path).
"""

from __future__ import annotations

import json

import pytest

from .helpers import ENV, assert_error

VALUES = "resources/astute/values"


@pytest.mark.parametrize(
    "read",
    [
        f"nodes/999/{VALUES}",
        "nodes/999/resources/astute/overrides",
        f"nodes/999/{VALUES}?effective",
        f"nodes/999/{VALUES}?effective&explain",
        f"nodes/node-9.domain.tld/{VALUES}?effective",
    ],
)
def test_a_read_of_an_unknown_node_is_404_naming_it(client, read):
    client.put(f"{ENV}/nodes/1/{VALUES}", json={"a": 1})
    node = read.split("/")[1]
    assert_error(client.get(f"{ENV}/{read}"), 404, node)


def test_the_history_of_an_unknown_node_is_404(client):
    client.put(f"{ENV}/nodes/1/{VALUES}", json={"a": 1})
    assert_error(client.get(f"{ENV}/history?path=nodes/999"), 404, "999")


def test_a_node_with_data_or_in_the_inventory_reads(client, inventory):
    client.put(f"{ENV}/nodes/7/{VALUES}", json={"a": 1})  # inventory present: 7 is unknown
    client.put(f"{ENV}/{VALUES}", json={"g": 1})
    assert client.get(f"{ENV}/nodes/2/{VALUES}?effective").get_json() == {"g": 1}
    by_fqdn = client.get(f"{ENV}/nodes/node-2.domain.tld/{VALUES}?effective")
    assert by_fqdn.status_code == 200


def test_a_write_by_an_fqdn_that_names_no_node_is_404(client, inventory, env_commits):
    before = env_commits()
    response = client.put(f"{ENV}/nodes/node-9.domain.tld/{VALUES}", json={"a": 1})
    assert_error(response, 404, "node-9.domain.tld")
    keys = client.patch(
        f"{ENV}/nodes/node-9.domain.tld/resources/astute/overrides/keys/set",
        json=[["a", 1]],
    )
    assert_error(keys, 404, "node-9.domain.tld")
    assert env_commits() == before
    assert client.get(f"{ENV}/hierarchy_levels/nodes").get_json()["values"] == []


def test_with_an_inventory_a_write_to_an_id_not_in_it_is_404(client, inventory, env_commits):
    before = env_commits()
    assert_error(client.put(f"{ENV}/nodes/9/{VALUES}", json={"a": 1}), 404, "'9'")
    assert env_commits() == before
    assert client.put(f"{ENV}/nodes/node-3.domain.tld/{VALUES}", json={"a": 1}).status_code == 204
    assert client.get(f"{ENV}/nodes/3/{VALUES}").get_json() == {"a": 1}


def test_without_an_inventory_values_create_a_numeric_node(client):
    assert client.put(f"{ENV}/nodes/9/{VALUES}", json={"a": 1}).status_code == 204
    assert client.get(f"{ENV}/nodes/9/{VALUES}").get_json() == {"a": 1}
    assert_error(client.put(f"{ENV}/nodes/node-9.domain.tld/{VALUES}", json={"a": 1}), 404)
    overrides = client.put(f"{ENV}/nodes/10/resources/astute/overrides", json={"a": 1})
    assert overrides.status_code == 204


def test_a_superscript_digit_is_no_node_id_even_without_an_inventory(client):
    """`str.isdigit` holds for `²`: a write there created a node `²` before."""
    answer = client.put(f"{ENV}/nodes/%C2%B2/{VALUES}", json={"a": 1})
    assert_error(answer, 404, "\u00b2")
    levels = client.get(f"{ENV}/hierarchy_levels").get_json()
    assert "\u00b2" not in json.dumps(levels, ensure_ascii=False)


@pytest.mark.parametrize(
    "scope", ["levels=nodes=999", "path=nodes/999", "path=nodes/no-such-host.example"]
)
def test_a_diff_scoped_to_an_unknown_node_is_404_naming_it(client, inventory, scope):
    client.put(f"{ENV}/nodes/1/{VALUES}", json={"a": 1})
    client.put(f"{ENV}/nodes/1/{VALUES}", json={"a": 2})
    node = scope.rsplit("=", 1)[-1].rsplit("/", 1)[-1]
    assert_error(client.get(f"{ENV}/diff?from=HEAD~1&{scope}"), 404, f"'{node}'")
    both = client.get(f"{ENV}/diff?from=HEAD~1&levels=nodes=1&{scope}")
    assert_error(both, 404, f"'{node}'")  # one unknown scope among known ones is still 404
    for known in ("levels=nodes=1", "path=nodes/node-2.domain.tld"):
        assert client.get(f"{ENV}/diff?from=HEAD~1&{known}").status_code == 200


def test_a_diff_of_a_node_that_exists_at_one_end_only_answers(client):
    client.put(f"{ENV}/{VALUES}", json={"g": 1})
    client.put(f"{ENV}/nodes/5/{VALUES}", json={"a": 1})  # no inventory: this creates node 5
    added = client.get(f"{ENV}/diff?from=HEAD~1&levels=nodes=5")
    assert added.status_code == 200, added.get_json()
    assert list(added.get_json()["scopes"]) == ["/nodes/5/"]
    gone = client.get(f"{ENV}/diff?from=HEAD&to=HEAD~1&levels=nodes=5")  # at `from` only
    assert gone.status_code == 200, gone.get_json()
    assert list(gone.get_json()["scopes"]) == ["/nodes/5/"]
