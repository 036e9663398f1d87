"""Masking entry by entry (`mask._mask_entries`, kept by the entries' identity) gives exactly the
whole-document walk, for shared entries, under any key and rules, called again and again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gitstore.backend.cache import Caches
from gitstore.secrets import mask
from gitstore.secrets.rules import Rules

FUEL = Path(__file__).resolve().parents[1] / "data" / "fuel" / "astute"
RULES = [
    Rules(),
    Rules(patterns=(("nodes", "*", "name"), ("network_scheme",))),
    Rules(patterns=(("network_scheme", "*", "*", "0"), ("*",), ("nodes", "1", "*"))),
    Rules(defaults=False),
    Rules(everything=True),
]
#: One store's masking caches, shared by every test as a worker's requests share them.
CACHES = Caches()


def walked(document, rules):
    """The reference: one walk of the whole document, as before entries were kept."""
    return mask._mask_walk(document, rules, (), False)


IDS = ["defaults", "patterns", "wildcards", "none", "everything"]


@pytest.mark.parametrize("rules", RULES, ids=IDS)
@pytest.mark.parametrize("source", sorted(FUEL.glob("*.yaml")), ids=lambda p: p.stem)
def test_entry_by_entry_is_the_whole_walk(source, rules):
    document = yaml.safe_load(source.read_text())
    expected = walked(document, rules)
    for _ in range(2):  # the second time from the kept entries
        assert mask.mask_paths(document, rules, caches=CACHES) == expected
    shared = {"renamed_password": document["nodes"], **document}  # one object, two keys
    assert mask.mask_paths(shared, rules, caches=CACHES) == walked(shared, rules)


def _leaf_paths(value, path=()):
    if isinstance(value, dict | list):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in items:
            yield from _leaf_paths(child, (*path, key))
    else:
        yield path


def _sealed_at(value, path):
    if not path:
        return "ENC[v1,aesgcm,kid=k,n=AAAA,d=BBBB]"
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _sealed_at(value[path[0]], path[1:])
    return copy


FUEL_DOCUMENTS = {p.stem: yaml.safe_load(p.read_text()) for p in sorted(FUEL.glob("*.yaml"))}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(FUEL_DOCUMENTS)), st.data(), st.sampled_from(RULES[:-1]))
def test_sealed_text_anywhere_in_a_fuel_file_is_masked(name, data, rules):
    """Fuel's files hold no sealed value: put some at leaves drawn anywhere in them."""
    document = FUEL_DOCUMENTS[name]
    leaves = list(_leaf_paths(document))
    chosen = data.draw(st.lists(st.sampled_from(leaves), min_size=1, max_size=5, unique=True))
    for path in chosen:
        document = _sealed_at(document, path)
    result, paths = mask.mask_paths(document, rules, caches=CACHES)
    assert (result, paths) == walked(document, rules)
    for path in chosen:
        assert tuple(map(str, path)) in paths
    assert "ENC[" not in json.dumps(result)


def test_an_unmasked_document_is_returned_itself():
    document = {"a": {"b": [1, 2]}, "c": "d"}
    assert mask.mask_paths(document, Rules(), caches=CACHES)[0] is document
    masked, paths = mask.mask_paths({"a": {"db_password": "x"}}, Rules(), caches=CACHES)
    assert masked == {"a": {"db_password": mask.MASK}} and paths == [("a", "db_password")]


# -- any document, and documents that share some entries and change others -----------------------
_KEYS = st.sampled_from(["a", "name", "db_password", "token", "nodes", "0", "x_key"]) | st.integers(
    0, 2
)
_LEAVES = st.none() | st.integers(0, 9) | st.booleans() | st.sampled_from(["v", "ENC[k,c]", ""])
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=16,
)
_DOCUMENTS = st.dictionaries(_KEYS, _VALUES, max_size=6)


@settings(max_examples=300, deadline=None)
@given(_DOCUMENTS, _DOCUMENTS, st.sampled_from(RULES + [Rules(patterns=(("*", "*"),))]))
def test_any_document_is_masked_as_the_whole_walk(first, changes, rules):
    assert mask.mask_paths(first, rules, caches=CACHES) == walked(first, rules)
    # A second document keeps some of the first's very objects and replaces others at the
    # same keys (a node after a write): kept entries must not be served for new values.
    second = {**first, **changes}
    assert mask.mask_paths(second, rules, caches=CACHES) == walked(second, rules)
    assert mask.mask_paths(first, rules, caches=CACHES) == walked(first, rules)


def test_the_kept_entries_are_bounded(monkeypatch):
    monkeypatch.setattr(mask, "MAX_ENTRIES", 10)
    for index in range(50):
        document = {f"key{index}-{n}": {"db_password": "x"} for n in range(3)}
        assert mask.mask_paths(document, Rules(), caches=CACHES) == walked(document, Rules())
    assert len(CACHES.masked_entries.get((Rules(), False))) <= 10
