"""The identity contract (gitstore/served.py): a merged document shares the entries it takes
unchanged from its layers by identity, through merging, masking and the read caches, so the
entries of two nodes' effective documents are the very same objects. Masking entry by entry
(`secrets/mask.py`) and the JSON fragments of the store's answers (`answers.py`) rely on it; a
copy anywhere on the way makes them re-mask and re-encode every entry of every lookup."""

from __future__ import annotations

from gitstore.configdb.values import Query
from gitstore.merge.effective import Layer, merge_layers

COMMON = {"network": {"vlan": 100, "mtu": 9000}, "services": ["nova", "glance"]}
EFFECTIVE = Query(effective=True)


def _effective(store, node: int):
    return store.config.read(1, [("nodes", str(node))], "astute", "values", EFFECTIVE)


def test_a_merged_document_holds_its_layers_entries_themselves():
    own = {"node": 1, "network": {"mtu": 1500}}
    merged = merge_layers([Layer("/", "values", COMMON), Layer("/nodes/1/", "values", own)])
    assert merged["services"] is COMMON["services"]
    assert merged["network"] == {"vlan": 100, "mtu": 1500}  # merged: a new mapping, as it must


def test_two_nodes_effective_documents_share_the_global_entries(fuel_store):
    fuel_store.config.put(1, [], "astute", "values", {**COMMON, "db_password": "s3cret"})
    for node in (1, 2):
        fuel_store.config.put(1, [("nodes", str(node))], "astute", "values", {"node": node})
    first, second = _effective(fuel_store, 1), _effective(fuel_store, 2)
    assert first.shared and second.shared
    assert first.data["db_password"] == "******"  # masked, yet the plain entries are shared
    for key in ("network", "services"):
        assert first.data[key] is second.data[key]
    assert _effective(fuel_store, 1).data is first.data  # the read cache hands out the same
