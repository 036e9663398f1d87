"""The roster: every node a commit knows (inventory records and `nodes` folders) with fqdn,
roles and status, records first and facts for the rest, computed once per nodes tree."""

from __future__ import annotations

import pytest
import yaml
from fuel_data import ASTUTE, newton_release

from gitstore.api import create_app
from gitstore.backend.repository import Author
from gitstore.configdb.roster import top_level_entries

ALICE = Author("alice", "alice@example.com")


def _facts(name: str, **fields) -> dict:
    doc = yaml.safe_load((ASTUTE / f"{name}.yaml").read_text())
    doc.update(fields)
    return doc


@pytest.fixture
def nodes(fuel_store):
    """Node 1: facts of a controller; node 2: facts of a compute with `roles` and an override
    of its status; node 3: an inventory record only; node 12: a record and facts that differ."""
    fuel_store.releases.create(newton_release())
    fuel_store.environments.update(1, {"release": 1})
    put = fuel_store.config.put
    put(1, [("nodes", "1")], "astute", "values", _facts("controller", fqdn="c1.x"), ALICE)
    compute = _facts("compute", fqdn="n2.x", roles=["compute", "cinder"], status="ready")
    put(1, [("nodes", "2")], "astute", "values", compute, ALICE)
    put(1, [("nodes", "2")], "astute", "overrides", {"status": "error"}, ALICE)
    fuel_store.nodes.create(1, {"id": 3, "fqdn": "rec-3.x", "roles": ["compute"]})
    record = {"id": 12, "fqdn": "rec-12.x", "roles": ["controller"], "status": "ready"}
    fuel_store.nodes.create(1, record)
    put(1, [("nodes", "12")], "astute", "values", _facts("compute", fqdn="facts-12.x"), ALICE)
    return fuel_store


def _row(rows: list, node_id: str) -> dict:
    return next(row for row in rows if row["id"] == node_id)


def test_rows_come_from_records_and_facts_in_id_order(nodes):
    rows = nodes.roster.rows(1).data
    assert [row["id"] for row in rows] == ["1", "2", "3", "12"]
    one, two, three, twelve = (_row(rows, n) for n in ("1", "2", "3", "12"))
    assert (one["fqdn"], one["roles"], one["status"]) == (
        "c1.x",
        ["primary-controller"],
        "discover",
    )
    assert one["source"] == "facts"
    # Fuel's `roles` list wins over its single `role`; the node's override wins over its values
    assert (two["roles"], two["status"]) == (["compute", "cinder"], "error")
    assert (three["fqdn"], three["roles"], three["source"]) == ("rec-3.x", ["compute"], "inventory")
    # a record's fields win over the node's facts
    assert (twelve["roles"], twelve["status"], twelve["fqdn"]) == (
        ["controller"],
        "ready",
        "rec-12.x",
    )
    assert twelve["source"] == "inventory"


def test_the_rows_are_computed_once_per_nodes_tree(nodes):
    first = nodes.roster.rows(1)
    facts = len(nodes.roster._caches.facts)
    nodes.config.put(1, [], "astute", "values", {"debug": True}, ALICE)  # a global write
    second = nodes.roster.rows(1)
    assert second.commit != first.commit
    assert second.data is first.data  # the same list: nothing was read again
    nodes.config.put(1, [("nodes", "2")], "astute", "overrides", {"status": "ready"}, ALICE)
    third = nodes.roster.rows(1).data
    assert _row(third, "2")["status"] == "ready"
    assert len(nodes.roster._caches.facts) == facts + 1  # only node 2's facts were read again


def test_a_version_reads_the_rows_of_then(nodes):
    then = nodes.environment_repo(1).head()
    nodes.config.put(1, [("nodes", "1")], "astute", "overrides", {"fqdn": "renamed.x"}, ALICE)
    assert _row(nodes.roster.rows(1, then).data, "1")["fqdn"] == "c1.x"
    assert _row(nodes.roster.rows(1).data, "1")["fqdn"] == "renamed.x"


@pytest.mark.parametrize("path", sorted(ASTUTE.glob("*.yaml")), ids=lambda path: path.name)
def test_the_entries_read_from_their_lines_equal_the_whole_parse(path):
    data = path.read_bytes()
    whole = yaml.safe_load(data)
    expected = {key: whole[key] for key in ("fqdn", "role", "roles", "status") if key in whole}
    assert top_level_entries(data) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"a: 1\nroles:\n- x\n- y\nb: 2\nstatus: ready", {"roles": ["x", "y"], "status": "ready"}),
        (b"# c\n---\nfqdn: n\n  # x\nrole: r\n", {"fqdn": "n", "role": "r"}),
        (b"x: |\n  fqdn: not-a-key\nstatus: s\n", {"status": "s"}),
        (b"a:\n  fqdn: nested\n", {}),
        (b"fqdn:\n  first\nstatus: s\nfqdn: last\n", {"fqdn": "last", "status": "s"}),
        (b"{fqdn: flow}", None),  # not a block mapping: parsed whole by the caller
        (b"- a\n", None),
        (b"base: &b x\nfqdn: *b\n", None),  # an alias needs the whole document
    ],
)
def test_the_entries_of_unusual_files_or_none(data, expected):
    assert top_level_entries(data) == expected


# -- GET /api/v1/config/environments/<id>/nodes ---------------------------------------------
ROSTER = "/api/v1/config/environments/1/nodes"


@pytest.fixture
def api(nodes):
    return create_app({"TESTING": True}, store=nodes).test_client()


def test_rest_lists_the_roster_filtered_and_paged(api):
    whole = api.get(ROSTER)
    assert whole.status_code == 200 and "X-Total-Count" not in whole.headers
    assert [row["id"] for row in whole.get_json()] == ["1", "2", "3", "12"]
    assert {row["source"] for row in whole.get_json()} == {"facts", "inventory"}
    page = api.get(f"{ROSTER}?role=compute&limit=1")
    assert [row["id"] for row in page.get_json()] == ["2"]
    assert page.headers["X-Total-Count"] == "2"
    assert page.headers["Link"] == f'<{ROSTER}?role=compute&limit=1&marker=2>; rel="next"'
    assert [row["id"] for row in api.get(f"{ROSTER}?role=compute&marker=2").get_json()] == ["3"]
    assert [row["id"] for row in api.get(f"{ROSTER}?fqdn_contains=N2.X").get_json()] == ["2"]


@pytest.mark.parametrize(
    ("query", "word"), [("tag=controller", "tag"), ("limit=1001", "limit"), ("marker=-1", "marker")]
)
def test_rest_refuses_a_bad_argument_naming_it(api, query, word):
    response = api.get(f"{ROSTER}?{query}")
    assert response.status_code == 400 and word in response.get_json()["message"]
