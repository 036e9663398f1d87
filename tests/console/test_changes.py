"""The console's change pages against the REST answers they render: a node's diff between two
versions (`GET .../diff`), the history of one key (`GET .../history`), and a commit's blast
radius, checked against the effective values REST serves before and after the commit."""

from __future__ import annotations

import json

import pytest

from gitstore.backend.repository import Author

from .pages import rows

ALICE = Author("alice", "alice@example.com")
BOB = Author("bob", "bob@example.com")
ENV = "/api/v1/config/environments/1"


@pytest.fixture
def history(fuel_store):
    """Versions: 2 global astute (alice), 3 node 1 override (bob), 4 node 2 values (bob),
    5 global mtu and ntp (alice), 6 node 2 globals (alice). Returns the commits by version."""
    config = fuel_store.config
    commits = {
        2: config.put(1, [], "astute", "values", {"net": {"mtu": 1500, "vlan": 10}}, ALICE),
        3: config.put(1, [("nodes", "1")], "astute", "overrides", {"net": {"mtu": 9000}}, BOB),
        4: config.put(1, [("nodes", "2")], "astute", "values", {"hostname": "node-2"}, BOB),
        5: config.put(
            1, [], "astute", "values", {"net": {"mtu": 1400, "vlan": 10}, "ntp": ["a"]}, ALICE
        ),
        6: config.put(1, [("nodes", "2")], "globals", "values", {"role": "compute"}, ALICE),
    }
    return {version: result.commit for version, result in commits.items()}


def _rest_changes(changes: dict) -> dict[tuple[str, str], dict]:
    """(resource, key) -> {class, old?, new?} as the page shows them, from a REST diff scope."""
    found = {}
    for resource, change in changes.items():
        for key, value in change["added"].items():
            found[(resource, key)] = {"class": "added", "new": json.dumps(value)}
        for key, value in change["removed"].items():
            found[(resource, key)] = {"class": "removed", "old": json.dumps(value)}
        for key, pair in change["changed"].items():
            found[(resource, key)] = {
                "class": "changed",
                "old": json.dumps(pair["old"]),
                "new": json.dumps(pair["new"]),
            }
    return found


def _page_changes(client, url: str) -> dict[tuple[str, str], dict]:
    parsed = rows(client, url, "key")
    found = {}
    for row in parsed.rows:
        shown = {name: row[name] for name in ("class", "old", "new") if name in row}
        found[(row["resource"], row["key"])] = shown
    return found


@pytest.mark.parametrize("node", ["1", "2"])
def test_node_diff_shows_what_the_rest_diff_says(client, history, node):
    rest = client.get(f"{ENV}/diff?from=2&to=6&levels=nodes={node}").get_json()
    expected = _rest_changes(rest["scopes"][f"/nodes/{node}/"])
    shown = _page_changes(client, f"/ui/environments/1/nodes/{node}/diff?from=2&to=6")
    assert shown == expected
    assert expected  # the versions differ at both nodes


def test_node_diff_travels_in_time_with_the_version_pin(client, history):
    """`to` defaults to the pinned version: node 1 between 2 and 3 is its override only."""
    shown = _page_changes(client, "/ui/environments/1/nodes/1/diff?from=2&version=3")
    rest = client.get(f"{ENV}/diff?from=2&to=3&levels=nodes=1").get_json()["scopes"]["/nodes/1/"]
    assert shown == _rest_changes(rest)
    assert shown == {("astute", "net.mtu"): {"class": "changed", "old": "1500", "new": "9000"}}


def test_node_diff_of_equal_versions_says_nothing_changed(client, history):
    page = client.get("/ui/environments/1/nodes/1/diff?from=3&to=4").get_data(as_text=True)
    assert "No effective value of node 1 differs" in page  # version 4 changed node 2 only


def test_key_history_shows_what_the_rest_history_says(client, history):
    url = f"{ENV}/history?path=nodes/2&resource=astute&key=net.mtu"
    rest = client.get(url).get_json()["entries"]
    page = rows(
        client, "/ui/environments/1/nodes/2/history?resource=astute&key=net.mtu", "commit"
    ).rows
    assert [row["commit"] for row in page] == [entry["commit"] for entry in rest]
    assert [row["commit"] for row in page] == [history[5], history[2]]
    for row, entry in zip(page, rest, strict=True):
        assert row["author"] == entry["author"] and row["message"] == entry["message"]
        assert row["new"] == json.dumps(entry["new"])
        assert row["old"] == (json.dumps(entry["old"]) if "old" in entry else "(absent)")


def test_key_history_at_a_node_that_overrides_skips_shadowed_commits(client, history):
    page = rows(
        client, "/ui/environments/1/nodes/1/history?resource=astute&key=net.mtu", "commit"
    ).rows
    assert [row["commit"] for row in page] == [history[3], history[2]]
    assert page[0]["author"] == "bob"


def test_key_history_pinned_to_a_version_starts_there(client, history):
    url = "/ui/environments/1/nodes/2/history?resource=astute&key=net.mtu&version=4"
    assert [row["commit"] for row in rows(client, url, "commit").rows] == [history[2]]


def test_key_history_without_a_key_is_a_400_naming_it(client, history):
    response = client.get("/ui/environments/1/nodes/1/history?resource=astute")
    assert response.status_code == 400
    assert response.get_json()["status"] == 400 and "key=" in response.get_json()["message"]


def _rest_changed_nodes(client, commit: str, nodes: list[str]) -> set[str]:
    """Nodes whose effective values (every resource) REST serves differently before and
    after `commit`."""
    changed = set()
    for node in nodes:
        for resource in ("astute", "globals", "override%2Fplugins", "override%2Fnode"):
            url = f"{ENV}/nodes/{node}/resources/{resource}/values?effective"
            before = client.get(f"{url}&version={commit}~1").get_json()
            after = client.get(f"{url}&version={commit}").get_json()
            if before != after:
                changed.add(node)
    return changed


@pytest.mark.parametrize("version", [3, 4, 5, 6])
def test_blast_radius_names_the_nodes_whose_effective_values_changed(client, history, version):
    commit = history[version]
    parsed = rows(client, f"/ui/environments/1/commits/{commit}", "node")
    named = {row["node"] for row in parsed.rows if row.get("class") != "node-changes"}
    assert named == _rest_changed_nodes(client, commit, ["1", "2"])
    assert named  # every one of these commits reaches a node


def test_blast_radius_of_a_global_change_leaves_out_the_node_that_overrides(client, history):
    parsed = rows(client, f"/ui/environments/1/commits/{history[5]}", "node")
    assert {row["node"] for row in parsed.rows} == {"1", "2"}  # ntp reaches both
    keys = {row["key"]: row for row in rows(client, "/ui/environments/1/commits/5", "key").rows}
    assert keys["net.mtu"]["old"] == "1500" and keys["net.mtu"]["new"] == "1400"


def test_commit_page_names_author_message_and_files(client, history):
    page = client.get(f"/ui/environments/1/commits/{history[3]}").get_data(as_text=True)
    assert history[3] in page and "bob" in page
    assert "config: set nodes/1 astute overrides (1 keys)" in page
    assert "<code>nodes/1/overrides/astute.yaml</code>" in page


def test_the_first_commit_has_no_blast_radius(client, history):
    page = client.get("/ui/environments/1/commits/1").get_data(as_text=True)
    assert "The first commit of the environment" in page


def test_an_unknown_commit_is_a_json_404(client, history):
    response = client.get("/ui/environments/1/commits/0123456789abcdef")
    assert response.status_code == 404 and response.get_json()["status"] == 404


def test_secrets_are_masked_in_diffs_histories_and_blast_radius(client, fuel_store, history):
    response = client.patch(ENV, json={"secret_keys": ["db.pass"]})
    assert response.status_code == 200, response.get_json()
    first = fuel_store.config.put(1, [], "globals", "values", {"db": {"pass": "old-secret"}}, ALICE)
    second = fuel_store.config.put(1, [], "globals", "values", {"db": {"pass": "new-secret"}}, BOB)
    for url in (
        f"/ui/environments/1/commits/{second.commit}",
        f"/ui/environments/1/commits/{first.commit}",
        "/ui/environments/1/nodes/1/diff?from=2",
        "/ui/environments/1/nodes/1/history?resource=globals&key=db.pass",
    ):
        page = client.get(url).get_data(as_text=True)
        assert "******" in page, url  # the secret's change is shown, masked
        assert "old-secret" not in page and "new-secret" not in page, url
