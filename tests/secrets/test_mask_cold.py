"""Cold effective lookups through the real app never show a secret: sealed text anywhere in a
node's own layer (under plain keys, in lists, deep down) and values at keys a rule makes secret
are masked, node after node, whatever was masked for the nodes before (`mask._Plan` walks a
node's own entries without a rule call per leaf; `_mask_entries` keeps shared entries)."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitstore.backend.changes import ChangeSet
from gitstore.merge.effective import Layer, merge_layers
from gitstore.secrets import mask
from gitstore.secrets.rules import Rules
from gitstore.secrets.seal import MASK

GLOBAL = "global/values/astute.yaml"
SEALED = "ENC[v1,aesgcm,kid=k1,n=AAAAAAAAAAAAAAAA,d=c2VjcmV0]"
#: The rules of astute below: the defaults, a definition's pattern and the environment's.
PATTERNS = (("nodes", "*", "admin_pass"), ("servers", "0", "addr"), ("ssh", "private"))


def lookup(client, node: int):
    url = f"/api/v1/config/environments/1/nodes/{node}/resources/astute/values?effective"
    answer = client.get(url)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    masked = answer.headers.get("X-Gitstore-Masked", "")
    return answer.json, [tuple(p.split(".")) for p in masked.split(",") if p], answer


def write(store, files: dict[str, object]) -> None:
    """Commit documents as they could arrive by `git push` (no sealing on the way)."""

    def change(snapshot):
        changes = ChangeSet("documents")
        for path, document in files.items():
            changes.put(path, yaml.safe_dump(document, sort_keys=False).encode())
        return changes

    store.environment_repo(1).update(change, store.default_author)


@pytest.fixture
def ruled(fuel_store, client):
    definition = fuel_store.definitions.get("astute").data["id"]
    patch = {"secret_keys": [".".join(p) for p in PATTERNS[:2]]}
    url = f"/api/v1/config/resource_definitions/{definition}"
    assert client.patch(url, json=patch).status_code == 200
    env = {"secret_keys": [".".join(PATTERNS[2])]}
    assert client.patch("/api/v1/config/environments/1", json=env).status_code == 200
    return client


RULED = Rules(PATTERNS)


def expected(layers: list[dict], rules: Rules = RULED) -> tuple[dict, list]:
    """The reference: the merged layers walked leaf by leaf with the rules."""
    merged = merge_layers([Layer("/", "values", data) for data in layers])
    return mask._mask_walk(merged, rules, (), False)


GLOBAL_DOC = {
    "region": "one",
    "nova": {"db_password": "GlobalPass-1", "user": "nova"},
    "shared": [SEALED, "plain"],
    "ssh": {"private": "GLOBAL-PRIVATE", "public": "pub"},
}


def node_doc(node: int) -> dict:
    return {
        "uid": str(node),
        "fqdn": f"node-{node}.local",
        "note": SEALED,  # sealed text under a plain top-level key
        "nics": [{"name": "eth0", "api_key": f"NicKey-{node}"}, [SEALED, f"ok-{node}"]],
        "deep": {"a": {"b": {"c": SEALED, "d": node, "e": None, "f_token": None}}},
        "nodes": {f"n{node}": {"admin_pass": f"AdminPass-{node}", "name": f"n{node}"}},
        "servers": [{"addr": f"10.0.0.{node}", "port": 22}, {"addr": "10.0.1.1"}],
        "nova": {"db_password": f"NodePass-{node}", "extra": SEALED},
        "ssh": {"public": f"pub-{node}"},  # merged into the global mapping
        "service_password": {"inner": [f"SvcPass-{node}", None, 3]},
        "7": {"secret": f"NumericKeyed-{node}"},
    }


def assert_hidden(answer, node: int) -> None:
    text = answer.get_data(as_text=True)
    assert "ENC[" not in text
    for plain in ("GlobalPass-1", "GLOBAL-PRIVATE", "NicKey", "AdminPass", "NodePass", "SvcPass"):
        assert plain not in text, plain
    assert f"NumericKeyed-{node}" not in text and f"10.0.0.{node}" not in text


def test_every_node_of_a_cold_store_is_masked_as_the_leaf_walk(fuel_store, ruled):
    nodes = range(1, 7)
    write(
        fuel_store,
        {GLOBAL: GLOBAL_DOC, **{f"nodes/{n}/values/astute.yaml": node_doc(n) for n in nodes}},
    )
    for _ in range(2):  # cold, then from the caches
        for node in nodes:
            data, paths, answer = lookup(ruled, node)
            assert (data, paths) == expected([GLOBAL_DOC, node_doc(node)])
            assert_hidden(answer, node)
            assert data["note"] == MASK and data["deep"]["a"]["b"]["c"] == MASK
            assert data["deep"]["a"]["b"]["e"] is None and data["deep"]["a"]["b"]["f_token"] is None
            assert data["servers"][1]["addr"] == "10.0.1.1"  # only index 0 is ruled
            assert data["ssh"] == {"private": MASK, "public": f"pub-{node}"}


def test_with_the_default_rules_alone_sealed_and_named_values_are_masked(fuel_store, client):
    nodes = range(1, 4)
    write(
        fuel_store,
        {GLOBAL: GLOBAL_DOC, **{f"nodes/{n}/values/astute.yaml": node_doc(n) for n in nodes}},
    )
    for node in nodes:
        data, paths, answer = lookup(client, node)
        assert (data, paths) == expected([GLOBAL_DOC, node_doc(node)], Rules())
        text = answer.get_data(as_text=True)
        assert "ENC[" not in text and "NicKey" not in text and "SvcPass" not in text
        assert data["note"] == MASK and data["nics"][1] == [MASK, f"ok-{node}"]
        assert data["nodes"][f"n{node}"]["admin_pass"] == f"AdminPass-{node}"  # no rule here


def test_a_value_replaced_by_a_secret_is_masked_at_the_next_lookup(fuel_store, ruled):
    plain = {"uid": "1", "note": "plain", "list": ["a", "b"], "map": {"x": 1}}
    write(fuel_store, {GLOBAL: GLOBAL_DOC, "nodes/1/values/astute.yaml": plain})
    data, paths, _ = lookup(ruled, 1)
    assert data["note"] == "plain" and ("note",) not in paths
    sealed = {"uid": "1", "note": SEALED, "list": ["a", SEALED], "map": {"x": 1, "y_key": "K-1"}}
    write(fuel_store, {"nodes/1/values/astute.yaml": sealed})
    data, paths, answer = lookup(ruled, 1)
    assert (data, paths) == expected([GLOBAL_DOC, sealed])
    assert data["note"] == MASK and data["list"] == ["a", MASK] and data["map"]["y_key"] == MASK
    assert "ENC[" not in answer.get_data(as_text=True) and "K-1" not in answer.get_data(True)


# -- generated node documents through the app ------------------------------------------------
_KEYS = st.sampled_from(
    ["a", "name", "nodes", "servers", "addr", "admin_pass", "db_password", "x_key", "*", "0", "n1"]
)
_LEAVES = st.none() | st.integers(0, 9) | st.booleans() | st.sampled_from(["v", SEALED, ""])
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=14,
)
_NODES = st.lists(st.dictionaries(_KEYS, _VALUES, max_size=5), min_size=1, max_size=3)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(documents=_NODES)
def test_generated_node_documents_are_masked_as_the_leaf_walk(fuel_store, ruled, documents):
    files = {GLOBAL: GLOBAL_DOC}
    files.update({f"nodes/{n}/values/astute.yaml": d for n, d in enumerate(documents, 1)})
    write(fuel_store, files)
    for node, document in enumerate(documents, 1):
        data, paths, answer = lookup(ruled, node)
        assert (data, paths) == expected([GLOBAL_DOC, document])
        assert "ENC[" not in answer.get_data(as_text=True)
        assert json.loads(answer.get_data(as_text=True)) == data
