"""A shared answer's JSON assembled from the entries it shares with a kept answer
(`answers.Fragments`, the store's `Encoder` of the app's JSON settings) is the very bytes the
app's JSON provider gives for the whole answer: over real Fuel answers through the real app
(nodes' effective documents, masked and revealed, `show_lookup`, `explain`, a key, the global
layer), after writes, and on generated documents sharing entries by identity, in place or
moved."""

from __future__ import annotations

import datetime
import json

import pytest
import yaml
from fuel_data import ASTUTE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitstore import Store
from gitstore.answers import FRAGMENT_HEADS, FRAGMENT_MIN_ENTRIES
from gitstore.api import create_app, http
from gitstore.served import Served

GLOBAL = "/api/v1/config/environments/1/resources/astute/values"
NODE = "/api/v1/config/environments/1/nodes/{}/resources/astute/values"
QUERIES = ["effective", "effective&reveal", "effective&show_lookup", "effective&explain", ""]


@pytest.fixture
def fuel_app(fuel_store, inventory):
    app = create_app({"TESTING": True}, store=fuel_store)
    client = app.test_client()
    compute = yaml.safe_load((ASTUTE / "compute.yaml").read_text())
    compute["installed_on"] = "2024-01-01"  # a date-like string, as given
    assert client.put(GLOBAL, json=compute).status_code == 204
    for node in inventory:
        own = {"fqdn": f"node-{node}", "fact": {"n": int(node), "list": [node] * 3}}
        assert client.put(NODE.format(node), json=own).status_code == 204
    overrides = {"nova": {"db_password": "x", "user": "n"}, "ünïcode": "✓", "uid": "1"}
    assert client.put(NODE.format(1).replace("values", "overrides"), json=overrides).status_code
    return app


def bodies(app, paths: list[str]) -> list[bytes]:
    client = app.test_client()
    found = []
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, response.data
        found.append(response.data)
    return found


def _paths(nodes) -> list[str]:
    paths = [f"{NODE.format(n)}?{q}" for n in nodes for q in QUERIES]
    return paths + [f"{GLOBAL}?{q}" for q in QUERIES] + [f"{NODE.format(1)}?effective&key=nova"]


def test_real_answers_are_the_providers_bytes(fuel_app, fuel_store, inventory, monkeypatch):
    paths = _paths(inventory) * 2  # twice: the second time every shared entry is kept
    assembled = bodies(fuel_app, paths)
    heads = fuel_store.answers.encoder.fragments.heads.values()
    assert max(sum(text is not None for text in head.texts) for head in heads) > 20  # used
    monkeypatch.setattr("gitstore.answers.FRAGMENT_MIN_ENTRIES", 10**9)  # whole encoding only
    fresh = Store(fuel_store.root)  # none of the first store's bytes
    plain = bodies(create_app({"TESTING": True}, store=fresh), paths)
    assert assembled == plain
    assert b"\\u2713" in assembled[0] and b'"******"' in assembled[0]  # ensure_ascii, masked


def test_a_written_entry_is_encoded_anew(fuel_app, inventory):
    client = fuel_app.test_client()
    before = bodies(fuel_app, _paths(inventory))
    assert b'"quantum_settings"' in before[0]
    document = client.get(GLOBAL).get_json()
    document["quantum_settings"]["changed"] = "yes it is"
    assert client.put(GLOBAL, json=document).status_code == 204
    for body in bodies(fuel_app, [f"{NODE.format(n)}?effective" for n in inventory]):
        assert json.loads(body)["quantum_settings"]["changed"] == "yes it is"


def _fragments(app):
    """The fragments of the app's store, while its encoder is the app's JSON provider's."""
    encoder = http.encoder_of(app)
    answers = app.extensions[http.STORE].answers
    same = encoder is not None and encoder.settings == answers.encoder.settings
    return answers.encoder.fragments if same else None


def _encoded(app, data) -> bytes:
    """The bytes the app serves for shared `data` (`http.answer_of`)."""
    return http.answer_of(Served(data, shared=True)).body


def test_an_entry_is_used_only_for_the_very_object_it_encodes(app):
    with app.app_context():
        fragments = _fragments(app)
        base = {f"k{i}": i for i in range(20)}
        for round_ in range(200):  # new lists of the same size: their ids are reused
            data = {**base, "entry": [round_] * 4}
            assert fragments.body(data) == app.json.dumps(data)
            del data


def test_an_entry_is_used_only_at_its_place_and_under_its_very_key(app):
    """Equal keys of another type (`True` and `1`) and entries moved by an insertion or a
    deletion before them are encoded anew."""
    with app.app_context():
        fragments = _fragments(app)
        base = {f"k{i}": [i] for i in range(30)}
        head = {**base, 1: "one", 2.0: "two"}
        assert fragments.body(head) == app.json.dumps(head)
        shifted = dict(list(base.items())[:10] + [("new", [0])] + list(base.items())[10:])
        fewer = {key: value for key, value in base.items() if key != "k3"}
        retyped = {**base, True: "one", 2: "two"}
        reordered = dict(reversed(list(head.items())))
        for data in (head, shifted, head, fewer, retyped, head, reordered, head):
            assert fragments.body(data) == app.json.dumps(data)


def test_each_document_keeps_its_head_and_a_changed_one_is_replaced(app):
    with app.app_context():
        fragments = _fragments(app)
        node = {f"k{i}": [i] for i in range(30)}
        odd = {key: {"value": value} for key, value in node.items()}  # `show_lookup`-like
        other = {f"other{i}": [i] for i in range(30)}
        for data in (node, odd, other, node, {**node, "own": 1}, other):
            assert fragments.body(data) == app.json.dumps(data)
        heads = fragments.heads
        assert [head.values[0] for head in heads.values()] == [
            odd["k0"],
            node["k0"],
            other["other0"],
        ]
        assert all(text is not None for text in heads[id(node["k0"])].texts)
        changed = {**node, **{f"k{i}": [i] for i in range(1, 30)}}  # k0 is kept
        for data in (changed, changed):
            assert fragments.body(data) == app.json.dumps(data)
        assert heads[id(node["k0"])].values[1] is changed["k1"]
        for index in range(FRAGMENT_HEADS):
            data = {f"k{i}": [index] for i in range(20)}
            assert fragments.body(data) == app.json.dumps(data)
        assert id(node["k0"]) not in heads and len(heads) == FRAGMENT_HEADS


def test_other_json_settings_encode_whole(app):
    with app.app_context():
        app.json.sort_keys = True
        assert _fragments(app) is None
        app.json.sort_keys = False
        app.json.ensure_ascii = False
        data = {f"k{i}": ["é"] for i in range(20)}
        assert _encoded(app, data) == app.json.dumps(data).encode()
        assert "é".encode() in _encoded(app, data)


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(),
    st.dates(),
    st.datetimes(),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=3)
    ),
    max_leaves=10,
)
_KEYS = st.text(max_size=6) | st.integers(-5, 5) | st.booleans() | st.none() | st.floats(0, 2)


_FUEL = {path.name: yaml.safe_load(path.read_text()) for path in sorted(ASTUTE.glob("*.yaml"))}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(_FUEL)),
    nodes=st.lists(
        st.tuples(
            st.lists(st.integers(0, 200), max_size=6),  # entries the node overrides
            st.dictionaries(st.text(max_size=8), _VALUES, max_size=5),  # its own
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_nodes_over_each_fuel_file_are_the_providers_bytes(app, name, nodes):
    """Each Fuel astute file as the parent document, nodes overriding some of its entries in
    place and adding their own after them, as `configdb.scopes` merges them."""
    with app.app_context():
        parent = _FUEL[name]
        keys = list(parent)
        for overridden, own in nodes:
            node = dict(parent)
            for index in overridden:
                node[keys[index % len(keys)]] = {"node": index}
            node.update(own)
            for data in (node, parent, node):
                assert _encoded(app, data) == app.json.dumps(data).encode("utf-8")


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    pairs=st.lists(st.tuples(_KEYS, _VALUES), min_size=16, max_size=40),
    changes=st.lists(st.tuples(st.integers(0, 39), _VALUES), max_size=10),
)
def test_documents_sharing_entries_are_the_providers_bytes(app, pairs, changes):
    """The fragments kept across examples too: a later example's objects may reuse ids."""
    with app.app_context():
        first = dict(pairs)
        second = dict(first)  # the same objects, some replaced, one new key
        keys = list(first)
        for index, value in changes:
            second[keys[index % len(keys)]] = value
        second["new"] = [datetime.date(2024, 1, 2)]
        third = dict(reversed(list(second.items())))  # the same objects, other places
        fourth = {key: value for index, (key, value) in enumerate(first.items()) if index != 3}
        for data in (first, second, first, second, third, fourth, third, first):
            if len(data) >= FRAGMENT_MIN_ENTRIES:
                assert _encoded(app, data) == app.json.dumps(data).encode("utf-8")
